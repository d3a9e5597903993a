//! Word links from a file: Pharaoh lines read with their line named on
//! error, links that follow their pairs through filtering and the split,
//! and gold rows that point every piece of a word at the pieces it is
//! linked to.

use lingo_data::*;
use proptest::prelude::*;

fn pair(src: &str, tgt: &str) -> Pair {
    Pair { src: src.into(), tgt: tgt.into() }
}

fn config(tokenizer: TokenizerKind) -> PrepareConfig {
    PrepareConfig {
        test_size: 6,
        valid_size: 6,
        split_seed: 3,
        tokenizer,
        bpe_merges: 40,
        vocab_size: 400,
        joint_vocab: false,
    }
}

#[test]
fn each_bad_link_is_named_with_its_line() {
    for token in ["1", "1-", "-1", "1-2-3", "+1-2", "1-+2", "1?2", "a-b", "１-2", "99999999999999999999999-0", "1–2"]
    {
        let text = format!("0-0 1-1\n\n0-0 {token} 2-2\n");
        let err = parse_pharaoh(text.as_bytes(), "x.align").unwrap_err();
        let want = format!("x.align:3: `{token}` is not a link `i-j` (source word i, target word j, counted from 0)");
        assert_eq!(err.to_string(), want);
    }
    // The reader's own line checks hold too: no control characters, valid UTF-8.
    assert_eq!(
        parse_pharaoh(b"0-0\n0-0\x001-1\n", "x.align").unwrap_err().to_string(),
        "x.align:2: NUL byte at byte 3 of the line (a binary or UTF-16 file?)"
    );
    assert!(parse_pharaoh(b"0-0\n\xFF\n", "x.align").unwrap_err().to_string().starts_with("x.align:2: invalid UTF-8"));
}

#[test]
fn lines_read_as_aligners_write_them() {
    // A byte-order mark, Windows line ends, tabs and repeated spaces, a repeated link, blank lines.
    let links = parse_pharaoh(b"\xEF\xBB\xBF0-0  1-1\r\n\r\n2-1\t0-0 2-1\n\n", "x.align").unwrap();
    assert_eq!(links, [vec![(0, 0), (1, 1)], vec![], vec![(2, 1), (0, 0)], vec![]]);
    assert_eq!(parse_pharaoh(b"", "x.align").unwrap(), Vec::<Links>::new());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.align");
    std::fs::write(&path, "0-0\n1-1 0-1\n").unwrap();
    assert_eq!(read_pharaoh(&path).unwrap(), [vec![(0, 0)], vec![(1, 1), (0, 1)]]);
}

#[test]
fn links_follow_their_lines_through_skipped_filtered_and_repeated_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pairs.tsv");
    // Line 2 is malformed (skipped when lenient), line 4 too long, line 5 repeats line 1.
    std::fs::write(&path, "Go.\tVe.\nno tab\nI see.\tVeo.\na b c d e f\tg\nGo.\tVe.\nWe ran.\tCorrimos.\n").unwrap();
    let kept = filtered(&path, true, 4).unwrap();
    assert_eq!(kept.lines, [1, 3, 6]);
    let align = parse_pharaoh(b"0-0 1-1\n\n1-0 2-1\n5-0\n0-0\n0-0 1-0 2-1\n", "pairs.align").unwrap();
    let links = kept.links(&align, "pairs.align".as_ref()).unwrap();
    assert_eq!(links, [vec![(0, 0), (1, 1)], vec![(1, 0), (2, 1)], vec![(0, 0), (1, 0), (2, 1)]]);
    // A link past its pair's words is named at its own line of the links file.
    let mut wrong = align.clone();
    wrong[5] = vec![(0, 2)];
    let err = kept.links(&wrong, "pairs.align".as_ref()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "pairs.align:6: link 0-2 is past the pair's 3 source and 2 target words (we ran . / corrimos .)"
    );
    // One line short, or one too many: the counts are named.
    for lines in [5, 7] {
        let mut count = align.clone();
        count.resize(lines, Vec::new());
        let err = kept.links(&count, "pairs.align".as_ref()).unwrap_err().to_string();
        assert!(err.contains(&format!("pairs.align has {lines} lines for the 6 of the corpus")), "{err}");
    }
}

/// Pairs whose words name themselves: source word `k` of pair `p` is
/// `s{p}x{k}`, target word `k` is `t{p}x{k}`, and the links join source
/// word `k` to target word `n - 1 - k` (and the first source word to the
/// last target word too: a word linked twice).
fn self_naming_corpus(n: usize) -> (Corpus, Vec<Links>) {
    let mut pairs = Vec::new();
    let mut links = Vec::new();
    for p in 0..60 {
        let words = 2 + p % n;
        let side = |prefix: char| (0..words).map(|k| format!("{prefix}{p}x{k}")).collect::<Vec<_>>().join(" ");
        pairs.push(pair(&side('s'), &side('t')));
        let mut l: Links = (0..words).map(|k| (k, words - 1 - k)).collect();
        l.push((0, 0));
        links.push(l);
    }
    (Corpus { pairs }, links)
}

#[test]
fn gold_rows_point_each_piece_at_the_pieces_of_its_linked_words() {
    for tokenizer in [TokenizerKind::Word, TokenizerKind::Bpe] {
        let (corpus, links) = self_naming_corpus(4);
        let prepared = prepare_linked(corpus.clone(), links.clone(), &config(tokenizer)).unwrap();
        let plain = prepare(corpus.clone(), &config(tokenizer)).unwrap();
        // The links change nothing else: the same split, tokens and vocabularies.
        assert_eq!(
            (&prepared.train, &prepared.train_pairs, &prepared.test),
            (&plain.train, &plain.train_pairs, &plain.test)
        );
        assert!(plain.train_gold.is_none());
        let gold = prepared.train_gold.as_ref().unwrap();
        let mut pieces_checked = 0;
        for ((example, pair), rows) in prepared.train.iter().zip(&prepared.train_pairs.pairs).zip(gold) {
            let p = corpus.pairs.iter().position(|q| q == pair).unwrap();
            assert_eq!(rows.len(), example.tgt.len() - 1, "a row per output token, <eos> last");
            assert!(rows.last().unwrap().is_empty(), "<eos> has no link");
            let (src_word, tgt_word) =
                (prepared.tokenizer.token_words(&pair.src), prepared.tokenizer.token_words(&pair.tgt));
            for (j, row) in rows[..rows.len() - 1].iter().enumerate() {
                let want: Vec<usize> = (0..src_word.len())
                    .filter(|&k| links[p].contains(&(src_word[k], tgt_word[j])))
                    .map(|k| k + 1)
                    .collect();
                assert_eq!(row, &want, "pair {p}, row {j}");
                assert!(!row.is_empty(), "every target word is linked");
                pieces_checked += row.len();
            }
        }
        assert!(pieces_checked > prepared.train.len() * 2, "{tokenizer:?}: {pieces_checked}");
    }
}

#[test]
fn bpe_splits_a_linked_word_into_pieces_that_all_read_its_link() {
    // With few merges, the long words come apart: every piece must carry the link.
    let (corpus, links) = self_naming_corpus(3);
    let prepared =
        prepare_linked(corpus, links, &PrepareConfig { bpe_merges: 5, ..config(TokenizerKind::Bpe) }).unwrap();
    let example = &prepared.train[0];
    let gold = &prepared.train_gold.as_ref().unwrap()[0];
    assert!(example.src.len() > 2 * 3 + 2, "few merges leave words in pieces: {:?}", example.src);
    assert!(gold.iter().any(|row| row.len() > 1), "a row reads several pieces: {gold:?}");
    let linked = prepared.linked_train().unwrap();
    let batch = Batch::from_examples(&linked[..4]).unwrap();
    let weights = batch.gold_weights().unwrap();
    for (b, rows) in batch.gold.as_ref().unwrap().iter().enumerate() {
        for (t, row) in rows.iter().enumerate() {
            let sum: f32 = weights.slice(ndarray::s![b, t, ..]).sum();
            assert!((sum - if row.is_empty() { 0.0 } else { 1.0 }).abs() < 1e-6);
        }
    }
}

#[test]
fn prepare_linked_wants_a_line_of_links_per_pair() {
    let (corpus, mut links) = self_naming_corpus(3);
    links.pop();
    let err = prepare_linked(corpus, links, &config(TokenizerKind::Word)).unwrap_err();
    assert_eq!(err.to_string(), "invalid links: 59 link lines for 60 pairs");
}

proptest! {
    #[test]
    fn links_written_as_pharaoh_read_back(lines in proptest::collection::vec(proptest::collection::vec((0usize..40, 0usize..40), 0..8), 0..6)) {
        let text: String = lines.iter().map(|l| format!("{}\n", format_pharaoh(l))).collect();
        let read = parse_pharaoh(text.as_bytes(), "p.align").unwrap();
        // As for every reader of lingo, a file of one newline holds no line.
        let want = if text == "\n" { 0 } else { lines.len() };
        prop_assert_eq!(read.len(), want);
        for (got, written) in read.iter().zip(&lines) {
            // Each link once, where it first appears.
            let mut first: Vec<(usize, usize)> = Vec::new();
            for link in written {
                if !first.contains(link) {
                    first.push(*link);
                }
            }
            prop_assert_eq!(got, &first);
        }
    }

    #[test]
    fn any_text_reads_as_links_or_names_its_first_bad_line(text in "[0-9 \\-a\n\t?]{0,60}") {
        let lines: Vec<&str> = text.strip_suffix('\n').unwrap_or(&text).split('\n').collect();
        match parse_pharaoh(text.as_bytes(), "p.align") {
            Ok(links) => {
                prop_assert_eq!(links.len(), if text.is_empty() || text == "\n" { 0 } else { lines.len() });
                for (line, l) in lines.iter().zip(&links) {
                    prop_assert_eq!(line.split_whitespace().count() >= l.len(), true);
                }
            }
            Err(Error::Row { line, problem: RowProblem::BadLink { token }, .. }) => {
                prop_assert!(line >= 1 && line <= lines.len());
                prop_assert!(lines[line - 1].split_whitespace().any(|t| t == token));
                let before = lines[..line - 1].join("\n");
                prop_assert!(parse_pharaoh(before.as_bytes(), "p.align").is_ok());
            }
            Err(other) => prop_assert!(false, "{other}"),
        }
    }
}
