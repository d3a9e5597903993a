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

use lingo_tensor::fastmath::exp_slice;
use ndarray::Array2;

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

    /// Checks that the padding mask is `(batch, src_len)` for `keys (batch, src_len, d)`.
    pub(crate) fn check(&self, op: &'static str, keys: &[usize]) -> Result<()> {
        match &self.pad {
            Some(m) if m.shape() != &keys[..2] => Err(mismatch(op, keys, m.shape(), "src_pad_mask must be (batch, src_len) of the keys (batch, src_len, d)")),
            _ => Ok(()),
        }
    }

    /// The visible positions of query `t` (of `tgt_len`) in batch entry `b`.
    pub(crate) fn row(&self, b: usize, t: usize, tgt_len: usize, src_len: usize) -> RowMask<'_> {
        let limit = if self.causal { (t + 1 + src_len).saturating_sub(tgt_len).min(src_len) } else { src_len };
        let pad = self.pad.as_ref().map(|m| m.row(b).to_slice().unwrap_or_else(|| unreachable!("stored in standard layout")));
        RowMask { pad, limit }
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
    fn visible(&self, s: usize) -> bool {
        s < self.limit && !self.pad.is_some_and(|p| p[s])
    }
}

/// `e⁻⁶⁴ ≈ 1.6·10⁻²⁸`: a score this far below its row's maximum gets weight
/// exactly 0. Its true weight is under `1.6·10⁻²⁸`, invisible in `f32` next
/// to the maximum's (at least `1/S`), and keeping it would feed subnormal
/// numbers into the GEMMs that follow (weights times values), which x86
/// processes about a hundred times slower: an unscaled dot score over 512
/// dimensions made the whole op three times slower before this cut.
const NEGLIGIBLE: f32 = 1.603_810_9e-28;

/// In place, scores to weights: `w_s = e^{x_s - m} / Σ_{s' visible} e^{x_{s'} - m}`
/// over visible `s` (with `m` their maximum, for stability), `w_s = 0` for
/// hidden ones (and for negligible ones, see [`NEGLIGIBLE`]), and `1 / S`
/// everywhere when nothing is visible.
pub(crate) fn masked_softmax(row: &mut [f32], mask: RowMask<'_>) {
    let mut max = f32::MIN;
    let mut any = false;
    for (s, &x) in row.iter().enumerate() {
        if mask.visible(s) {
            any = true;
            max = max.max(x);
        }
    }
    if !any {
        // Every score is f32::MIN: the softmax of equal scores.
        row.fill(1.0 / row.len() as f32);
        return;
    }
    for x in row.iter_mut() {
        *x -= max;
    }
    exp_slice(row);
    let mut sum = 0.0;
    for (s, x) in row.iter_mut().enumerate() {
        if mask.visible(s) && *x >= NEGLIGIBLE {
            sum += *x;
        } else {
            *x = 0.0;
        }
    }
    let inv = 1.0 / sum;
    for x in row.iter_mut() {
        *x *= inv;
    }
}

/// The softmax's backward, in place: `dw` (∂L/∂weights) becomes ∂L/∂scores,
/// `ds_s = w_s (dw_s - Σ_j dw_j w_j)`, and 0 at hidden positions (their
/// scores were replaced by a constant, so nothing flows back through them).
pub(crate) fn masked_softmax_backward(w: &[f32], dw: &mut [f32], mask: RowMask<'_>) {
    let inner: f32 = w.iter().zip(dw.iter()).map(|(w, d)| w * d).sum();
    for (s, (d, &w)) in dw.iter_mut().zip(w).enumerate() {
        *d = if mask.visible(s) { w * (*d - inner) } else { 0.0 };
    }
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
    fn negligible_weights_are_exactly_zero_not_subnormal() {
        let mut row = [0.0, -63.0, -65.0, -200.0];
        masked_softmax(&mut row, Masking::default().row(0, 0, 1, 4));
        assert!(row[1] > 0.0 && row[1] < 1e-27);
        assert_eq!(&row[2..], &[0.0, 0.0]);
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
