//! `lingo train --data FILE` on every bad input of `tests/bad_inputs/` (and
//! the ones made at test time): one `error: ...` line naming the file, and
//! the line and problem where there is one, exit code 1, never a panic.
//! Strict mode prints the library's error as it is; with `--lenient` the
//! command reads what it can and says how many lines it skipped and the
//! first, before refusing a corpus this small.

#[path = "../../../../tests/common/bad_inputs.rs"]
mod cases;

use crate::common::{assert_one_line_error, lingo, lingo_in, stderr, stdout};
use cases::{Case, Expect};
use std::path::Path;

/// Runs `lingo train` on `case` in one mode (from `cwd`) and checks its one error line.
fn check(case: &Case, lenient: bool, cwd: Option<&Path>) {
    let data = case.path.to_str().expect("a UTF-8 path");
    let args = if lenient { vec!["train", "--data", data, "--lenient"] } else { vec!["train", "--data", data] };
    let out = match cwd {
        Some(dir) => lingo_in(dir, &args),
        None => lingo(&args),
    };
    let context = format!("{} ({}): stdout {:?}", case.name, if lenient { "lenient" } else { "strict" }, stdout(&out));
    assert_eq!(out.status.code(), Some(1), "{context}, stderr {:?}", stderr(&out));
    match if lenient { &case.lenient } else { &case.strict } {
        Expect::Error(message) => assert_eq!(stderr(&out), format!("error: {message}\n"), "{context}"),
        Expect::Io(_) => assert_one_line_error(&out, &format!("error: {data}: ")),
        // Read, but far too few pairs to split: the error says how many, and what was skipped.
        Expect::Read { kept, skipped } => {
            let mut needle = format!("{data}: {kept} usable pairs (of {kept}, up to --max-len 10 tokens");
            if let Some(first) = skipped.first() {
                needle += &format!("; {} malformed lines skipped, the first {data}:{first}: ", skipped.len());
            }
            assert_one_line_error(&out, &needle);
        }
    }
}

#[test]
fn committed_bad_inputs_are_one_line_errors() {
    for case in cases::committed() {
        check(&case, false, None);
        check(&case, true, None);
    }
}

#[test]
fn generated_bad_inputs_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    for case in cases::generated(tmp.path()) {
        check(&case, false, Some(tmp.path()));
        check(&case, true, Some(tmp.path()));
    }
}

/// Root reads a mode-000 file anyway, so there the no-permission case runs
/// the binary as the unprivileged user `nobody` (through util-linux's
/// `setpriv`, when present), from a copy it may execute.
#[test]
fn a_file_without_read_permission_is_one_line_error_even_when_tests_run_as_root() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;
    let as_root = Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0\n")).unwrap_or(false);
    let setpriv = Path::new("/usr/bin/setpriv");
    if !as_root || !setpriv.exists() {
        eprintln!("skipped: not root (the generated cases cover this) or no setpriv");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (bin, data) = (dir.join("lingo"), dir.join("secret.tsv"));
    std::fs::copy(env!("CARGO_BIN_EXE_lingo"), &bin).unwrap();
    std::fs::write(&data, "hello.\thola.\n").unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o000)).unwrap();
    // An --out that nobody may write, so the data is what fails.
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args(["train", "--data", data.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "stderr {:?}", stderr(&out));
    assert_one_line_error(&out, &format!("error: {}: Permission denied", data.display()));
}

#[test]
fn bad_exported_directories_are_one_line_errors_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("model.ckpt");
    for (dir, message) in cases::exported() {
        let out = lingo(&["import", dir.to_str().unwrap(), "--out", target.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", dir.display());
        assert_eq!(stderr(&out), format!("error: {message}\n"));
        assert!(!target.exists(), "{}", dir.display());
    }
}

#[test]
fn bad_alignment_files_are_one_line_errors_and_keep_the_run_in_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let data = dir.join("numbers.tsv");
    crate::common::tiny_corpus(&data);
    let lines = std::fs::read_to_string(&data).unwrap().lines().count();
    // A run already in --out, which a bad links file must leave as it is.
    let out = dir.join("run");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("model.ckpt"), b"an earlier run").unwrap();
    let good = "0-0\n".repeat(lines);
    let cases: [(&str, String, String); 5] = [
        ("missing.align", String::new(), "missing.align: No such file or directory".into()),
        (
            "short.align",
            "0-0\n".repeat(lines - 1),
            format!(
                "invalid alignments: short.align has {} lines for the {lines} of the corpus; an alignment file has one line per line of its corpus",
                lines - 1
            ),
        ),
        (
            "token.align",
            good.replacen("0-0\n", "0-0 0:1\n", 1),
            "token.align:1: `0:1` is not a link `i-j` (source word i, target word j, counted from 0)".into(),
        ),
        (
            "past.align",
            format!("{}0-40\n{}", "0-0\n".repeat(2), "0-0\n".repeat(lines - 3)),
            "past.align:3: link 0-40 is past the pair's".into(),
        ),
        ("binary.align", format!("0-0\n{}\0\n", "1-1"), "binary.align:2: NUL byte at byte 3 of the line".into()),
    ];
    for (name, text, message) in cases {
        if name != "missing.align" {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let mut args = crate::common::tiny_train("1");
        args.extend(["--alignments", name, "--overwrite"]);
        let run = lingo_in(dir, &args);
        assert_eq!(run.status.code(), Some(1), "{name}: {}", stderr(&run));
        assert_one_line_error(&run, &format!("error: {message}"));
        assert_eq!(std::fs::read(out.join("model.ckpt")).unwrap(), b"an earlier run", "{name}");
    }
}
