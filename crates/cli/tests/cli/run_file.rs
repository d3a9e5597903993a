//! `lingo train --config`: a run repeated from the `config.toml` it wrote,
//! flags over the file, the shipped example, and every bad run file of
//! `tests/bad_inputs/run_files/` as one error naming the file, the line
//! and the key.

use std::path::Path;

use crate::common::{lingo_in, stderr, tiny_corpus};
use clap::Parser;
use lingo::nn::Stopping;
use lingo_cli::{Cli, Command, TrainArgs};

/// Parses `lingo train` with `flags`.
fn train_args(flags: &[&str]) -> TrainArgs {
    let cli = Cli::try_parse_from(["lingo", "train"].iter().chain(flags)).unwrap();
    let Command::Train(args) = cli.command else { unreachable!() };
    *args
}

/// Each round's training and validation loss in `dir/metrics.jsonl`.
fn losses(dir: &Path) -> Vec<(f64, f64)> {
    let text = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    text.lines()
        .map(|line| {
            let round: serde_json::Value = serde_json::from_str(line).unwrap();
            (round["train_loss"].as_f64().unwrap(), round["val_loss"].as_f64().unwrap())
        })
        .collect()
}

#[test]
fn a_run_from_its_config_toml_repeats_the_run_from_flags() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let mut flags = crate::common::tiny_train("2");
    flags.extend(["--emb", "8", "--hidden", "8", "--vocab-size", "50", "--beam", "2", "--seed", "3"]);
    flags.extend(["--rnn", "gru", "--placement", "bahdanau", "--attention", "additive", "--dropout", "0.1"]);
    let first = lingo_in(dir.path(), &flags);
    assert!(first.status.success(), "{}", stderr(&first));
    let again = lingo_in(dir.path(), &["train", "--config", "run/config.toml", "--out", "again"]);
    assert!(again.status.success(), "{}", stderr(&again));

    let (run, other) = (dir.path().join("run"), dir.path().join("again"));
    assert_eq!(losses(&run).len(), 2);
    assert_eq!(losses(&run), losses(&other));
    let hyp = |d: &Path| std::fs::read_to_string(d.join("test.hyp.txt")).unwrap();
    assert_eq!(hyp(&run), hyp(&other));
    let config = std::fs::read_to_string(run.join("config.toml")).unwrap();
    for line in ["rnn = \"gru\"", "placement = \"bahdanau\"", "seed = 3", "split_seed = 3", "beam = 2"] {
        assert!(config.lines().any(|l| l == line), "{line:?} not in {config}");
    }
    assert_eq!(config, std::fs::read_to_string(other.join("config.toml")).unwrap());

    // A resume from the file goes on; a changed setting is named.
    let more = ["train", "--config", "run/config.toml", "--out", "run", "--resume", "--rounds", "3"];
    let resumed = lingo_in(dir.path(), &more);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(losses(&run)[..2], losses(&other)[..]);
    let changed = lingo_in(dir.path(), &[&more[..6], &["--lr", "0.01"]].concat());
    assert_eq!(changed.status.code(), Some(1));
    assert!(stderr(&changed).contains("--lr 0.003 (saved) vs 0.01 (this run)"), "{}", stderr(&changed));
}

#[test]
fn the_recipe_follows_the_model_kind_the_file_chooses() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let file = "[model]\nkind = \"transformer\"\nd_model = 8\nheads = 2\nff_dim = 16\nactivation = \"gelu\"\n";
    std::fs::write(dir.path().join("run.toml"), file).unwrap();
    let mut flags = crate::common::tiny_train("1");
    flags.extend(["--config", "run.toml", "--vocab-size", "50", "--beam", "1", "--average", "1"]);
    let out = lingo_in(dir.path(), &flags);
    assert!(out.status.success(), "{}", stderr(&out));
    let config = std::fs::read_to_string(dir.path().join("run/config.toml")).unwrap();
    for line in ["lr = 0.002", "decay = \"inverse-sqrt\"", "dropout = 0.1", "activation = \"gelu\"", "ff_dim = 16"] {
        assert!(config.lines().any(|l| l == line), "{line:?} not in {config}");
    }
    assert!(!config.contains("hidden") && !config.contains("bidirectional"), "{config}");
}

#[test]
fn flags_given_override_the_file_and_defaults_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.toml");
    std::fs::write(&run, "[train]\nbatch_size = 32\nrounds = 7\nseed = 5\n[decode]\nbeam = 3\nlength_penalty = 1.5\ncoverage_penalty = 0.2\nword_reward = -0.5\nstopping = \"bound\"\n")
        .unwrap();
    let run = run.to_str().unwrap();
    // --batch-size 64 is the default, given on purpose: it still wins.
    let args = train_args(&["--data", "x.tsv", "--config", run, "--batch-size", "64", "--seed", "1"]);
    let resolved = args.settings().unwrap();
    let (train, search) = (&resolved.train, &resolved.decode);
    assert_eq!((train.batch_size, train.rounds, search.beam, train.seed), (64, 7, 3, 1));
    assert_eq!((search.length_penalty, search.coverage_penalty), (1.5, 0.2));
    assert_eq!((search.word_reward, search.stopping), (-0.5, Stopping::Bound));
    assert_eq!(resolved.data.path.as_deref(), Some(Path::new("x.tsv")));
    let resolved = train_args(&["--data", "x.tsv", "--config", run]).settings().unwrap();
    assert_eq!((resolved.train.batch_size, resolved.train.rounds, resolved.train.seed), (32, 7, 5));
}

#[test]
fn the_example_run_file_loads_and_names_the_sample() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/run.toml");
    let settings = train_args(&["--config", example.to_str().unwrap()]).settings().unwrap();
    let data = settings.data.path.clone().unwrap();
    assert!(data.ends_with("data/eng-spa-sample.tsv") && data.is_file());
    let (test, valid) = (settings.data.test_size, settings.data.valid_size);
    assert_eq!((test, valid, settings.train.time_budget, settings.train.seed), (100, 100, 120.0, 0));
}

#[test]
fn bad_run_files_are_one_line_errors_naming_file_line_and_key() {
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/bad_inputs/run_files");
    let dir = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for entry in std::fs::read_dir(&cases).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let expected = std::fs::read_to_string(path.with_extension("expected")).unwrap();
        let file = path.to_str().unwrap();
        let out = lingo_in(dir.path(), &["train", "--config", file, "--out", "never"]);
        let want = format!("error: {}\n", expected.trim_end().replace("{file}", file));
        assert_eq!(stderr(&out), want, "{file}");
        assert_eq!(out.status.code(), Some(2), "{file}");
        assert!(!dir.path().join("never").exists(), "{file}: --out made before the file was read");
        seen += 1;
    }
    assert!(seen >= 10, "only {seen} cases in {}", cases.display());
}
