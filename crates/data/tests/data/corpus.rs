//! TSV and sentence-line reading (each malformed case with its line),
//! splits, and the real corpus.

use lingo_data::*;
use rand::{SeedableRng, rngs::StdRng};
use std::collections::HashSet;
use std::path::Path;

fn parse(bytes: &[u8]) -> Result<Loaded> {
    Corpus::parse_tsv(bytes, "data/x.tsv", &ReadOptions::default())
}

/// The strict error for `bytes`, as (line, problem).
fn row_error(bytes: &[u8], options: &ReadOptions) -> (usize, RowProblem) {
    match Corpus::parse_tsv(bytes, "data/x.tsv", options) {
        Err(Error::Row { path, line, problem }) => {
            assert_eq!(path, Path::new("data/x.tsv"));
            (line, problem)
        }
        other => panic!("expected a row error, got {other:?}"),
    }
}

#[test]
fn reads_pairs_and_ignores_extra_columns() {
    let loaded = parse("Go.\tVe.\nHi.\tHola.\tCC-BY 2.0 (France) Attribution\r\nRun!\t¡Corre!".as_bytes()).unwrap();
    let pairs = &loaded.corpus.pairs;
    assert_eq!(pairs.len(), 3);
    assert_eq!((pairs[1].src.as_str(), pairs[1].tgt.as_str()), ("Hi.", "Hola."));
    assert_eq!(pairs[2].tgt, "¡Corre!");
    assert!(loaded.skipped.is_empty());
    assert_eq!(loaded.extra_columns, [2], "the line whose third column was ignored");
    for empty in [&b""[..], b"\n", b"\xEF\xBB\xBF"] {
        assert!(matches!(parse(empty), Err(Error::Empty { .. })), "{empty:?}");
    }
}

#[test]
fn each_malformed_row_names_its_line_and_problem() {
    let strict = ReadOptions::default();
    let good = "A.\tB.\n";
    let cases: Vec<(Vec<u8>, RowProblem)> = vec![
        (format!("{good}{good}no tab here\n{good}").into_bytes(), RowProblem::MissingTab),
        (format!("{good}{good}\tsolo\n").into_bytes(), RowProblem::EmptySource),
        (format!("{good}{good}solo\t  \n").into_bytes(), RowProblem::EmptyTarget),
        ([good.as_bytes(), good.as_bytes(), b"caf\xC3\tb\xFFad\n"].concat(), RowProblem::InvalidUtf8 { byte: 3 }),
        (format!("{good}{good}\n{good}").into_bytes(), RowProblem::BlankLine),
        ([good.as_bytes(), good.as_bytes(), b"G\0o\0\t\0\n"].concat(), RowProblem::ControlChar { byte: 1, code: 0 }),
        (format!("{good}{good}Go.\rHi.\tVe.\n").into_bytes(), RowProblem::ControlChar { byte: 3, code: b'\r' }),
    ];
    for (bytes, problem) in cases {
        assert_eq!(row_error(&bytes, &strict), (3, problem));
    }
    let tight = ReadOptions { max_line_bytes: 8, ..strict };
    let long = format!("{good}{good}012345\t6789\n");
    assert_eq!(row_error(long.as_bytes(), &tight), (3, RowProblem::TooLong { bytes: 11, max: 8 }));
}

#[test]
fn sentence_lines_keep_their_numbering_and_bad_lines_are_named() {
    let lines = |bytes: &[u8]| parse_lines(bytes, "in.txt", 16);
    assert_eq!(lines(b"\xEF\xBB\xBFGo.\r\n\n  \nHi.\tthere").unwrap(), ["Go.", "", "  ", "Hi.\tthere"]);
    for empty in [&b""[..], b"\n", b"\xEF\xBB\xBF"] {
        assert_eq!(lines(empty).unwrap(), Vec::<String>::new(), "{empty:?}");
    }
    assert_eq!(lines(b"\n\n").unwrap(), ["", ""], "two blank lines");
    let cases: Vec<(&[u8], RowProblem)> = vec![
        (b"Go.\nHi.\nb\xFFad\n", RowProblem::InvalidUtf8 { byte: 1 }),
        (b"Go.\nHi.\nG\0o\0\n", RowProblem::ControlChar { byte: 1, code: 0 }),
        (b"Go.\nHi.\nGo.\rHi.\n", RowProblem::ControlChar { byte: 3, code: b'\r' }),
        (b"Go.\nHi.\n0123456789abcdefg\n", RowProblem::TooLong { bytes: 17, max: 16 }),
    ];
    for (bytes, problem) in cases {
        match lines(bytes) {
            Err(Error::Row { path, line, problem: found }) => {
                assert_eq!((path.as_path(), line, found), (Path::new("in.txt"), 3, problem))
            }
            other => panic!("{bytes:?}: expected a row error, got {other:?}"),
        }
    }
}

#[test]
fn error_display_reads_like_a_compiler_message() {
    let err = parse(b"Go.\tVe.\nHi.\tHola.\nbroken\n").unwrap_err();
    assert_eq!(err.to_string(), "data/x.tsv:3: missing tab between source and target");
}

#[test]
fn lenient_mode_skips_and_counts() {
    let data = b"A.\tB.\nbad\n\tx\nC.\tD.\n\xFF\tx\n";
    let lenient = ReadOptions { lenient: true, ..ReadOptions::default() };
    let loaded = Corpus::parse_tsv(data, "x", &lenient).unwrap();
    assert_eq!(loaded.corpus.len(), 2);
    let lines: Vec<usize> = loaded.skipped.iter().map(|s| s.line).collect();
    assert_eq!(lines, [2, 3, 5]);
    assert_eq!(loaded.skipped[0].problem, RowProblem::MissingTab);
}

#[test]
fn file_errors_name_the_file() {
    let dir = std::env::temp_dir().join(format!("lingo-data-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.tsv");
    std::fs::write(&path, "Go.\tVe.\nHi.\tHola.\noops\n").unwrap();
    let err = Corpus::read_tsv(&path, &ReadOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), format!("{}:3: missing tab between source and target", path.display()));
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(Corpus::read_tsv(&path, &ReadOptions::default()), Err(Error::Io { .. })));
}

/// A corpus with repeated source sentences, like eng-spa.
fn toy_corpus() -> Corpus {
    let pairs = (0..300).map(|i| Pair { src: format!("s{}", i / 3), tgt: format!("t{i}") }).collect();
    Corpus { pairs }
}

#[test]
fn splits_do_not_overlap_and_are_reproducible() {
    let corpus = toy_corpus();
    let fractions = SplitFractions { valid: 0.1, test: 0.1 };
    let a = corpus.split(fractions, &mut StdRng::seed_from_u64(5)).unwrap();
    let b = corpus.split(fractions, &mut StdRng::seed_from_u64(5)).unwrap();
    let c = corpus.split(fractions, &mut StdRng::seed_from_u64(6)).unwrap();
    assert_eq!(a, b);
    assert_ne!(a.test, c.test);
    assert_eq!(a.train.len() + a.valid.len() + a.test.len(), corpus.len());
    // Groups of 3 pairs: the parts hit their targets to within one group.
    assert_eq!((a.valid.len(), a.test.len()), (30, 30));
    let sources = |c: &Corpus| c.pairs.iter().map(|p| p.src.clone()).collect::<HashSet<_>>();
    let (train, valid, test) = (sources(&a.train), sources(&a.valid), sources(&a.test));
    assert!(train.is_disjoint(&valid) && train.is_disjoint(&test) && valid.is_disjoint(&test));
    let all: HashSet<String> =
        a.train.pairs.iter().chain(&a.valid.pairs).chain(&a.test.pairs).map(|p| p.tgt.clone()).collect();
    assert_eq!(all.len(), corpus.len(), "every pair lands in exactly one part");
    assert!(corpus.split(SplitFractions { valid: 0.6, test: 0.5 }, &mut StdRng::seed_from_u64(0)).is_err());
}

#[test]
fn filter_and_shuffle() {
    let mut corpus = toy_corpus();
    corpus.pairs[0].src = "one two three four".into();
    assert_eq!(corpus.filter_max_len(&WordTokenizer::new(), 3, 3), 1);
    let mut shuffled = corpus.clone();
    shuffled.shuffle(&mut StdRng::seed_from_u64(9));
    assert_ne!(shuffled, corpus);
    let mut sorted = shuffled.pairs.clone();
    sorted.sort_by(|a, b| a.tgt.cmp(&b.tgt));
    let mut original = corpus.pairs.clone();
    original.sort_by(|a, b| a.tgt.cmp(&b.tgt));
    assert_eq!(sorted, original, "a shuffle is a permutation");
}

/// The real corpus, if the shared data folder is present.
fn eng_spa() -> Option<std::path::PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/eng-spa.tsv");
    if path.exists() {
        Some(path)
    } else {
        println!("note: {} not found; skipping the eng-spa test", path.display());
        None
    }
}

#[test]
fn loads_eng_spa() {
    let Some(path) = eng_spa() else { return };
    let start = std::time::Instant::now();
    let mut corpus = Corpus::read_tsv(&path, &ReadOptions::default()).unwrap().corpus;
    let read = start.elapsed();
    assert_eq!(corpus.len(), 118_121);
    assert_eq!((corpus.pairs[0].src.as_str(), corpus.pairs[0].tgt.as_str()), ("Go.", "Ve."));
    assert_eq!(corpus.dedup(), 9, "the README lists 9 exact duplicate lines");
    let tok = WordTokenizer::lowercased();
    let src_vocab = Vocab::build(corpus.pairs.iter().map(|p| &p.src), &tok, &VocabConfig::default());
    let tgt_vocab = Vocab::build(corpus.pairs.iter().map(|p| &p.tgt), &tok, &VocabConfig::default());
    let examples = corpus.encode(&tok, &src_vocab, &tok, &tgt_vocab);
    println!(
        "eng-spa: read {read:?}, read+vocab+encode {:?}; vocab {} / {}",
        start.elapsed(),
        src_vocab.len(),
        tgt_vocab.len()
    );
    assert_eq!(examples.len(), corpus.len());
    // Every word of the corpus is in its own vocabulary.
    assert!(examples.iter().all(|e| !e.src.contains(&UNK) && !e.tgt.contains(&UNK)));
    assert_eq!(tgt_vocab.decode(&examples[0].tgt, true), ["ve", "."]);

    let split = corpus.split(SplitFractions { valid: 0.05, test: 0.05 }, &mut StdRng::seed_from_u64(0)).unwrap();
    let train: HashSet<&str> = split.train.pairs.iter().map(|p| p.src.as_str()).collect();
    assert!(split.valid.pairs.iter().chain(&split.test.pairs).all(|p| !train.contains(p.src.as_str())));
    assert_eq!(split.train.len() + split.valid.len() + split.test.len(), corpus.len());
    assert!(split.test.len().abs_diff(corpus.len() / 20) < 20);
}

#[test]
fn a_reader_keeps_one_line_in_memory_and_gives_up_on_a_line_without_end() {
    // Lines are read through a small buffer; the result is the same as from memory.
    let text = "Go.\tVe.\nHi.\tHola.\n".repeat(1000);
    let streamed = Corpus::read_tsv_from(
        std::io::BufReader::with_capacity(7, text.as_bytes()),
        "x".as_ref(),
        &ReadOptions::default(),
    )
    .unwrap();
    assert_eq!(streamed, parse(text.as_bytes()).unwrap());
    // An over-long line that ends is one bad row: lenient reading skips it and goes on.
    let long = format!("Go.\tVe.\n{}\tx\nHi.\tHola.\n", "a".repeat(100_000));
    let lenient = ReadOptions { lenient: true, ..ReadOptions::default() };
    let loaded = Corpus::parse_tsv(long.as_bytes(), "x", &lenient).unwrap();
    assert_eq!((loaded.corpus.len(), loaded.skipped[0].line), (2, 2));
    assert_eq!(loaded.skipped[0].problem, RowProblem::TooLong { bytes: 100_002, max: 4096 });
    // One that never ends stops the reading, lenient or not.
    let endless = std::io::BufReader::new(std::io::Read::chain(&b"Go.\tVe.\n"[..], std::io::repeat(b'a')));
    let err = Corpus::read_tsv_from(endless, "x".as_ref(), &lenient).unwrap_err();
    assert!(matches!(err, Error::Row { line: 2, problem: RowProblem::NoLineEnd { bytes: 1_048_576 }, .. }), "{err}");
}
