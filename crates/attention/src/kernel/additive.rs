//! Bahdanau's additive score as one fused op (after the two projections,
//! which stay ordinary `linear` ops: they cost `O(B·T·d·A)`, not `O(B·T·S·A)`).
//!
//! # Forward (one batch entry)
//!
//! With the projected queries `Q' = Q W_qᵀ (T, A)`, keys `K' = K W_kᵀ (S, A)`,
//! the vector `v (A)` and the values `V (S, d_v)`:
//!
//! ```text
//! H_t = tanh(Q'_t + K')        (S, A)  one query's hidden layer, in a scratch buffer
//! X_t = H_t · v                (S)     its scores
//! W_t = masked_softmax(X_t)
//! C = W·V                      (T, d_v) one GEMM
//! ```
//!
//! `H` as a whole is `(B, T, S, A)`. Where that is small (at most
//! [`KEEP_HIDDEN`] floats: one decoder step of the sort study is 32·1·7·64)
//! forward keeps it for backward. Where it is not (8·200·200·512 floats is
//! 655 MB at the largest benchmark size), only one query's `(S, A)` slice
//! exists at a time, and backward computes it again: one more `tanh` per
//! element instead of the memory.
//!
//! # Backward (derivation)
//!
//! Given `dC` and `dW`:
//!
//! ```text
//! dW += dC·Vᵀ,   dV = Wᵀ·dC                              (C = W·V)
//! dX_t = W_t ⊙ (dW_t - Σ dW_t ⊙ W_t),  0 where masked    (softmax)
//! G_t[s, a] = dX_t[s] · v_a · (1 - H_t[s, a]²)           (tanh' = 1 - tanh²)
//! dQ'_t = Σ_s G_t[s, ·],   dK' += G_t,   dv += H_tᵀ · dX_t
//! ```
//!
//! all in one pass over `(S, A)` per query. `dv` is summed per batch entry
//! and then over the batch in order, so the bits do not depend on threads.
//! Positions hidden by the causal mask are skipped outright.

use lingo_kernels::gemm;
use lingo_kernels::lanes::dot as dot8;
use lingo_kernels::math::tanh_slice;
use lingo_tensor::{BackwardMulti, Tensor, will_record};
use ndarray::{Array2, Array3, ArrayD, ArrayView2, ArrayViewMut1, ArrayViewMut2, Axis};

use super::{
    Grads, Results, checked3, flat, for_each_entry, grad_or_zeros, per_entry, scratch_matrix, slice, slice_mut, unpack,
};
use crate::error::{Result, mismatch};
use crate::mask::{Masking, RowMask, masked_softmax, masked_softmax_backward};
use crate::output::AttentionOutput;

/// Checks `q_proj (B, T, A)`, `k_proj (B, S, A)`, `v (A)`, `values (B, S, d_v)`
/// and returns `(B, T, S, A)`.
pub(crate) fn check(
    op: &'static str,
    q: &[usize],
    k: &[usize],
    v: &[usize],
    values: &[usize],
    mask: &Masking,
) -> Result<(usize, usize, usize, usize)> {
    if q.len() != 3 || k.len() != 3 || q[0] != k[0] || q[2] != k[2] {
        return Err(mismatch(
            op,
            q,
            k,
            "projected queries (batch, tgt_len, A) and keys (batch, src_len, A) must agree in batch and A",
        ));
    }
    if v != [k[2]] {
        return Err(mismatch(op, k, v, format!("v must be a vector of the attention size {}", k[2])));
    }
    if values.len() != 3 || values[..2] != k[..2] {
        return Err(mismatch(op, k, values, "values must be (batch, src_len, d_v) like the keys"));
    }
    mask.check(op, k)?;
    Ok((q[0], q[1], k[1], k[2]))
}

/// `h[s, ·] = tanh(q + k[s, ·])` for the first `n` source positions.
pub(super) fn hidden(h: &mut [f32], q: &[f32], k: ArrayView2<'_, f32>, n: usize) {
    let a = q.len();
    for (s, h_s) in h[..n * a].chunks_exact_mut(a).enumerate() {
        let k_s = slice(k.row(s));
        for ((h, &q), &k) in h_s.iter_mut().zip(q).zip(k_s) {
            *h = q + k;
        }
    }
    tanh_slice(&mut h[..n * a]);
}

/// One query's weights over the source: `H = tanh(q' + K')` into `h` (its
/// visible rows), the scores `x_s = H_s·v`, then the masked softmax turns
/// `x` into the weights in place.
pub(super) fn query_weights(
    h: &mut [f32],
    q: &[f32],
    k: ArrayView2<'_, f32>,
    v: &[f32],
    x: &mut [f32],
    m: RowMask<'_>,
) {
    if m.limit > 0 {
        hidden(h, q, k, m.limit); // H_t = tanh(Q'_t + K')
        for (x, h_s) in x[..m.limit].iter_mut().zip(h.chunks_exact(v.len())) {
            *x = dot8(h_s, v); // X_t = H_t·v
        }
    }
    masked_softmax(x, m);
}

/// One query's share of the score gradients from `dx` (∂L/∂scores of its
/// visible positions) and its hidden layer `h`, in one pass over `(S, A)`:
/// `G[s, a] = dx_s · v_a · (1 - H[s, a]²)`, `dq += Σ_s G[s, ·]`, `dk[s] += G[s, ·]`,
/// `dv += Σ_s dx_s · H[s, ·]`.
pub(super) fn query_grads(dx: &[f32], h: &[f32], v: &[f32], dq: &mut [f32], dk: &mut [f32], dv: &mut [f32]) {
    let n_a = v.len();
    for (s, &e) in dx.iter().enumerate().filter(|&(_, &e)| e != 0.0) {
        let (h_s, dk_s) = (&h[s * n_a..(s + 1) * n_a], &mut dk[s * n_a..(s + 1) * n_a]);
        for ((((dq, dk), dv), &h), &v) in dq.iter_mut().zip(dk_s).zip(dv.iter_mut()).zip(h_s).zip(v) {
            let g = e * v * (1.0 - h * h); // G[s, a]
            *dq += g;
            *dk += g;
            *dv += e * h;
        }
    }
}

/// The most floats of `H (B, T, S, A)` forward keeps for backward (4 MiB);
/// past it, backward computes each query's slice again (see the module docs).
pub(super) const KEEP_HIDDEN: usize = 1 << 20;

/// The row `t` of a standard-layout matrix as a slice.
fn row(m: ArrayView2<'_, f32>, t: usize) -> &[f32] {
    slice(m.index_axis_move(Axis(0), t))
}

/// The fused op: `softmax(tanh(Q' + K')·v)·V` for `q_proj (B, T, A)`,
/// `k_proj (B, S, A)`, `v (A)`, `values (B, S, d_v)`.
pub(crate) fn additive(
    q_proj: &Tensor,
    k_proj: &Tensor,
    v: &Tensor,
    values: &Tensor,
    mask: &Masking,
) -> Result<AttentionOutput> {
    const OP: &str = "additive_attention";
    let (n_b, n_t, n_s, n_a) = check(OP, q_proj.shape(), k_proj.shape(), v.shape(), values.shape(), mask)?;
    let d_v = values.shape()[2];
    let flops = n_t * n_s * (4 * n_a + 2 * d_v);
    // Rows are read as slices, so the projections must be contiguous (they are, from `linear`).
    let (qp, kp, v_data) =
        (q_proj.data().as_standard_layout(), k_proj.data().as_standard_layout(), v.data().as_standard_layout());
    let (qp, kp, vals, v_slice) = (checked3(&qp), checked3(&kp), checked3(values.data()), flat(&v_data));

    let record = will_record([q_proj, k_proj, v, values]);
    let mut results = Results::new((n_b, n_t, n_s), d_v, 1, record);
    // H kept for backward, one row (S·A) per query, when small enough.
    let mut kept =
        (record && n_b * n_t * n_s * n_a <= KEEP_HIDDEN).then(|| Array3::<f32>::zeros((n_b, n_t, n_s * n_a)));
    let items: Vec<_> =
        results.entries().into_iter().zip(per_entry(kept.as_mut().map(|k| k.outer_iter_mut()), n_b)).collect();
    for_each_entry(items, flops, n_s * n_a, |b, (out, mut kept_b), scratch| {
        let (scores, context, mut rest) = out.whole(); // one head
        let mut weights = scores.zeros();
        let (qp, kp) = (qp.index_axis(Axis(0), b), kp.index_axis(Axis(0), b));
        for t in 0..n_t {
            let h = match kept_b.as_mut() {
                Some(k) => slice_mut(k.row_mut(t)),
                None => &mut *scratch,
            };
            let x = slice_mut(weights.row_mut(t));
            query_weights(h, row(qp, t), kp, v_slice, x, mask.row(b, t, n_t, n_s)); // W_t
        }
        context.gemm(1.0, weights.view(), vals.index_axis(Axis(0), b)); // C = W·V
        rest.head(weights.view());
        rest.finish();
    });
    let (outputs, saved) = results.finish();

    let mask = mask.clone();
    let inputs = vec![q_proj.clone(), k_proj.clone(), v.clone(), values.clone()];
    let results = Tensor::from_op_multi(OP, outputs, inputs, move |bw| {
        let saved = saved.as_ref().expect("a recorded op keeps its weights");
        backward(bw, saved, kept.as_ref(), &mask, 2 * flops)
    });
    Ok(unpack(results))
}

/// The backward rule (see the module docs), batch entry by batch entry,
/// from the saved weights `(B, T, S)` and, when forward kept it, `H`.
fn backward(
    bw: &BackwardMulti<'_>,
    saved: &Array3<f32>,
    kept: Option<&Array3<f32>>,
    mask: &Masking,
    flops: usize,
) -> Vec<Option<ArrayD<f32>>> {
    let (qp, kp) = (bw.input(0).as_standard_layout(), bw.input(1).as_standard_layout());
    let (qp, kp, vals) = (checked3(&qp), checked3(&kp), checked3(bw.input(3)));
    let v = bw.input(2).as_standard_layout();
    let v = flat(&v);
    let ((n_b, n_t, n_s), n_a) = (saved.dim(), v.len());
    let (d_context, d_weights) =
        (grad_or_zeros(bw.grad(0), (n_b, n_t, vals.dim().2)), grad_or_zeros(bw.grad(1), saved.dim()));
    let (d_context, d_weights) = (checked3(&d_context), checked3(&d_weights));
    let score_grads = bw.needs(0) || bw.needs(1) || bw.needs(2);
    let mut dq = Array3::<f32>::zeros(if score_grads { qp.raw_dim() } else { ndarray::Ix3(0, 0, 0) });
    let mut dk = Array3::<f32>::zeros(if score_grads { kp.raw_dim() } else { ndarray::Ix3(0, 0, 0) });
    let mut dv_parts = Array2::<f32>::zeros((n_b, if score_grads { n_a } else { 0 }));
    let mut dvals = Grads::new([bw.needs(3).then(|| vals.dim())]);
    let score: Vec<_> = if score_grads {
        let parts = dq.outer_iter_mut().zip(dk.outer_iter_mut()).zip(dv_parts.outer_iter_mut());
        parts.map(|((dq, dk), dv)| Some(ScoreGrads { dq, dk, dv })).collect()
    } else {
        (0..n_b).map(|_| None).collect()
    };
    let items: Vec<_> = score.into_iter().zip(dvals.entries(n_b)).collect();
    for_each_entry(items, flops, n_s * n_a + n_t * n_s, |b, (score, mut dvals_b), scratch| {
        let (h, dw) = scratch.split_at_mut(n_s * n_a);
        let mut dw = scratch_matrix(dw, (n_t, n_s));
        let (w, dc) = (saved.index_axis(Axis(0), b), d_context.index_axis(Axis(0), b));
        if let Some(dvals_b) = dvals_b[0].take() {
            dvals_b.gemm(1.0, w.t(), dc); // dV = Wᵀ·dC
        }
        let Some(grads) = score else { return };
        dw.assign(&d_weights.index_axis(Axis(0), b));
        gemm(1.0, dc, vals.index_axis(Axis(0), b).t(), 1.0, dw.view_mut()); // dW += dC·Vᵀ
        let h = match kept {
            Some(k) => Hidden::Kept(k.index_axis(Axis(0), b)),
            None => Hidden::Recompute(h),
        };
        score_backward(b, (qp.index_axis(Axis(0), b), kp.index_axis(Axis(0), b)), v, w, dw, h, mask, grads);
    });
    let dv = bw.needs(2).then(|| dv_parts.sum_axis(Axis(0)).into_dyn()); // in batch order
    let dvals = dvals.finish().pop().flatten();
    vec![bw.needs(0).then(|| dq.into_dyn()), bw.needs(1).then(|| dk.into_dyn()), dv, dvals]
}

/// Where backward finds one batch entry's hidden layer `H_t`: kept by
/// forward, one row of `S·A` per query, or computed again into a scratch buffer.
enum Hidden<'a> {
    Kept(ArrayView2<'a, f32>),
    Recompute(&'a mut [f32]),
}

/// Where one batch entry's score gradients go: `dQ' (T, A)`, `dK' (S, A)`, its part of `dv (A)`.
struct ScoreGrads<'a> {
    dq: ArrayViewMut2<'a, f32>,
    dk: ArrayViewMut2<'a, f32>,
    dv: ArrayViewMut1<'a, f32>,
}

/// From `dW (T, S)` to the gradients of the projections and `v`, one query
/// at a time (see the module docs): softmax backward, then `H_t` (kept, or
/// again), then `G_t` and its three sums in one pass.
#[allow(clippy::too_many_arguments)]
fn score_backward(
    b: usize,
    (qp, kp): (ArrayView2<'_, f32>, ArrayView2<'_, f32>),
    v: &[f32],
    w: ArrayView2<'_, f32>,
    mut dw: ArrayViewMut2<'_, f32>,
    mut hidden_t: Hidden<'_>,
    mask: &Masking,
    mut g: ScoreGrads<'_>,
) {
    let (n_t, n_s) = (qp.nrows(), kp.nrows());
    let dv = slice_mut(g.dv.view_mut());
    let dk = g.dk.as_slice_mut().expect("a fresh array");
    for t in 0..n_t {
        let m = mask.row(b, t, n_t, n_s);
        let dx = slice_mut(dw.row_mut(t));
        masked_softmax_backward(slice(w.row(t)), dx, m); // dX_t
        if m.limit == 0 {
            continue;
        }
        let h: &[f32] = match &mut hidden_t {
            Hidden::Kept(k) => row(k.view(), t),
            Hidden::Recompute(buf) => {
                hidden(buf, row(qp, t), kp, m.limit); // H_t again
                buf
            }
        };
        query_grads(&dx[..m.limit], h, v, slice_mut(g.dq.row_mut(t)), dk, dv);
    }
}
