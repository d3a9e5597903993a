//! The one error type of this crate.

/// Everything that can go wrong in `lingo-attention`.
///
/// Shape errors are the tensor core's [`lingo_tensor::Error::ShapeMismatch`]
/// (inside [`Error::Tensor`]), naming both shapes; configuration errors say
/// what to use instead.
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
    /// An error from the tensor core, and every shape error: two shapes that
    /// do not fit, both named.
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
    /// An [`crate::Intervention`] that cannot be built or applied.
    #[error("attention intervention {name}: {why}")]
    Intervention {
        /// The intervention, as its name.
        name: String,
        /// What is wrong.
        why: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// A value out of its range, as the tensor core reports them.
pub(crate) fn invalid(op: &'static str, why: impl Into<String>) -> Error {
    Error::Tensor(lingo_tensor::Error::BadArgument { op, why: why.into() })
}

/// A shape error, as the tensor core reports them (naming both shapes).
pub(crate) fn mismatch(op: &'static str, lhs: &[usize], rhs: &[usize], why: impl Into<String>) -> Error {
    Error::Tensor(lingo_tensor::Error::ShapeMismatch { op, lhs: lhs.to_vec(), rhs: rhs.to_vec(), why: why.into() })
}
