//! Invariants over arbitrary input: tokenizers lose nothing but spaces, the
//! TSV reader accounts for every line and never panics, batches are shifts
//! of their examples, every translation metric scores any lines in range.

use lingo_data::*;
use proptest::prelude::*;

/// Text with letters, accents, digits, punctuation, apostrophes and spaces.
fn text() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zA-ZñÑáéíóúü0-9 .,;:!?¿¡'\"()\\-\u{301}Ω]{0,40}").unwrap()
}

proptest! {
    #[test]
    fn word_tokens_concatenate_to_the_text_without_spaces(s in text()) {
        let tokens = WordTokenizer::new().tokenize(&s);
        prop_assert!(tokens.iter().all(|t| !t.is_empty() && !t.contains(char::is_whitespace)));
        let without_spaces: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        prop_assert_eq!(tokens.concat(), without_spaces);
    }

    #[test]
    fn bpe_round_trips_any_text(train in proptest::collection::vec(text(), 1..6), probe in text(), merges in 0usize..60) {
        let config = BpeConfig { merges, min_count: 1, ..BpeConfig::default() };
        let bpe = Bpe::learn(&train, &config);
        for s in train.iter().chain([&probe]) {
            let pieces = bpe.tokenize(s);
            let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
            prop_assert_eq!(bpe.detokenize(&refs), config.pretokenizer.tokenize(s).join(" "));
        }
    }

    #[test]
    fn tsv_reader_accounts_for_every_line(bytes in proptest::collection::vec(prop_oneof![Just(b'\t'), Just(b'\n'), Just(b'a'), Just(b' '), Just(0xFFu8), Just(0xC3u8), Just(0u8)], 0..80)) {
        let lenient = ReadOptions { lenient: true, max_line_bytes: 12 };
        let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        if body.is_empty() {
            // No line at all: the file is wrong as a whole, in both modes.
            let empty = matches!(Corpus::parse_tsv(&bytes, "fuzz", &lenient), Err(Error::Empty { .. }));
            prop_assert!(empty, "an empty file must be Error::Empty");
            return Ok(());
        }
        let loaded = Corpus::parse_tsv(&bytes, "fuzz", &lenient).unwrap();
        let lines = body.split(|&b| b == b'\n').count();
        prop_assert_eq!(loaded.corpus.len() + loaded.skipped.len(), lines);
        // Strict mode fails exactly at the first skipped line.
        match (Corpus::parse_tsv(&bytes, "fuzz", &ReadOptions { lenient: false, ..lenient }), loaded.skipped.first()) {
            (Ok(strict), None) => prop_assert_eq!(strict.corpus, loaded.corpus),
            (Err(Error::Row { line, problem, .. }), Some(first)) => {
                prop_assert_eq!(line, first.line);
                prop_assert_eq!(&problem, &first.problem);
            }
            (other, first) => prop_assert!(false, "strict {other:?} vs first skipped {first:?}"),
        }
    }

    #[test]
    fn batches_are_padded_shifts_of_their_examples(
        lens in proptest::collection::vec((1usize..9, 0usize..9), 1..8)
    ) {
        let examples: Vec<Example> = lens
            .iter()
            .enumerate()
            .map(|(i, &(s, t))| Example {
                src: (0..s).map(|k| 4 + (i + k) % 7).collect(),
                tgt: [vec![SOS], (0..t).map(|k| 4 + (i * k) % 5).collect(), vec![EOS]].concat(),
            })
            .collect();
        let b = Batch::from_examples(&examples).unwrap();
        prop_assert_eq!(b.src.ncols(), lens.iter().map(|l| l.0).max().unwrap());
        prop_assert_eq!(b.tgt_in.ncols(), lens.iter().map(|l| l.1 + 1).max().unwrap());
        for (row, ex) in examples.iter().enumerate() {
            let n = b.tgt_lens[row];
            prop_assert_eq!(b.tgt_in.row(row).iter().take(n).copied().collect::<Vec<_>>(), &ex.tgt[..n]);
            prop_assert_eq!(b.tgt_out.row(row).iter().take(n).copied().collect::<Vec<_>>(), &ex.tgt[1..]);
            prop_assert!(b.tgt_in.row(row).iter().skip(n).all(|&id| id == PAD));
            prop_assert_eq!(b.src_pad_mask.row(row).iter().filter(|&&m| !m).count(), ex.src.len());
        }
    }
}

/// A line of a few words from a small vocabulary, so hypotheses and
/// references share words, repeat them, and move them about.
fn words_line() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        Just("el"),
        Just("gato"),
        Just("la"),
        Just("casa"),
        Just("."),
        Just("3,5"),
        Just("¿sí?"),
        Just("€")
    ];
    proptest::collection::vec(word, 0..24).prop_map(|w| w.join(" "))
}

proptest! {
    #[test]
    fn every_metric_scores_any_lines_in_range_and_a_perfect_match_perfectly(hyp in words_line(), reference in words_line()) {
        use lingo_data::{Bleu, BleuTokenize, Chrf, Metric, Ter};
        let metrics: [Box<dyn Metric>; 5] = [
            Box::new(Bleu::default()),
            Box::new(Bleu { tokenize: BleuTokenize::Intl, effective_order: true, ..Bleu::default() }),
            Box::new(Chrf::default()),
            Box::new(Chrf { word_order: 2, ..Chrf::default() }),
            Box::new(Ter::default()),
        ];
        for metric in &metrics {
            let score = metric.score(&metric.stats(&hyp, &[&reference]));
            prop_assert!(score.is_finite() && score >= 0.0, "{}: {score}", metric.name());
            if metric.higher_is_better() {
                prop_assert!(score <= 100.0 + 1e-9, "{}: {score}", metric.name());
            }
        }
        // TER: never more edits than rewriting every word, none against itself.
        let ter = Ter::default();
        let stats = ter.stats(&hyp, &[&reference]);
        let (h, r) = (hyp.split_whitespace().count(), reference.split_whitespace().count());
        prop_assert!(stats[0] <= h.max(r) as f64 && stats[1] == r as f64);
        prop_assert_eq!(ter.score(&ter.stats(&reference, &[&reference])), 0.0);
        if !reference.trim().is_empty() {
            prop_assert!((Chrf::default().score(&Chrf::default().stats(&reference, &[&reference])) - 100.0).abs() < 1e-9);
        }
    }
}
