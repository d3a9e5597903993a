//! `lingo score` on files built from the sacrebleu fixture of lingo-data
//! (`crates/data/tests/fixtures/score_sacrebleu.json`, written by
//! `tools/gen_score_fixtures.py`; sentences from eng-spa, CC BY 2.0,
//! Attribution: www.manythings.org/anki and tatoeba.org): the printed
//! scores are sacrebleu's to the printed precision, with its signature and
//! JSON; bad files are one-line errors.

use std::path::{Path, PathBuf};

use crate::common::{assert_one_line_error, lingo_command, lingo_in, stderr, stdout};

#[path = "../../../data/tests/data/sacrebleu/mod.rs"]
mod sacrebleu;

use sacrebleu::{Case, case, fixture};

/// Writes `case` into `dir` as `hyp.txt` and one `ref<k>.txt` per
/// reference, and returns `score --hyp hyp.txt --ref ref0.txt ...`.
fn write_case(dir: &Path, case: &Case) -> Vec<String> {
    let lines = |texts: Vec<&str>| texts.iter().map(|t| format!("{t}\n")).collect::<String>();
    std::fs::write(dir.join("hyp.txt"), lines(case.hyps.iter().map(String::as_str).collect())).unwrap();
    let mut args = vec!["score".to_string(), "--hyp".into(), "hyp.txt".into()];
    for k in 0..case.refs[0].len() {
        let name = format!("ref{k}.txt");
        std::fs::write(dir.join(&name), lines(case.refs.iter().map(|r| r[k].as_str()).collect())).unwrap();
        args.extend(["--ref".into(), name]);
    }
    args
}

/// Runs `lingo` in `dir` and returns its standard output, checking it succeeded.
fn run_ok(dir: &Path, args: &[String]) -> String {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = lingo_in(dir, &args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

/// The signatures `lingo score` prints for BLEU and chrF.
fn signatures(nrefs: usize, lowercase: bool) -> [String; 2] {
    let (case, version) = (if lowercase { "lc" } else { "mixed" }, env!("CARGO_PKG_VERSION"));
    [
        format!("nrefs:{nrefs}|case:{case}|eff:no|tok:13a|smooth:exp|version:lingo-{version}"),
        format!("nrefs:{nrefs}|case:{case}|eff:yes|nc:6|nw:0|space:no|version:lingo-{version}"),
    ]
}

#[test]
fn every_fixture_case_prints_sacrebleu_s_scores_and_signatures() {
    let cases = sacrebleu::fixture().cases;
    assert!(cases.len() >= 14 && cases.iter().any(|c| c.lowercase) && cases.iter().any(|c| c.refs[0].len() > 1));
    for case in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut args = write_case(dir.path(), &case);
        if case.lowercase {
            args.push("--lowercase".into());
        }
        let [bleu_signature, chrf_signature] = signatures(case.refs[0].len(), case.lowercase);
        let want = [
            case.bleu.formatted.clone(),
            format!("  signature: {bleu_signature}"),
            format!("chrF2 = {:.2}", case.chrf),
            format!("  signature: {chrf_signature}"),
        ];
        assert_eq!(run_ok(dir.path(), &args).lines().collect::<Vec<_>>(), want, "{}", case.name);
    }
}

#[test]
fn json_gives_sacrebleu_s_objects_with_unrounded_scores() {
    let case = case("multiple references");
    let dir = tempfile::tempdir().unwrap();
    let mut args = write_case(dir.path(), &case);
    args.push("--json".into());
    let text = run_ok(dir.path(), &args);
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let [bleu, chrf] = &lines[..] else { panic!("two JSON lines expected: {text}") };
    let [bleu_signature, chrf_signature] = signatures(2, false);
    let version = format!("lingo-{}", env!("CARGO_PKG_VERSION"));

    assert_eq!((bleu["name"].as_str(), bleu["signature"].as_str()), (Some("BLEU"), Some(bleu_signature.as_str())));
    assert!((bleu["score"].as_f64().unwrap() - case.bleu.score).abs() < 1e-9, "{bleu}");
    let summary = case.bleu.formatted.splitn(4, ' ').nth(3).unwrap();
    assert_eq!(bleu["verbose_score"].as_str(), Some(summary));
    assert_eq!(bleu["counts"], serde_json::json!(case.bleu.counts));
    assert_eq!(bleu["totals"], serde_json::json!(case.bleu.totals));
    for (key, value) in [("nrefs", "2"), ("case", "mixed"), ("eff", "no"), ("tok", "13a"), ("smooth", "exp")] {
        assert_eq!(bleu[key].as_str(), Some(value), "BLEU {key}");
    }
    assert_eq!(bleu["version"].as_str(), Some(version.as_str()));

    assert_eq!((chrf["name"].as_str(), chrf["signature"].as_str()), (Some("chrF2"), Some(chrf_signature.as_str())));
    assert!((chrf["score"].as_f64().unwrap() - case.chrf).abs() < 1e-9, "{chrf}");
    let mut keys: Vec<&str> = chrf.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["case", "eff", "name", "nc", "nrefs", "nw", "score", "signature", "space", "version"]);
}

#[test]
fn lowercase_raises_recased_translations_to_sacrebleu_s_lowercased_score() {
    let (mixed, lower) = (case("recased light edits"), case("lowercase: recased light edits"));
    assert_eq!((&mixed.hyps, &mixed.refs), (&lower.hyps, &lower.refs), "one pair of files");
    let dir = tempfile::tempdir().unwrap();
    let mut args = write_case(dir.path(), &mixed);
    let first_line = |args: &[String]| run_ok(dir.path(), args).lines().next().unwrap().to_owned();
    assert_eq!(first_line(&args), mixed.bleu.formatted);
    args.push("--lowercase".into());
    assert_eq!(first_line(&args), lower.bleu.formatted);
    assert!(lower.bleu.score > mixed.bleu.score + 20.0, "lowercasing must matter in this case");
}

#[test]
fn translations_can_come_from_standard_input() {
    let case = case("eng-spa light edits");
    let dir = tempfile::tempdir().unwrap();
    write_case(dir.path(), &case);
    let hyp = std::fs::File::open(dir.path().join("hyp.txt")).unwrap();
    let out = lingo_command(dir.path(), &["score", "--hyp", "-", "--ref", "ref0.txt"]).stdin(hyp).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().next(), Some(case.bleu.formatted.as_str()));
}

#[test]
fn bad_files_are_one_line_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| -> PathBuf { dir.path().join(name) };
    std::fs::write(path("hyp.txt"), "Hola.\nAdiós.\n").unwrap();
    std::fs::write(path("ref.txt"), "Hola.\nAdiós.\n").unwrap();
    std::fs::write(path("short.txt"), "Hola.\n").unwrap();
    std::fs::write(path("bad.txt"), b"Hola.\nAdi\xf3s.\n").unwrap();
    std::fs::write(path("empty.txt"), "").unwrap();
    let score = |args: &[&str]| lingo_in(dir.path(), &[&["score"], args].concat());
    let cases: [(&[&str], &str, i32); 7] = [
        (&["--hyp", "hyp.txt", "--ref", "missing.txt"], "missing.txt: No such file", 1),
        (&["--hyp", "missing.txt", "--ref", "ref.txt"], "missing.txt: No such file", 1),
        (&["--hyp", "hyp.txt", "--ref", "bad.txt"], "bad.txt:2: invalid UTF-8 at byte 3 of the line", 1),
        (&["--hyp", "bad.txt", "--ref", "ref.txt"], "bad.txt:2: invalid UTF-8", 1),
        (
            &["--hyp", "hyp.txt", "--ref", "ref.txt", "--ref", "short.txt"],
            "invalid --ref short.txt: has 1 lines, but --hyp hyp.txt has 2",
            1,
        ),
        (&["--hyp", "empty.txt", "--ref", "ref.txt"], "invalid --hyp empty.txt: has no lines to score", 1),
        (&["--hyp", "hyp.txt"], "--ref", 2),
    ];
    for (args, needle, code) in cases {
        let out = score(args);
        assert_one_line_error(&out, needle);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{args:?} printed a score");
    }
    let both = lingo_command(dir.path(), &["score", "--hyp", "-", "--ref", "-"]).output().unwrap();
    assert_one_line_error(&both, "cannot read standard input twice");
    assert_eq!(both.status.code(), Some(2));
}

/// Runs `lingo` with `args` plus `extra` on `case`'s files, as JSON lines.
fn json_lines(case: &Case, extra: &[&str]) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let mut args = write_case(dir.path(), case);
    args.extend(extra.iter().map(|a| a.to_string()));
    args.push("--json".into());
    run_ok(dir.path(), &args).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn ter_chrf_plus_plus_and_each_tokenizer_print_sacrebleu_s_scores() {
    for case in fixture().cases {
        let lowercase: &[&str] = if case.lowercase { &["--lowercase"] } else { &[] };
        let lines = json_lines(
            &case,
            &[&["--metrics", "ter,chrf,bleu", "--chrf-word-order", "2", "--tokenize", "intl"], lowercase].concat(),
        );
        let [ter, chrf_pp, bleu] = &lines[..] else { panic!("{}: three JSON lines expected", case.name) };
        let close = |v: &serde_json::Value, want: f64| (v["score"].as_f64().unwrap() - want).abs() < 1e-6;
        assert!(close(ter, case.ter.score) && ter["name"] == "TER", "{}: {ter}", case.name);
        assert!(close(chrf_pp, case.chrf_pp) && chrf_pp["name"] == "chrF2++", "{}: {chrf_pp}", case.name);
        assert!(close(bleu, case.bleu_by_tokenizer["intl"].score) && bleu["tok"] == "intl", "{}: {bleu}", case.name);
        let without_version = |s: &str| s.rsplit_once("|version:").unwrap().0.to_string();
        assert_eq!(without_version(ter["signature"].as_str().unwrap()), without_version(&case.signatures["ter"]));
    }
    // The text line: `TER = ...` to two places, sacrebleu's rounding.
    let case = case("moved blocks");
    let dir = tempfile::tempdir().unwrap();
    let mut args = write_case(dir.path(), &case);
    args.extend(["--metrics".into(), "ter".into()]);
    assert_eq!(run_ok(dir.path(), &args).lines().next(), Some(format!("TER = {:.2}", case.ter.score).as_str()));
}

#[test]
fn sentence_gives_each_line_s_scores_as_sacrebleu_s_sentence_scores() {
    let case = case("eng-spa light edits");
    let lines = json_lines(&case, &["--sentence", "--metrics", "bleu,chrf,ter"]);
    assert_eq!(lines.len(), case.hyps.len());
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["line"], i + 1);
        for (name, want) in [("BLEU", &case.sentence.bleu), ("chrF2", &case.sentence.chrf), ("TER", &case.sentence.ter)]
        {
            let got = line[name].as_f64().unwrap();
            assert!((got - want[i]).abs() < 1e-6, "line {}: {name} {got} vs sacrebleu {}", i + 1, want[i]);
        }
    }
}

#[test]
fn paired_bs_gives_sacrebleu_s_means_intervals_and_p_values() {
    for test in fixture().paired_bs {
        let dir = tempfile::tempdir().unwrap();
        let lines = |texts: &[String]| texts.iter().map(|t| format!("{t}\n")).collect::<String>();
        let mut args = vec!["score".to_string()];
        for (name, hyps) in test.names.iter().zip(&test.hyps) {
            std::fs::write(dir.path().join(name), lines(hyps)).unwrap();
            args.extend(["--hyp".into(), name.clone()]);
        }
        let refs: Vec<String> = test.refs.iter().map(|r| r[0].clone()).collect();
        std::fs::write(dir.path().join("ref.txt"), lines(&refs)).unwrap();
        args.extend(["--ref", "ref.txt", "--metrics", "bleu,chrf,ter", "--paired-bs", "--json"].map(String::from));
        args.extend(["--paired-bs-n".into(), test.resamples.to_string(), "--seed".into(), test.seed.to_string()]);
        let out = run_ok(dir.path(), &args);
        let rows: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(rows.len(), test.names.len());
        for (k, row) in rows.iter().enumerate() {
            assert_eq!(
                (row["system"].as_str(), row["baseline"].as_bool()),
                (Some(test.names[k].as_str()), Some(k == 0))
            );
            for metric in ["BLEU", "chrF2", "TER"] {
                let (got, want) = (&row[metric], &test.results[metric][k]);
                let what = format!("seed {}, {metric}, {}", test.seed, test.names[k]);
                for (key, value) in [("score", want.score), ("mean", want.mean), ("ci", want.ci)] {
                    assert!((got[key].as_f64().unwrap() - value).abs() < 1e-4, "{what}: {key} {got}");
                }
                assert_eq!(
                    got["p_value"].as_f64().map(|p| (p * 1e6).round()),
                    want.p_value.map(|p| (p * 1e6).round()),
                    "{what}"
                );
                assert!(
                    got["signature"].as_str().unwrap().contains(&format!("|bs:{}|seed:{}|", test.resamples, test.seed))
                );
            }
        }
    }
}

#[test]
fn bad_combinations_of_systems_are_one_line_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "Hola.\nAdiós.\n").unwrap();
    std::fs::write(dir.path().join("short.txt"), "Hola.\n").unwrap();
    let score = |args: &[&str]| lingo_in(dir.path(), &[&["score", "--ref", "a.txt"], args].concat());
    let cases: [(&[&str], &str, i32); 5] = [
        (&["--hyp", "a.txt", "--hyp", "a.txt"], "several --hyp files are compared with --paired-bs", 2),
        (&["--hyp", "a.txt", "--paired-bs"], "needs at least two --hyp files", 2),
        (
            &["--hyp", "a.txt", "--hyp", "short.txt", "--paired-bs"],
            "--hyp short.txt: has 1 lines, but --hyp a.txt has 2",
            1,
        ),
        (&["--hyp", "a.txt", "--hyp", "a.txt", "--paired-bs", "--sentence"], "--sentence", 2),
        (&["--hyp", "a.txt", "--metrics", "bleu,meteor"], "meteor", 2),
    ];
    for (args, needle, code) in cases {
        let out = score(args);
        assert_one_line_error(&out, needle);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
    }
}
