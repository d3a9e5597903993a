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

use lingo_kernels::math::{exp_slice, vectorized};
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
    let len = row.len();
    // Positions at or after the causal limit are hidden whatever the padding.
    let (seen, after) = row.split_at_mut(mask.limit);
    // The closures are fixed per call, so each loop below is compiled once
    // without the padding test and once with it (branch-free either way).
    let weighed = vectorized(|| match mask.pad {
        None => softmax_unless(seen, |_| false),
        Some(pad) => softmax_unless(seen, |s| pad[s]),
    });
    if weighed {
        after.fill(0.0);
    } else {
        // Every score is f32::MIN: the softmax of equal scores.
        row.fill(1.0 / len as f32);
    }
}

/// The softmax of `row` over the positions `s` where `hidden(s)` is false,
/// 0 at the others; `false`, and `row` left as it was, when all are hidden.
///
/// Written without branches on the data: which weights are negligible
/// depends on the scores, and a branch on it was mispredicted so often that
/// the softmax took a sixth of a forward pass at the benchmark's largest
/// size. The bits are those of the plain loops: the maximum is exact in any
/// order, and the sum still runs in position order, one addition per
/// position (adding 0.0 for a dropped one changes nothing).
#[inline(always)]
fn softmax_unless(row: &mut [f32], hidden: impl Fn(usize) -> bool) -> bool {
    // m: eight running maxima, so the loop runs eight lanes wide.
    let mut lanes = [f32::MIN; 8];
    let mut any = false;
    for (c, chunk) in row.chunks(8).enumerate() {
        for (i, (&x, lane)) in chunk.iter().zip(&mut lanes).enumerate() {
            let h = hidden(8 * c + i);
            any |= !h;
            *lane = lane.max(if h { f32::MIN } else { x });
        }
    }
    if !any {
        return false;
    }
    let max = lanes.into_iter().fold(f32::MIN, f32::max);
    for x in row.iter_mut() {
        *x -= max;
    }
    exp_slice(row);
    let mut sum = 0.0;
    for (s, x) in row.iter_mut().enumerate() {
        let w = if !hidden(s) & (*x >= NEGLIGIBLE) { *x } else { 0.0 };
        *x = w;
        sum += w;
    }
    let inv = 1.0 / sum;
    for x in row.iter_mut() {
        *x *= inv;
    }
    true
}

/// The softmax's backward, in place: `dw` (∂L/∂weights) becomes ∂L/∂scores,
/// `ds_s = w_s (dw_s - Σ_j dw_j w_j)`, and 0 at hidden positions (their
/// scores were replaced by a constant, so nothing flows back through them).
pub(crate) fn masked_softmax_backward(w: &[f32], dw: &mut [f32], mask: RowMask<'_>) {
    let inner: f32 = w.iter().zip(dw.iter()).map(|(w, d)| w * d).sum();
    let (seen, after) = dw.split_at_mut(mask.limit);
    vectorized(|| {
        let ds = seen.iter_mut().zip(w);
        match mask.pad {
            None => ds.for_each(|(d, &w)| *d = w * (*d - inner)),
            Some(pad) => ds.zip(pad).for_each(|((d, &w), &hidden)| *d = if hidden { 0.0 } else { w * (*d - inner) }),
        }
    });
    after.fill(0.0);
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

    /// The softmax and its backward as plain loops, one branch per
    /// position: the bits the branch-free versions must keep.
    fn plain(row: &mut [f32], dw: &mut [f32], visible: impl Fn(usize) -> bool) {
        let mut max = f32::MIN;
        for (s, &x) in row.iter().enumerate() {
            if visible(s) {
                max = max.max(x);
            }
        }
        for x in row.iter_mut() {
            *x -= max;
        }
        exp_slice(row);
        let mut sum = 0.0;
        for (s, x) in row.iter_mut().enumerate() {
            if visible(s) && *x >= NEGLIGIBLE {
                sum += *x;
            } else {
                *x = 0.0;
            }
        }
        let inv = 1.0 / sum;
        row.iter_mut().for_each(|x| *x *= inv);
        let inner: f32 = row.iter().zip(dw.iter()).map(|(w, d)| w * d).sum();
        for (s, (d, &w)) in dw.iter_mut().zip(row.iter()).enumerate() {
            *d = if visible(s) { w * (*d - inner) } else { 0.0 };
        }
    }

    #[test]
    fn branch_free_loops_give_the_bits_of_plain_ones() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for trial in 0..200 {
            let (n_t, n_s) = (rng.random_range(1..6), rng.random_range(1..40));
            // Wide scores so that some weights are negligible and dropped.
            let scale = if trial % 2 == 0 { 1.0 } else { 40.0 };
            let pad = ndarray::Array2::from_shape_fn((1, n_s), |_| rng.random_bool(0.3));
            let masking = Masking::new(Some(&pad).filter(|_| trial % 3 != 0), trial % 4 == 1);
            for t in 0..n_t {
                let m = masking.row(0, t, n_t, n_s);
                let visible = |s: usize| s < m.limit && !m.pad.is_some_and(|p| p[s]);
                if !(0..n_s).any(visible) {
                    continue; // the uniform row, tested above
                }
                let scores: Vec<f32> = (0..n_s).map(|_| scale * rng.random_range(-1.0..1.0_f32)).collect();
                let grads: Vec<f32> = (0..n_s).map(|_| rng.random_range(-1.0..1.0_f32)).collect();
                let (mut w, mut dw) = (scores.clone(), grads.clone());
                masked_softmax(&mut w, m);
                masked_softmax_backward(&w, &mut dw, m);
                let (mut w_ref, mut dw_ref) = (scores, grads);
                plain(&mut w_ref, &mut dw_ref, visible);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&w), bits(&w_ref), "weights, trial {trial}, row {t}");
                assert_eq!(bits(&dw), bits(&dw_ref), "gradients, trial {trial}, row {t}");
            }
        }
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
