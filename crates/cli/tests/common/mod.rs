//! Shared by the command-line tests: running the binary and a tiny corpus.

use std::path::Path;
use std::process::Command;

/// `lingo` with `args`, run in `dir`, without a backtrace setting inherited.
pub fn lingo_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lingo"));
    command
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE");
    command
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
