//! The command line's integration tests, one binary (one link of the
//! libraries, not eight): the binary seen from the outside (`outside`), bad
//! corpora (`bad_inputs`), kills and misuse (`kill`, `misuse`), the diagnose, probe,
//! report, run-file and score commands, and the kernels switch (`kernels`).

mod bad_inputs;
mod common;
mod diagnose;
mod kernels;
#[cfg(unix)]
mod kill;
#[cfg(unix)]
mod misuse;
mod outside;
mod probe;
mod report;
mod run_file;
mod score;
