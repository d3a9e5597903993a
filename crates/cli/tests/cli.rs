//! The `lingo` binary from the outside: error handling (one line on
//! standard error, non-zero exit, no backtrace, the flag or file named),
//! the shape of `--json` output, and a tiny end-to-end run of each command.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `lingo` with `args` in `dir`.
fn lingo_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lingo")).args(args).current_dir(dir).env_remove("RUST_BACKTRACE").output().expect("the binary runs")
}

fn lingo(args: &[&str]) -> Output {
    lingo_in(&std::env::temp_dir(), args)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A failure that reads as one `error: ...` line mentioning `needle`.
#[track_caller]
fn assert_one_line_error(out: &Output, needle: &str) {
    let err = stderr(out);
    assert!(!out.status.success(), "expected failure, got success; stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "more than one line: {err:?}");
    assert!(err.starts_with("error: "), "{err:?}");
    assert!(err.contains(needle), "{err:?} does not name {needle:?}");
    assert!(!err.contains("panicked") && !err.contains("backtrace"), "{err:?}");
}

/// Parses every stdout line as a JSON object.
fn json_lines(out: &Output) -> Vec<serde_json::Map<String, serde_json::Value>> {
    assert!(out.status.success(), "failed: {}", stderr(out));
    stdout(out)
        .lines()
        .map(|l| match serde_json::from_str(l) {
            Ok(serde_json::Value::Object(map)) => map,
            other => panic!("not a JSON object: {l:?} ({other:?})"),
        })
        .collect()
}

fn keys(map: &serde_json::Map<String, serde_json::Value>) -> Vec<&str> {
    let mut k: Vec<&str> = map.keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

#[test]
fn out_of_range_values_are_rejected_naming_the_flag() {
    let cases: [(&[&str], &str); 7] = [
        (&["ablation", "--batch-size", "0"], "--batch-size"),
        (&["ablation", "--lr", "-0.1"], "--lr"),
        (&["ablation", "--hidden", "0"], "--hidden"),
        (&["ablation", "--label-smoothing", "1.5"], "--label-smoothing"),
        (&["ablation", "--configs", "luong"], "--configs"),
        (&["translate", "--checkpoint", "x.ckpt", "--beam", "0", "hola"], "--beam"),
        (&["sort-study", "--threads", "0"], "--threads"),
    ];
    for (args, flag) in cases {
        let out = lingo(args);
        assert_one_line_error(&out, flag);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn unknown_flags_and_commands_are_one_line() {
    assert_one_line_error(&lingo(&["ablation", "--bogus"]), "--bogus");
    assert_one_line_error(&lingo(&["frobnicate"]), "frobnicate");
    assert_one_line_error(&lingo(&["train"]), "--data");
}

#[test]
fn arguments_that_do_not_fit_together_are_rejected_before_work() {
    assert_one_line_error(&lingo(&["ablation", "--min-words", "4", "--max-words", "3"]), "--max-words");
    assert_one_line_error(&lingo(&["sort-study", "--rare-digit", "10"]), "--rare-digit");
}

#[test]
fn help_shows_examples_and_succeeds() {
    for args in [&["--help"][..], &["ablation", "--help"], &["translate", "--help"]] {
        let out = lingo(args);
        assert!(out.status.success(), "{args:?}");
        assert!(stdout(&out).contains("Examples:"), "{args:?}");
    }
}

#[test]
fn missing_and_malformed_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.tsv");
    assert_one_line_error(&lingo(&["train", "--data", missing.to_str().unwrap()]), "nope.tsv");

    let bad = dir.path().join("bad.tsv");
    std::fs::write(&bad, "Go.\tVe.\nno tab here\n").unwrap();
    assert_one_line_error(&lingo(&["train", "--data", bad.to_str().unwrap()]), "bad.tsv:2");

    let small = dir.path().join("small.tsv");
    std::fs::write(&small, "Go.\tVe.\nHi.\tHola.\n").unwrap();
    assert_one_line_error(&lingo(&["train", "--data", small.to_str().unwrap()]), "too few");

    let garbage = dir.path().join("model.ckpt");
    std::fs::write(&garbage, b"not a checkpoint at all, just some bytes").unwrap();
    assert_one_line_error(&lingo(&["translate", "--checkpoint", garbage.to_str().unwrap(), "hola"]), "model.ckpt");
    assert_one_line_error(&lingo(&["translate", "--checkpoint", "/no/such/model.ckpt", "hola"]), "/no/such/model.ckpt");
}

#[test]
fn ablation_json_has_one_object_per_configuration() {
    let out = lingo(&["ablation", "--json", "--configs", "none,dot", "--epochs", "1", "--train-size", "64", "--val-size", "16", "--align-samples", "8", "--no-png", "--threads", "1"]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2);
    for line in &lines {
        assert_eq!(keys(line), ["alignment_accuracy", "config", "train_seconds", "val_loss"]);
        assert!(line["val_loss"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(lines[0]["config"], "none");
    assert!(lines[0]["alignment_accuracy"].is_null(), "no attention, no alignment");
    let acc = lines[1]["alignment_accuracy"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&acc));
}

#[test]
fn ablation_text_prints_the_table_the_heatmap_and_writes_pictures() {
    let dir = tempfile::tempdir().unwrap();
    let out = lingo_in(dir.path(), &["ablation", "--configs", "none,additive", "--epochs", "2", "--train-size", "64", "--val-size", "16", "--align-samples", "8", "--out", "pics"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Epoch 2/2"), "{text}");
    assert!(text.contains("chance") && text.contains("additive (Bahdanau)"), "{text}");
    assert!(text.contains("<sos>") && text.contains("<eos>"), "no heatmap: {text}");
    for png in ["ablation-additive.png", "ablation-val-loss.png"] {
        let bytes = std::fs::read(dir.path().join("pics").join(png)).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
    }
    assert!(!dir.path().join("pics/ablation-none.png").exists(), "no heatmap without attention");
}

#[test]
fn sort_study_json_reports_each_model() {
    let dir = tempfile::tempdir().unwrap();
    let out = lingo_in(dir.path(), &[
        "sort-study", "--json", "--lengths", "3", "--digits", "5", "--train-size", "64", "--val-size", "16", "--test-size", "16",
        "--epochs", "2", "--longer", "1", "--rare-digit", "2", "--rare-share", "0.05", "--emb", "8", "--hidden", "8", "--out", "pics",
    ]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 3, "with, without attention, rare-digit run");
    for line in &lines {
        for key in ["seq_len", "attention", "sequence_accuracy"] {
            assert!(line.contains_key(key), "{key} missing in {line:?}");
        }
        assert_eq!(line["seq_len"], 3);
        assert!((0.0..=1.0).contains(&line["sequence_accuracy"].as_f64().unwrap()));
    }
    assert_eq!((lines[0]["attention"].as_bool(), lines[1]["attention"].as_bool()), (Some(true), Some(false)));
    assert!(dir.path().join("pics/sort-entropy.png").exists());
}

#[test]
fn sort_study_time_epochs_reports_one_time_per_epoch_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let out = lingo_in(dir.path(), &[
        "sort-study", "--json", "--time-epochs", "--lengths", "3", "--digits", "5", "--train-size", "100", "--batch-size", "16",
        "--epochs", "3", "--emb", "8", "--hidden", "8", "--out", "pics",
    ]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "one object for the one timed model");
    let line = &lines[0];
    let seconds: Vec<f64> = line["epoch_seconds"].as_array().unwrap().iter().map(|s| s.as_f64().unwrap()).collect();
    assert_eq!(seconds.len(), 3);
    assert!(seconds.iter().all(|&s| s > 0.0), "{seconds:?}");
    let median = line["median_epoch_seconds"].as_f64().unwrap();
    assert!(seconds.iter().filter(|&&s| s <= median).count() >= 2 && seconds.iter().filter(|&&s| s >= median).count() >= 2, "{median} is not the median of {seconds:?}");
    let losses = line["train_losses"].as_array().unwrap();
    assert_eq!(losses.len(), 3);
    assert!(losses[2].as_f64().unwrap() < losses[0].as_f64().unwrap(), "training learns: {losses:?}");
    assert_eq!((line["seq_len"].as_u64(), line["train_size"].as_u64()), (Some(3), Some(100)));
    assert!(!dir.path().join("pics").exists(), "timing writes no pictures");
}

/// A tiny made-up corpus: numbers spelled in English and Spanish.
fn tiny_corpus(path: &Path) {
    let en = ["one", "two", "three", "four", "five", "six"];
    let es = ["uno", "dos", "tres", "cuatro", "cinco", "seis"];
    let mut text = String::new();
    for i in 0..6 {
        for j in 0..6 {
            text.push_str(&format!("{} {}.\t{} {}.\n", en[i], en[j], es[i], es[j]));
        }
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn train_then_translate_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let train = lingo_in(dir.path(), &[
        "train", "--json", "--data", "numbers.tsv", "--out", "run", "--test-size", "4", "--valid-size", "4", "--rounds", "2",
        "--emb", "8", "--hidden", "8", "--vocab-size", "50", "--time-budget", "30", "--show", "2",
    ]);
    let lines = json_lines(&train);
    assert_eq!(lines.len(), 1);
    for key in ["bleu", "chrf", "train_seconds"] {
        assert!(lines[0][key].as_f64().is_some(), "{key} missing in {:?}", lines[0]);
    }
    let ckpt = dir.path().join("run/model.ckpt");
    assert!(ckpt.exists());

    let out = lingo_in(dir.path(), &["translate", "--checkpoint", "run/model.ckpt", "--png", "heat.png", "two three."]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("<sos>"), "heatmap rows start at <sos>: {}", stdout(&out));
    assert!(dir.path().join("heat.png").exists());

    let beam = lingo_in(dir.path(), &["translate", "--json", "--beam", "3", "--checkpoint", "run/model.ckpt", "one six."]);
    let lines = json_lines(&beam);
    assert!(lines[0]["translation"].is_string());

    assert_one_line_error(&lingo_in(dir.path(), &["translate", "--checkpoint", "run/model.ckpt", "  "]), "sentence");
}
