//! Input checks shared by the text and the PNG heatmaps.

use ndarray::ArrayView2;

use crate::Error;

/// Checks that `weights` `(tgt_len, src_len)` match the token lists, are not
/// empty and hold only finite numbers.
///
/// Finite weights outside 0..1 pass: the renderers clamp them for shading,
/// because a weight of `1.0000001` from a softmax is not an error worth
/// stopping for, while NaN always means something upstream broke.
pub(crate) fn check_attention<S: AsRef<str>, T: AsRef<str>>(
    weights: ArrayView2<f32>,
    src_tokens: &[S],
    tgt_tokens: &[T],
) -> Result<(), Error> {
    let (tgt_len, src_len) = weights.dim();
    let count_error = |side, axis, expected, got| Error::TokenCount { side, axis, expected, got, tgt_len, src_len };
    if src_tokens.len() != src_len {
        return Err(count_error("source", "columns", src_len, src_tokens.len()));
    }
    if tgt_tokens.len() != tgt_len {
        return Err(count_error("target", "rows", tgt_len, tgt_tokens.len()));
    }
    if tgt_len == 0 || src_len == 0 {
        return Err(Error::EmptyWeights { tgt_len, src_len });
    }
    match weights.indexed_iter().find(|(_, w)| !w.is_finite()) {
        Some(((row, col), &value)) => Err(Error::NonFiniteWeight { row, col, value }),
        None => Ok(()),
    }
}

/// Index of the first largest weight in `row`: ties go to the earlier
/// column, as `argmax` does in NumPy and PyTorch.
pub(crate) fn peak(row: ndarray::ArrayView1<f32>) -> usize {
    row.iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |(best, best_w), (j, &w)| if w > best_w { (j, w) } else { (best, best_w) })
        .0
}
