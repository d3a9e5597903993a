//! Bahdanau's decoder recurrence under teacher forcing as one fused op:
//! at every target position, additive attention with the previous state as
//! the query, then a GRU step on `[x_t; context_t]`.
//!
//! # Why one op
//!
//! In Bahdanau's placement each step's context feeds the RNN, so the decoder
//! cannot run over the whole target at once the way Luong's does. Built from
//! the graph's pieces, every step records a query projection, an attention
//! kernel, a concatenation and a one-step GRU, each with its own buffers and
//! its own small weight-gradient products. Here the recurrence is one loop
//! over buffers allocated once, and everything that does not depend on it
//! runs once for all steps: the `x` part of the GRU's input projection before
//! the loop, every weight gradient after it. The arithmetic is the same; what
//! goes is the per-step bookkeeping, about 40 graph nodes per shard on the
//! sort study's model (`benches/recurrence.rs` measures the gain).
//!
//! # Forward (every batch row at step `t`)
//!
//! With `E` input features, `D_v` value features, `H` hidden units, `A` the
//! attention size, `K' = K W_kᵀ` the prepared keys and `V` the values:
//!
//! ```text
//! xe = x·W_ih[:, :E]ᵀ + b_ih                          (B·T, 3H)    once, before the loop
//! [ĥ | q'] = s_{t-1}·[W_hh; W_q]ᵀ + [b_hh | 0]         (B, 3H + A)  one product: both read s_{t-1}
//! weights_t = softmax(tanh(q' + K')·v)                 (B, S)       per row, as in `additive`
//! context_t = weights_t·V                              (B, D_v)
//! x̂ = xe_t + context_t·W_ih[:, E:]ᵀ                    (B, 3H)
//! s_t = GRU(x̂, ĥ, s_{t-1})                            (B, H)       `lingo_tensor::fused::gru::step_forward`
//! ```
//!
//! # Backward (derivation)
//!
//! Going back from the last step, with `ds` the gradient at `s_t` (from the
//! output, plus what step `t + 1` passed back):
//!
//! ```text
//! dx̂, dĥ, and ds ⊙ z                                  `gru::step_backward`
//! dcontext = dx̂·W_ih[:, E:]                           (B, D_v)
//! dweights = ∂L/∂weights_t + dcontext·Vᵀ,  dV += weights_tᵀ·dcontext    (context = weights·V)
//! dq', dK', dv                                         softmax and tanh backward, as in `additive`
//! ds_{t-1} = ds ⊙ z + [dĥ | dq']·[W_hh; W_q]           one product
//! ```
//!
//! and after the loop, over all `B·T` rows at once:
//!
//! ```text
//! [dW_hh; dW_q] = [dĥ | dq']ᵀ·s_prev,   db_hh = Σ dĥ
//! dW_ih = dx̂ᵀ·[x | context],   db_ih = Σ dx̂,   dx = dx̂·W_ih[:, :E]
//! ```
//!
//! Every sum runs in a fixed order on one thread (the products split large
//! work between threads without changing its bits), so the results do not
//! depend on the thread count.

use lingo_kernels::gemm;
use lingo_tensor::fused::gru::{step_backward, step_forward};
use lingo_tensor::{BackwardMulti, RnnWeights, Tensor, will_record};
use ndarray::{Array2, Array3, ArrayD, ArrayView2, Axis, concatenate, s};

use super::additive::{KEEP_HIDDEN, hidden, query_grads, query_weights};
use super::{checked2, checked3, flat, slice, slice_mut};
use crate::error::{Result, mismatch};
use crate::mask::{Masking, masked_softmax_backward};
use crate::output::Recurrence;

/// Positions of the recorded inputs.
const X: usize = 0;
const H0: usize = 1;
const K_PROJ: usize = 2;
const VALUES: usize = 3;
const W_Q: usize = 4;
const V: usize = 5;
const W_IH: usize = 6;
const W_HH: usize = 7;
const B_IH: usize = 8;
const B_HH: usize = 9;

/// Sizes of one call, after checking every shape against the others.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dims {
    pub(crate) batch: usize,
    pub(crate) steps: usize,
    /// `E`: features of `x` per step.
    pub(crate) input: usize,
    pub(crate) src_len: usize,
    pub(crate) attn: usize,
    /// `D_v`: features of the values (and of the context).
    pub(crate) value: usize,
    pub(crate) hidden: usize,
}

impl Dims {
    /// Checks every shape against the others (the plain form checks the same).
    pub(crate) fn check(
        x: &Tensor,
        h0: &Tensor,
        k_proj: &Tensor,
        values: &Tensor,
        (w_q, v): (&Tensor, &Tensor),
        w: &RnnWeights<'_>,
        mask: &Masking,
    ) -> Result<Dims> {
        const OP: &str = "bahdanau_gru";
        let hidden = w.hidden_size(3)?;
        let (xs, ks, vs) = (x.shape(), k_proj.shape(), values.shape());
        if xs.len() != 3 || ks.len() != 3 || xs[0] != ks[0] {
            return Err(mismatch(
                OP,
                xs,
                ks,
                "x must be (batch, tgt_len, E) and the prepared keys (batch, src_len, A)",
            ));
        }
        if vs.len() != 3 || vs[..2] != ks[..2] {
            return Err(mismatch(OP, ks, vs, "values must be (batch, src_len, d_v) like the keys"));
        }
        let d = Dims { batch: xs[0], steps: xs[1], input: xs[2], src_len: ks[1], attn: ks[2], value: vs[2], hidden };
        if h0.shape() != [d.batch, hidden] {
            return Err(mismatch(OP, h0.shape(), &[d.batch, hidden], "the initial state must be (batch, H)"));
        }
        if w_q.shape() != [d.attn, hidden] || v.shape() != [d.attn] {
            return Err(mismatch(
                OP,
                w_q.shape(),
                v.shape(),
                format!("W_q must be (A, H) = [{}, {hidden}] and v (A)", d.attn),
            ));
        }
        if w.weight_ih.shape()[1] != d.input + d.value {
            return Err(mismatch(
                OP,
                w.weight_ih.shape(),
                xs,
                format!("weight_ih must read [x; context]: {} + {} features", d.input, d.value),
            ));
        }
        mask.check(OP, ks)?;
        Ok(d)
    }

    /// Width of the recurrent product `[ĥ | q']`.
    fn recurrent(&self) -> usize {
        3 * self.hidden + self.attn
    }
}

/// A standard-layout `(n, m, k)` array as `(n·m, k)` rows.
fn rows(a: &Array3<f32>) -> ArrayView2<'_, f32> {
    let (n, m, k) = a.dim();
    a.view().into_shape_with_order((n * m, k)).expect("standard layout")
}

/// What forward keeps for backward: the state each step read (time-major,
/// as the products after the loop want), the gates, `ĥ_n`, `q'`, each
/// step's `[x | context]`, the weights, and `tanh(q' + K')` when small
/// (see `KEEP_HIDDEN`).
struct Saved {
    d: Dims,
    mask: Masking,
    s_prev: Array3<f32>,
    gates: Array3<f32>,
    h_hat_n: Array3<f32>,
    q_proj: Array3<f32>,
    x_full: Array3<f32>,
    weights: Array3<f32>,
    kept: Option<Array3<f32>>,
}

/// The fused op; see the [module docs](self). `x (batch, tgt_len, E)`,
/// `h0 (batch, H)`, `k_proj (batch, src_len, A)`, `values (batch, src_len, D_v)`,
/// `w_q (A, H)`, `v (A)` and a GRU reading `E + D_v` features.
pub(crate) fn bahdanau_gru(
    x: &Tensor,
    h0: &Tensor,
    k_proj: &Tensor,
    values: &Tensor,
    (w_q, v): (&Tensor, &Tensor),
    w: RnnWeights<'_>,
    mask: &Masking,
) -> Result<Recurrence> {
    let d = Dims::check(x, h0, k_proj, values, (w_q, v), &w, mask)?;
    let inputs = vec![
        x.clone(),
        h0.clone(),
        k_proj.clone(),
        values.clone(),
        w_q.clone(),
        v.clone(),
        w.weight_ih.clone(),
        w.weight_hh.clone(),
        w.bias_ih.clone(),
        w.bias_hh.clone(),
    ];
    let keep = will_record(&inputs) && d.batch * d.steps * d.src_len * d.attn <= KEEP_HIDDEN;
    let (output, saved) = forward(d, &inputs, mask.with_causal(false), keep);
    // The backward pass reads the weights; the output tensor owns its copy.
    let outputs = vec![output.into_dyn(), saved.weights.clone().into_dyn()];
    let results = Tensor::from_op_multi("bahdanau_gru", outputs, inputs, move |bw| backward(bw, &saved));
    let [output, weights] = <[Tensor; 2]>::try_from(results).expect("two outputs");
    Ok(Recurrence { output, weights })
}

/// The recurrence, step by step (see the module docs): the states
/// `(B, T, H)` and what backward needs.
fn forward(d: Dims, inputs: &[Tensor], mask: Masking, keep: bool) -> (Array3<f32>, Saved) {
    let (n_b, n_t, n_e, n_s, n_a, n_h) = (d.batch, d.steps, d.input, d.src_len, d.attn, d.hidden);
    let (n_g, n_r) = (3 * n_h, d.recurrent());
    let data = |i: usize| inputs[i].data().as_standard_layout();
    let (kp, vals, v) = (data(K_PROJ), data(VALUES), data(V));
    let (kp, vals, v) = (checked3(&kp), checked3(&vals), flat(&v));
    let (w_ih, w_hh, w_q) =
        (checked2(inputs[W_IH].data()), checked2(inputs[W_HH].data()), checked2(inputs[W_Q].data()));

    // [x | context] per row b·T + t: x now, each context as its step comes.
    let mut x_full = Array3::<f32>::zeros((n_b, n_t, n_e + d.value));
    x_full.slice_mut(s![.., .., ..n_e]).assign(&checked3(inputs[X].data()));
    let mut x_hat = input_part(&d, inputs[X].data(), w_ih, inputs[B_IH].data());
    // Row-major transposes, made once: W_ih[:, E:]ᵀ (D_v, 3H) and [W_hh; W_q]ᵀ (H, 3H + A).
    let w_ctx_t = w_ih.slice(s![.., n_e..]).t().as_standard_layout().into_owned();
    let w_rec_t = concatenate(Axis(1), &[w_hh.t(), w_q.t()]).expect("both have H rows");
    let mut rec_bias = vec![0.0_f32; n_r];
    rec_bias[..n_g].copy_from_slice(flat(&data(B_HH)));

    let mut saved = Saved {
        d,
        mask,
        s_prev: Array3::zeros((n_t, n_b, n_h)),
        gates: Array3::zeros((n_b, n_t, n_g)),
        h_hat_n: Array3::zeros((n_b, n_t, n_h)),
        q_proj: Array3::zeros((n_t, n_b, n_a)),
        x_full,
        weights: Array3::zeros((n_b, n_t, n_s)),
        kept: keep.then(|| Array3::zeros((n_b, n_t, n_s * n_a))),
    };
    let mut scratch = vec![0.0_f32; n_s * n_a];
    let mut output = Array3::<f32>::zeros((n_b, n_t, n_h));
    let mut state = checked2(inputs[H0].data()).as_standard_layout().into_owned(); // s_{t-1}
    let mut rec = Array2::<f32>::zeros((n_b, n_r));
    for t in 0..n_t {
        saved.s_prev.index_axis_mut(Axis(0), t).assign(&state);
        // [ĥ | q'] = s_{t-1}·[W_hh; W_q]ᵀ + [b_hh | 0]
        rec.assign(&ndarray::aview1(&rec_bias));
        gemm(1.0, state.view(), w_rec_t.view(), 1.0, rec.view_mut());
        saved.q_proj.index_axis_mut(Axis(0), t).assign(&rec.slice(s![.., n_g..]));
        for b in 0..n_b {
            let h = match saved.kept.as_mut() {
                Some(k) => slice_mut(k.slice_mut(s![b, t, ..])),
                None => &mut scratch,
            };
            let weights_t = slice_mut(saved.weights.slice_mut(s![b, t, ..]));
            query_weights(
                h,
                &slice(rec.row(b))[n_g..],
                kp.index_axis(Axis(0), b),
                v,
                weights_t,
                saved.mask.row(b, 0, 1, n_s),
            );
            // context_t = weights_t·V
            let (weights_t, context_t) =
                (saved.weights.slice(s![b, t..t + 1, ..]), saved.x_full.slice_mut(s![b, t..t + 1, n_e..]));
            gemm(1.0, weights_t, vals.index_axis(Axis(0), b), 0.0, context_t);
        }
        // x̂ = xe_t + context_t·W_ih[:, E:]ᵀ
        gemm(1.0, saved.x_full.slice(s![.., t, n_e..]), w_ctx_t.view(), 1.0, x_hat.slice_mut(s![.., t, ..]));
        for b in 0..n_b {
            let (gates, h_hat_n) = (saved.gates.slice_mut(s![b, t, ..]), saved.h_hat_n.slice_mut(s![b, t, ..]));
            let (x_hat, h_hat) = (slice(x_hat.slice(s![b, t, ..])), &slice(rec.row(b))[..n_g]);
            step_forward(x_hat, h_hat, slice_mut(gates), slice_mut(h_hat_n), slice_mut(state.row_mut(b)));
            output.slice_mut(s![b, t, ..]).assign(&state.row(b));
        }
    }
    (output, saved)
}

/// `xe = x·W_ih[:, :E]ᵀ + b_ih` for every step at once `(B, T, 3H)`; each
/// step then adds its context's part.
fn input_part(d: &Dims, x: &ArrayD<f32>, w_ih: ArrayView2<'_, f32>, b_ih: &ArrayD<f32>) -> Array3<f32> {
    let (n_b, n_t, n_e, n_g) = (d.batch, d.steps, d.input, 3 * d.hidden);
    let mut x_hat = Array3::<f32>::zeros((n_b, n_t, n_g));
    x_hat.assign(&b_ih.broadcast((n_b, n_t, n_g)).expect("bias (3H)"));
    let x_rows = x.as_standard_layout();
    let x_rows = x_rows.view().into_shape_with_order((n_b * n_t, n_e)).expect("standard layout");
    let xe = x_hat.view_mut().into_shape_with_order((n_b * n_t, n_g)).expect("standard layout");
    gemm(1.0, x_rows, w_ih.slice(s![.., ..n_e]).t(), 1.0, xe);
    x_hat
}

/// The backward rule (see the module docs): the steps in reverse, then
/// every weight gradient over all `B·T` rows at once.
fn backward(bw: &BackwardMulti<'_>, f: &Saved) -> Vec<Option<ArrayD<f32>>> {
    let d = f.d;
    let (n_b, n_t, n_e, n_s, n_a, n_h) = (d.batch, d.steps, d.input, d.src_len, d.attn, d.hidden);
    let (n_g, n_r) = (3 * n_h, d.recurrent());
    let (kp, vals, v) = (
        bw.input(K_PROJ).as_standard_layout(),
        bw.input(VALUES).as_standard_layout(),
        bw.input(V).as_standard_layout(),
    );
    let (kp, vals, v) = (checked3(&kp), checked3(&vals), flat(&v));
    let (w_ih, w_hh, w_q) = (checked2(bw.input(W_IH)), checked2(bw.input(W_HH)), checked2(bw.input(W_Q)));
    let w_ctx = w_ih.slice(s![.., n_e..]); // (3H, D_v)
    let w_rec = concatenate(Axis(0), &[w_hh, w_q]).expect("both have H columns"); // (3H + A, H)
    let d_out = bw.grad(0).map(checked3);
    let d_weights = bw.grad(1).map(checked3);

    let mut ds = Array2::<f32>::zeros((n_b, n_h)); // ∂L/∂s_t, carried back
    let mut dx_hat = Array3::<f32>::zeros((n_b, n_t, n_g));
    let mut d_rec = Array3::<f32>::zeros((n_t, n_b, n_r)); // [dĥ | dq'] per step
    let mut d_ctx = Array2::<f32>::zeros((n_b, d.value));
    let mut dk = Array3::<f32>::zeros((n_b, n_s, n_a));
    let mut dvals = Array3::<f32>::zeros((n_b, n_s, d.value));
    let mut dv = vec![0.0_f32; n_a];
    let (mut h_again, mut dx) = (vec![0.0_f32; n_s * n_a], vec![0.0_f32; n_s]);
    for t in (0..n_t).rev() {
        if let Some(d_out) = &d_out {
            ds += &d_out.slice(s![.., t, ..]);
        }
        for b in 0..n_b {
            let (dx_hat_b, d_rec_b) = (dx_hat.slice_mut(s![b, t, ..]), d_rec.slice_mut(s![t, b, ..n_g]));
            let (g, hn, sp) = (
                slice(f.gates.slice(s![b, t, ..])),
                slice(f.h_hat_n.slice(s![b, t, ..])),
                slice(f.s_prev.slice(s![t, b, ..])),
            );
            step_backward(g, hn, sp, slice_mut(ds.row_mut(b)), slice_mut(dx_hat_b), slice_mut(d_rec_b));
        }
        // dcontext = dx̂·W_ih[:, E:]
        gemm(1.0, dx_hat.slice(s![.., t, ..]), w_ctx, 0.0, d_ctx.view_mut());
        for b in 0..n_b {
            let m = f.mask.row(b, 0, 1, n_s);
            let (w_bt, dc) = (f.weights.slice(s![b, t, ..]), d_ctx.row(b));
            let vals_b = vals.index_axis(Axis(0), b);
            // dweights = ∂L/∂weights_t + dcontext·Vᵀ, and dV += weights_tᵀ·dcontext
            for (s_i, dx_s) in dx.iter_mut().enumerate() {
                *dx_s = d_weights.as_ref().map_or(0.0, |g| g[[b, t, s_i]]) + vals_b.row(s_i).dot(&dc);
                dvals.slice_mut(s![b, s_i, ..]).scaled_add(w_bt[s_i], &dc);
            }
            masked_softmax_backward(slice(w_bt), &mut dx, m);
            if m.limit == 0 {
                continue;
            }
            let h: &[f32] = match &f.kept {
                Some(k) => slice(k.slice(s![b, t, ..])),
                None => {
                    hidden(&mut h_again, slice(f.q_proj.slice(s![t, b, ..])), kp.index_axis(Axis(0), b), m.limit); // tanh(q' + K') again
                    &h_again
                }
            };
            let (dq, dk_b) = (slice_mut(d_rec.slice_mut(s![t, b, n_g..])), dk.index_axis_mut(Axis(0), b));
            query_grads(&dx[..m.limit], h, v, dq, dk_b.into_slice().expect("a fresh array"), &mut dv);
        }
        // ds_{t-1} = ds ⊙ z + [dĥ | dq']·[W_hh; W_q]
        gemm(1.0, d_rec.index_axis(Axis(0), t), w_rec.view(), 1.0, ds.view_mut());
    }
    let step_grads = StepGrads { ds, dx_hat, d_rec, dk, dvals, dv };
    weight_grads(bw, f, w_ih, step_grads)
}

/// What the steps of [`backward`] leave: `∂L/∂s_0`, `dx̂` and `[dĥ | dq']`
/// of every step, and the sums over steps `dK'`, `dV`, `dv`.
struct StepGrads {
    ds: Array2<f32>,
    dx_hat: Array3<f32>,
    d_rec: Array3<f32>,
    dk: Array3<f32>,
    dvals: Array3<f32>,
    dv: Vec<f32>,
}

/// Weight gradients over all `B·T` rows at once, and the gradients in input order.
fn weight_grads(
    bw: &BackwardMulti<'_>,
    f: &Saved,
    w_ih: ArrayView2<'_, f32>,
    g: StepGrads,
) -> Vec<Option<ArrayD<f32>>> {
    let (n_b, n_t, n_e, n_h) = (f.d.batch, f.d.steps, f.d.input, f.d.hidden);
    let (n_g, n_r) = (3 * n_h, f.d.recurrent());
    let (d_rec, s_prev, dx_hat, x_full) = (rows(&g.d_rec), rows(&f.s_prev), rows(&g.dx_hat), rows(&f.x_full));
    let mut dw_rec = Array2::<f32>::zeros((n_r, n_h));
    gemm(1.0, d_rec.t(), s_prev, 0.0, dw_rec.view_mut()); // [dW_hh; dW_q] = [dĥ | dq']ᵀ·s_prev
    let mut dw_ih = Array2::<f32>::zeros((n_g, n_e + f.d.value));
    gemm(1.0, dx_hat.t(), x_full, 0.0, dw_ih.view_mut()); // dW_ih = dx̂ᵀ·[x | context]
    let dx = bw.needs(X).then(|| {
        let mut dx = Array2::<f32>::zeros((n_b * n_t, n_e));
        gemm(1.0, dx_hat, w_ih.slice(s![.., ..n_e]), 0.0, dx.view_mut()); // dx = dx̂·W_ih[:, :E]
        dx.into_shape_with_order((n_b, n_t, n_e)).expect("a fresh array").into_dyn()
    });
    let column_sums = |a: ArrayView2<'_, f32>| a.sum_axis(Axis(0)).into_dyn();
    vec![
        dx,
        bw.needs(H0).then(|| g.ds.into_dyn()),
        bw.needs(K_PROJ).then(|| g.dk.into_dyn()),
        bw.needs(VALUES).then(|| g.dvals.into_dyn()),
        bw.needs(W_Q).then(|| dw_rec.slice(s![n_g.., ..]).to_owned().into_dyn()),
        bw.needs(V).then(|| ndarray::Array1::from(g.dv).into_dyn()),
        bw.needs(W_IH).then(|| dw_ih.into_dyn()),
        bw.needs(W_HH).then(|| dw_rec.slice(s![..n_g, ..]).to_owned().into_dyn()),
        bw.needs(B_IH).then(|| column_sums(dx_hat)),
        bw.needs(B_HH).then(|| column_sums(d_rec.slice(s![.., ..n_g]))),
    ]
}
