//! The one error type of this crate.

/// Everything that can go wrong in `lingo-tensor`.
///
/// Shape errors always carry the shapes involved, so a message reads like
/// `matmul: shapes [2, 3] and [4, 5] do not fit: inner sizes 3 and 4 differ`.
///
/// ```
/// use lingo_tensor::{Error, Tensor};
/// let a = Tensor::zeros(&[2, 3]);
/// let b = Tensor::zeros(&[4, 5]);
/// let err = a.matmul(&b).unwrap_err();
/// assert!(matches!(err, Error::ShapeMismatch { .. }));
/// assert!(err.to_string().contains("[2, 3] and [4, 5]"));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two shapes that an operation needs to agree do not.
    #[error("{op}: shapes {lhs:?} and {rhs:?} do not fit: {why}")]
    ShapeMismatch {
        /// The operation that refused them.
        op: &'static str,
        /// The first (left) shape.
        lhs: Vec<usize>,
        /// The second (right) shape.
        rhs: Vec<usize>,
        /// What exactly does not fit.
        why: String,
    },
    /// One tensor's shape is wrong for the operation (wrong rank, axis out of range, ...).
    #[error("{op}: shape {shape:?} is not allowed: {why}")]
    BadShape {
        /// The operation that refused it.
        op: &'static str,
        /// The offending shape.
        shape: Vec<usize>,
        /// Why it is refused.
        why: String,
    },
    /// A value passed to an operation is out of its range (a probability above 1, an index past the end, ...).
    #[error("{op}: {why}")]
    BadArgument {
        /// The operation that refused it.
        op: &'static str,
        /// What is wrong with the value.
        why: String,
    },
    /// [`crate::check_gradients`] found an analytic gradient that disagrees
    /// with its finite-difference estimate.
    #[error("gradient check: input {input}, element {index}: analytic {analytic} but numeric {numeric}")]
    GradientMismatch {
        /// Which input (position in the list passed to the checker).
        input: usize,
        /// Which element of it, in row-major order.
        index: usize,
        /// The gradient back-propagation computed.
        analytic: f32,
        /// The central finite-difference estimate.
        numeric: f32,
    },
    /// [`crate::check_fused`] found a fused kernel that disagrees with its
    /// composed form.
    #[error("fused against composed: {what} differs by {diff} (tolerance {tolerance})")]
    FusedMismatch {
        /// What differs: `output 1`, `gradient of input 0`, or the outputs' count.
        what: String,
        /// The largest elementwise difference.
        diff: f32,
        /// What it was allowed.
        tolerance: f32,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Shorthand for a [`Error::ShapeMismatch`].
pub(crate) fn mismatch(op: &'static str, lhs: &[usize], rhs: &[usize], why: impl Into<String>) -> Error {
    Error::ShapeMismatch { op, lhs: lhs.to_vec(), rhs: rhs.to_vec(), why: why.into() }
}

/// Shorthand for a [`Error::BadShape`].
pub(crate) fn bad_shape(op: &'static str, shape: &[usize], why: impl Into<String>) -> Error {
    Error::BadShape { op, shape: shape.to_vec(), why: why.into() }
}

/// Shorthand for a [`Error::BadArgument`].
pub(crate) fn bad_arg(op: &'static str, why: impl Into<String>) -> Error {
    Error::BadArgument { op, why: why.into() }
}
