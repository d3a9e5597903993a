//! Where a command's output goes: tables and notes for people, or one JSON
//! object per line for programs (and nothing else on standard output then).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// Text or JSON output, chosen once by `--json`.
///
/// ```
/// let out = lingo_cli::Output::new(true);
/// assert!(out.is_json());
/// out.say("not printed: standard output holds only JSON");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    json: bool,
}

impl Output {
    /// Text output (`json = false`) or JSON lines (`json = true`).
    ///
    /// ```
    /// assert!(!lingo_cli::Output::new(false).is_json());
    /// ```
    pub fn new(json: bool) -> Output {
        Output { json }
    }

    /// Whether `--json` was given.
    ///
    /// ```
    /// assert!(lingo_cli::Output::new(true).is_json());
    /// ```
    pub fn is_json(self) -> bool {
        self.json
    }

    /// Prints text for people (tables, heatmaps); silent under `--json`.
    ///
    /// ```
    /// lingo_cli::Output::new(false).say("configuration  val loss");
    /// ```
    pub fn say(self, text: &str) {
        if !self.json {
            print_out(text);
        }
    }

    /// Prints a side remark (a file written, a setting chosen): on standard
    /// output in text mode, on standard error under `--json`.
    ///
    /// ```
    /// lingo_cli::Output::new(true).note("wrote target/lingo-out/x.png");
    /// ```
    pub fn note(self, text: &str) {
        if self.json { print_err(text) } else { print_out(text) }
    }

    /// Prints one JSON object on its own line; silent in text mode.
    ///
    /// ```
    /// lingo_cli::Output::new(true).json(&serde_json::json!({"bleu": 21.5}));
    /// ```
    pub fn json(self, value: &serde_json::Value) {
        if self.json {
            print_out(&value.to_string());
        }
    }

    /// How standard output failed, if a print to it ever did (a reader that
    /// went away, `| head`; a full disk, `> /dev/full`). Printing never
    /// panics: after the first failure standard output is left alone, and
    /// the command decides whether to go on (training keeps its checkpoints
    /// coming) or to stop (translating for nobody).
    ///
    /// ```
    /// assert!(lingo_cli::Output::new(false).stdout_lost().is_none());
    /// ```
    pub fn stdout_lost(self) -> Option<&'static std::io::Error> {
        STDOUT_LOST.get()
    }

    /// `dir/name`, creating `dir` first if needed.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = lingo_cli::Output::new(false).file(&dir.path().join("pics"), "a.png").unwrap();
    /// assert!(path.parent().unwrap().is_dir());
    /// ```
    pub fn file(self, dir: &Path, name: &str) -> Result<PathBuf> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        Ok(dir.join(name))
    }
}

/// Creates the folder `path` will be written in, so that a command fails
/// on a bad output path before it works, not after.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// lingo_cli::output_dir_of(&dir.path().join("out/report.html")).unwrap();
/// assert!(dir.path().join("out").is_dir());
/// ```
pub fn output_dir_of(path: &Path) -> Result<()> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e)),
        None => Ok(()),
    }
}

/// Readies a command's outputs before any work: the folder of `--report`
/// (so a bad path fails first) and, when the command draws into it,
/// `--out`, claimed for this run until the value returned is dropped.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let claimed = lingo_cli::ready_outputs(Some(&dir.path().join("r/report.html")), Some(&dir.path().join("pics"))).unwrap();
/// assert!(claimed.is_some() && dir.path().join("r").is_dir());
/// ```
pub fn ready_outputs(report: Option<&Path>, pictures: Option<&Path>) -> Result<Option<lingo::lessons::RunDir>> {
    if let Some(path) = report {
        output_dir_of(path)?;
    }
    Ok(pictures.map(lingo::lessons::RunDir::claim).transpose()?)
}

/// The first failure of standard output; nothing is printed there after it.
static STDOUT_LOST: OnceLock<std::io::Error> = OnceLock::new();

/// One line on standard output, unless it has failed before.
fn print_out(text: &str) {
    if STDOUT_LOST.get().is_none()
        && let Err(e) = writeln!(std::io::stdout().lock(), "{text}")
    {
        let _ = STDOUT_LOST.set(e);
    }
}

/// One line on standard error. It never panics: if standard error is
/// closed too there is nowhere left to say anything.
///
/// ```
/// lingo_cli::print_err("error: data.tsv:3: no tab");
/// ```
pub fn print_err(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}
