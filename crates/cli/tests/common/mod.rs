//! Running the `lingo` binary and judging its output, shared by the
//! command-line tests.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `lingo` with `args` in `dir`.
pub fn lingo_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lingo")).args(args).current_dir(dir).env_remove("RUST_BACKTRACE").output().expect("the binary runs")
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
