//! The one error type of this crate.

use std::fmt;
use std::path::PathBuf;

/// What is wrong with one line of a data file: a row of a parallel TSV
/// file, or a line of a Pharaoh alignment file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RowProblem {
    /// The line is empty.
    BlankLine,
    /// The line has no tab, so there is no target column.
    MissingTab,
    /// The source column is empty (or only whitespace).
    EmptySource,
    /// The target column is empty (or only whitespace).
    EmptyTarget,
    /// The line is not valid UTF-8; `byte` is the offset of the first bad byte in the line.
    InvalidUtf8 {
        /// 0-based byte offset of the first invalid byte within the line.
        byte: usize,
    },
    /// The line holds a control character other than tab (NUL from a binary
    /// or UTF-16 file, a lone carriage return, an escape...).
    ControlChar {
        /// 0-based byte offset of the first one within the line.
        byte: usize,
        /// The character's code, `0x00..=0x1F` or `0x7F`.
        code: u8,
    },
    /// No line end in the first this-many bytes: not a text file, or a
    /// device or pipe that never ends a line. Reading stops here, even when lenient.
    NoLineEnd {
        /// How far the reader looked.
        bytes: usize,
    },
    /// The line is longer than the reader accepts.
    TooLong {
        /// Length of the line in bytes.
        bytes: usize,
        /// The configured maximum.
        max: usize,
    },
    /// A Pharaoh line holds something other than `i-j` links.
    BadLink {
        /// The first word of the line that is not a link.
        token: String,
    },
    /// A Pharaoh link names a word its sentence pair does not have.
    LinkPastPair {
        /// The link, `(source word, target word)`.
        link: (usize, usize),
        /// Words of the source sentence.
        src_words: usize,
        /// Words of the target sentence.
        tgt_words: usize,
        /// The pair's words, `source / target`, as they were counted.
        words: String,
    },
}

impl fmt::Display for RowProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BlankLine => write!(f, "blank line"),
            Self::MissingTab => write!(f, "missing tab between source and target"),
            Self::EmptySource => write!(f, "empty source sentence"),
            Self::EmptyTarget => write!(f, "empty target sentence"),
            Self::InvalidUtf8 { byte } => write!(f, "invalid UTF-8 at byte {byte} of the line"),
            Self::ControlChar { byte, code: 0 } => {
                write!(f, "NUL byte at byte {byte} of the line (a binary or UTF-16 file?)")
            }
            Self::ControlChar { byte, code } => write!(f, "control character 0x{code:02X} at byte {byte} of the line"),
            Self::NoLineEnd { bytes } => write!(
                f,
                "no line end in the first {bytes} bytes (not a text file, or a device that never ends a line)"
            ),
            Self::TooLong { bytes, max } => {
                write!(f, "line is {bytes} bytes long, over the limit of {max}")
            }
            Self::BadLink { token } => {
                write!(f, "`{token}` is not a link `i-j` (source word i, target word j, counted from 0)")
            }
            Self::LinkPastPair { link: (i, j), src_words, tgt_words, words } => {
                write!(f, "link {i}-{j} is past the pair's {src_words} source and {tgt_words} target words ({words})")
            }
        }
    }
}

/// Every failure of this crate.
///
/// Row errors read like a compiler message: `data/x.tsv:17: missing tab
/// between source and target`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be opened or read.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// One row of a data file is malformed.
    #[error("{}:{line}: {problem}", .path.display())]
    Row {
        /// The file (or a label such as `<memory>` for in-memory data).
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with the row.
        problem: RowProblem,
    },
    /// A data file holds no line at all (nothing, or only a byte-order mark
    /// and a newline).
    #[error("{}: empty file, expected `source<TAB>target` lines", .path.display())]
    Empty {
        /// The file (or the label of in-memory data).
        path: PathBuf,
    },
    /// A value passed by the caller is out of range or inconsistent.
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// Which argument or setting.
        what: &'static str,
        /// Why it is rejected.
        reason: String,
    },
}

impl Error {
    /// Shorthand for [`Error::Invalid`].
    pub(crate) fn invalid(what: &'static str, reason: impl Into<String>) -> Self {
        Self::Invalid { what, reason: reason.into() }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
