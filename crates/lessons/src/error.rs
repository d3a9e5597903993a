//! The one error type of the lessons.

/// Everything that can stop a lesson.
///
/// Errors of the crates below pass through unchanged (they already name
/// the file, line or parameter). A setting is named as its field, in
/// backquotes, so each front end can spell it its own way: the command
/// line writes `` `train_size` `` as `--train-size`, a run file as its key.
///
/// ```
/// let err = lingo_lessons::Error::setting("max_words", "must be at least `min_words` (3), got 2");
/// assert_eq!(err.to_string(), "invalid `max_words`: must be at least `min_words` (3), got 2");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Model, training, decoding or checkpoint errors.
    #[error(transparent)]
    Nn(#[from] lingo_nn::Error),
    /// Corpus, vocabulary and metric errors.
    #[error(transparent)]
    Data(#[from] lingo_data::Error),
    /// A setting out of its bound, or settings that do not fit together
    /// (or do not fit in the machine's memory): found before any work.
    #[error("invalid `{name}`: {reason}")]
    Setting {
        /// The setting to change, as its field is named.
        name: String,
        /// Why it is rejected.
        reason: String,
    },
    /// Input that cannot be used (a corpus too small to split, say); the
    /// setting it comes from is named in backquotes (`` `data` pairs.tsv ``).
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// The input concerned.
        what: String,
        /// Why it is rejected.
        reason: String,
    },
    /// The observer's [`RunControl`](lingo_nn::RunControl) stopped the lesson.
    #[error("stopped before the lesson ended")]
    Stopped,
    /// A corpus run's control stopped its training; what was kept is in the message.
    #[error("interrupted {0}")]
    Interrupted(String),
    /// A file or directory the lesson reads or writes itself.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The output directory cannot be used: a file, not writable, in use
    /// by another run, or holding a finished run.
    #[error("{}: {reason}", path.display())]
    OutDir {
        /// The directory.
        path: std::path::PathBuf,
        /// Why it cannot be used.
        reason: String,
    },
    /// A settings file that cannot be used: a syntax error, an unknown
    /// key, a wrong type or a bad value, at its line.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// The 1-based line, when the problem has one.
        line: Option<usize>,
        /// The key and what is wrong with it.
        message: String,
    },
    /// Pictures of the run (its loss chart).
    #[error(transparent)]
    Viz(#[from] lingo_viz::Error),
}

impl Error {
    /// An [`Error::Setting`] about the setting `name`.
    ///
    /// ```
    /// let err = lingo_lessons::Error::setting("hidden", "must be a multiple of 4, got 62");
    /// assert_eq!(err.to_string(), "invalid `hidden`: must be a multiple of 4, got 62");
    /// ```
    pub fn setting(name: &str, reason: impl Into<String>) -> Error {
        Error::Setting { name: name.to_string(), reason: reason.into() }
    }

    /// An [`Error::Invalid`] about `what`.
    ///
    /// ```
    /// let err = lingo_lessons::Error::invalid("corpus", "is empty");
    /// assert_eq!(err.to_string(), "invalid corpus: is empty");
    /// ```
    pub fn invalid(what: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::Invalid { what: what.into(), reason: reason.into() }
    }

    /// An [`Error::Io`] naming `path`.
    ///
    /// ```
    /// let err = lingo_lessons::Error::io("out/x.png", std::io::Error::other("denied"));
    /// assert_eq!(err.to_string(), "out/x.png: denied");
    /// ```
    pub fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Error {
        Error::Io { path: path.as_ref().to_path_buf(), source }
    }
}

/// `Result` with the lessons' [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
