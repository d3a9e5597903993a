//! Settings in a TOML file (a run file): read with the bounds of the flags,
//! every error naming the file, the line and the key.
//!
//! A struct of settings is its own file format: its serde form, one
//! section per flattened group (`[data]`, `[model]`, ...). A key left out
//! takes its default; an unknown key, a wrong type, a bad value or a
//! syntax error is one [`Error::File`]:
//!
//! ```
//! use lingo_lessons::{CorpusSettings, run_file};
//! let err = run_file::parse::<CorpusSettings>("[model]\nhiden = 64\n", "run.toml".as_ref()).unwrap_err();
//! assert!(err.to_string().starts_with("run.toml:2: unknown key \"hiden\" in [model] (expected one of "));
//! let err = run_file::parse::<CorpusSettings>("[model]\ndropout = 1.5\n", "run.toml".as_ref()).unwrap_err();
//! assert_eq!(err.to_string(), "run.toml:2: dropout in [model]: must be a number in [0, 1), got 1.5");
//! ```

use std::io::Read;
use std::path::Path;

use clap::Args;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};
use crate::settings::check_fields;

/// The most bytes a run file may hold (the example, every key
/// documented, holds under 5 KB).
const MAX_BYTES: u64 = 1 << 20;

/// Reads the run file at `path`, and returns it with its text (for errors
/// found later, at the line of their key).
///
/// ```
/// let err = lingo_lessons::run_file::read::<lingo_lessons::CorpusSettings>("no/such/run.toml".as_ref()).unwrap_err();
/// assert!(err.to_string().starts_with("no/such/run.toml: "));
/// ```
pub fn read<T: Args + Serialize + DeserializeOwned>(path: &Path) -> Result<(T, String)> {
    // A run file is a few kilobytes: stop early on anything far larger
    // (a device that never ends, say) rather than read it all.
    let mut bytes = Vec::new();
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > MAX_BYTES {
        let message = format!("longer than {MAX_BYTES} bytes; a run file is a few kilobytes of TOML");
        return Err(file_error(path, None, message));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|&&b| b == b'\n').count();
        file_error(path, Some(line), format!("invalid UTF-8 at byte {}", e.utf8_error().valid_up_to()))
    })?;
    Ok((parse(&text, path)?, text))
}

/// Parses a run file's text and checks every value against its flag's
/// bound; errors name `path`, the line and the key.
///
/// ```
/// let file = lingo_lessons::run_file::parse::<lingo_lessons::CorpusSettings>("[train]\nbatch_size = 32", "run.toml".as_ref()).unwrap();
/// assert_eq!(file.train.batch_size, 32);
/// ```
pub fn parse<T: Args + Serialize + DeserializeOwned>(text: &str, path: &Path) -> Result<T> {
    let settings: T = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|span| 1 + text[..span.start.min(text.len())].matches('\n').count());
        let message = match line {
            Some(line) => explain(e.message(), text, line),
            None => e.message().to_string(),
        };
        file_error(path, line, message)
    })?;
    check_fields(&settings).map_err(|e| at_key(e, path, text))?;
    Ok(settings)
}

/// `settings` as a run file, sections in order, unset keys left out.
///
/// ```
/// let settings = lingo_lessons::CorpusSettings::default();
/// let text = lingo_lessons::run_file::to_toml(&settings).unwrap();
/// assert!(text.starts_with("[data]\n"));
/// let again: lingo_lessons::CorpusSettings = lingo_lessons::run_file::parse(&text, "again.toml".as_ref()).unwrap();
/// assert_eq!(again, settings);
/// ```
pub fn to_toml<T: Serialize>(settings: &T) -> Result<String> {
    toml::to_string(settings).map_err(|e| Error::invalid("run file", e.to_string()))
}

/// An [`Error::Setting`] about a key `text` sets becomes an error at that
/// key's line of `path`; others pass unchanged.
///
/// ```
/// use lingo_lessons::{Error, run_file::at_key};
/// let text = "[train]\nlr = 5\n";
/// let err = at_key(Error::setting("lr", "is too high"), "run.toml".as_ref(), text);
/// assert_eq!(err.to_string(), "run.toml:2: lr in [train]: is too high");
/// ```
pub fn at_key(err: Error, path: &Path, text: &str) -> Error {
    let Error::Setting { name, reason } = &err else { return err };
    match key_line(text, name) {
        Some((line, section)) => file_error(path, Some(line), format!("{name} in [{section}]: {reason}")),
        None => err,
    }
}

/// The line (1-based) where `key` is set, and its section.
///
/// ```
/// assert_eq!(lingo_lessons::run_file::key_line("[data]\n\n[model]\nheads = 8\n", "heads"), Some((4, "model".into())));
/// ```
pub fn key_line(text: &str, key: &str) -> Option<(usize, String)> {
    let mut section = String::new();
    for (i, line) in text.lines().enumerate() {
        match parse_line(line) {
            Line::Header(name) => section = name,
            Line::Key(name) if name == key => return Some((i + 1, section)),
            _ => {}
        }
    }
    None
}

/// What a line of TOML holds, as far as an error message needs.
enum Line {
    /// `[name]`.
    Header(String),
    /// `name = ...`.
    Key(String),
    /// Anything else.
    Other,
}

fn parse_line(line: &str) -> Line {
    let line = line.trim();
    if let Some((name, _)) = line.strip_prefix('[').and_then(|rest| rest.split_once(']')) {
        return Line::Header(name.trim_matches(['[', ' ']).to_string());
    }
    match line.split_once('=') {
        Some((key, _)) if !key.trim().is_empty() => Line::Key(key.trim().trim_matches(['"', '\'']).to_string()),
        _ => Line::Other,
    }
}

/// toml's message, with the key and section of `line` (serde's "field" is
/// a key to a user).
fn explain(message: &str, text: &str, line: usize) -> String {
    let mut section = String::new();
    let mut here = Line::Other;
    for (i, l) in text.lines().enumerate().take(line) {
        here = parse_line(l);
        if let (Line::Header(name), true) = (&here, i + 1 < line) {
            section = name.clone();
        }
    }
    let message = message.trim();
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let (key, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let expected = expected.trim_start_matches(", ").replace('`', "");
        return match here {
            Line::Header(_) => format!("unknown section [{key}] ({expected})"),
            _ if section.is_empty() => format!("unknown key \"{key}\" outside a section ({expected} sections)"),
            _ => format!("unknown key \"{key}\" in [{section}] ({expected})"),
        };
    }
    match here {
        Line::Key(key) if section.is_empty() => format!("{key}: {message}"),
        Line::Key(key) => format!("{key} in [{section}]: {message}"),
        Line::Header(name) => format!("[{name}]: {message}"),
        Line::Other => message.to_string(),
    }
}

/// An error at `path` (and `line`).
fn file_error(path: &Path, line: Option<usize>, message: String) -> Error {
    Error::File { path: path.to_path_buf(), line, message }
}
