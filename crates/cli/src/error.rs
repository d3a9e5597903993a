//! The one error type of the command line, and how it becomes one line.

use std::path::{Path, PathBuf};

/// Everything that can stop a `lingo` command.
///
/// Errors of the library crates pass through unchanged (they already name
/// the file, line, flag or parameter); the command line adds its own for
/// files it reads or writes itself and for arguments that only make sense
/// together.
///
/// ```
/// use lingo_cli::Error;
/// let err = Error::invalid("--max-words", "must be at least --min-words (3), got 2");
/// assert_eq!(err.to_string(), "invalid --max-words: must be at least --min-words (3), got 2");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Model, training, decoding or checkpoint errors.
    #[error(transparent)]
    Nn(#[from] lingo::nn::Error),
    /// Corpus, vocabulary and metric errors.
    #[error(transparent)]
    Data(#[from] lingo::data::Error),
    /// Heatmap and chart errors.
    #[error(transparent)]
    Viz(#[from] lingo::viz::Error),
    /// A lesson's errors; a setting it names is spelled as its flag.
    #[error("{}", as_flags(.0))]
    Lessons(#[from] lingo::lessons::Error),
    /// A file or directory the command line reads or writes itself.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The output directory cannot be used: a file, not writable, in use
    /// by another run, or holding a finished run.
    #[error("--out {}: {reason}", path.display())]
    OutDir {
        /// The directory.
        path: PathBuf,
        /// Why it cannot be used.
        reason: String,
    },
    /// Arguments that are each valid but do not fit together, or input
    /// that cannot be used (an empty sentence, a corpus too small to split).
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// The flag or input concerned.
        what: String,
        /// Why it is rejected.
        reason: String,
    },
    /// Flags that are each in range but do not fit together (`--max-words`
    /// below `--min-words`, say): found before any work, like clap's own
    /// errors, and like them the binary exits with status 2.
    #[error("invalid {flag}: {reason}")]
    Usage {
        /// The flag to change.
        flag: &'static str,
        /// Why it is rejected.
        reason: String,
    },
    /// A run file (`lingo train --config`) that cannot be used: a syntax
    /// error, an unknown key, a wrong type or a bad value, at its line.
    /// It stands for flags, so the binary exits with status 2, as for them.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    RunFile {
        /// The file.
        path: PathBuf,
        /// The 1-based line, when the problem has one.
        line: Option<usize>,
        /// The key and what is wrong with it.
        message: String,
    },
    /// Ctrl-C or SIGTERM stopped training; what was kept is in the message.
    /// The binary exits with status 130, as for SIGINT.
    #[error("interrupted {0}")]
    Interrupted(String),
    /// The rayon thread pool could not be set up.
    #[error("--threads: {0}")]
    Threads(String),
}

/// The exit status of a process ended by SIGINT, as shells report it (128 + 2).
pub(crate) const INTERRUPTED: u8 = 130;

impl Error {
    /// An [`Error::Invalid`] about `what`.
    ///
    /// ```
    /// let err = lingo_cli::Error::invalid("sentence", "is empty");
    /// assert_eq!(err.to_string(), "invalid sentence: is empty");
    /// ```
    pub fn invalid(what: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::Invalid { what: what.into(), reason: reason.into() }
    }

    /// An [`Error::Usage`] about `flag`.
    ///
    /// ```
    /// let err = lingo_cli::Error::usage("--rare-digit", "must be below --digits (10), got 10");
    /// assert_eq!(err.to_string(), "invalid --rare-digit: must be below --digits (10), got 10");
    /// assert_eq!(err.exit_code(), 2);
    /// ```
    pub fn usage(flag: &'static str, reason: impl Into<String>) -> Error {
        Error::Usage { flag, reason: reason.into() }
    }

    /// The binary's exit status for this error: 2 for a usage error or a
    /// bad run file, as for clap's, 130 for an interruption, as for SIGINT, 1 for everything else.
    ///
    /// ```
    /// assert_eq!(lingo_cli::Error::invalid("sentence", "is empty").exit_code(), 1);
    /// ```
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage { .. } | Error::RunFile { .. } | Error::Lessons(lingo::lessons::Error::Setting { .. }) => 2,
            Error::Interrupted(_) => INTERRUPTED,
            _ => 1,
        }
    }

    /// An [`Error::Io`] naming `path`.
    ///
    /// ```
    /// use std::io;
    /// let err = lingo_cli::Error::io("out/x.png", io::Error::new(io::ErrorKind::PermissionDenied, "denied"));
    /// assert_eq!(err.to_string(), "out/x.png: denied");
    /// ```
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Error {
        Error::Io { path: path.as_ref().to_path_buf(), source }
    }
}

/// A lesson's error as the command line says it: a setting it names in
/// backquotes (`` `train_size` ``) is the flag the user typed (`--train-size`).
///
/// ```
/// let err = lingo::lessons::Error::setting("max_words", "must be at least `min_words` (3), got 2");
/// assert_eq!(lingo_cli::Error::from(err).to_string(), "invalid --max-words: must be at least --min-words (3), got 2");
/// ```
fn as_flags(err: &lingo::lessons::Error) -> String {
    let text = err.to_string();
    if !matches!(err, lingo::lessons::Error::Setting { .. }) {
        return text;
    }
    // Between the backquotes: the odd pieces of the split.
    text.split('`')
        .enumerate()
        .map(|(i, piece)| if i % 2 == 1 { format!("--{}", piece.replace('_', "-")) } else { piece.to_string() })
        .collect()
}

/// `Result` with the command line's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// The error and every cause below it that it does not already spell out,
/// joined into one line (`a: b: c`), for `error: ...` on standard error.
///
/// ```
/// use std::io;
/// let err = lingo_cli::Error::io("data.tsv", io::Error::new(io::ErrorKind::NotFound, "No such file"));
/// assert_eq!(lingo_cli::one_line(&err), "data.tsv: No such file");
/// ```
pub fn one_line(err: &dyn std::error::Error) -> String {
    let mut line = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = c.source();
    }
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// clap's error as one `error: ...` line: its first paragraph (the error,
/// sometimes a list of missing flags or of possible values) and its "did
/// you mean" suggestions and tips, without the usage and the `--help` hint.
///
/// ```
/// use clap::Parser;
/// let err = lingo_cli::Cli::try_parse_from(["lingo", "trian"]).unwrap_err();
/// assert_eq!(
///     lingo_cli::clap_line(&err),
///     "error: unrecognized subcommand 'trian' (did you mean 'train' or 'translate'?)"
/// );
/// let err = lingo_cli::Cli::try_parse_from(["lingo", "score", "--hyp", "h.txt", "--reff", "r.txt"]).unwrap_err();
/// assert_eq!(lingo_cli::clap_line(&err), "error: unexpected argument '--reff' found (did you mean '--ref'?)");
/// ```
pub fn clap_line(err: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let text = err.render().to_string();
    let paragraph: Vec<&str> = text.lines().map(str::trim).take_while(|l| !l.is_empty()).collect();
    let mut line = if paragraph.is_empty() { "error: bad arguments".to_string() } else { paragraph.join(" ") };
    let mut names = Vec::new();
    for kind in [ContextKind::SuggestedSubcommand, ContextKind::SuggestedArg, ContextKind::SuggestedValue] {
        match err.get(kind) {
            Some(ContextValue::String(name)) => names.push(format!("'{name}'")),
            // clap lists the closest name last.
            Some(ContextValue::Strings(list)) => names.extend(list.iter().rev().map(|name| format!("'{name}'"))),
            _ => {}
        }
    }
    if !names.is_empty() {
        line.push_str(&format!(" (did you mean {}?)", names.join(" or ")));
    }
    if let Some(ContextValue::StyledStrs(tips)) = err.get(ContextKind::Suggested) {
        for tip in tips {
            line.push_str(&format!(" (tip: {tip})"));
        }
    }
    line
}
