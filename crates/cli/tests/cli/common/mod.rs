//! Shared by the command-line tests: running the `lingo` binary, judging
//! its output, and a tiny corpus.

pub mod page;

use std::path::Path;
use std::process::{Command, Output};

/// `lingo` with `args`, run in `dir`, without a backtrace setting inherited.
pub fn lingo_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lingo"));
    command.args(args).current_dir(dir).env_remove("RUST_BACKTRACE");
    command
}

/// Runs `lingo` with `args` in `dir`.
pub fn lingo_in(dir: &Path, args: &[&str]) -> Output {
    lingo_command(dir, args).output().expect("the binary runs")
}

/// Runs `lingo` with `args` in the temporary directory.
pub fn lingo(args: &[&str]) -> Output {
    lingo_in(&std::env::temp_dir(), args)
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A failure that reads as one `error: ...` line mentioning `needle`.
#[track_caller]
pub fn assert_one_line_error(out: &Output, needle: &str) {
    let err = stderr(out);
    assert!(!out.status.success(), "expected failure, got success; stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "more than one line: {err:?}");
    assert!(err.starts_with("error: "), "{err:?}");
    assert!(err.contains(needle), "{err:?} does not name {needle:?}");
    assert!(!err.contains("panicked") && !err.contains("backtrace"), "{err:?}");
}

/// `lingo train` on `numbers.tsv` ([`tiny_corpus`]) into `run/`: 4 test
/// and 4 validation pairs, `rounds` rounds; the caller adds the rest.
pub fn tiny_train(rounds: &str) -> Vec<&str> {
    let mut args = vec!["train", "--data", "numbers.tsv", "--out", "run", "--test-size", "4", "--valid-size", "4"];
    args.extend(["--rounds", rounds]);
    args
}

/// [`tiny_train`] in one-step rounds (8 pairs, one batch) of a model of 8
/// features and a 50-token vocabulary, on one thread, with a budget no
/// run reaches: its numbers depend on nothing but the seed.
pub fn tiny_steps(rounds: &str) -> Vec<&str> {
    let mut args = tiny_train(rounds);
    args.extend(["--round-size", "8", "--batch-size", "8", "--emb", "8", "--hidden", "8", "--vocab-size", "50"]);
    args.extend(["--time-budget", "1000", "--threads", "1"]);
    args
}

/// A tiny made-up corpus: the 36 pairs of two numbers spelled in English
/// and Spanish.
pub fn tiny_corpus(path: &Path) {
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

/// A sort study small enough for a test: length 3, two epochs, one longer length.
pub const SMALL_SORT_STUDY: [&str; 16] = [
    "sort-study",
    "--json",
    "--lengths",
    "3",
    "--digits",
    "5",
    "--train-size",
    "64",
    "--val-size",
    "16",
    "--test-size",
    "16",
    "--epochs",
    "2",
    "--longer",
    "1",
];
