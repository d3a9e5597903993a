//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong in `lingo-viz`.
///
/// Every variant says what was wrong in words a user can act on: which
/// tokens did not match which axis, which cell held a non-finite weight,
/// which file could not be written and why.
///
/// ```
/// use lingo_viz::{format_attention, Error, TextOptions};
/// use ndarray::array;
///
/// let weights = array![[0.5_f32, 0.5]];
/// let err = format_attention(weights.view(), &["a"], &["x"], &TextOptions::default())
///     .unwrap_err();
/// assert!(matches!(err, Error::TokenCount { .. }));
/// assert_eq!(
///     err.to_string(),
///     "1 source tokens given, but the weights have 2 columns (shape (tgt_len, src_len) = (1, 2))"
/// );
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The number of tokens on one side differs from the matching axis of
    /// the `(tgt_len, src_len)` weights.
    #[error(
        "{got} {side} tokens given, but the weights have {expected} {axis} \
         (shape (tgt_len, src_len) = ({tgt_len}, {src_len}))"
    )]
    TokenCount {
        /// `"source"` or `"target"`.
        side: &'static str,
        /// `"columns"` for source tokens, `"rows"` for target tokens.
        axis: &'static str,
        /// How many tokens the weights call for.
        expected: usize,
        /// How many tokens were given.
        got: usize,
        /// Rows of the weights.
        tgt_len: usize,
        /// Columns of the weights.
        src_len: usize,
    },
    /// The weights have no rows or no columns, so there is nothing to draw.
    #[error("the weights are empty (shape ({tgt_len}, {src_len})); a heatmap needs at least one row and one column")]
    EmptyWeights {
        /// Rows of the weights.
        tgt_len: usize,
        /// Columns of the weights.
        src_len: usize,
    },
    /// A weight is NaN or infinite. (Finite weights outside 0..1 are
    /// clamped, not rejected: see the crate docs.)
    #[error("the weight at row {row}, column {col} is {value}, not a finite number")]
    NonFiniteWeight {
        /// Target position (row).
        row: usize,
        /// Source position (column).
        col: usize,
        /// The offending value.
        value: f32,
    },
    /// A line-chart series cannot be drawn as given.
    #[error("series {index} ({label:?}): {problem}")]
    InvalidSeries {
        /// Position of the series in the slice passed in.
        index: usize,
        /// The series' legend label.
        label: String,
        /// What is wrong with it.
        problem: String,
    },
    /// An option has a value the renderer cannot work with.
    #[error("option `{option}`: {problem}")]
    InvalidOption {
        /// The option's field name.
        option: &'static str,
        /// What is wrong with its value.
        problem: String,
    },
    /// The picture would be larger than the renderer allows.
    #[error(
        "the picture would be {width} x {height} pixels, more than the limit of {max_pixels}; use a smaller cell_size or fewer tokens"
    )]
    TooLarge {
        /// Width it would have had.
        width: u64,
        /// Height it would have had.
        height: u64,
        /// The limit on width × height.
        max_pixels: u64,
    },
    /// An SVG or HTML file could not be written to `path`.
    #[error("cannot write {}: {source}", path.display())]
    WriteFile {
        /// The file that was being written.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// The PNG could not be encoded or written to `path`.
    #[error("cannot write PNG {}: {source}", path.display())]
    Write {
        /// The file that was being written.
        path: PathBuf,
        /// The underlying encoder or I/O error.
        source: image::ImageError,
    },
}
