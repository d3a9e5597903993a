//! `LINGO_KERNELS`: the same training on the plain reference kernels, and
//! a bad value refused in one line.

use std::path::Path;

use crate::common::{assert_one_line_error, lingo_command, tiny_corpus, tiny_steps};

/// Each round's `(train_loss, val_loss)` from a finished run's metrics.
fn losses(run: &Path) -> Vec<(f64, f64)> {
    let text = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    let rows = text.lines().map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap());
    rows.map(|row| (row["train_loss"].as_f64().unwrap(), row["val_loss"].as_f64().unwrap())).collect()
}

/// A tiny four-round training in a fresh folder, with `kernels` as `LINGO_KERNELS`.
fn trained(kernels: &str) -> (tempfile::TempDir, Vec<(f64, f64)>) {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let out = lingo_command(dir.path(), &tiny_steps("4")).env("LINGO_KERNELS", kernels).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let losses = losses(&dir.path().join("run"));
    (dir, losses)
}

#[test]
fn the_reference_kernels_train_to_the_fast_kernels_losses() {
    let ((_a, fast), (_b, plain)) = (trained("fast"), trained("reference"));
    assert_eq!(fast.len(), 4);
    assert_eq!(fast.len(), plain.len());
    for (round, (f, p)) in fast.iter().zip(&plain).enumerate() {
        assert!(
            (f.0 - p.0).abs() < 1e-3 && (f.1 - p.1).abs() < 1e-3,
            "round {}: fast {f:?}, reference {p:?}",
            round + 1
        );
    }
    // The switch took effect: the polynomial exp and the lane sums are not
    // the standard library's running ones, so the last bits differ.
    assert_ne!(fast, plain, "the reference kernels gave the fast kernels' bits");
}

#[test]
fn an_unknown_kernels_value_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let out = lingo_command(dir.path(), &tiny_steps("1")).env("LINGO_KERNELS", "quick").output().unwrap();
    assert_one_line_error(&out, "LINGO_KERNELS must be `fast` or `reference`, not `quick`");
    assert!(!dir.path().join("run").exists(), "nothing was started");
}
