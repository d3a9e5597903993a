//! Masks and the masked softmax shared by every kernel.
//!
//! A query row may attend to source position `s` unless `s` is padding
//! (`src_pad_mask[b][s]` is true) or, with `causal`, `s` lies after the
//! query's own position. Positions are aligned at the end, so query `t` of
//! `T` sees `s ≤ t + S - T`: with `T = S` (self-attention) that is the usual
//! `s ≤ t`, and a single new query (`T = 1`) against a prefix of `S` keys sees
//! all of them, as incremental decoding needs.
//!
//! Masked scores are treated as `f32::MIN`, the most negative *finite* value,
//! not `-∞`: whenever some position is visible, `exp(f32::MIN - max)` is 0, and
//! a row with nothing visible (all padding) becomes the softmax of equal
//! scores, uniform weights, instead of `0 / 0 = NaN`. The kernel writes those
//! zeros and the uniform row directly rather than exponentiating `f32::MIN`.

use std::sync::Arc;

use lingo_kernels::softmax;
use ndarray::{Array2, Array3};

use crate::error::{Result, mismatch};

/// Which source positions each query may see: padding and causal masks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Masking {
    /// `(batch, src_len)`, true at padding; shared by every step of a `Prepared`.
    pad: Option<Arc<Array2<bool>>>,
    causal: bool,
}

impl Masking {
    /// A padding mask (copied once, into standard layout) and the causal flag.
    pub(crate) fn new(src_pad_mask: Option<&Array2<bool>>, causal: bool) -> Masking {
        Masking { pad: src_pad_mask.map(|m| Arc::new(m.as_standard_layout().into_owned())), causal }
    }

    /// The same padding mask with another causal flag (no copy).
    pub(crate) fn with_causal(&self, causal: bool) -> Masking {
        Masking { pad: self.pad.clone(), causal }
    }

    /// The mask of the given batch rows, in that order.
    pub(crate) fn select_rows(&self, rows: &[usize]) -> Masking {
        Masking { pad: self.pad.as_ref().map(|m| Arc::new(m.select(ndarray::Axis(0), rows))), causal: self.causal }
    }

    /// Checks that the padding mask is `(batch, src_len)` for `keys (batch, src_len, d)`.
    pub(crate) fn check(&self, op: &'static str, keys: &[usize]) -> Result<()> {
        match &self.pad {
            Some(m) if m.shape() != &keys[..2] => Err(mismatch(
                op,
                keys,
                m.shape(),
                "src_pad_mask must be (batch, src_len) of the keys (batch, src_len, d)",
            )),
            _ => Ok(()),
        }
    }

    /// The visible positions of query `t` (of `tgt_len`) in batch entry `b`.
    pub(crate) fn row(&self, b: usize, t: usize, tgt_len: usize, src_len: usize) -> RowMask<'_> {
        let limit = if self.causal { (t + 1 + src_len).saturating_sub(tgt_len).min(src_len) } else { src_len };
        let pad = self.pad.as_ref().map(|m| m.row(b).to_slice().expect("stored in standard layout"));
        RowMask { pad, limit }
    }

    /// Every hidden position of `(batch, tgt_len, src_len)` scores, true
    /// where hidden: the mask [`crate::plain`] fills, one query row at a time
    /// by the same rule as [`Masking::row`].
    pub(crate) fn hidden(&self, (batch, tgt_len, src_len): (usize, usize, usize)) -> Array3<bool> {
        Array3::from_shape_fn((batch, tgt_len, src_len), |(b, t, s)| {
            let row = self.row(b, t, tgt_len, src_len);
            s >= row.limit || row.pad.is_some_and(|pad| pad[s])
        })
    }
}

/// The visible source positions of one query: `s < limit` and not padding.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowMask<'a> {
    pad: Option<&'a [bool]>,
    /// Positions at or after `limit` are hidden by the causal mask.
    pub(crate) limit: usize,
}

impl RowMask<'_> {
    /// Whether source position `s` is visible: before the causal limit and not padding.
    pub(crate) fn visible(&self, s: usize) -> bool {
        s < self.limit && !self.pad.is_some_and(|pad| pad[s])
    }
}

/// In place, scores to weights: the softmax over the visible positions,
/// 0 at hidden (and negligible) ones, uniform when nothing is visible
/// ([`lingo_kernels::softmax::masked`]).
pub(crate) fn masked_softmax(row: &mut [f32], mask: RowMask<'_>) {
    softmax::masked(row, mask.limit, mask.pad);
}

/// The softmax's backward, in place: `dw` (∂L/∂weights) becomes ∂L/∂scores
/// ([`lingo_kernels::softmax::masked_backward`]).
pub(crate) fn masked_softmax_backward(w: &[f32], dw: &mut [f32], mask: RowMask<'_>) {
    softmax::masked_backward(w, dw, mask.limit, mask.pad);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_positions_get_exactly_zero_and_empty_rows_are_uniform() {
        let pad = ndarray::arr2(&[[false, true, false, true]]);
        let masking = Masking::new(Some(&pad), false);
        let mut row = [1.0, 50.0, 2.0, -3.0];
        masked_softmax(&mut row, masking.row(0, 0, 1, 4));
        let e = (-1.0_f32).exp();
        assert!((row[0] - e / (1.0 + e)).abs() < 1e-6 && row[1] == 0.0 && row[3] == 0.0);
        let all = ndarray::arr2(&[[true, true]]);
        let mut row = [3.0, -1e30];
        masked_softmax(&mut row, Masking::new(Some(&all), false).row(0, 0, 1, 2));
        assert_eq!(row, [0.5, 0.5]);
    }

    #[test]
    fn causal_limit_is_aligned_at_the_end() {
        let m = Masking::new(None, true);
        assert_eq!(m.row(0, 0, 3, 3).limit, 1); // self-attention: s <= t
        assert_eq!(m.row(0, 2, 3, 3).limit, 3);
        assert_eq!(m.row(0, 0, 1, 5).limit, 5); // one new query sees the whole prefix
        assert_eq!(m.row(0, 0, 4, 2).limit, 0); // more queries than keys: the first see nothing
    }
}
