//! Softmax over one row, plain and masked: the normaliser of the fused
//! loss (with the row's cross-entropy and its gradient) and of every
//! attention kernel.
//!
//! `softmax(z)_c = e^{z_c - m} / Σ_c' e^{z_c' - m}`, with `m = max z`
//! subtracted first so that no exponential overflows.

use crate::{lanes, math};

/// `row ← softmax(row)` in place, returning `(m, Σ_c e^{z_c - m})` so that
/// a caller can form log-probabilities, `log p_c = z_c - m - log Σ`. The
/// maximum and the sum run in eight lanes ([`lanes`]), the exponentials
/// are [`math::exp_slice`]; under the reference kernels each is its plain
/// version.
///
/// ```
/// let mut row = [1.0_f32, 1.0, 1000.0];
/// let (max, sum) = lingo_kernels::softmax::row(&mut row);
/// assert_eq!((row[2], max, sum as f64), (1.0, 1000.0, 1.0)); // no overflow at 1000
/// assert!(row[0] < 1e-37);                                  // e^{-999}
/// let mut row = [0.0_f32, 2_f32.ln()];
/// lingo_kernels::softmax::row(&mut row);
/// assert!((row[0] - 1.0 / 3.0).abs() < 1e-7 && (row[1] - 2.0 / 3.0).abs() < 1e-7);
/// ```
#[inline]
pub fn row(row: &mut [f32]) -> (f32, f32) {
    let max = lanes::max(row);
    row.iter_mut().for_each(|z| *z -= max);
    math::exp_slice(row);
    let sum = lanes::sum(row);
    let inv = (1.0 / f64::from(sum)) as f32;
    row.iter_mut().for_each(|p| *p *= inv);
    (max, sum)
}

/// `row ← softmax(row + bias)` in place, returning the row's cross-entropy
/// against class `y` with label smoothing `eps`,
/// `-(1-ε) log p_y - (ε/C) Σ_c log p_c`, where
///
/// ```text
/// log p_c = (z_c - max z) - log Σ_c' e^{z_c' - max z}
/// Σ_c log p_c = Σ_c z_c - C·max z - C·log Σ_c' e^{z_c' - max z}
/// ```
///
/// summed in f64. Each `log p_c ≤ 0`, so the loss is `≥ 0`: rounding below
/// it is clamped away (a NaN is kept: broken weights must be seen).
///
/// ```
/// let mut row = [0.0_f32, 0.0];
/// let loss = lingo_kernels::softmax::cross_entropy(&mut row, None, 1, 0.0);
/// assert!((loss - 2f64.ln()).abs() < 1e-7 && row == [0.5, 0.5]);
/// ```
pub fn cross_entropy(row: &mut [f32], bias: Option<&[f32]>, y: usize, eps: f32) -> f64 {
    let classes = row.len() as f64;
    if let Some(b) = bias {
        row.iter_mut().zip(b).for_each(|(z, b)| *z += b);
    }
    let sum_z = lanes::fold(row, 0.0, |s, z| s + f64::from(z), |s, t| s + t); // Σ_c z_c, in f64
    let z_y = row[y];
    let (max, sum) = self::row(row);
    let (max, log_sum) = (f64::from(max), f64::from(sum).ln());
    let log_p_y = f64::from(z_y) - max - log_sum;
    let sum_log_p = sum_z - classes * (max + log_sum);
    let loss = -(1.0 - f64::from(eps)) * log_p_y - f64::from(eps) / classes * sum_log_p;
    if loss < 0.0 { 0.0 } else { loss }
}

/// `row ← (p - q) · scale`: the probabilities [`cross_entropy`] left in
/// `row` turned into the loss's gradient, with the smoothed target
/// `q_c = (1-ε)[c = y] + ε/C`.
///
/// ```
/// let mut row = [0.25_f32, 0.75];
/// lingo_kernels::softmax::cross_entropy_grad(&mut row, 1, 0.0, 2.0);
/// assert_eq!(row, [0.5, -0.5]);
/// ```
pub fn cross_entropy_grad(row: &mut [f32], y: usize, eps: f32, scale: f32) {
    let classes = row.len() as f32;
    row.iter_mut().for_each(|g| *g -= eps / classes); // - q: the smoothed part ...
    row[y] -= 1.0 - eps; // ... and the true class
    row.iter_mut().for_each(|g| *g *= scale);
}

/// `e⁻⁶⁴ ≈ 1.6·10⁻²⁸`: in [`masked`], a score this far below its row's
/// maximum gets weight exactly 0. Its true weight is under `1.6·10⁻²⁸`,
/// invisible in `f32` next to the maximum's (at least `1/S`), and keeping
/// it would feed subnormal numbers into the products that follow (weights
/// times values), which x86 processes about a hundred times slower.
pub const NEGLIGIBLE: f32 = 1.603_810_9e-28;

/// The softmax of `row` over its visible positions, in place: position `s`
/// is hidden when `s ≥ limit` or `pad[s]`. Hidden positions, and
/// negligible ones ([`NEGLIGIBLE`]), get weight exactly 0; when nothing is
/// visible, every weight is `1 / len` (the softmax of equal scores, not
/// `0 / 0`).
///
/// The fast version has no branches on the data (which weights are
/// negligible depends on the scores, and a branch on it was mispredicted
/// so often that the softmax took a sixth of an attention forward pass).
/// Its maximum is exact in any order and its sum runs in position order,
/// as [`reference::masked`]'s do; the two differ only by their exponentials
/// (the tests hold them within 1e-6).
///
/// ```
/// let mut row = [1.0_f32, 50.0, 1.0];
/// lingo_kernels::softmax::masked(&mut row, 3, Some(&[false, true, false]));
/// assert_eq!(row, [0.5, 0.0, 0.5]);
/// let mut row = [3.0_f32, 4.0];
/// lingo_kernels::softmax::masked(&mut row, 0, None);                 // nothing visible
/// assert_eq!(row, [0.5, 0.5]);
/// ```
#[inline]
pub fn masked(row: &mut [f32], limit: usize, pad: Option<&[bool]>) {
    if crate::reference() {
        return reference::masked(row, limit, pad);
    }
    let len = row.len();
    // Positions at or after the causal limit are hidden whatever the padding.
    let (seen, after) = row.split_at_mut(limit);
    // The closures are fixed per call, so each loop below is compiled once
    // without the padding test and once with it (branch-free either way).
    let weighed = math::vectorized(|| match pad {
        None => softmax_unless(seen, |_| false),
        Some(pad) => softmax_unless(seen, |s| pad[s]),
    });
    if weighed {
        after.fill(0.0);
    } else {
        row.fill(1.0 / len as f32);
    }
}

/// The softmax of `row` over the positions `s` where `hidden(s)` is false,
/// 0 at the others; `false`, and `row` left as it was, when all are hidden.
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
    math::exp_slice(row);
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

/// The backward of [`masked`], in place: `dw` (∂L/∂weights, given the
/// weights `w`) becomes ∂L/∂scores, `ds_s = w_s (dw_s - Σ_j dw_j w_j)`, and
/// 0 at hidden positions (their scores were replaced by a constant, so
/// nothing flows back through them): the operations of
/// [`reference::masked_backward`] in the same order, so the same bits.
///
/// ```
/// let w = [0.5_f32, 0.0, 0.5];
/// let mut dw = [1.0_f32, 7.0, 0.0];
/// lingo_kernels::softmax::masked_backward(&w, &mut dw, 3, Some(&[false, true, false]));
/// assert_eq!(dw, [0.25, 0.0, -0.25]);
/// ```
#[inline]
pub fn masked_backward(w: &[f32], dw: &mut [f32], limit: usize, pad: Option<&[bool]>) {
    if crate::reference() {
        return reference::masked_backward(w, dw, limit, pad);
    }
    let inner: f32 = w.iter().zip(dw.iter()).map(|(w, d)| w * d).sum();
    let (seen, after) = dw.split_at_mut(limit);
    math::vectorized(|| {
        let ds = seen.iter_mut().zip(w);
        match pad {
            None => ds.for_each(|(d, &w)| *d = w * (*d - inner)),
            Some(pad) => ds.zip(pad).for_each(|((d, &w), &hidden)| *d = if hidden { 0.0 } else { w * (*d - inner) }),
        }
    });
    after.fill(0.0);
}

/// The masked softmax and its backward as plain loops, one branch per position.
pub mod reference {
    use super::NEGLIGIBLE;

    /// [`masked`](super::masked), written plainly: the maximum `m` over the
    /// visible positions; `w_s = e^{x_s - m}` where visible and not
    /// negligible, else 0; then `w_s / Σ w`; `1 / len` everywhere when
    /// nothing is visible.
    ///
    /// ```
    /// let mut row = [0.0_f32, 0.0, 9.0];
    /// lingo_kernels::softmax::reference::masked(&mut row, 2, None);
    /// assert_eq!(row, [0.5, 0.5, 0.0]);
    /// ```
    #[inline]
    pub fn masked(row: &mut [f32], limit: usize, pad: Option<&[bool]>) {
        let visible = |s: usize| s < limit && !pad.is_some_and(|p| p[s]);
        if !(0..row.len()).any(visible) {
            let uniform = 1.0 / row.len() as f32;
            row.fill(uniform);
            return;
        }
        let mut max = f32::MIN;
        for (s, &x) in row.iter().enumerate() {
            if visible(s) {
                max = max.max(x);
            }
        }
        let mut sum = 0.0;
        for (s, x) in row.iter_mut().enumerate() {
            let e = (*x - max).exp();
            if visible(s) && e >= NEGLIGIBLE {
                *x = e;
                sum += e;
            } else {
                *x = 0.0;
            }
        }
        row.iter_mut().for_each(|x| *x *= 1.0 / sum);
    }

    /// [`masked_backward`](super::masked_backward), written plainly:
    /// `ds_s = w_s (dw_s - Σ_j dw_j w_j)` where visible, else 0.
    ///
    /// ```
    /// let mut dw = [1.0_f32, 0.0];
    /// lingo_kernels::softmax::reference::masked_backward(&[0.5, 0.5], &mut dw, 2, None);
    /// assert_eq!(dw, [0.25, -0.25]);
    /// ```
    #[inline]
    pub fn masked_backward(w: &[f32], dw: &mut [f32], limit: usize, pad: Option<&[bool]>) {
        let inner: f32 = w.iter().zip(dw.iter()).map(|(w, d)| w * d).sum();
        for (s, (d, &w)) in dw.iter_mut().zip(w).enumerate() {
            let visible = s < limit && !pad.is_some_and(|p| p[s]);
            *d = if visible { w * (*d - inner) } else { 0.0 };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A few hundred rows: widths across the lane boundary, padding, causal
    /// limits, scores wide enough that some weights are negligible.
    fn rows() -> impl Iterator<Item = (Vec<f32>, Vec<f32>, usize, Option<Vec<bool>>)> {
        let mut state = 0x2545_f491_u32;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as f32 / u32::MAX as f32 // in [0, 1]
        };
        (0..300).map(move |trial| {
            let len = 1 + (next() * 40.0) as usize;
            let scale = if trial % 2 == 0 { 1.0 } else { 40.0 };
            let scores = (0..len).map(|_| scale * (2.0 * next() - 1.0)).collect();
            let grads = (0..len).map(|_| 2.0 * next() - 1.0).collect();
            let limit = if trial % 4 == 1 { (next() * (len + 1) as f32) as usize } else { len };
            let pad = (trial % 3 != 0).then(|| (0..len).map(|_| next() < 0.3).collect());
            (scores, grads, limit.min(len), pad)
        })
    }

    #[test]
    fn the_masked_softmax_and_its_backward_are_near_the_reference() {
        for (trial, (scores, grads, limit, pad)) in rows().enumerate() {
            let pad = pad.as_deref();
            let (mut w, mut w_ref) = (scores.clone(), scores);
            masked(&mut w, limit, pad);
            reference::masked(&mut w_ref, limit, pad);
            let hidden = |s: usize| s >= limit || pad.is_some_and(|p| p[s]);
            let any = (0..w.len()).any(|s| !hidden(s));
            for s in 0..w.len() {
                assert!((w[s] - w_ref[s]).abs() <= 1e-6, "trial {trial}, position {s}: {} vs {}", w[s], w_ref[s]);
                assert!(!(any && hidden(s)) || w[s] == 0.0, "trial {trial}: hidden position {s} weighs {}", w[s]);
            }
            let (mut dw, mut dw_ref) = (grads.clone(), grads);
            masked_backward(&w, &mut dw, limit, pad);
            reference::masked_backward(&w, &mut dw_ref, limit, pad);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&dw), bits(&dw_ref), "gradients, trial {trial}");
        }
    }

    #[test]
    fn negligible_weights_are_exactly_zero_not_subnormal() {
        let mut row = [0.0, -63.0, -65.0, -200.0];
        masked(&mut row, 4, None);
        assert!(row[1] > 0.0 && row[1] < 1e-27);
        assert_eq!(&row[2..], &[0.0, 0.0]);
    }

    #[test]
    fn a_row_softmax_sums_to_one_and_matches_the_plain_formula() {
        for (scores, ..) in rows() {
            let mut p = scores.clone();
            let (max, sum) = row(&mut p);
            let plain_max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let plain_sum: f64 = scores.iter().map(|&z| f64::from(z - plain_max).exp()).sum();
            assert_eq!(max, plain_max);
            assert!((f64::from(sum) - plain_sum).abs() <= 1e-5 * plain_sum);
            for (&z, &p) in scores.iter().zip(&p) {
                assert!((f64::from(p) - f64::from(z - max).exp() / plain_sum).abs() <= 1e-6);
            }
        }
    }
}
