//! Corpus BLEU, chrF and the 13a tokenizer against sacrebleu's own numbers
//! (fixture written by tools/gen_bleu_fixtures.py; sentences from eng-spa,
//! CC BY 2.0, Attribution: www.manythings.org/anki and tatoeba.org).

use lingo_data::{
    ScoreOptions, corpus_bleu, corpus_bleu_multi, corpus_bleu_with, corpus_chrf, corpus_chrf_multi, corpus_chrf_with,
    tokenize_13a,
};

use crate::sacrebleu::{Case, case, fixture};

/// The options a case was scored with.
fn options(case: &Case) -> ScoreOptions {
    ScoreOptions { lowercase: case.lowercase }
}

#[test]
fn tokenize_13a_matches_sacrebleu() {
    let cases = fixture().tokenize_13a;
    assert!(cases.len() > 30);
    for case in cases {
        assert_eq!(tokenize_13a(&case.input), case.output, "input {:?}", case.input);
    }
}

#[test]
fn corpus_bleu_matches_sacrebleu() {
    for case in fixture().cases {
        let (name, want) = (&case.name, &case.bleu);
        let got = corpus_bleu_with(&case.hyps, &case.refs, options(&case)).unwrap();
        assert_eq!(got.counts.to_vec(), want.counts, "{name}: counts");
        assert_eq!(got.totals.to_vec(), want.totals, "{name}: totals");
        assert_eq!((got.sys_len, got.ref_len), (want.sys_len, want.ref_len), "{name}: lengths");
        assert!((got.bp - want.bp).abs() < 1e-9, "{name}: bp {} vs {}", got.bp, want.bp);
        for (p, w) in got.precisions.iter().zip(&want.precisions) {
            assert!((p - w).abs() < 1e-9, "{name}: precision {p} vs {w}");
        }
        // The issue asks for 0.01; the same arithmetic gives far closer.
        assert!((got.score - want.score).abs() < 1e-6, "{name}: BLEU {} vs sacrebleu {}", got.score, want.score);
        assert_eq!(got.to_string(), want.formatted, "{name}: summary line");
        if let Some(single) = case.single_refs() {
            assert_eq!(corpus_bleu(&case.hyps, &single).unwrap(), got, "{name}: single-reference entry point");
            assert_eq!(corpus_bleu_multi(&case.hyps, &case.refs).unwrap(), got, "{name}: default options");
        }
    }
}

#[test]
fn corpus_chrf_matches_sacrebleu() {
    for case in fixture().cases {
        let got = corpus_chrf_with(&case.hyps, &case.refs, options(&case)).unwrap();
        assert!((got - case.chrf).abs() < 1e-6, "{}: chrF {got} vs sacrebleu {}", case.name, case.chrf);
        if let Some(single) = case.single_refs() {
            assert_eq!(corpus_chrf(&case.hyps, &single).unwrap(), got);
            assert_eq!(corpus_chrf_multi(&case.hyps, &case.refs).unwrap(), got);
        }
    }
}

#[test]
fn lowercasing_scores_the_recased_edits_as_the_edits_alone() {
    let (mixed, lower) = (case("recased light edits"), case("lowercase: recased light edits"));
    assert!(lower.lowercase && !mixed.lowercase);
    assert_eq!((&lower.hyps, &lower.refs), (&mixed.hyps, &mixed.refs), "one pair of files, two settings");
    assert!(lower.bleu.score > mixed.bleu.score + 20.0 && lower.chrf > mixed.chrf + 20.0);
}

#[test]
fn mismatched_inputs_are_errors() {
    assert!(corpus_bleu(&["a", "b"], &["a"]).is_err());
    assert!(corpus_chrf(&["a"], &["a", "b"]).is_err());
    let no_refs: Vec<Vec<&str>> = vec![vec![]];
    assert!(corpus_bleu_multi(&["a"], &no_refs).is_err());
    assert!(corpus_chrf_multi(&["a"], &no_refs).is_err());
}
