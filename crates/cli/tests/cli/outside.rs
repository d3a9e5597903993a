//! The `lingo` binary from the outside: error handling (one line on
//! standard error, non-zero exit, no backtrace, the flag or file named),
//! the shape of `--json` output, and a tiny end-to-end run of each command.

use std::any::TypeId;
use std::process::Output;

use crate::common::{assert_one_line_error, lingo, lingo_in, stderr, stdout, tiny_corpus};
use clap::CommandFactory;

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

/// Every numeric flag of every command with a bad value, and the flags
/// that are valid alone but not together: `(command line, flag to name)`.
/// `DATA` stands for a valid corpus, so the flag is the only problem.
const BAD_VALUES: &[(&[&str], &str)] = &[
    // The shared flags (crate::args::RunFlags, ComputeFlags), with each command that has them.
    (&["ablation", "--layers", "0"], "--layers"),
    (&["ablation", "--heads", "0"], "--heads"),
    (&["alignment-suite", "--layers", "65"], "--layers"),
    (&["alignment-suite", "--heads", "4096"], "--heads"),
    (&["ablation", "--seed", "-1"], "--seed"),
    (&["score", "--hyp", "h.txt", "--ref", "h.txt", "--seed", "1.5"], "--seed"),
    (&["translate", "--checkpoint", "m.ckpt", "--unread-below", "1", "x"], "--unread-below"),
    (
        &["score", "--hyp", "h.txt", "--hyp", "h.txt", "--ref", "h.txt", "--paired-bs", "--paired-bs-n", "0"],
        "--paired-bs-n",
    ),
    (&["score", "--hyp", "h.txt", "--ref", "h.txt", "--chrf-word-order", "7"], "--chrf-word-order"),
    (&["ablation", "--seed", "x"], "--seed"),
    (&["sort-study", "--seed", "1.5"], "--seed"),
    (&["train", "--data", "DATA", "--seed", "-3"], "--seed"),
    (&["ablation", "--threads", "0"], "--threads"),
    (&["sort-study", "--threads", "0"], "--threads"),
    (&["train", "--data", "DATA", "--threads", "-2"], "--threads"),
    (&["translate", "--checkpoint", "x.ckpt", "--threads", "0", "hola"], "--threads"),
    // ablation
    (&["ablation", "--train-size", "0"], "--train-size"),
    (&["ablation", "--val-size", "0"], "--val-size"),
    (&["ablation", "--min-words", "0"], "--min-words"),
    (&["ablation", "--max-words", "0"], "--max-words"),
    (&["ablation", "--epochs", "0"], "--epochs"),
    (&["ablation", "--batch-size", "0"], "--batch-size"),
    (&["ablation", "--lr", "-0.1"], "--lr"),
    (&["ablation", "--lr", "0"], "--lr"),
    (&["ablation", "--lr", "NaN"], "--lr"),
    (&["ablation", "--emb", "0"], "--emb"),
    (&["ablation", "--hidden", "0"], "--hidden"),
    (&["ablation", "--hidden", "100000"], "--hidden"),
    (&["ablation", "--label-smoothing", "1.5"], "--label-smoothing"),
    (&["ablation", "--label-smoothing", "-0.1"], "--label-smoothing"),
    (&["ablation", "--warmup", "-1"], "--warmup"),
    (&["ablation", "--align-samples", "0"], "--align-samples"),
    (&["ablation", "--configs", "multi_head:0"], "--configs"),
    (&["ablation", "--min-words", "4", "--max-words", "3"], "--max-words"),
    (&["ablation", "--guided-alignment", "-1"], "--guided-alignment"),
    (&["ablation", "--guided-head", "-1"], "--guided-head"),
    (&["ablation", "--configs", "dot,multi_head:3"], "--hidden"),
    (&["ablation", "--configs", "transformer", "--hidden", "62"], "--hidden"),
    (&["ablation", "--configs", "transformers"], "--configs"),
    // sort-study
    (&["sort-study", "--lengths", "5,0"], "--lengths"),
    (&["sort-study", "--digits", "0"], "--digits"),
    (&["sort-study", "--digits", "9000"], "--digits"),
    (&["sort-study", "--train-size", "0"], "--train-size"),
    (&["sort-study", "--val-size", "0"], "--val-size"),
    (&["sort-study", "--test-size", "0"], "--test-size"),
    (&["sort-study", "--epochs", "0"], "--epochs"),
    (&["sort-study", "--batch-size", "0"], "--batch-size"),
    (&["sort-study", "--shards", "0"], "--shards"),
    (&["sort-study", "--lr", "-3e-3"], "--lr"),
    (&["sort-study", "--emb", "0"], "--emb"),
    (&["sort-study", "--hidden", "0"], "--hidden"),
    (&["sort-study", "--longer", "1,0"], "--longer"),
    (&["sort-study", "--rare-digit", "-1"], "--rare-digit"),
    (&["sort-study", "--rare-share", "1"], "--rare-share"),
    (&["sort-study", "--rare-digit", "10"], "--rare-digit"),
    (&["sort-study", "--digits", "5", "--rare-digit", "5"], "--rare-digit"),
    // alignment-suite
    (&["alignment-suite", "--seed", "-1"], "--seed"),
    (&["alignment-suite", "--threads", "0"], "--threads"),
    (&["alignment-suite", "--phenomena", "copy,mirror"], "--phenomena"),
    (&["alignment-suite", "--configs", "multi_head:0"], "--configs"),
    (&["alignment-suite", "--train-size", "0"], "--train-size"),
    (&["alignment-suite", "--val-size", "0"], "--val-size"),
    (&["alignment-suite", "--test-size", "0"], "--test-size"),
    (&["alignment-suite", "--epochs", "0"], "--epochs"),
    (&["alignment-suite", "--batch-size", "0"], "--batch-size"),
    (&["alignment-suite", "--lr", "0"], "--lr"),
    (&["alignment-suite", "--emb", "0"], "--emb"),
    (&["alignment-suite", "--hidden", "0"], "--hidden"),
    (&["alignment-suite", "--min-words", "0"], "--min-words"),
    (&["alignment-suite", "--max-words", "300"], "--max-words"),
    (&["alignment-suite", "--digits", "0"], "--digits"),
    (&["alignment-suite", "--show", "-1"], "--show"),
    (&["alignment-suite", "--min-words", "5", "--max-words", "4"], "--max-words"),
    (&["alignment-suite", "--guided-alignment", "nan"], "--guided-alignment"),
    (&["alignment-suite", "--guided-head", "x"], "--guided-head"),
    (&["alignment-suite", "--guided-alignment", "1", "--guided-head", "4"], "--guided-head"),
    (&["alignment-suite", "--min-words", "1", "--max-words", "1"], "--max-words"),
    (&["alignment-suite", "--configs", "dot,multi_head:3"], "--hidden"),
    (&["alignment-suite", "--configs", "transformer", "--hidden", "62"], "--hidden"),
    // train
    (&["train", "--data", "DATA", "--max-len", "0"], "--max-len"),
    (&["train", "--data", "DATA", "--test-size", "0"], "--test-size"),
    (&["train", "--data", "DATA", "--valid-size", "0"], "--valid-size"),
    (&["train", "--data", "DATA", "--bpe-merges", "0"], "--bpe-merges"),
    (&["train", "--data", "DATA", "--vocab-size", "0"], "--vocab-size"),
    (&["train", "--data", "DATA", "--emb", "0"], "--emb"),
    (&["train", "--data", "DATA", "--hidden", "0"], "--hidden"),
    (&["train", "--data", "DATA", "--dropout", "1"], "--dropout"),
    (&["train", "--data", "DATA", "--batch-size", "0"], "--batch-size"),
    (&["train", "--data", "DATA", "--batch-tokens", "0"], "--batch-tokens"),
    (&["train", "--data", "DATA", "--shards", "0"], "--shards"),
    (&["train", "--data", "DATA", "--lr", "-1"], "--lr"),
    (&["train", "--data", "DATA", "--label-smoothing", "1"], "--label-smoothing"),
    (&["train", "--data", "DATA", "--warmup", "0"], "--warmup"),
    (&["train", "--data", "DATA", "--decay", "linear"], "--decay"),
    (&["train", "--data", "DATA", "--round-size", "0"], "--round-size"),
    (&["train", "--data", "DATA", "--rounds", "0"], "--rounds"),
    (&["train", "--data", "DATA", "--split-seed", "-1"], "--split-seed"),
    (&["train", "--data", "DATA", "--time-budget", "0"], "--time-budget"),
    (&["train", "--data", "DATA", "--time-budget", "inf"], "--time-budget"),
    (&["train", "--data", "DATA", "--average", "0"], "--average"),
    (&["train", "--data", "DATA", "--beam", "0"], "--beam"),
    (&["train", "--data", "DATA", "--show", "-1"], "--show"),
    (&["train", "--data", "DATA", "--vocab-size", "4"], "--vocab-size"),
    (&["train", "--data", "DATA", "--attention", "multi_head:5"], "--hidden"),
    (&["train", "--data", "DATA", "--bidirectional"], "--attention"),
    (&["train", "--data", "DATA", "--layers", "0"], "--layers"),
    (&["train", "--data", "DATA", "--model", "transformer", "--d-model", "0"], "--d-model"),
    (&["train", "--data", "DATA", "--model", "transformer", "--d-model", "250"], "--d-model"),
    (&["train", "--data", "DATA", "--model", "transformer", "--heads", "0"], "--heads"),
    (&["train", "--data", "DATA", "--model", "transformer", "--ff-dim", "0"], "--ff-dim"),
    (&["train", "--data", "DATA", "--model", "transformer", "--hidden", "64"], "--hidden"),
    (&["train", "--data", "DATA", "--model", "transformer", "--attention", "additive"], "--attention"),
    (&["train", "--data", "DATA", "--heads", "8"], "--heads"),
    (&["train", "--data", "DATA", "--norm", "pre"], "--norm"),
    (&["train", "--data", "DATA", "--attn-dim", "0"], "--attn-dim"),
    (&["train", "--data", "DATA", "--model", "transformer", "--encoder-layers", "0"], "--encoder-layers"),
    (&["train", "--data", "DATA", "--model", "transformer", "--decoder-layers", "65"], "--decoder-layers"),
    (&["train", "--data", "DATA", "--model", "transformer", "--max-positions", "0"], "--max-positions"),
    (&["train", "--data", "DATA", "--model", "transformer", "--attention-dropout", "1"], "--attention-dropout"),
    (&["train", "--data", "DATA", "--model", "transformer", "--layer-norm-eps", "0"], "--layer-norm-eps"),
    (&["train", "--data", "DATA", "--tie-output"], "--tie-output"),
    (&["train", "--data", "DATA", "--length-penalty", "-0.1"], "--length-penalty"),
    (&["train", "--data", "DATA", "--coverage-penalty", "nan"], "--coverage-penalty"),
    (&["train", "--data", "DATA", "--word-reward", "-inf"], "--word-reward"),
    (&["train", "--data", "DATA", "--joint-vocab", "--tie-source"], "--tie-source"),
    (&["train", "--data", "DATA", "--model", "transformer", "--tie-source"], "--tie-source"),
    (&["train", "--data", "DATA", "--weight-decay", "-1"], "--weight-decay"),
    (&["train", "--data", "DATA", "--guided-alignment", "-1"], "--guided-alignment"),
    (&["train", "--data", "DATA", "--guided-alignment", "1"], "--guided-alignment"),
    (&["train", "--data", "DATA", "--guided-head", "x"], "--guided-head"),
    (
        &["train", "--data", "DATA", "--alignments", "a.align", "--model", "transformer", "--guided-head", "4"],
        "--guided-head",
    ),
    (&["train", "--data", "DATA", "--alignments", "a.align", "--attention", "none"], "--alignments"),
    (&["train", "--data", "DATA", "--optimizer", "sgd", "--momentum", "nan"], "--momentum"),
    (&["train", "--data", "DATA", "--momentum", "0.9"], "--momentum"),
    (&["train", "--data", "DATA", "--max-grad-norm", "-5"], "--max-grad-norm"),
    (&["train", "--data", "DATA", "--patience", "0"], "--patience"),
    // translate
    (&["translate", "--checkpoint", "x.ckpt", "--beam", "0", "hola"], "--beam"),
    (&["translate", "--checkpoint", "x.ckpt", "--max-len", "0", "hola"], "--max-len"),
    (&["translate", "--checkpoint", "x.ckpt", "--length-penalty", "-1", "hola"], "--length-penalty"),
    (&["translate", "--checkpoint", "x.ckpt", "--length-penalty", "inf", "hola"], "--length-penalty"),
    (&["translate", "--checkpoint", "x.ckpt", "--coverage-penalty", "-0.2", "hola"], "--coverage-penalty"),
    (&["translate", "--checkpoint", "x.ckpt", "--word-reward", "nan", "hola"], "--word-reward"),
    (&["translate", "--checkpoint", "x.ckpt", "--stopping", "sometimes", "hola"], "--stopping"),
    (&["translate", "--checkpoint", "x.ckpt", "--batch-size", "0", "--input", "in.txt"], "--batch-size"),
    (&["translate", "--checkpoint", "x.ckpt", "--n-best", "0", "--input", "in.txt"], "--n-best"),
    (&["translate", "--checkpoint", "x.ckpt", "--beam", "2", "--n-best", "3", "--input", "in.txt"], "--n-best"),
    // probe
    (&["probe", "--checkpoint", "x.ckpt", "--data", "d.tsv", "--limit", "0"], "--limit"),
    (&["probe", "--checkpoint", "x.ckpt", "--data", "d.tsv", "--max-len", "0"], "--max-len"),
    (&["probe", "--checkpoint", "x.ckpt", "--data", "d.tsv", "--threads", "0"], "--threads"),
    (&["diagnose", "--run", "run", "--batches", "0"], "--batches"),
    (&["diagnose", "--run", "run", "--batch-size", "0"], "--batch-size"),
    (&["diagnose", "--run", "run", "--pairs", "0"], "--pairs"),
    (&["diagnose", "--run", "run", "--threads", "0"], "--threads"),
];

#[test]
fn every_numeric_flag_rejects_bad_values_before_any_work() {
    let data_dir = tempfile::tempdir().unwrap();
    let data = data_dir.path().join("numbers.tsv");
    tiny_corpus(&data);
    let mut flags = std::collections::BTreeSet::new();
    for &(args, flag) in BAD_VALUES {
        let args: Vec<&str> = args.iter().map(|&a| if a == "DATA" { data.to_str().unwrap() } else { a }).collect();
        // A fresh working directory: every output path defaults to one inside it.
        let dir = tempfile::tempdir().unwrap();
        let out = lingo_in(dir.path(), &args);
        assert_one_line_error(&out, flag);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let written: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(written.is_empty(), "{args:?} wrote {written:?} before failing");
        flags.insert((args[0], flag));
    }
    // The table misses no numeric flag of any command.
    let numeric = [TypeId::of::<usize>(), TypeId::of::<u64>(), TypeId::of::<f32>(), TypeId::of::<f64>()];
    let root = lingo_cli::Cli::command();
    let mut all = 0;
    for command in root.get_subcommands() {
        for arg in command.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if numeric.iter().any(|t| arg.get_value_parser().type_id() == *t) {
                all += 1;
                let flag = format!("--{long}");
                assert!(
                    flags.contains(&(command.get_name(), flag.as_str())),
                    "no bad value tried for {} {flag}",
                    command.get_name()
                );
            }
        }
    }
    println!(
        "{} bad values rejected; {} (command, flag) pairs covered; the commands have {all} numeric flags",
        BAD_VALUES.len(),
        flags.len()
    );
}

#[test]
fn unknown_flags_and_commands_are_one_line() {
    assert_one_line_error(&lingo(&["ablation", "--bogus"]), "--bogus");
    assert_one_line_error(&lingo(&["frobnicate"]), "frobnicate");
    assert_one_line_error(&lingo(&["train"]), "--data");
}

#[test]
fn each_command_lists_only_the_shared_flags_it_reads() {
    let root = lingo_cli::Cli::command();
    assert!(root.get_arguments().all(|a| a.get_long().is_none_or(|l| l == "help" || l == "version")));
    let trains: &[&str] = &["seed", "threads", "json"];
    let want: [(&str, &[&str]); 11] = [
        ("ablation", trains),
        ("sort-study", trains),
        ("alignment-suite", trains),
        ("train", trains),
        ("translate", &["threads", "json"]),
        ("probe", &["threads", "json"]),
        ("diagnose", &["threads", "json"]),
        ("score", &["seed", "json"]),
        ("export", &["json"]),
        ("import", &["json"]),
        ("lab", &["json"]),
    ];
    assert_eq!(root.get_subcommands().count(), want.len(), "a new command: say which shared flags it reads");
    for (name, flags) in want {
        let command = root.find_subcommand(name).unwrap();
        let shared: Vec<&str> =
            command.get_arguments().filter_map(|a| a.get_long()).filter(|l| trains.contains(l)).collect();
        assert_eq!(shared, flags, "{name}");
        let help = stdout(&lingo(&[name, "--help"]));
        for flag in trains {
            let listed = help.lines().any(|l| l.split_whitespace().next() == Some(&format!("--{flag}")));
            assert_eq!(listed, flags.contains(flag), "{name} --help and --{flag}");
        }
    }
    let seeded = lingo(&["translate", "--seed", "1", "--checkpoint", "x.ckpt", "hola"]);
    assert_one_line_error(&seeded, "error: unexpected argument '--seed' found");
    assert_eq!(seeded.status.code(), Some(2));
    // Before the command name too, and still refused by a command that does not read it.
    let before = lingo(&["--seed", "1", "translate", "--checkpoint", "x.ckpt", "hola"]);
    assert_one_line_error(&before, "error: unexpected argument '--seed' found");
    assert_eq!(before.status.code(), Some(2));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("h.txt"), "a b c\n").unwrap();
    let score = |args: &[&str]| stdout(&lingo_in(dir.path(), args));
    let after = score(&["score", "--hyp", "h.txt", "--ref", "h.txt", "--json"]);
    assert!(after.starts_with("{\""), "{after}");
    assert_eq!(score(&["--json", "score", "--hyp", "h.txt", "--ref", "h.txt"]), after);
}

#[test]
fn misspellings_keep_clap_s_suggestion_on_the_one_line() {
    let cases: [(&[&str], &str); 3] = [
        (&["trian"], "error: unrecognized subcommand 'trian' (did you mean 'train' or 'translate'?)"),
        (&["train", "--dta", "x"], "error: unexpected argument '--dta' found (did you mean '--data'?)"),
        (
            &["train", "--data", "x", "--model", "transfomer"],
            "error: invalid value 'transfomer' for '--model <MODEL>' [possible values: rnn, transformer] (did you mean 'transformer'?)",
        ),
    ];
    for (args, line) in cases {
        let out = lingo(args);
        assert_one_line_error(&out, line);
        assert_eq!(stderr(&out), format!("{line}\n"), "{args:?}");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
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
fn help_is_prose_without_the_doc_comment_s_code() {
    let root = lingo_cli::Cli::command();
    for args in [&["--help"][..], &["-h"]] {
        let out = lingo(args);
        let text = stdout(&out);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(!text.contains("```") && !text.contains("try_parse_from"), "{args:?}: {text}");
        assert!(text.starts_with("Attention in neural machine translation, taught and measured.\n"), "{text}");
        for command in root.get_subcommands() {
            assert!(text.contains(&format!("  {} ", command.get_name())), "{args:?} lists no {}", command.get_name());
        }
    }
    assert!(stdout(&lingo(&["--help"])).contains("Each command reproduces or extends one of lingo's lessons"));
}

#[test]
fn help_examples_read_the_sample_the_repository_ships() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut help = stdout(&lingo(&["--help"]));
    for command in lingo_cli::Cli::command().get_subcommands() {
        help += &stdout(&lingo(&[command.get_name(), "--help"]));
    }
    assert!(!help.contains("shared/data"), "a path a user's clone does not have: {help}");
    assert!(help.contains("--data data/eng-spa-sample.tsv"), "{help}");
    assert!(root.join("data/eng-spa-sample.tsv").is_file());
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
    let too_small = lingo(&["train", "--data", small.to_str().unwrap(), "--test-size", "3", "--valid-size", "2"]);
    assert_one_line_error(&too_small, "small.tsv: 2 usable pairs");
    assert!(stderr(&too_small).contains("too few for --test-size 3 and --valid-size 2"), "{}", stderr(&too_small));

    let garbage = dir.path().join("model.ckpt");
    std::fs::write(&garbage, b"not a checkpoint at all, just some bytes").unwrap();
    assert_one_line_error(&lingo(&["translate", "--checkpoint", garbage.to_str().unwrap(), "hola"]), "model.ckpt");
    assert_one_line_error(&lingo(&["translate", "--checkpoint", "/no/such/model.ckpt", "hola"]), "/no/such/model.ckpt");
}

#[test]
fn ablation_json_has_one_object_per_configuration() {
    let out = lingo(&[
        "ablation",
        "--json",
        "--configs",
        "none,dot,transformer",
        "--hidden",
        "16",
        "--emb",
        "16",
        "--epochs",
        "1",
        "--train-size",
        "64",
        "--val-size",
        "16",
        "--align-samples",
        "8",
        "--no-png",
        "--threads",
        "1",
    ]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 3);
    for line in &lines {
        let want = [
            "alignment_accuracy",
            "best_head",
            "config",
            "head_alignment",
            "head_entropy",
            "saliency_alignment",
            "saliency_peak_agreement",
            "saliency_rank_correlation",
            "train_seconds",
            "val_loss",
        ];
        assert_eq!(keys(line), want);
        assert!((0.0..=1.0).contains(&line["saliency_alignment"].as_f64().unwrap()), "saliency for every model");
        assert!(line["val_loss"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(lines[0]["config"], "none");
    assert!(lines[0]["alignment_accuracy"].is_null(), "no attention, no alignment");
    let acc = lines[1]["alignment_accuracy"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&acc));
    assert!(lines[0]["head_alignment"].is_null(), "no attention, no heads");
    assert!(lines[0]["saliency_peak_agreement"].is_null(), "no attention to agree with");
    let rho = lines[1]["saliency_rank_correlation"].as_f64().unwrap();
    assert!((-1.0..=1.0).contains(&rho), "{rho}");
    // One head: its accuracy is the model's, its entropy between one-hot and uniform over 8 positions.
    assert_eq!(lines[1]["head_alignment"], serde_json::json!([[acc]]));
    let entropy = lines[1]["head_entropy"][0][0].as_f64().unwrap();
    assert!((0.0..=8f64.ln()).contains(&entropy), "{entropy}");
    // The Transformer: every head of both decoder layers scored, the best one named.
    let transformer = &lines[2];
    assert_eq!(transformer["config"], "transformer");
    let heads: Vec<Vec<f64>> = serde_json::from_value(transformer["head_alignment"].clone()).unwrap();
    assert_eq!((heads.len(), heads[0].len()), (2, 4));
    let entropies: Vec<Vec<f64>> = serde_json::from_value(transformer["head_entropy"].clone()).unwrap();
    assert_eq!((entropies.len(), entropies[0].len()), (2, 4));
    let (mut best, mut at) = (-1.0, String::new());
    for (l, layer) in heads.iter().enumerate() {
        for (h, &a) in layer.iter().enumerate() {
            assert!((0.0..=1.0).contains(&a));
            if a > best {
                (best, at) = (a, format!("layer {} head {}", l + 1, h + 1));
            }
        }
    }
    assert_eq!(transformer["best_head"], at.as_str());
}

#[test]
fn ablation_probes_every_model_and_measures_the_gain_each_probe_loses() {
    let args = ["ablation", "--json", "--probe", "--configs", "none,dot", "--hidden", "16", "--emb", "16"];
    let small = ["--epochs", "2", "--train-size", "64", "--val-size", "16", "--align-samples", "8", "--no-png"];
    let out = lingo(&[&args[..], &small[..]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let probes: Vec<_> = json_lines(&out).into_iter().filter(|l| l.contains_key("probe")).collect();
    let names: Vec<(&str, &str)> =
        probes.iter().map(|l| (l["config"].as_str().unwrap(), l["probe"].as_str().unwrap())).collect();
    let mut want = vec![("none", "unchanged")];
    want.extend(["unchanged", "uniform", "shuffled", "one_hot", "gold", "zero_context"].map(|p| ("dot", p)));
    assert_eq!(names, want);
    let loss = |i: usize| probes[i]["loss"].as_f64().unwrap();
    let (none, own) = (loss(0), loss(1));
    assert!(probes[0]["gain_lost"].is_null(), "the model without attention has no gain to lose");
    for (i, line) in probes.iter().enumerate().skip(1) {
        for key in ["token_accuracy", "sequence_accuracy"] {
            assert!((0.0..=1.0).contains(&line[key].as_f64().unwrap()), "{key} {line:?}");
        }
        if none > own {
            let lost = line["gain_lost"].as_f64().unwrap();
            assert!((lost - (loss(i) - own) / (none - own)).abs() < 1e-9, "{line:?}");
        } else {
            assert!(line["gain_lost"].is_null(), "no gain, nothing to lose: {line:?}");
        }
    }
    assert_eq!(probes[1]["gain_lost"].as_f64().map(|g| g == 0.0), (none > own).then_some(true));
    assert_ne!(loss(2), own, "uniform attention changes the loss");
}

#[test]
fn ablation_text_prints_the_table_the_heatmap_and_writes_pictures() {
    let dir = tempfile::tempdir().unwrap();
    let out = lingo_in(
        dir.path(),
        &[
            "ablation",
            "--configs",
            "none,additive,transformer",
            "--hidden",
            "16",
            "--epochs",
            "2",
            "--train-size",
            "64",
            "--val-size",
            "16",
            "--align-samples",
            "8",
            "--out",
            "pics",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Epoch 2/2"), "{text}");
    assert!(text.contains("chance") && text.contains("additive (Bahdanau)"), "{text}");
    assert!(text.contains("<sos>") && text.contains("<eos>"), "no heatmap: {text}");
    assert!(
        text.contains("alignment accuracy / mean entropy (nats) of each head") && text.contains("best: layer"),
        "{text}"
    );
    for png in
        ["ablation-additive.png", "ablation-transformer.png", "ablation-transformer-heads.png", "ablation-val-loss.png"]
    {
        let bytes = std::fs::read(dir.path().join("pics").join(png)).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
    }
    assert!(!dir.path().join("pics/ablation-none.png").exists(), "no heatmap without attention");
}

/// `lingo alignment-suite` small enough for a test (sentences of 2 to 5
/// words, a few of them, two epochs of a width-16 model) with `more` flags.
fn small_suite<'a>(more: &[&'a str]) -> Vec<&'a str> {
    let small = "alignment-suite --hidden 16 --emb 16 --epochs 2 --train-size 64 --val-size 16 --test-size 24 \
        --min-words 2 --max-words 5 --threads 1";
    small.split_whitespace().chain(more.iter().copied()).collect()
}

/// Word links `i-j` read back from their Pharaoh line.
fn pharaoh(line: &str) -> Vec<(usize, usize)> {
    line.split_whitespace()
        .map(|link| {
            let (i, j) = link.split_once('-').unwrap();
            (i.parse().unwrap(), j.parse().unwrap())
        })
        .collect()
}

#[test]
fn alignment_suite_json_scores_each_phenomenon_under_each_config() {
    let phenomena = ["copy", "many-to-one", "sort-duplicates"];
    let configs = ["none", "dot", "transformer"];
    let args = ["--json", "--phenomena", "copy,many-to-one,sort-duplicates", "--configs", "none,dot,transformer"];
    let lines = json_lines(&lingo(&small_suite(&[&args[..], &["--show", "2"]].concat())));
    assert_eq!(lines.len(), phenomena.len() * configs.len());
    let mut shown = 0;
    for (n, line) in lines.iter().enumerate() {
        let want = [
            "aer",
            "aer_split",
            "alignment_accuracy",
            "best_head",
            "best_head_alignment",
            "chance",
            "config",
            "links",
            "misaligned",
            "misaligned_examples",
            "phenomenon",
            "possible_hits",
            "precision",
            "recall",
            "sequence_accuracy",
            "sure_hits",
            "sure_links",
            "train_seconds",
            "val_loss",
        ];
        assert_eq!(keys(line), want);
        let (phenomenon, config) = (phenomena[n / configs.len()], configs[n % configs.len()]);
        assert_eq!((line["phenomenon"].as_str(), line["config"].as_str()), (Some(phenomenon), Some(config)));
        assert!(line["val_loss"].as_f64().unwrap() > 0.0, "{line:?}");
        assert!((0.0..=1.0).contains(&line["sequence_accuracy"].as_f64().unwrap()), "{line:?}");
        if config == "none" {
            for key in
                ["aer", "aer_split", "alignment_accuracy", "precision", "recall", "misaligned", "misaligned_examples"]
            {
                assert!(line[key].is_null(), "no attention, no {key}: {line:?}");
            }
            continue;
        }
        let count = |key: &str| line[key].as_u64().unwrap() as f64;
        let (links, sure, sure_hits, possible_hits) =
            (count("links"), count("sure_links"), count("sure_hits"), count("possible_hits"));
        assert!(sure_hits <= sure && sure_hits <= possible_hits && possible_hits <= links, "{line:?}");
        let aer = line["aer"].as_f64().unwrap();
        assert!((aer - (1.0 - (sure_hits + possible_hits) / (links + sure))).abs() < 1e-12, "{line:?}");
        assert!((line["precision"].as_f64().unwrap() - possible_hits / links).abs() < 1e-12, "{line:?}");
        assert!((line["recall"].as_f64().unwrap() - sure_hits / sure).abs() < 1e-12, "{line:?}");
        let accuracy = line["alignment_accuracy"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&accuracy) && (0.0..=1.0).contains(&aer), "{line:?}");
        assert!((0.0..=1.0).contains(&line["aer_split"].as_f64().unwrap()), "{line:?}");
        // One peak per scored row: the possible ones are the hits.
        assert_eq!(line["precision"], line["alignment_accuracy"], "{line:?}");
        if phenomenon == "copy" {
            // One sure link per word and nothing else possible: AER is 1 - accuracy.
            assert!((aer - (1.0 - accuracy)).abs() < 1e-12, "{line:?}");
        }
        if phenomenon == "many-to-one" {
            assert!(sure > links, "a merged word has two sure links and one peak: {line:?}");
        }
        // The Transformer's eight heads are compared; one head has nothing to compare.
        let best = line["best_head_alignment"].as_f64();
        assert_eq!(best.is_some(), config == "transformer", "{line:?}");
        assert!(best.is_none_or(|b| (0.0..=1.0).contains(&b)), "{line:?}");
        let misaligned = line["misaligned"].as_u64().unwrap();
        assert!(misaligned <= 24 && (misaligned == 0) == (accuracy == 1.0), "{line:?}");
        let examples = line["misaligned_examples"].as_array().unwrap();
        assert_eq!(examples.len() as u64, misaligned.min(2), "{line:?}");
        for example in examples {
            let words = |key: &str| example[key].as_str().unwrap().split_whitespace().count();
            let (gold, predicted) =
                (pharaoh(example["gold"].as_str().unwrap()), pharaoh(example["predicted"].as_str().unwrap()));
            assert!(pharaoh(example["sure"].as_str().unwrap()).iter().all(|l| gold.contains(l)), "{example:?}");
            // Some target word's peak is on no gold link: on another word, or on <sos> or <eos> (no link).
            let missed = (0..words("target")).any(|j| {
                let peaks: Vec<_> = predicted.iter().filter(|l| l.1 == j).collect();
                peaks.is_empty() || peaks.iter().any(|l| !gold.contains(l))
            });
            assert!(missed, "{example:?}");
            assert!(predicted.iter().chain(&gold).all(|&(i, _)| i < words("source")), "{example:?}");
            shown += 1;
        }
    }
    assert!(shown > 0, "two epochs leave some sentence misaligned");
}

#[test]
fn alignment_suite_text_prints_tables_a_misaligned_case_and_the_aer_matrix() {
    let out = lingo(&small_suite(&["--phenomena", "reverse,filler", "--configs", "none,additive"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for want in [
        "== reverse (24 test sentences) ==",
        "== filler",
        "no attention",
        "additive (Bahdanau)",
        "AER (lower is better",
    ] {
        assert!(text.contains(want), "no {want:?}: {text}");
    }
    assert!(text.contains("additive (Bahdanau) misaligns") && text.contains("predicted: "), "{text}");
    assert!(text.contains("<sos>") && text.contains("<eos>"), "no heatmap: {text}");
    let matrix: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("AER")).skip(1).take(3).collect();
    assert_eq!(matrix[0].split_whitespace().collect::<Vec<_>>(), ["phenomenon", "none", "additive"]);
    for (line, name) in matrix[1..].iter().zip(["reverse", "filler"]) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[..2], [name, "n/a"], "{line}");
        assert!((0.0..=1.0).contains(&cells[2].parse::<f64>().unwrap()), "{line}");
    }
}

#[test]
fn alignment_suite_refuses_what_does_not_fit_before_any_work() {
    let run = |flags: &[&str]| {
        crate::common::lingo_command(&std::env::temp_dir(), &[&["alignment-suite"][..], flags].concat())
            .env("LINGO_MEMORY_LIMIT", "1G")
            .output()
            .unwrap()
    };
    let many = run(&["--train-size", "10000000"]);
    assert_one_line_error(&many, "invalid --train-size: the command needs about");
    assert!(many.stdout.is_empty(), "it started first");
    assert_one_line_error(&run(&["--hidden", "2048", "--emb", "2048"]), "invalid --hidden: the command needs about");
}

#[test]
fn sort_study_json_reports_each_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = crate::common::SMALL_SORT_STUDY.to_vec();
    args.extend(["--rare-digit", "2", "--rare-share", "0.05", "--emb", "8", "--hidden", "8", "--out", "pics"]);
    args.push("--probe");
    let out = lingo_in(dir.path(), &args);
    let (probes, lines): (Vec<_>, Vec<_>) = json_lines(&out).into_iter().partition(|l| l.contains_key("probe"));
    assert_eq!(lines.len(), 3, "with, without attention, rare-digit run");
    // --probe: the additive model under every probe, the model without attention as trained, at length 3.
    let names: Vec<(&str, &str)> =
        probes.iter().map(|l| (l["config"].as_str().unwrap(), l["probe"].as_str().unwrap())).collect();
    let mut want: Vec<(&str, &str)> =
        ["unchanged", "uniform", "shuffled", "one_hot", "gold", "zero_context"].map(|p| ("additive", p)).to_vec();
    want.push(("none", "unchanged"));
    assert_eq!(names, want);
    assert!(probes.iter().all(|l| l["seq_len"] == 3));
    // One additive head: its accuracy is the model's.
    assert_eq!(lines[0]["head_alignment"], serde_json::json!([[lines[0]["alignment_accuracy"]]]));
    assert_eq!(lines[0]["best_head"], "layer 1 head 1");
    for line in &lines {
        for key in ["seq_len", "attention", "sequence_accuracy"] {
            assert!(line.contains_key(key), "{key} missing in {line:?}");
        }
        assert_eq!(line["seq_len"], 3);
        assert!((0.0..=1.0).contains(&line["sequence_accuracy"].as_f64().unwrap()));
        // The weights measured are those of the epoch with the lowest validation loss (the first, on ties).
        let val: Vec<f64> = line["val_losses"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(val.len(), 2);
        let best = 1 + (0..val.len()).fold(0, |b, i| if val[i] < val[b] { i } else { b });
        assert_eq!(line["measured_epoch"].as_u64(), Some(best as u64), "{line:?}");
    }
    assert_eq!((lines[0]["attention"].as_bool(), lines[1]["attention"].as_bool()), (Some(true), Some(false)));
    assert_eq!((lines[0]["model"].as_str(), lines[1]["model"].as_str()), (Some("additive"), Some("none")));
    assert!(dir.path().join("pics/sort-entropy.png").exists());
}

#[test]
fn sort_study_trains_the_transformer_in_the_recurrent_pair_s_place() {
    let mut small = crate::common::SMALL_SORT_STUDY.to_vec();
    small.extend(["--model", "transformer", "--rare-share", "0", "--hidden", "8", "--no-png"]);
    let lines = json_lines(&lingo(&small));
    assert_eq!(lines.len(), 1, "one Transformer per length, no pair");
    assert_eq!((lines[0]["model"].as_str(), lines[0]["attention"].as_bool()), (Some("transformer"), Some(true)));
    let alignment = lines[0]["alignment_accuracy"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&alignment));
    let heads: Vec<Vec<f64>> = serde_json::from_value(lines[0]["head_entropy"].clone()).unwrap();
    assert_eq!((heads.len(), heads[0].len()), (2, 4), "every head of both decoder layers");
    assert!(heads.iter().flatten().all(|h| (0.0..=5f64.ln()).contains(h)), "{heads:?}");
    let odd: Vec<&str> = small.iter().map(|&a| if a == "8" { "6" } else { a }).collect();
    assert_one_line_error(&lingo(&odd), "--hidden");
}

#[test]
fn sort_study_time_epochs_reports_one_time_per_epoch_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let out = lingo_in(
        dir.path(),
        &[
            "sort-study",
            "--json",
            "--time-epochs",
            "--lengths",
            "3",
            "--digits",
            "5",
            "--train-size",
            "100",
            "--batch-size",
            "16",
            "--epochs",
            "3",
            "--emb",
            "8",
            "--hidden",
            "8",
            "--out",
            "pics",
        ],
    );
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "one object for the one timed model");
    let line = &lines[0];
    let seconds: Vec<f64> = line["epoch_seconds"].as_array().unwrap().iter().map(|s| s.as_f64().unwrap()).collect();
    assert_eq!(seconds.len(), 3);
    assert!(seconds.iter().all(|&s| s > 0.0), "{seconds:?}");
    let median = line["median_epoch_seconds"].as_f64().unwrap();
    assert!(
        seconds.iter().filter(|&&s| s <= median).count() >= 2 && seconds.iter().filter(|&&s| s >= median).count() >= 2,
        "{median} is not the median of {seconds:?}"
    );
    let losses = line["train_losses"].as_array().unwrap();
    assert_eq!(losses.len(), 3);
    assert!(losses[2].as_f64().unwrap() < losses[0].as_f64().unwrap(), "training learns: {losses:?}");
    assert_eq!((line["seq_len"].as_u64(), line["train_size"].as_u64()), (Some(3), Some(100)));
    assert!(!dir.path().join("pics").exists(), "timing writes no pictures");
}

#[test]
fn train_then_translate_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let mut args = crate::common::tiny_train("2");
    args.extend(["--json", "--emb", "8", "--hidden", "8", "--vocab-size", "50", "--time-budget", "30"]);
    args.extend(["--show", "2", "--export-splits"]);
    let train = lingo_in(dir.path(), &args);
    // One line per round as it ends, then the result.
    let lines = json_lines(&train);
    let (result, rounds) = lines.split_last().unwrap();
    assert_eq!(rounds.len() as u64, result["rounds"].as_u64().unwrap());
    for key in ["bleu", "chrf", "train_seconds", "pairs_seen", "pairs_per_second", "test_decode_seconds"] {
        assert!(result[key].as_f64().is_some(), "{key} missing in {result:?}");
    }
    // The test set's search, every setting of it.
    let search = ["beam", "length_penalty", "coverage_penalty", "word_reward", "stopping"].map(|key| &result[key]);
    assert_eq!(
        search,
        [
            &serde_json::json!(5),
            &serde_json::json!(0.6),
            &serde_json::json!(0.0),
            &serde_json::json!(0.0),
            &serde_json::json!("k-finished")
        ],
        "{result:?}"
    );
    for (i, round) in rounds.iter().enumerate() {
        assert_eq!(keys(round), ["pairs_seen", "round", "seconds", "steps", "train_loss", "val_loss"]);
        assert_eq!(round["round"].as_u64(), Some(i as u64 + 1));
    }
    // metrics.jsonl holds the same lines; the chart and the test translations are written.
    let metrics = std::fs::read_to_string(dir.path().join("run/metrics.jsonl")).unwrap();
    let written: Vec<serde_json::Value> = metrics.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(written, rounds.iter().map(|r| serde_json::Value::Object(r.clone())).collect::<Vec<_>>());
    assert!(dir.path().join("run/loss.png").exists());
    assert_eq!(std::fs::read_to_string(dir.path().join("run/test.hyp.txt")).unwrap().lines().count(), 4);
    // --export-splits: the pairs as tokens, the vocabularies, the test set as text.
    let splits = dir.path().join("run/splits");
    let count = |name: &str| std::fs::read_to_string(splits.join(name)).unwrap().lines().count();
    assert_eq!(
        (count("train.tsv"), count("valid.tsv"), count("test.tsv"), count("test.src.txt"), count("test.ref.txt")),
        (28, 4, 4, 4, 4)
    );
    let vocab = std::fs::read_to_string(splits.join("vocab.tgt.txt")).unwrap();
    assert_eq!(vocab.lines().take(4).collect::<Vec<_>>(), lingo::data::SPECIALS);
    let first = std::fs::read_to_string(splits.join("train.tsv")).unwrap().lines().next().unwrap().to_owned();
    let (src, tgt) = first.split_once('\t').unwrap();
    // The default tokenizer is BPE: the full stop is a word of its own, ending in </w>.
    assert!(src.ends_with(" .</w>") && tgt.ends_with(" .</w>"), "tokens, space-separated: {first:?}");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(splits.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["tokenizer"], "bpe");
    // lingo score on the files the run wrote gives the BLEU and chrF it reported.
    let score =
        lingo_in(dir.path(), &["score", "--json", "--hyp", "run/test.hyp.txt", "--ref", "run/splits/test.ref.txt"]);
    let scores = json_lines(&score);
    assert_eq!((&scores[0]["score"], &scores[1]["score"]), (&result["bleu"], &result["chrf"]));
    let ckpt = dir.path().join("run/model.ckpt");
    assert!(ckpt.exists());

    let out = lingo_in(dir.path(), &["translate", "--checkpoint", "run/model.ckpt", "--png", "heat.png", "two three."]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("<sos>"), "heatmap rows start at <sos>: {}", stdout(&out));
    assert!(dir.path().join("heat.png").exists());

    let beam =
        lingo_in(dir.path(), &["translate", "--json", "--beam", "3", "--checkpoint", "run/model.ckpt", "one six."]);
    let lines = json_lines(&beam);
    assert!(lines[0]["translation"].is_string());
    // --beam-trace: the same translation, and the search that found it.
    let args = ["translate", "--beam", "3", "--checkpoint", "run/model.ckpt", "--beam-trace", "one six."];
    let traced = json_lines(&lingo_in(dir.path(), &[&["--json"], &args[..]].concat()));
    assert_eq!(traced[0]["translation"], lines[0]["translation"]);
    let steps = traced[0]["beam_trace"].as_array().unwrap();
    // One step per output token at least: the winner may end before the search does.
    assert!(steps.len() >= traced[0]["tokens"].as_array().unwrap().len());
    let first: Vec<&serde_json::Value> = steps[0].as_array().unwrap().iter().collect();
    assert_eq!(first.len(), 3, "the start beam's 3 best continuations");
    // All from the start beam, none pruned (three fit in three beams): kept, or ended at once.
    assert!(
        first.iter().all(|c| c["parent"] == 0 && (c["fate"]["kept"].is_u64() || c["fate"]["finished"].is_object()))
    );
    // The winner's last token is a candidate of its last step, with its log p.
    let last = &steps[traced[0]["tokens"].as_array().unwrap().len() - 1];
    let log_p = traced[0]["log_prob"].as_f64().unwrap();
    assert!(last.as_array().unwrap().iter().any(|c| c["log_prob"].as_f64() == Some(log_p)), "{last}");
    let text = stdout(&lingo_in(dir.path(), &args));
    assert!(text.contains("the beam search (3 beams), step by step:\nstep 1\n"), "{text}");
    assert!(text.contains("from beam 0  log p"), "{text}");
    // --beam-svg: the same search as a tree, whose bold path spells the translation.
    let drawn = lingo_in(dir.path(), &[&args[..6], &["--beam-svg", "beam.svg", "one six."]].concat());
    assert!(drawn.status.success(), "{}", stderr(&drawn));
    assert!(stdout(&drawn).contains("wrote beam.svg"), "{}", stdout(&drawn));
    let svg = std::fs::read_to_string(dir.path().join("beam.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let bold: Vec<String> = doc
        .descendants()
        .filter(|n| n.attribute("font-weight") == Some("bold"))
        .map(|n| n.children().filter(|c| c.is_text()).map(|c| c.text().unwrap()).collect::<String>())
        .collect();
    let tokens = traced[0]["tokens"].as_array().unwrap();
    assert_eq!(bold.len(), tokens.len());
    for (node, token) in bold.iter().zip(tokens) {
        assert!(node.starts_with(&format!("{} ", token.as_str().unwrap())), "{node} is not {token}");
    }

    assert_one_line_error(&lingo_in(dir.path(), &["translate", "--checkpoint", "run/model.ckpt", "  "]), "sentence");
    translating_a_file_equals_translating_each_line_alone(dir.path());
}

#[test]
fn a_transformer_trains_translates_and_keeps_its_kind_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let flags = |rounds: &'static str, kind: &'static str| {
        let mut args = crate::common::tiny_train(rounds);
        args.extend(["--vocab-size", "50", "--average", "1", "--model", kind]);
        if kind == "transformer" {
            args.extend(["--d-model", "16", "--heads", "2", "--layers", "1", "--ff-dim", "32"]);
        } else {
            args.extend(["--emb", "8", "--hidden", "8"]);
        }
        args
    };
    let mut first = flags("2", "transformer");
    first.push("--json");
    let train = lingo_in(dir.path(), &first);
    assert!(train.status.success(), "{}", stderr(&train));
    let lines = json_lines(&train);
    let result = lines.last().unwrap();
    assert!(result["bleu"].as_f64().is_some(), "{result:?}");
    let losses: Vec<f64> = lines[..2].iter().map(|r| r["val_loss"].as_f64().unwrap()).collect();
    assert!(losses[1] < losses[0], "the Transformer learns: {losses:?}");

    let translator = lingo::nn::Translator::load(dir.path().join("run/model.ckpt")).unwrap();
    assert!(matches!(translator.model(), lingo::nn::AnyModel::Transformer(_)));
    let out = lingo_in(dir.path(), &["translate", "--json", "--checkpoint", "run/model.ckpt", "two three."]);
    assert!(out.status.success(), "{}", stderr(&out));
    let line = &json_lines(&out)[0];
    let rows = line["attention"].as_array().expect("the Transformer's attention");
    assert_eq!(rows.len(), line["tokens"].as_array().unwrap().len());

    // Resuming it as the other kind is refused, naming the flag.
    let mut resume = flags("3", "rnn");
    resume.push("--resume");
    assert_one_line_error(&lingo_in(dir.path(), &resume), "--model transformer (saved) vs rnn (this run)");
}

#[test]
fn a_joint_vocabulary_lets_one_table_embed_both_languages_and_score_the_output() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let flags = |rounds: &'static str, joint: bool| {
        let mut args = crate::common::tiny_train(rounds);
        args.extend(["--tokenizer", "word", "--vocab-size", "50", "--average", "1", "--model", "transformer"]);
        args.extend(["--d-model", "16", "--heads", "2", "--layers", "1", "--ff-dim", "32", "--tie-output"]);
        if joint {
            args.extend(["--joint-vocab", "--tie-source"]);
        }
        args
    };
    let train = lingo_in(dir.path(), &flags("2", true));
    assert!(train.status.success(), "{}", stderr(&train));

    let translator = lingo::nn::Translator::load(dir.path().join("run/model.ckpt")).unwrap();
    assert_eq!(translator.src_vocab(), translator.tgt_vocab(), "one vocabulary for both sides");
    for word in ["one", "uno", "six", "seis"] {
        assert!(translator.src_vocab().get(word).is_some(), "{word} is in the joint vocabulary");
    }
    let lingo::nn::AnyModel::Transformer(model) = translator.model() else { panic!("a Transformer") };
    assert!(model.config().tie_source && model.config().tie_output);
    let out = lingo_in(dir.path(), &["translate", "--checkpoint", "run/model.ckpt", "two three."]);
    assert!(out.status.success(), "{}", stderr(&out));
    let written = std::fs::read_to_string(dir.path().join("run/config.toml")).unwrap();
    assert!(written.contains("joint_vocab = true") && written.contains("tie_source = true"), "{written}");

    // A vocabulary per language is another run: its resume is refused, naming the flag.
    let mut resume = flags("3", false);
    resume.push("--resume");
    assert_one_line_error(&lingo_in(dir.path(), &resume), "--joint-vocab true (saved) vs false (this run)");
}

#[test]
fn split_seed_fixes_the_held_out_pairs_while_the_seed_changes_the_run() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let run = |name: &str, seed: &str, split_seed: Option<&str>| {
        let mut args = vec![
            "train",
            "--seed",
            seed,
            "--json",
            "--data",
            "numbers.tsv",
            "--out",
            name,
            "--test-size",
            "4",
            "--valid-size",
            "4",
        ];
        args.extend([
            "--rounds",
            "1",
            "--emb",
            "8",
            "--hidden",
            "8",
            "--vocab-size",
            "50",
            "--export-splits",
            "--beam",
            "1",
        ]);
        if let Some(s) = split_seed {
            args.extend(["--split-seed", s]);
        }
        let out = lingo_in(dir.path(), &args);
        assert!(out.status.success(), "{}", stderr(&out));
        let read = |file: &str| std::fs::read_to_string(dir.path().join(name).join("splits").join(file)).unwrap();
        (
            read("test.src.txt"),
            read("train.tsv"),
            std::fs::read_to_string(dir.path().join(name).join("metrics.jsonl")).unwrap(),
        )
    };
    let (test_a, train_a, metrics_a) = run("a", "1", Some("7"));
    let (test_b, train_b, metrics_b) = run("b", "2", Some("7"));
    assert_eq!((&test_a, &train_a), (&test_b, &train_b), "one split seed, one split");
    let loss = |m: &str| {
        serde_json::from_str::<serde_json::Value>(m.lines().next().unwrap()).unwrap()["train_loss"].as_f64().unwrap()
    };
    assert_ne!(loss(&metrics_a), loss(&metrics_b), "another --seed trains another run");
    let (test_c, _, _) = run("c", "7", None);
    assert_eq!(test_c, test_a, "without --split-seed the split follows --seed");
    let (test_d, _, _) = run("d", "1", None);
    assert_ne!(test_d, test_a, "another split seed, another split");
}

#[test]
fn a_huge_time_budget_is_no_limit_and_no_panic() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let args = [
        "train",
        "--json",
        "--data",
        "numbers.tsv",
        "--out",
        "run",
        "--test-size",
        "4",
        "--valid-size",
        "4",
        "--rounds",
        "2",
        "--time-budget",
        "1e308",
    ];
    let lines = json_lines(&lingo_in(
        dir.path(),
        &[&args[..], &["--emb", "8", "--hidden", "8", "--vocab-size", "50", "--beam", "1"]].concat(),
    ));
    assert_eq!(lines.last().unwrap()["rounds"], 2, "--rounds ends the run");
}

#[test]
fn a_resumed_run_clears_what_a_killed_run_half_wrote() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let train = |rounds: &str, resume: bool| {
        let mut args = crate::common::tiny_train(rounds);
        args.extend(["--emb", "8", "--hidden", "8", "--vocab-size", "50", "--beam", "1"]);
        if resume {
            args.push("--resume");
        }
        let out = lingo_in(dir.path(), &args);
        assert!(out.status.success(), "{}", stderr(&out));
    };
    train("1", false);
    // What a run killed while writing each file leaves: a hidden temporary file beside it.
    let stale = ["model.ckpt", "metrics.jsonl", "last.ckpt", "best.ckpt"]
        .map(|name| dir.path().join("run").join(format!(".{name}.tmp-4242-0")));
    for path in &stale {
        std::fs::write(path, b"half a file").unwrap();
    }
    train("2", true);
    for path in &stale {
        assert!(!path.exists(), "{} survived the resumed run", path.display());
    }
}

#[test]
fn averaging_keeps_the_last_rounds_and_takes_their_mean_only_when_it_scores_better() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let train = |out: &str, average: &str| {
        let mut args = vec![
            "train",
            "--json",
            "--data",
            "numbers.tsv",
            "--out",
            out,
            "--test-size",
            "4",
            "--valid-size",
            "4",
            "--rounds",
            "4",
        ];
        args.extend(["--emb", "8", "--hidden", "8", "--vocab-size", "50", "--beam", "1", "--average", average]);
        json_lines(&lingo_in(dir.path(), &args))
    };
    let kept =
        |out: &str| (1..=4).map(|r| dir.path().join(out).join(format!("epoch-{r}.ckpt")).exists()).collect::<Vec<_>>();

    let lines = train("two", "2");
    let (result, rounds) = lines.split_last().unwrap();
    assert_eq!(kept("two"), [false, false, true, true]);
    let average = result["average_val_loss"].as_f64().unwrap();
    let best = rounds.iter().map(|r| r["val_loss"].as_f64().unwrap()).fold(f64::INFINITY, f64::min);
    let expected =
        if average < best { "the average of rounds 3-4".to_owned() } else { format!("round {}", result["best_round"]) };
    assert_eq!(result["model"], expected.as_str());

    let lines = train("one", "1");
    assert_eq!(kept("one"), [false; 4]);
    assert!(lines.last().unwrap()["average_val_loss"].is_null());
}

/// `lingo translate --input FILE` (and from standard input): one line out
/// per line in, in order, with the tokens each line gets alone; a line that
/// is not UTF-8 is an error naming the file and the line.
fn translating_a_file_equals_translating_each_line_alone(dir: &std::path::Path) {
    let sentences = ["two three.", "one six.", "", "six six six five four.", "four.", "five one two."];
    std::fs::write(dir.join("in.txt"), sentences.join("\n") + "\n").unwrap();
    for beam in ["1", "3"] {
        let args = [
            "translate",
            "--json",
            "--checkpoint",
            "run/model.ckpt",
            "--beam",
            beam,
            "--batch-size",
            "4",
            "--input",
            "in.txt",
        ];
        let lines = json_lines(&lingo_in(dir, &args));
        assert_eq!(lines.len(), sentences.len());
        for (n, (line, sentence)) in lines.iter().zip(sentences).enumerate() {
            assert_eq!((line["line"].as_u64(), line["source"].as_str()), (Some(n as u64 + 1), Some(sentence)));
            if sentence.is_empty() {
                assert_eq!(line["translation"], "");
                continue;
            }
            let alone = json_lines(&lingo_in(
                dir,
                &["translate", "--json", "--checkpoint", "run/model.ckpt", "--beam", beam, sentence],
            ));
            assert_eq!(line["tokens"], alone[0]["tokens"], "{sentence:?}, beam {beam}");
            assert_eq!(line["translation"], alone[0]["translation"]);
            let attention = line["attention"].as_array().expect("attention rows");
            assert_eq!(attention.len(), line["tokens"].as_array().unwrap().len(), "one row per output token");
            let columns = line["source_tokens"].as_array().unwrap().len();
            assert!(
                attention.iter().all(|row| row.as_array().unwrap().len() == columns),
                "one column per source token"
            );
        }
        // --alignments: one Pharaoh line per input line, the JSON's alignment, in order.
        let mut aligned = args.to_vec();
        aligned.extend(["--alignments", "align.txt"]);
        let out = lingo_in(dir, &aligned[..]);
        assert!(out.status.success(), "{}", stderr(&out));
        let file = std::fs::read_to_string(dir.join("align.txt")).unwrap();
        let want: Vec<&str> = lines.iter().map(|l| l["alignment"].as_str().unwrap_or("")).collect();
        // (This tiny model's words are few; the links themselves are checked in lingo-nn's translator tests.)
        assert_eq!(file.lines().collect::<Vec<_>>(), want, "beam {beam}");
    }
    // --n-best 3: three Moses n-best lines per line (one for the empty line), best first,
    // the first of each the 1-best translation.
    let translate = |extra: &[&str]| {
        let mut args = vec!["translate", "--checkpoint", "run/model.ckpt", "--beam", "3", "--input", "in.txt"];
        args.extend(extra);
        stdout(&lingo_in(dir, &args))
    };
    let mut by_line: Vec<Vec<(String, f64)>> = vec![Vec::new(); sentences.len()];
    for entry in translate(&["--n-best", "3"]).lines() {
        let fields: Vec<&str> = entry.split(" ||| ").collect();
        assert_eq!(fields.len(), 4, "{entry}");
        let features: Vec<&str> = fields[2].split(' ').collect();
        assert_eq!((features.len(), features[0], features[2]), (4, "log_p=", "tokens="), "{entry}");
        assert!(features[1].parse::<f32>().unwrap() <= 0.0 && features[3].parse::<usize>().is_ok(), "{entry}");
        by_line[fields[0].parse::<usize>().unwrap()].push((fields[1].to_owned(), fields[3].parse().unwrap()));
    }
    for ((candidates, best), sentence) in by_line.iter().zip(translate(&[]).lines()).zip(sentences) {
        assert_eq!(candidates.len(), if sentence.is_empty() { 1 } else { 3 }, "{sentence:?}");
        assert_eq!(candidates[0].0, best);
        assert!(candidates.windows(2).all(|w| w[0].1 >= w[1].1), "best first: {candidates:?}");
    }
    // Text mode, from standard input: one translation per line.
    let mut child = crate::common::lingo_command(dir, &["translate", "--checkpoint", "run/model.ckpt"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"two three.\r\n\nfour.").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 3, "{}", stdout(&out));
    // Bad input: nothing is translated, the line is named.
    std::fs::write(dir.join("bad.txt"), b"two three.\nfour \xff five.\n").unwrap();
    let bad = lingo_in(dir, &["translate", "--checkpoint", "run/model.ckpt", "--input", "bad.txt"]);
    assert_one_line_error(&bad, "bad.txt:2: invalid UTF-8 at byte 5 of the line");
    assert!(stdout(&bad).is_empty());
    assert_one_line_error(
        &lingo_in(dir, &["translate", "--checkpoint", "run/model.ckpt", "--input", "missing.txt"]),
        "missing.txt",
    );
}

#[test]
fn an_exploding_learning_rate_is_one_error_naming_epoch_and_step() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    // 1e300 overflows f32 in the first update: the validation loss after it is NaN.
    let train = lingo_in(
        dir.path(),
        &[
            "train",
            "--data",
            "numbers.tsv",
            "--out",
            "run",
            "--test-size",
            "4",
            "--valid-size",
            "4",
            "--emb",
            "8",
            "--hidden",
            "8",
            "--vocab-size",
            "50",
            "--lr",
            "1e300",
        ],
    );
    assert_one_line_error(&train, "loss is NaN at epoch 1, step 1");
    assert_eq!(train.status.code(), Some(1));
    // Only the directory's lock (see docs/reliability.md) and the run's
    // settings, written before training.
    let written: Vec<_> = std::fs::read_dir(dir.path().join("run"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != ".lingo.lock" && n != "config.toml")
        .collect();
    assert!(written.is_empty(), "a broken model was saved: {written:?}");
    // Adam at 1e38 without warm-up: the first step's update already overflows.
    let ablation = lingo(&[
        "ablation",
        "--configs",
        "none",
        "--epochs",
        "3",
        "--train-size",
        "64",
        "--val-size",
        "16",
        "--align-samples",
        "8",
        "--no-png",
        "--warmup",
        "0",
        "--lr",
        "1e38",
    ]);
    assert_one_line_error(&ablation, "at epoch 1, step 1");
    assert!(stderr(&ablation).contains("loss is"), "{}", stderr(&ablation));
}

#[test]
fn export_then_import_gives_the_same_model_and_never_overwrites_unasked() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let mut train = crate::common::tiny_train("1");
    train.extend(["--vocab-size", "50", "--emb", "8", "--hidden", "8"]);
    assert!(lingo_in(dir.path(), &train).status.success());

    let export = ["export", "--json", "--checkpoint", "run/model.ckpt", "--out", "exported", "--reference"];
    let out = lingo_in(dir.path(), &export);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(keys(&json_lines(&out)[0]), ["command", "from", "model", "params", "seconds", "to"]);
    let reference: lingo::nn::Reference =
        serde_json::from_slice(&std::fs::read(dir.path().join("exported/reference.json")).unwrap()).unwrap();
    assert_eq!(reference.batch.len(), 8);
    let longest = reference.batch.iter().map(|p| p.tgt.len() - 1).max().unwrap();
    let translator = lingo::nn::Translator::load(dir.path().join("run/model.ckpt")).unwrap();
    assert_eq!(reference.logits_shape, [8, longest, translator.tgt_vocab().len()]);
    let out = lingo_in(dir.path(), &["import", "exported", "--out", "back.ckpt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("imported exported -> back.ckpt (rnn, "), "{}", stdout(&out));
    let bytes = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    assert!(bytes("run/model.ckpt") == bytes("back.ckpt"), "the round trip changes no byte");

    // An export or import over existing files is refused, and changes nothing.
    let before = bytes("exported/model.safetensors");
    let again = lingo_in(dir.path(), &export);
    assert_eq!(again.status.code(), Some(2));
    assert_one_line_error(&again, "invalid --out: exported/model.safetensors already exists; add --overwrite");
    assert_one_line_error(
        &lingo_in(dir.path(), &["import", "exported", "--out", "back.ckpt"]),
        "back.ckpt already exists",
    );
    assert!(bytes("exported/model.safetensors") == before);
    let mut overwrite = export.to_vec();
    overwrite.push("--overwrite");
    assert!(lingo_in(dir.path(), &overwrite).status.success());
}

/// The loss `lingo probe` reports for a model unchanged, on `pairs.tsv` in `dir`.
fn probed_loss(dir: &std::path::Path, checkpoint: &str) -> f64 {
    let out = lingo_in(dir, &["probe", "--json", "--checkpoint", checkpoint, "--data", "pairs.tsv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let unchanged = json_lines(&out).into_iter().find(|line| line["probe"] == "unchanged").unwrap();
    unchanged["loss"].as_f64().unwrap()
}

#[test]
fn a_model_two_pytorch_processes_trained_on_comes_back_to_translate_and_probe() {
    // tools/lingo_ddp.py fixture: the lingo-exported Transformer of `start`, trained on by
    // DistributedDataParallel (two gloo processes) on the same reversal task, then saved.
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../nn/tests/fixtures/export");
    let (start, ddp) =
        (fixtures.join("lingo/transformer_pre_learned_tied"), fixtures.join("ddp/transformer_pre_learned_tied"));
    let dir = tempfile::tempdir().unwrap();
    for (from, to) in [(&start, "start.ckpt"), (&ddp, "ddp.ckpt")] {
        let out = lingo_in(dir.path(), &["import", from.to_str().unwrap(), "--out", to]);
        assert!(out.status.success(), "{}", stderr(&out));
    }

    // lingo translates PyTorch's batch as PyTorch's own greedy search did.
    let reference: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ddp.join("pytorch.json")).unwrap()).unwrap();
    let config: serde_json::Value = serde_json::from_slice(&std::fs::read(ddp.join("config.json")).unwrap()).unwrap();
    let word =
        |id: &serde_json::Value| config["tgt_vocab"][id.as_u64().unwrap() as usize].as_str().unwrap().to_string();
    let words = |ids: &serde_json::Value| {
        let ids = ids.as_array().unwrap();
        ids[1..ids.len() - 1].iter().map(word).collect::<Vec<_>>().join(" ") // without <sos> and <eos>
    };
    let sources: String = reference["batch"].as_array().unwrap().iter().map(|p| words(&p["src"]) + "\n").collect();
    std::fs::write(dir.path().join("sources.txt"), sources).unwrap();
    let args = ["translate", "--json", "--beam", "1", "--checkpoint", "ddp.ckpt", "--input", "sources.txt"];
    let out = lingo_in(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let ours: Vec<Vec<String>> = json_lines(&out)
        .iter()
        .map(|line| line["tokens"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect())
        .collect();
    let pytorch: Vec<Vec<String>> = reference["greedy"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ids| ids.as_array().unwrap().iter().map(word).collect())
        .collect();
    assert_eq!(ours, pytorch);

    // The loss lingo measures on fresh pairs of the task fell from where lingo stopped.
    let pairs: String = (0..40_usize)
        .map(|i| {
            let src: Vec<String> = (0..1 + i % 5).map(|j| format!("w{}", (i * 7 + j * 3) % 8)).collect();
            let tgt: Vec<String> = src.iter().rev().cloned().collect();
            format!("{}\t{}\n", src.join(" "), tgt.join(" "))
        })
        .collect();
    std::fs::write(dir.path().join("pairs.tsv"), pairs).unwrap();
    let (before, after) = (probed_loss(dir.path(), "start.ckpt"), probed_loss(dir.path(), "ddp.ckpt"));
    assert!(after < before, "loss {before} before PyTorch's training, {after} after");
}

#[test]
fn alignments_of_a_model_without_attention_are_refused_before_translating() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let mut args = crate::common::tiny_train("1");
    args.extend(["--vocab-size", "50", "--emb", "8", "--hidden", "8", "--attention", "none"]);
    let train = lingo_in(dir.path(), &args);
    assert!(train.status.success(), "{}", stderr(&train));
    let out = lingo_in(
        dir.path(),
        &["translate", "--checkpoint", "run/model.ckpt", "--alignments", "align.txt", "two three."],
    );
    assert_one_line_error(&out, "--alignments: this model has no attention to align with");
    assert!(stdout(&out).is_empty(), "nothing translated: {}", stdout(&out));
    assert!(!dir.path().join("align.txt").exists());
}

#[test]
fn lab_serves_until_ctrl_c_and_refuses_a_missing_folder() {
    use std::io::{BufRead, Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let mut lab = std::process::Command::new(env!("CARGO_BIN_EXE_lingo"))
        .args(["lab", "--json", "--dir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(lab.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let ready: serde_json::Value = serde_json::from_str(&line).unwrap();
    let url = ready["url"].as_str().unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let address = url.trim_start_matches("http://").trim_end_matches('/');
    let mut socket = std::net::TcpStream::connect(address).unwrap();
    socket.write_all(b"GET /api/lessons HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200") && answer.contains("\"ablation\""), "{answer}");
    // Ctrl-C: the lab says it stops, and ends cleanly.
    std::process::Command::new("kill").arg("-INT").arg(lab.id().to_string()).status().unwrap();
    let done = lab.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&done.stderr).contains("stopping the lab"));

    let missing = lingo(&["lab", "--dir", "no/such/folder"]);
    assert_one_line_error(&missing, "--dir");
    assert_eq!(missing.status.code(), Some(1));
}
