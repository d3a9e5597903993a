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

use lingo_kernels::fresh::{Block, Split};
use lingo_kernels::gemm;
use lingo_kernels::lanes::dot as dot8;
use lingo_kernels::math::vectorized;
use lingo_tensor::{BackwardMulti, Tensor, will_record};
use ndarray::{
    Array3, ArrayD, ArrayView2, ArrayView3, ArrayViewMut2, Axis, Ix2, Slice, SliceInfo, SliceInfoElem, Zip, s,
};

use super::{
    Entry, Grads, Head, Results, checked3, for_each_entry, grad_or_zeros, scratch_matrix, slice, slice_mut, unpack,
};
use crate::error::{Result, mismatch};
use crate::mask::{Masking, masked_softmax, masked_softmax_backward};
use crate::output::AttentionOutput;

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

/// How one call splits its inputs into heads: `count` column blocks of
/// `d` features (queries, keys) and `d_v` (values), scaled by `scale`.
#[derive(Debug, Clone, Copy)]
struct Heads {
    count: usize,
    d: usize,
    d_v: usize,
    scale: f32,
    n_t: usize,
    n_s: usize,
}

impl Heads {
    /// Head `h`'s columns of one batch entry's `a (·, H·d)`.
    fn of<'a>(&self, a: ArrayView2<'a, f32>, h: usize, d: usize) -> ArrayView2<'a, f32> {
        a.slice_axis_move(Axis(1), Slice::from(h * d..(h + 1) * d))
    }

    /// Head `h`'s rows `(T, S)` of one entry's heads' weights `(H·T, S)`.
    fn rows(&self, h: usize) -> SliceInfo<[SliceInfoElem; 2], Ix2, Ix2> {
        s![h * self.n_t..(h + 1) * self.n_t, ..]
    }
}

/// The inputs of one call: `queries (B, T, H·d)`, `keys (B, S, H·d)`, `values (B, S, H·d_v)`.
type Inputs<'a> = (ArrayView3<'a, f32>, ArrayView3<'a, f32>, ArrayView3<'a, f32>);

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
    let hs = Heads { count: heads, d: queries.shape()[2] / heads, d_v: d_context / heads, scale, n_t, n_s };
    let flops = 2 * n_t * n_s * (queries.shape()[2] + d_context);
    let inputs = (checked3(queries.data()), checked3(keys.data()), checked3(values.data()));
    let mut results = Results::new((n_b, n_t, n_s), d_context, heads, will_record([queries, keys, values]));
    for_each_entry(results.entries(), flops, 0, |b, entry, _| forward_entry(b, &hs, inputs, mask, entry));
    let (outputs, saved) = results.finish();

    let mask = mask.clone();
    // Keys and values are often one tensor (the encoder's outputs). Its
    // gradient is then dK + dV, summed entry by entry while both are in
    // cache: the same one addition the tape would make, so the same bits.
    let shared_kv = keys.id() == values.id();
    let recorded = vec![queries.clone(), keys.clone(), values.clone()];
    let results = Tensor::from_op_multi(OP, outputs, recorded, move |bw| {
        let saved = saved.as_ref().expect("a recorded op keeps its weights");
        backward(bw, &hs, saved, &mask, shared_kv, 2 * flops)
    });
    Ok(unpack(results))
}

/// Forward for batch entry `b`, head by head:
/// `X = α Q·Kᵀ`, `W = masked_softmax(X)`, `C = W·V`.
fn forward_entry(b: usize, hs: &Heads, (q, k, v): Inputs<'_>, mask: &Masking, out: Entry<'_>) {
    let (q, k, v) = (q.index_axis_move(Axis(0), b), k.index_axis_move(Axis(0), b), v.index_axis_move(Axis(0), b));
    if hs.n_t == 1
        && let (Some(q), Some(k), Some(v)) = (q.to_slice(), k.to_slice(), v.to_slice())
    {
        return one_query(b, hs, (q, k, v), mask, out);
    }
    let (heads, mut rest) = out.split();
    for (h, Head { scores, context }) in heads.enumerate() {
        let (qh, kh, vh) = (hs.of(q, h, hs.d), hs.of(k, h, hs.d), hs.of(v, h, hs.d_v));
        let mut w = scores.gemm(hs.scale, qh, kh.t()); // X = α Q·Kᵀ
        for (t, row) in w.rows_mut().into_iter().enumerate() {
            masked_softmax(slice_mut(row), mask.row(b, t, hs.n_t, hs.n_s)); // W = masked_softmax(X)
        }
        context.gemm(1.0, w.view(), vh); // C = W·V
        rest.head(w.view());
    }
    rest.finish();
}

/// [`forward_entry`] for one query row (a decoding step) of contiguous
/// inputs, on plain slices and every head at once: the same sums in the
/// same order as the two one-row products (`dot8` for the scores, rows of
/// `V` added in order for the context), so the same bits, without a view
/// and a product dispatch per head.
fn one_query(b: usize, hs: &Heads, (q, k, v): (&[f32], &[f32], &[f32]), mask: &Masking, out: Entry<'_>) {
    let (d, d_v) = (hs.d, hs.d_v);
    let (row_k, row_v) = (hs.count * d, hs.count * d_v);
    let (scores, context, mut rest) = out.whole();
    // X = α Q·Kᵀ, one row per head
    let mut w = scores.fill_with(|(h, s)| hs.scale * dot8(&q[h * d..(h + 1) * d], &k[s * row_k + h * d..][..d]));
    for row in w.rows_mut() {
        masked_softmax(slice_mut(row), mask.row(b, 0, 1, hs.n_s)); // W = masked_softmax(X)
    }
    let mut c = context.zeros();
    let c = c.as_slice_mut().expect("one row is contiguous");
    for (h, w_h) in w.rows().into_iter().enumerate() {
        let c_h = &mut c[h * d_v..(h + 1) * d_v];
        for (s, &w_s) in w_h.iter().enumerate() {
            c_h.iter_mut().zip(&v[s * row_v + h * d_v..][..d_v]).for_each(|(c, &v)| *c += w_s * v); // C = W·V
        }
        rest.head(w_h.insert_axis(Axis(0)));
    }
    rest.finish();
}

/// The backward rule (see the module docs): per batch entry, per head, the
/// four products and the softmax backward.
fn backward(
    bw: &BackwardMulti<'_>,
    hs: &Heads,
    saved: &Array3<f32>,
    mask: &Masking,
    shared_kv: bool,
    flops: usize,
) -> Vec<Option<ArrayD<f32>>> {
    let inputs = (checked3(bw.input(0)), checked3(bw.input(1)), checked3(bw.input(2)));
    let n_b = inputs.0.dim().0;
    let d_context = grad_or_zeros(bw.grad(0), (n_b, hs.n_t, hs.count * hs.d_v));
    let d_context = checked3(&d_context);
    // What reaches the weights from outside the op: the mean's gradient and the heads' own.
    let d_mean = bw.grad(1).map(checked3);
    let d_heads = bw.grads.get(2).and_then(Option::as_ref).map(|g| g.as_standard_layout());
    let d_heads = d_heads.as_ref().map(|g| {
        let rows = (n_b, hs.count * hs.n_t, hs.n_s);
        g.view().into_shape_with_order(rows).expect("standard layout")
    });
    // With shared keys and values, dV goes to scratch and is summed into dK.
    let summed = shared_kv && bw.needs(1);
    let mut grads = Grads::new([
        bw.needs(0).then(|| inputs.0.dim()),
        bw.needs(1).then(|| inputs.1.dim()),
        (bw.needs(2) && !summed).then(|| inputs.2.dim()),
    ]);
    let (n_t, n_s) = (hs.n_t, hs.n_s);
    let scratch_len = n_t * n_s + if summed { n_s * hs.count * hs.d_v } else { 0 };
    for_each_entry(grads.entries(n_b), flops, scratch_len, |b, mut entry, scratch| {
        let (dw, dv_scratch) = scratch.split_at_mut(n_t * n_s);
        let dv = match entry[2].take() {
            Some(dv) => Dv::Own(dv.split_cols(hs.count)),
            None if summed => Dv::Scratch(scratch_matrix(dv_scratch, (n_s, hs.count * hs.d_v))),
            None => Dv::None,
        };
        let g = EntryGrads { dq: per_head(entry[0].take(), hs.count), dk: per_head(entry[1].take(), hs.count), dv };
        let outside = Outside {
            mean: d_mean.map(|g| g.index_axis_move(Axis(0), b)),
            heads: d_heads.map(|g| g.index_axis_move(Axis(0), b)),
        };
        let inputs =
            (inputs.0.index_axis(Axis(0), b), inputs.1.index_axis(Axis(0), b), inputs.2.index_axis(Axis(0), b));
        let (w_all, dc) = (saved.index_axis(Axis(0), b), d_context.index_axis(Axis(0), b));
        backward_entry(b, hs, inputs, (w_all, dc, outside), mask, scratch_matrix(dw, (n_t, n_s)), g);
    });
    grads.finish() // with `summed`, dV is None: its part is in dK
}

/// What reaches one entry's weights from outside the op: the gradient of
/// the mean `(T, S)` and of the heads' own weights `(H·T, S)`.
#[derive(Clone, Copy)]
struct Outside<'a> {
    mean: Option<ArrayView2<'a, f32>>,
    heads: Option<ArrayView2<'a, f32>>,
}

/// Where one entry's `dV` goes: its own fresh gradient (one block per
/// head), scratch that is then summed into `dK` (keys and values one
/// tensor), or nowhere.
enum Dv<'a, 's> {
    Own(Split<'a>),
    Scratch(ArrayViewMut2<'s, f32>),
    None,
}

/// One entry's fresh input gradients, one block per head, each written
/// whole by a product.
struct EntryGrads<'a, 's> {
    dq: Option<Split<'a>>,
    dk: Option<Split<'a>>,
    dv: Dv<'a, 's>,
}

/// Backward for batch entry `b`, head by head, from the saved weights
/// `(H·T, S)`, `dC (T, H·d_v)` and what reaches the weights from outside;
/// `dw (T, S)` is scratch.
fn backward_entry(
    b: usize,
    hs: &Heads,
    (q, k, v): (ArrayView2<'_, f32>, ArrayView2<'_, f32>, ArrayView2<'_, f32>),
    (w_all, d_context, outside): (ArrayView2<'_, f32>, ArrayView2<'_, f32>, Outside<'_>),
    mask: &Masking,
    mut dw: ArrayViewMut2<'_, f32>,
    mut g: EntryGrads<'_, '_>,
) {
    for h in 0..hs.count {
        let cols_v = h * hs.d_v..(h + 1) * hs.d_v;
        let (w, dc) = (w_all.slice(hs.rows(h)), d_context.slice(s![.., cols_v.clone()]));
        match &mut g.dv {
            Dv::Own(dv) => drop(next_head(dv).gemm(1.0, w.t(), dc)), // dV = Wᵀ·dC
            Dv::Scratch(dv) => gemm(1.0, w.t(), dc, 0.0, dv.slice_mut(s![.., cols_v.clone()])), // the same bits
            Dv::None => {}
        }
        if g.dq.is_none() && g.dk.is_none() {
            continue;
        }
        // dW = (what reaches the weights from outside) + dC·Vᵀ
        let own = outside.heads.map(|g| g.slice_move(hs.rows(h)));
        let from_outside = weights_grad(outside.mean, own, hs.count, dw.view_mut());
        gemm(1.0, dc, hs.of(v, h, hs.d_v).t(), if from_outside { 1.0 } else { 0.0 }, dw.view_mut());
        for (t, (w_row, dw_row)) in w.rows().into_iter().zip(dw.rows_mut()).enumerate() {
            masked_softmax_backward(slice(w_row), slice_mut(dw_row), mask.row(b, t, hs.n_t, hs.n_s)); // dX
        }
        if let Some(dq) = g.dq.as_mut() {
            next_head(dq).gemm(hs.scale, dw.view(), hs.of(k, h, hs.d)); // dQ = α dX·K
        }
        if let Some(dk) = g.dk.as_mut() {
            let dk = next_head(dk).gemm(hs.scale, dw.t(), hs.of(q, h, hs.d)); // dK = α dXᵀ·Q
            if let Dv::Scratch(dv) = &g.dv {
                sum_into(dk, dv.slice(s![.., cols_v])); // keys and values one tensor: dK + dV
            }
        }
    }
}

/// A gradient's block cut into one block per head, in order.
fn per_head(block: Option<Block<'_>>, heads: usize) -> Option<Split<'_>> {
    block.map(|g| g.split_cols(heads))
}

/// The next head's block of a gradient cut into one block per head.
fn next_head<'a>(blocks: &mut Split<'a>) -> Block<'a> {
    blocks.next().expect("one block per head")
}

/// `sum ← sum + part`, row by row, vectorized (one addition per element,
/// so the bits of the tape's own sum of two gradients).
fn sum_into(mut sum: ArrayViewMut2<'_, f32>, part: ArrayView2<'_, f32>) {
    for (mut sum, part) in sum.rows_mut().into_iter().zip(part.rows()) {
        match (sum.as_slice_mut(), part.to_slice()) {
            (Some(sum), Some(part)) => vectorized(|| sum.iter_mut().zip(part).for_each(|(s, &p)| *s += p)),
            _ => sum += &part,
        }
    }
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
