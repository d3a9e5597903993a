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
    /// A lesson's own errors (a setting, an input, a run file, a stop); a
    /// setting it names is spelled as its flag. Its errors of the crates
    /// below become [`Error::Nn`] and [`Error::Data`]. A bad setting or run
    /// file exits with status 2, as clap's errors do; Ctrl-C or SIGTERM
    /// during training (what was kept is in the message) with 130, as for SIGINT.
    #[error("{}", as_flags(.0))]
    Lessons(lingo::lessons::Error),
    /// A file or directory the command line reads or writes itself.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// Arguments that are each valid but do not fit together, or input
    /// that cannot be used (an empty sentence, a model without attention
    /// to align with).
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// The flag or input concerned.
        what: String,
        /// Why it is rejected.
        reason: String,
    },
    /// Flags that are each in range but do not fit together (`--n-best`
    /// above `--beam`, say): found before any work, like clap's own
    /// errors, and like them the binary exits with status 2.
    #[error("invalid {flag}: {reason}")]
    Usage {
        /// The flag to change.
        flag: &'static str,
        /// Why it is rejected.
        reason: String,
    },
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
        use lingo::lessons::Error as Lessons;
        match self {
            Error::Usage { .. } | Error::Lessons(Lessons::Setting { .. } | Lessons::File { .. }) => 2,
            Error::Lessons(Lessons::Interrupted(_)) => INTERRUPTED,
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

/// A lesson's error as the command line's own: said once, as flags (its
/// text is not also a cause that [`one_line`] would add untranslated).
///
/// ```
/// let err = lingo::lessons::Error::setting("max_words", "must be at least `min_words` (3), got 2");
/// let err = lingo_cli::Error::from(err);
/// assert_eq!(lingo_cli::one_line(&err), "invalid --max-words: must be at least --min-words (3), got 2");
/// ```
impl From<lingo::lessons::Error> for Error {
    fn from(err: lingo::lessons::Error) -> Error {
        match err {
            lingo::lessons::Error::Nn(e) => Error::Nn(e),
            lingo::lessons::Error::Data(e) => Error::Data(e),
            other => Error::Lessons(other),
        }
    }
}

/// A lesson's error as the command line says it: a setting it names in
/// backquotes (`` `train_size` ``) is the flag the user types
/// (`--train-size`), and an output directory is `--out`'s.
///
/// ```
/// let err = lingo::lessons::Error::setting("max_words", "must be at least `min_words` (3), got 2");
/// assert_eq!(lingo_cli::Error::from(err).to_string(), "invalid --max-words: must be at least --min-words (3), got 2");
/// let err = lingo::lessons::Error::setting("hidden", "is a setting of `kind` rnn");
/// assert_eq!(lingo_cli::Error::from(err).to_string(), "invalid --hidden: is a setting of --model rnn");
/// let err = lingo::lessons::Error::invalid("`data` a`b.tsv", "no pair within `max_len`");
/// assert_eq!(lingo_cli::Error::from(err).to_string(), "invalid --data a`b.tsv: no pair within --max-len");
/// ```
fn as_flags(err: &lingo::lessons::Error) -> String {
    let text = match err {
        lingo::lessons::Error::OutDir { .. } => format!("--out {err}"),
        other => other.to_string(),
    };
    let root = <crate::Cli as clap::CommandFactory>::command();
    let flag = |id: &str| {
        let long = root.get_subcommands().flat_map(|c| c.get_arguments()).find(|a| a.get_id() == id);
        format!("--{}", long.and_then(|a| a.get_long()).map_or_else(|| id.replace('_', "-"), str::to_string))
    };
    // Only a name between two backquotes is a setting: a backquote in a
    // file's name, or toml's own `]`, stays.
    let is_name =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    let (mut line, mut rest) = (String::new(), text.as_str());
    while let Some(open) = rest.find('`') {
        let after = &rest[open + 1..];
        match after.find('`').filter(|&close| is_name(&after[..close])) {
            Some(close) => {
                line.push_str(&rest[..open]);
                line.push_str(&flag(&after[..close]));
                rest = &after[close + 1..];
            }
            None => {
                line.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    line + rest
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
