//! `lingo probe`: a trained model under every probe on held-out pairs, its
//! numbers those the library's `probe` gives, the gain lost against a
//! baseline without attention, a report, and bad input refused by name.

use crate::common::page::{read_report, tables};
use crate::common::{assert_one_line_error, lingo_in, stderr, stdout, tiny_corpus, tiny_train};

/// Trains a tiny model into `out/` (`--attention none` for a baseline).
fn train(dir: &std::path::Path, out: &str, attention: &str) {
    let mut args = tiny_train("2");
    args.extend(["--vocab-size", "50", "--emb", "8", "--hidden", "8", "--attention", attention, "--seed", "3"]);
    let run = args.iter().position(|&a| a == "run").unwrap();
    args[run] = out;
    let trained = lingo_in(dir, &args);
    assert!(trained.status.success(), "{}", stderr(&trained));
}

#[test]
fn probe_reports_every_intervention_against_a_baseline_and_as_a_page() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    train(dir.path(), "dot", "dot");
    train(dir.path(), "plain", "none");
    let args = ["probe", "--json", "--checkpoint", "dot/model.ckpt", "--data", "numbers.tsv", "--limit", "20"];
    let extra = ["--baseline", "plain/model.ckpt", "--report", "probe.html"];
    let out = lingo_in(dir.path(), &[&args[..], &extra[..]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let probes: Vec<&str> = lines.iter().map(|l| l["probe"].as_str().unwrap()).collect();
    assert_eq!(probes, ["unchanged", "uniform", "shuffled", "one_hot", "zero_context"], "no gold links, no gold probe");

    // The numbers are the library's, on the same 20 pairs.
    let translator = lingo::nn::Translator::load(dir.path().join("dot/model.ckpt")).unwrap();
    let corpus = lingo::data::Corpus::read_tsv(dir.path().join("numbers.tsv"), &Default::default()).unwrap().corpus;
    let tok = translator.tokenizer();
    let mut examples = corpus.encode(tok, translator.src_vocab(), tok, translator.tgt_vocab());
    examples.truncate(20);
    let own = lingo::nn::probe(translator.model(), &examples, lingo::nn::Probe::Uniform).unwrap();
    assert_eq!(lines[1]["loss"].as_f64().unwrap(), own.loss);
    assert_eq!(lines[1]["bleu"].as_f64().unwrap(), own.bleu);

    // Gain lost: (L_probe − L_own) / (L_baseline − L_own), when the baseline is worse.
    let baseline = lines[0]["baseline_loss"].as_f64().unwrap();
    let own = lines[0]["loss"].as_f64().unwrap();
    for line in &lines {
        match line["gain_lost"].as_f64() {
            Some(lost) => assert!((lost - (line["loss"].as_f64().unwrap() - own) / (baseline - own)).abs() < 1e-9),
            None => assert!(baseline <= own, "a gain to lose, but none reported: {line:?}"),
        }
    }

    let html = read_report(&dir.path().join("probe.html"));
    let tables = tables(&html);
    assert_eq!(tables.len(), 2, "the probes, the first pair's translations");
    assert_eq!(tables[0].len(), 1 + 5);
    assert_eq!(tables[1].iter().skip(1).map(|r| r[0].as_str()).collect::<Vec<_>>(), probes);
    assert!(dir.path().join("probe-uniform.svg").exists());
}

#[test]
fn probe_refuses_what_it_cannot_probe_by_name() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    train(dir.path(), "plain", "none");
    let probe = |args: &[&str]| lingo_in(dir.path(), &[&["probe", "--data", "numbers.tsv"][..], args].concat());
    assert_one_line_error(&probe(&["--checkpoint", "plain/model.ckpt"]), "this model has no attention to probe");
    train(dir.path(), "dot", "dot");
    let ckpt = ["--checkpoint", "dot/model.ckpt"];
    assert_one_line_error(&lingo_in(dir.path(), &["probe", ckpt[0], ckpt[1], "--data", "missing.tsv"]), "missing.tsv");
    std::fs::write(dir.path().join("bad.tsv"), "one two.\tuno dos.\nthree\n").unwrap();
    let bad = lingo_in(dir.path(), &["probe", ckpt[0], ckpt[1], "--data", "bad.tsv"]);
    assert_one_line_error(&bad, "bad.tsv:2");
    assert_one_line_error(
        &probe(&[&ckpt[..], &["--max-len", "3"]].concat()),
        "--data numbers.tsv: no pair with a source and at most 3 tokens a side",
    );
    // A baseline of other vocabularies: ids would mean other tokens.
    let other: String = (0..40).map(|i| format!("a{i} b.\tc{i} d.\n")).collect();
    std::fs::write(dir.path().join("other.tsv"), other).unwrap();
    let args = ["train", "--data", "other.tsv", "--out", "other", "--test-size", "4", "--valid-size", "4"];
    let small = ["--rounds", "1", "--vocab-size", "20", "--emb", "8", "--hidden", "8"];
    let other = lingo_in(dir.path(), &[&args[..], &small[..]].concat());
    assert!(other.status.success(), "{}", stderr(&other));
    let out = probe(&[&ckpt[..], &["--baseline", "other/model.ckpt"]].concat());
    assert_one_line_error(&out, "--baseline other/model.ckpt: its vocabularies differ");
}
