//! lingo's translation metrics against sacrebleu's own numbers (fixture
//! written by tools/gen_score_fixtures.py; sentences from eng-spa, CC BY
//! 2.0, Attribution: www.manythings.org/anki and tatoeba.org): BLEU under
//! each tokenizer, chrF, chrF++, TER and its switches, sentence scores,
//! signatures and paired bootstrap tests.

use lingo_data::{
    Bleu, BleuTokenize, Chrf, Metric, NumpyRng, PairedBootstrap, Ter, corpus_bleu, corpus_chrf, corpus_score,
    sentence_scores, sentence_stats, tokenize_13a,
};

use crate::sacrebleu::{Bleu as Want, Case, case, fixture};

/// The tolerance for every score: sacrebleu's to 0.01. (The same
/// arithmetic gives far closer; the tests below hold 1e-6 where they can.)
const CLOSE: f64 = 1e-6;

/// BLEU as a case was scored, under `tokenize`.
fn bleu(case: &Case, tokenize: BleuTokenize) -> Bleu {
    Bleu { tokenize, lowercase: case.lowercase, effective_order: false }
}

/// chrF as a case was scored, with `word_order` word n-grams.
fn chrf(case: &Case, word_order: usize) -> Chrf {
    Chrf { word_order, lowercase: case.lowercase, ..Chrf::default() }
}

/// Checks every part of a BLEU score against sacrebleu's.
fn assert_bleu(got: &lingo_data::BleuScore, want: &Want, what: &str) {
    assert_eq!(got.counts.to_vec(), want.counts, "{what}: counts");
    assert_eq!(got.totals.to_vec(), want.totals, "{what}: totals");
    assert_eq!((got.sys_len, got.ref_len), (want.sys_len, want.ref_len), "{what}: lengths");
    assert!((got.bp - want.bp).abs() < 1e-9, "{what}: bp {} vs {}", got.bp, want.bp);
    for (p, w) in got.precisions.iter().zip(&want.precisions) {
        assert!((p - w).abs() < 1e-9, "{what}: precision {p} vs {w}");
    }
    assert!((got.score - want.score).abs() < CLOSE, "{what}: BLEU {} vs sacrebleu {}", got.score, want.score);
    assert_eq!(got.to_string(), want.formatted, "{what}: summary line");
}

#[test]
fn tokenize_13a_and_intl_match_sacrebleu() {
    let fixture = fixture();
    assert!(fixture.tokenize_13a.len() > 30 && fixture.tokenize_intl.len() > 40);
    for case in fixture.tokenize_13a {
        assert_eq!(tokenize_13a(&case.input), case.output, "13a of {:?}", case.input);
        assert_eq!(BleuTokenize::V13a.apply(&case.input), case.output, "13a of {:?}", case.input);
    }
    for case in fixture.tokenize_intl {
        assert_eq!(BleuTokenize::Intl.apply(&case.input), case.output, "intl of {:?}", case.input);
    }
}

#[test]
fn corpus_bleu_matches_sacrebleu_under_every_tokenizer() {
    let cases = fixture().cases;
    assert!(cases.len() >= 20);
    for case in &cases {
        assert_bleu(&bleu(case, BleuTokenize::V13a).corpus(&case.hyps, &case.refs).unwrap(), &case.bleu, &case.name);
        for (tokenize, name) in
            [(BleuTokenize::Intl, "intl"), (BleuTokenize::Char, "char"), (BleuTokenize::None, "none")]
        {
            let got = bleu(case, tokenize).corpus(&case.hyps, &case.refs).unwrap();
            assert_bleu(&got, &case.bleu_by_tokenizer[name], &format!("{}, tok:{name}", case.name));
        }
        if let Some(single) = case.single_refs() {
            assert_eq!(corpus_bleu(&case.hyps, &single).unwrap().score, case.bleu.score, "{}", case.name);
        }
    }
    // The tokenizers are not all alike on these cases: each one's scores differ from 13a's somewhere.
    for name in ["intl", "char", "none"] {
        assert!(cases.iter().any(|c| (c.bleu_by_tokenizer[name].score - c.bleu.score).abs() > 1.0), "tok:{name}");
    }
}

#[test]
fn chrf_and_chrf_plus_plus_match_sacrebleu() {
    for case in fixture().cases {
        let got = corpus_score(&chrf(&case, 0), &case.hyps, &case.refs).unwrap();
        assert!((got - case.chrf).abs() < CLOSE, "{}: chrF {got} vs sacrebleu {}", case.name, case.chrf);
        let got = corpus_score(&chrf(&case, 2), &case.hyps, &case.refs).unwrap();
        assert!((got - case.chrf_pp).abs() < CLOSE, "{}: chrF++ {got} vs sacrebleu {}", case.name, case.chrf_pp);
        if let Some(single) = case.single_refs() {
            assert_eq!(corpus_chrf(&case.hyps, &single).unwrap(), case.chrf);
        }
    }
}

#[test]
fn ter_matches_sacrebleu_with_each_switch() {
    let cases = fixture().cases;
    for case in &cases {
        let stats = lingo_data::sum_stats(&sentence_stats(&Ter::default(), &case.hyps, &case.refs).unwrap());
        assert_eq!((stats[0], stats[1]), (case.ter.num_edits, case.ter.ref_length), "{}: edits, length", case.name);
        let got = Ter::default().score(&stats);
        assert!((got - case.ter.score).abs() < CLOSE, "{}: TER {got} vs sacrebleu {}", case.name, case.ter.score);
        for (name, ter) in [
            ("case_sensitive", Ter { case_sensitive: true, ..Ter::default() }),
            ("normalized", Ter { normalized: true, ..Ter::default() }),
            ("no_punct", Ter { no_punct: true, ..Ter::default() }),
        ] {
            let (got, want) = (corpus_score(&ter, &case.hyps, &case.refs).unwrap(), case.ter_variants[name]);
            assert!((got - want).abs() < CLOSE, "{}, {name}: TER {got} vs sacrebleu {want}", case.name);
        }
    }
    // Shifts matter on these cases: TER is below what insertions and deletions alone would give.
    let moved = case("moved blocks");
    assert!(moved.ter.score < 25.0 && moved.bleu.score < 60.0, "a moved block costs BLEU more than TER");
}

#[test]
fn sentence_scores_match_sacrebleu() {
    for case in fixture().cases {
        let want = &case.sentence;
        let checks = [
            (
                "BLEU",
                case.hyps
                    .iter()
                    .zip(&case.refs)
                    .map(|(h, r)| {
                        let refs: Vec<&str> = r.iter().map(String::as_str).collect();
                        bleu(&case, BleuTokenize::V13a).sentence(h, &refs).score
                    })
                    .collect::<Vec<_>>(),
                &want.bleu,
            ),
            ("chrF", sentence_scores(&chrf(&case, 0), &case.hyps, &case.refs).unwrap(), &want.chrf),
            ("chrF++", sentence_scores(&chrf(&case, 2), &case.hyps, &case.refs).unwrap(), &want.chrf_pp),
            ("TER", sentence_scores(&Ter::default(), &case.hyps, &case.refs).unwrap(), &want.ter),
        ];
        for (metric, got, want) in checks {
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(want).enumerate() {
                assert!((g - w).abs() < CLOSE, "{}: sentence {i} {metric} {g} vs sacrebleu {w}", case.name);
            }
        }
    }
}

#[test]
fn signatures_are_sacrebleu_s_but_for_the_version() {
    let without_version = |s: &str| s.rsplit_once("|version:").unwrap().0.to_string();
    for case in fixture().cases {
        let nrefs = case.refs[0].len();
        let ours = [
            ("bleu", bleu(&case, BleuTokenize::V13a).signature(nrefs)),
            ("chrf", chrf(&case, 0).signature(nrefs)),
            ("chrf_pp", chrf(&case, 2).signature(nrefs)),
            ("ter", Ter::default().signature(nrefs)),
        ];
        for (name, signature) in ours {
            let (ours, theirs) = (signature.to_string(), &case.signatures[name]);
            assert_eq!(without_version(&ours), without_version(theirs), "{}: {name}", case.name);
            assert!(ours.ends_with(&format!("|version:lingo-{}", env!("CARGO_PKG_VERSION"))));
        }
    }
}

#[test]
fn the_generator_draws_numpy_s_samples() {
    let draws = fixture().draws;
    let mut rng = NumpyRng::new(draws.seed);
    for row in &draws.rows {
        let ours: Vec<usize> = (0..draws.n).map(|_| rng.below(draws.n)).collect();
        assert_eq!(&ours, row);
    }
}

#[test]
fn paired_bootstrap_matches_sacrebleu_for_the_same_seed() {
    let tests = fixture().paired_bs;
    assert!(tests.len() >= 2 && tests.iter().any(|t| t.seed != 12345));
    for test in tests {
        let metrics: [(&str, Box<dyn Metric>); 3] = [
            ("BLEU", Box::new(Bleu::default())),
            ("chrF2", Box::new(Chrf::default())),
            ("TER", Box::new(Ter::default())),
        ];
        let bootstrap = PairedBootstrap { resamples: test.resamples, seed: test.seed };
        for (name, metric) in metrics {
            let stats: Vec<_> =
                test.hyps.iter().map(|h| sentence_stats(metric.as_ref(), h, &test.refs).unwrap()).collect();
            let got = bootstrap.compare(metric.as_ref(), &stats).unwrap();
            let want = &test.results[name];
            for (k, (g, w)) in got.iter().zip(want).enumerate() {
                let what = format!("seed {}, {name}, system {}", test.seed, test.names[k]);
                assert!((g.score - w.score).abs() < CLOSE, "{what}: score {} vs {}", g.score, w.score);
                assert!((g.mean - w.mean).abs() < 1e-4, "{what}: mean {} vs {}", g.mean, w.mean);
                assert!((g.ci - w.ci).abs() < 1e-4, "{what}: ci {} vs {}", g.ci, w.ci);
                match (g.p_value, w.p_value) {
                    (None, None) => assert_eq!(k, 0),
                    (Some(g), Some(w)) => assert!((g - w).abs() < 1e-9, "{what}: p {g} vs {w}"),
                    other => panic!("{what}: p-values {other:?}"),
                }
            }
            let signature = metric.signature(1).with_bootstrap(test.resamples, test.seed).to_string();
            let without_version = |s: &str| s.rsplit_once("|version:").unwrap().0.to_string();
            assert_eq!(without_version(&signature), without_version(&test.signatures[name]), "{name}");
        }
    }
}

#[test]
fn mismatched_inputs_are_errors() {
    assert!(corpus_bleu(&["a", "b"], &["a"]).is_err());
    assert!(corpus_chrf(&["a"], &["a", "b"]).is_err());
    let no_refs: Vec<Vec<&str>> = vec![vec![]];
    assert!(Bleu::default().corpus(&["a"], &no_refs).is_err());
    assert!(corpus_score(&Ter::default(), &["a"], &no_refs).is_err());
    let stats = sentence_stats(&Ter::default(), &["a"], &[vec!["a"]]).unwrap();
    assert!(PairedBootstrap::default().compare(&Ter::default(), &[stats.clone(), vec![]]).is_err());
    assert!(PairedBootstrap { resamples: 0, seed: 1 }.compare(&Ter::default(), &[stats]).is_err());
}

#[test]
fn lowercasing_scores_the_recased_edits_as_the_edits_alone() {
    let (mixed, lower) = (case("recased light edits"), case("lowercase: recased light edits"));
    assert!(lower.lowercase && !mixed.lowercase);
    assert_eq!((&lower.hyps, &lower.refs), (&mixed.hyps, &mixed.refs), "one pair of files, two settings");
    assert!(lower.bleu.score > mixed.bleu.score + 20.0 && lower.chrf > mixed.chrf + 20.0);
}
