//! The dot-product family (dot, general, scaled dot, multi-head) as one
//! fused op.
//!
//! # Forward (one batch entry, one head)
//!
//! With `Q (T, d)`, `K (S, d)`, `V (S, d_v)` the head's columns and `α` the
//! scale (1, or `1/√d`):
//!
//! ```text
//! X = α · Q·Kᵀ                 (T, S)  scores, one GEMM
//! W = masked_softmax(X)        (T, S)  row by row, in place
//! C = W·V                      (T, d_v) one GEMM, into the head's context columns
//! ```
//!
//! With `H` heads, `Q`, `K`, `V` are column blocks of the projected inputs
//! (strided views, no copies), the contexts land side by side, and the
//! weights returned are the mean over heads, `W̄ = (1/H) Σ_h W_h`.
//!
//! # Backward (derivation)
//!
//! Given `dC` and `dW̄` (a loss may read the weights too), per head:
//!
//! ```text
//! dW = dW̄ / H + dC·Vᵀ                          (C = W·V; W̄ averages the heads)
//! dV = Wᵀ·dC
//! dX = W ⊙ (dW - rowsum(dW ⊙ W)),  0 where masked    (softmax: ∂w_i/∂x_j = w_i(δ_ij - w_j))
//! dQ = α · dX·K,   dK = α · dXᵀ·Q                    (X = α Q·Kᵀ)
//! ```
//!
//! Four GEMMs and one pass over `(T, S)`; the transposes are stride swaps.
//! When the keys and the values are one tensor, its gradient `dK + dV` is
//! summed here, entry by entry.

use std::mem::MaybeUninit;

use lingo_tensor::fastmath::vectorized;
use lingo_tensor::{Tensor, gemm, gemm_uninit, will_record};
use ndarray::{Array3, ArrayView2, ArrayViewMut2, Axis, Zip, s};

use super::{checked3, entries, finished, for_each_entry, grad_or_zeros, unpack, unzeroed};
use crate::output::AttentionOutput;
use crate::error::{Result, mismatch};
use crate::mask::{Masking, masked_softmax, masked_softmax_backward};

/// Checks `queries (B, T, H·d)`, `keys (B, S, H·d)`, `values (B, S, H·d_v)`
/// and returns `(B, T, S)`.
pub(crate) fn check(
    op: &'static str,
    q: &[usize],
    k: &[usize],
    v: &[usize],
    heads: usize,
    mask: &Masking,
) -> Result<(usize, usize, usize)> {
    if q.len() != 3 || k.len() != 3 {
        return Err(mismatch(op, q, k, "queries (batch, tgt_len, d) and keys (batch, src_len, d) must be 3-D"));
    }
    if v.len() != 3 || v[..2] != k[..2] {
        return Err(mismatch(op, k, v, "values must be (batch, src_len, d_v) like the keys (batch, src_len, d)"));
    }
    if q[0] != k[0] {
        return Err(mismatch(op, q, k, format!("batch sizes {} and {} differ", q[0], k[0])));
    }
    if q[2] != k[2] {
        return Err(mismatch(
            op,
            q,
            k,
            format!(
                "query size {} and key size {} differ: a dot product needs equal sizes; the `general` or `additive` scorer compares vectors of different sizes",
                q[2], k[2]
            ),
        ));
    }
    if heads == 0 || !q[2].is_multiple_of(heads) || !v[2].is_multiple_of(heads) {
        return Err(mismatch(
            op,
            q,
            v,
            format!("{heads} heads must divide the query size {} and the value size {}", q[2], v[2]),
        ));
    }
    mask.check(op, k)?;
    Ok((q[0], q[1], k[1]))
}

/// The fused op: `heads` heads of `softmax(α Q·Kᵀ)·V` over the column blocks
/// of `queries (B, T, H·d)`, `keys (B, S, H·d)`, `values (B, S, H·d_v)`.
pub(crate) fn dot_product(
    queries: &Tensor,
    keys: &Tensor,
    values: &Tensor,
    heads: usize,
    scale: f32,
    mask: &Masking,
) -> Result<AttentionOutput> {
    const OP: &str = "dot_product_attention";
    let (n_b, n_t, n_s) = check(OP, queries.shape(), keys.shape(), values.shape(), heads, mask)?;
    let d_context = values.shape()[2];
    let (dk, dv) = (queries.shape()[2] / heads, d_context / heads);
    let flops = 2 * n_t * n_s * (queries.shape()[2] + d_context);

    let (q, k, v) = (checked3(queries.data()), checked3(keys.data()), checked3(values.data()));
    let mut context_all = unzeroed((n_b, n_t, d_context));
    let mut weights_all = unzeroed((n_b, n_t, n_s));
    // With several heads, each head's weights: (B, H, T, S), held as
    // (B, H·T, S) so that a batch entry is one matrix, head after head.
    let mut heads_all = (heads > 1).then(|| unzeroed((n_b, heads * n_t, n_s)));
    // Backward reads every head's weights, and the outputs own theirs, so it
    // keeps a copy: made entry by entry by the thread that computed the
    // entry, while it is in cache, rather than all at once on the calling
    // thread while the others wait (10 MB for eight heads at the
    // benchmark's largest size). Without a backward pass (decoding), none.
    let mut saved = will_record([queries, keys, values]).then(|| unzeroed((n_b, heads * n_t, n_s)));
    let items: Vec<_> = context_all
        .outer_iter_mut()
        .zip(weights_all.outer_iter_mut())
        .zip(entries(&mut heads_all, n_b))
        .zip(entries(&mut saved, n_b))
        .collect();
    for_each_entry(items, flops, 0, |b, (((mut context, mut weights), mut head_weights), saved), _| {
        // Every result is written whole by a product that does not read it
        // (`gemm_uninit`), or by the mean: nothing is zeroed first.
        for h in 0..heads {
            let qh = q.slice(s![b, .., h * dk..(h + 1) * dk]);
            let kh = k.slice(s![b, .., h * dk..(h + 1) * dk]);
            let scores = match head_weights.as_mut() {
                Some(all) => all.slice_mut(s![h * n_t..(h + 1) * n_t, ..]),
                None => weights.view_mut(),
            };
            let mut w = gemm_uninit(scale, qh, kh.t(), scores); // X = α Q·Kᵀ
            for (t, mut row) in w.rows_mut().into_iter().enumerate() {
                masked_softmax(
                    row.as_slice_mut().unwrap_or_else(|| unreachable!("rows of an entry are contiguous")),
                    mask.row(b, t, n_t, n_s),
                );
            }
            gemm_uninit(
                1.0,
                w.view(),
                v.slice(s![b, .., h * dv..(h + 1) * dv]),
                context.slice_mut(s![.., h * dv..(h + 1) * dv]),
            ); // C = W·V
        }
        // SAFETY: the loop wrote each head's block of the heads' weights, or
        // (one head) the weights themselves.
        let head_weights = head_weights.map(|all| unsafe { all.assume_init() });
        let weights = match &head_weights {
            Some(all) => mean_over_heads(all.view(), weights, heads),
            None => unsafe { weights.assume_init() },
        };
        if let Some(mut saved) = saved {
            saved.zip_mut_with(head_weights.as_ref().unwrap_or(&weights), |s, &w| {
                s.write(w);
            });
        }
    });

    // SAFETY: `for_each_entry` ran the closure on every entry, which wrote
    // every element of each result's entry (the context head by head) and
    // of `saved`'s.
    let (context_all, weights_all, saved) =
        unsafe { (finished(context_all), finished(weights_all), saved.map(|s| finished(s))) };
    let heads_all = heads_all.map(|all| {
        unsafe { finished(all) }
            .into_shape_with_order((n_b, heads, n_t, n_s))
            .unwrap_or_else(|_| unreachable!("a fresh array"))
    });
    let mask = mask.clone();
    // Keys and values are often one tensor (the encoder's outputs). Its
    // gradient is then dK + dV: summed entry by entry below while both are in
    // cache, not as two whole arrays by the tape afterwards (3.2 MB each at
    // the benchmark's largest size). The same one addition, so the same bits
    // whenever nothing else has added to that gradient before.
    let shared_kv = keys.id() == values.id();
    let inputs = vec![queries.clone(), keys.clone(), values.clone()];
    let mut outputs = vec![context_all.into_dyn(), weights_all.into_dyn()];
    outputs.extend(heads_all.map(|all| all.into_dyn()));
    let results = Tensor::from_op_multi("dot_product_attention", outputs, inputs, move |bw| {
        let (q, k, v) = (checked3(bw.input(0)), checked3(bw.input(1)), checked3(bw.input(2)));
        let d_context = grad_or_zeros(bw.grad(0), (n_b, n_t, d_context));
        let d_context = checked3(&d_context);
        // What reaches the weights from outside the op: the mean's gradient and the heads' own.
        let d_mean = bw.grad(1).map(checked3);
        let d_heads = bw.grads.get(2).and_then(Option::as_ref).map(|g| g.as_standard_layout());
        let d_heads = d_heads.as_ref().map(|g| {
            g.view().into_shape_with_order((n_b, heads * n_t, n_s)).unwrap_or_else(|_| unreachable!("standard layout"))
        });
        let mut dq = bw.needs(0).then(|| unzeroed(q.dim()));
        let mut dk_ = bw.needs(1).then(|| unzeroed(k.dim()));
        // Summed into dK: dV goes to scratch, one entry at a time.
        let summed = shared_kv && bw.needs(1);
        let mut dv_ = (bw.needs(2) && !summed).then(|| unzeroed(v.dim()));
        let items: Vec<_> =
            entries(&mut dq, n_b).into_iter().zip(entries(&mut dk_, n_b)).zip(entries(&mut dv_, n_b)).collect();
        let scratch_len = n_t * n_s + if summed { v.len() / n_b } else { 0 };
        for_each_entry(items, 2 * flops, scratch_len, |b, ((dq_b, dk_b), dv_b), scratch| {
            let (dw, dv_scratch) = scratch.split_at_mut(n_t * n_s);
            // SAFETY: `MaybeUninit<f32>` is laid out as `f32`, and only floats
            // are stored through this view (by `gemm_uninit`), so the scratch
            // stays valid floats.
            let dv_scratch = unsafe { &mut *(std::ptr::from_mut(dv_scratch) as *mut [MaybeUninit<f32>]) };
            let dv_scratch = summed.then(|| {
                ArrayViewMut2::from_shape((n_s, v.dim().2), dv_scratch)
                    .unwrap_or_else(|_| unreachable!("scratch holds S·d_v"))
            });
            // Each gradient's entry is written whole, head by head, by products that do not read it.
            let (mut dq_b, mut dk_b, mut dv_b) = (dq_b, dk_b, dv_b.or(dv_scratch));
            let saved = saved.as_ref().unwrap_or_else(|| unreachable!("a recorded op keeps its weights"));
            let (w_all, grad) = (saved.index_axis(Axis(0), b), d_context.index_axis(Axis(0), b));
            let mut dw =
                ArrayViewMut2::from_shape((n_t, n_s), dw).unwrap_or_else(|_| unreachable!("scratch holds T·S"));
            for h in 0..heads {
                let cols = |d: usize| s![.., h * d..(h + 1) * d];
                let rows = s![h * n_t..(h + 1) * n_t, ..];
                let w = w_all.slice(rows);
                let dc = grad.slice(cols(dv));
                let vh = v.slice(s![b, .., h * dv..(h + 1) * dv]);
                if let Some(dv_b) = dv_b.as_mut() {
                    gemm_uninit(1.0, w.t(), dc, dv_b.slice_mut(cols(dv))); // dV = Wᵀ·dC
                }
                if dq_b.is_none() && dk_b.is_none() {
                    continue;
                }
                // dW = (what reaches the weights from outside) + dC·Vᵀ
                let own = d_heads.as_ref().map(|g| g.slice(s![b, h * n_t..(h + 1) * n_t, ..]));
                let outside = weights_grad(d_mean.map(|g| g.index_axis_move(Axis(0), b)), own, heads, dw.view_mut());
                gemm(1.0, dc, vh.t(), if outside { 1.0 } else { 0.0 }, dw.view_mut());
                for (t, (w_row, mut dw_row)) in w.rows().into_iter().zip(dw.rows_mut()).enumerate() {
                    let w_row = w_row.to_slice().unwrap_or_else(|| unreachable!());
                    masked_softmax_backward(
                        w_row,
                        dw_row.as_slice_mut().unwrap_or_else(|| unreachable!()),
                        mask.row(b, t, n_t, n_s),
                    );
                }
                if let Some(dq_b) = dq_b.as_mut() {
                    gemm_uninit(scale, dw.view(), k.slice(s![b, .., h * dk..(h + 1) * dk]), dq_b.slice_mut(cols(dk))); // dQ = α dX·K
                }
                if let Some(dk_b) = dk_b.as_mut() {
                    gemm_uninit(scale, dw.t(), q.slice(s![b, .., h * dk..(h + 1) * dk]), dk_b.slice_mut(cols(dk))); // dK = α dXᵀ·Q
                }
            }
            if let (true, Some(dk_b), Some(dv_b)) = (summed, dk_b, dv_b) {
                // SAFETY: every head wrote its columns of both, above.
                sum_into(unsafe { dk_b.assume_init() }, unsafe { dv_b.assume_init() }.view());
            }
        });
        // SAFETY: `for_each_entry` ran the closure on every entry, whose heads wrote each buffer's entry whole.
        let done = |buf: Option<Array3<_>>| buf.map(|g| unsafe { finished(g) }.into_dyn());
        vec![done(dq), done(dk_), done(dv_)] // with `summed`, dv_ is None: its part is in dk_
    });
    Ok(unpack(results))
}

/// `sum ← sum + part`, vectorized (one addition per element, so the bits
/// of the tape's own sum of two gradients).
fn sum_into(mut sum: ArrayViewMut2<'_, f32>, part: ArrayView2<'_, f32>) {
    match (sum.as_slice_mut(), part.to_slice()) {
        (Some(sum), Some(part)) => vectorized(|| sum.iter_mut().zip(part).for_each(|(s, &p)| *s += p)),
        _ => sum += &part,
    }
}

/// `W̄ = (1/H) Σ_h W_h` into `mean (T, S)`, from `heads (H·T, S)`, head
/// after head; heads are added in order, so the bits are fixed.
fn mean_over_heads<'m>(
    all: ArrayView2<'_, f32>,
    mut mean: ArrayViewMut2<'m, MaybeUninit<f32>>,
    heads: usize,
) -> ArrayViewMut2<'m, f32> {
    let n_t = mean.nrows();
    Zip::from(&mut mean).and(all.slice(s![..n_t, ..])).for_each(|m, &w| {
        m.write(w);
    });
    // SAFETY: every element was written just above.
    let mut mean = unsafe { mean.assume_init() };
    for h in 1..heads {
        mean += &all.slice(s![h * n_t..(h + 1) * n_t, ..]);
    }
    let inv = 1.0 / heads as f32;
    mean.mapv_inplace(|m| m * inv);
    mean
}

/// The gradient reaching one head's weights from outside the op, into
/// `dw (T, S)`: its own part (when a loss reads the heads' weights) plus
/// `1/H` of the mean's (all of it with one head). Returns whether there
/// was any (else `dw` is left as it was).
fn weights_grad(
    mean: Option<ArrayView2<'_, f32>>,
    own: Option<ArrayView2<'_, f32>>,
    heads: usize,
    mut dw: ArrayViewMut2<'_, f32>,
) -> bool {
    let inv = 1.0 / heads as f32;
    match (mean, own) {
        (None, None) => return false,
        (Some(gm), None) if heads == 1 => dw.assign(&gm),
        (Some(gm), None) => Zip::from(dw).and(gm).for_each(|d, &m| *d = m * inv),
        (None, Some(gh)) => dw.assign(&gh),
        (Some(gm), Some(gh)) => Zip::from(dw).and(gh).and(gm).for_each(|d, &h, &m| *d = h + m * inv),
    }
    true
}
