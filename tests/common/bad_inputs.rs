//! The bad input files and what each must give, shared by the library test
//! (`tests/bad_inputs.rs`) and the command-line test
//! (`crates/cli/tests/cli/bad_inputs.rs`).
//!
//! Committed files live in `tests/bad_inputs/` beside a `.expected` file of
//! two lines: `strict: ` then `ok: N pairs` or the error message, and
//! `lenient: ` then `K kept, skipped lines A B ...` (or `none skipped`) or
//! the error message; `{file}` stands for the file's path. The cases that
//! cannot be committed (a 10 MB line, a directory, a missing file, a file
//! without read permission) are made at test time by [`generated`].

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// What reading a file must give in one mode.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// Read without error: the pairs kept and the 1-based lines skipped.
    Read { kept: usize, skipped: Vec<usize> },
    /// This error message.
    Error(String),
    /// An I/O error of this kind, its message naming the file.
    Io(ErrorKind),
}

/// One bad input file.
#[derive(Debug, Clone)]
pub struct Case {
    /// Short name for messages.
    pub name: String,
    /// The file (or directory, or missing path).
    pub path: PathBuf,
    /// Strict mode: the first bad row is an error.
    pub strict: Expect,
    /// Lenient mode: bad rows are skipped.
    pub lenient: Expect,
}

/// `tests/bad_inputs/`.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/bad_inputs")
}

/// Parses one `.expected` line (without its `strict: ` or `lenient: `).
fn parse_expect(text: &str, file: &Path) -> Expect {
    if let Some(n) = text.strip_prefix("ok: ").and_then(|t| t.strip_suffix(" pairs")) {
        return Expect::Read { kept: n.parse().expect("a pair count"), skipped: Vec::new() };
    }
    if let Some((kept, rest)) = text.split_once(" kept, ") {
        let skipped = match rest.strip_prefix("skipped lines ") {
            Some(lines) => lines.split(' ').map(|l| l.parse().expect("a line number")).collect(),
            None => {
                assert_eq!(rest, "none skipped", "bad .expected line {text:?}");
                Vec::new()
            }
        };
        return Expect::Read { kept: kept.parse().expect("a pair count"), skipped };
    }
    Expect::Error(text.replace("{file}", &file.display().to_string()))
}

/// Every committed file of `tests/bad_inputs/` with its expectations, by name.
pub fn committed() -> Vec<Case> {
    let mut cases: Vec<Case> = std::fs::read_dir(dir())
        .expect("tests/bad_inputs/ is there")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "tsv"))
        .map(|path| {
            let text = std::fs::read_to_string(path.with_extension("expected"))
                .unwrap_or_else(|e| panic!("{}: no .expected file: {e}", path.display()));
            let line = |mode: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(mode))
                    .unwrap_or_else(|| panic!("{}: no {mode:?} line", path.display()))
            };
            Case {
                name: path.file_name().unwrap().to_string_lossy().into_owned(),
                strict: parse_expect(line("strict: "), &path),
                lenient: parse_expect(line("lenient: "), &path),
                path,
            }
        })
        .collect();
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(cases.len() >= 10, "bad inputs missing: {cases:?}");
    cases
}

/// Ten megabytes of one sentence without a newline.
pub const LONG_LINE_BYTES: usize = 10 * 1024 * 1024;

/// The cases made at test time in `tmp`: a 10 MB single line, a directory,
/// a missing file and, unless this process may read anything (root), a
/// file without read permission.
pub fn generated(tmp: &Path) -> Vec<Case> {
    let long = tmp.join("long_line.tsv");
    let mut line = "Go on. ".repeat(LONG_LINE_BYTES / 7 + 1).into_bytes();
    line.truncate(LONG_LINE_BYTES - 4);
    line.extend_from_slice(b"\tVe.");
    std::fs::write(&long, &line).unwrap();
    // Refused once the reader has looked 1 MiB for a line end, lenient or not.
    let endless = format!(
        "{}:1: no line end in the first 1048576 bytes (not a text file, or a device that never ends a line)",
        long.display()
    );
    let mut cases = vec![
        Case {
            name: "10 MB single line".into(),
            path: long,
            strict: Expect::Error(endless.clone()),
            lenient: Expect::Error(endless),
        },
        Case {
            name: "a directory".into(),
            path: tmp.to_path_buf(),
            strict: Expect::Io(ErrorKind::IsADirectory),
            lenient: Expect::Io(ErrorKind::IsADirectory),
        },
        Case {
            name: "a missing file".into(),
            path: tmp.join("missing.tsv"),
            strict: Expect::Io(ErrorKind::NotFound),
            lenient: Expect::Io(ErrorKind::NotFound),
        },
    ];
    if let Some(path) = unreadable(tmp) {
        cases.push(Case {
            name: "no read permission".into(),
            path,
            strict: Expect::Io(ErrorKind::PermissionDenied),
            lenient: Expect::Io(ErrorKind::PermissionDenied),
        });
    }
    cases
}

/// A file with mode 000 in `tmp`, or `None` (saying why on standard error)
/// when this process can read it anyway: root, or a capability that
/// overrides permissions, where the case cannot be tested.
#[cfg(unix)]
fn unreadable(tmp: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = tmp.join("unreadable.tsv");
    std::fs::write(&path, "Go.\tVe.\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&path).is_ok() {
        eprintln!("skipped the no-read-permission case: this process reads a mode-000 file anyway (running as root?)");
        return None;
    }
    Some(path)
}

#[cfg(not(unix))]
fn unreadable(_tmp: &Path) -> Option<PathBuf> {
    eprintln!("skipped the no-read-permission case: file modes are a Unix test");
    None
}

/// The exported directories of `tests/bad_inputs/export/` (made by
/// `tools/lingo_torch.py fixtures`), each wrong in one way, with the one
/// error importing it must give: its `expected` file, `{dir}` standing for
/// the directory's path.
pub fn exported() -> Vec<(PathBuf, String)> {
    let mut cases: Vec<(PathBuf, String)> = std::fs::read_dir(dir().join("export"))
        .expect("tests/bad_inputs/export/ is there")
        .map(|entry| {
            let path = entry.expect("a directory entry").path();
            let text = std::fs::read_to_string(path.join("expected"))
                .unwrap_or_else(|e| panic!("{}: no expected file: {e}", path.display()));
            let message = text.trim_end().replace("{dir}", path.to_str().expect("a UTF-8 path"));
            (path, message)
        })
        .collect();
    cases.sort();
    cases
}
