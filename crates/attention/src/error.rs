//! The one error type of this crate.

/// Everything that can go wrong in `lingo-attention`.
///
/// Shape errors name both shapes involved; configuration errors say what to
/// use instead.
///
/// ```
/// use lingo_attention::{Error, Scorer};
/// let err = "luong".parse::<Scorer>().unwrap_err();
/// assert!(matches!(err, Error::UnknownScorer { .. }));
/// assert!(err.to_string().contains("dot, general, additive, scaled_dot, multi_head"));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error from the tensor core (a shape that an op refused, ...).
    #[error(transparent)]
    Tensor(#[from] lingo_tensor::Error),
    /// A scorer name that is not one of [`crate::Scorer::NAMES`].
    #[error("unknown attention scorer {name:?}: valid names are {valid}")]
    UnknownScorer {
        /// The name that was given.
        name: String,
        /// The valid names, comma-separated.
        valid: String,
    },
    /// An [`crate::AttentionConfig`] that cannot work.
    #[error("attention config for {scorer}: {why}")]
    BadConfig {
        /// The scorer, as its name.
        scorer: String,
        /// What is wrong and what to do instead.
        why: String,
    },
    /// Two shapes that attention needs to agree do not.
    #[error("{op}: shapes {lhs:?} and {rhs:?} do not fit: {why}")]
    ShapeMismatch {
        /// The function that refused them.
        op: &'static str,
        /// The first shape (queries, or keys).
        lhs: Vec<usize>,
        /// The second shape (keys, values or the padding mask).
        rhs: Vec<usize>,
        /// What exactly does not fit.
        why: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Shorthand for an [`Error::ShapeMismatch`].
pub(crate) fn mismatch(op: &'static str, lhs: &[usize], rhs: &[usize], why: impl Into<String>) -> Error {
    Error::ShapeMismatch { op, lhs: lhs.to_vec(), rhs: rhs.to_vec(), why: why.into() }
}
