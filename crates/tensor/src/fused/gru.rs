//! The GRU, forward and backward, fused.
//!
//! # Forward (one step, one batch row)
//!
//! With `x̂ = W_ih x_t + b_ih` and `ĥ = W_hh h_{t-1} + b_hh`, each split into
//! three blocks `r, z, n` of `H`:
//!
//! ```text
//! r = σ(x̂_r + ĥ_r)        z = σ(x̂_z + ĥ_z)
//! n = tanh(x̂_n + r ⊙ ĥ_n)              (PyTorch: the reset gate scales ĥ_n, bias included)
//! h_t = (1 - z) ⊙ n + z ⊙ h_{t-1}
//! ```
//!
//! # Backward (derivation)
//!
//! Given `dh = ∂L/∂h_t`:
//!
//! ```text
//! dn = dh ⊙ (1 - z)        dz = dh ⊙ (h_{t-1} - n)       direct: dh ⊙ z
//! da_n = dn ⊙ (1 - n²)                                    (tanh' = 1 - tanh²)
//! dr   = da_n ⊙ ĥ_n
//! da_r = dr ⊙ r(1-r)       da_z = dz ⊙ z(1-z)             (σ' = σ(1-σ))
//! dx̂ = [da_r; da_z; da_n]          dĥ = [da_r; da_z; da_n ⊙ r]
//! dh_{t-1} = dh ⊙ z + dĥ · W_hh
//! ```
//!
//! Unlike the LSTM, the input side and the hidden side get different
//! gradients (the `n` block of `ĥ` is scaled by `r`), so two gradient buffers
//! are kept: `dW_ih = Σ_t dx̂ᵀ x_t`, `db_ih = Σ_t dx̂`, `dx_t = dx̂ · W_ih`, and
//! `dW_hh = Σ_t dĥᵀ h_{t-1}`, `db_hh = Σ_t dĥ` (computed together after the last step).

use ndarray::{Array2, Array3, ArrayD, s};

use super::layout::{
    Dims, Slots, Source, Steps, active_rows, add_output_grad, as_matrix, final_grad, gemm_rows, matrix, output_grad,
    recurrent_weight, recurrent_weight_t, resolve, step_rows,
};
use super::lstm::as_one_step;
use super::{H0, SeqInput, WeightPanels, input_projection, weight_grads};
use crate::cells::RnnWeights;
use crate::error::Result;
use crate::tensor::{BackwardMulti, Tensor};
use crate::values::flat_vec;
use lingo_kernels::math::{sigmoid_slice, tanh_slice};

/// What [`gru_sequence`] returns.
#[derive(Debug, Clone)]
pub struct GruOutput {
    /// `h_t` for every step, `(batch, time, hidden)`; exactly 0 on padded steps.
    pub output: Tensor,
    /// The hidden state after each row's last valid step, `(batch, hidden)`.
    pub h_n: Tensor,
}

/// Position of `weight_ih` among the recorded inputs `[x, h0, weight_ih, weight_hh, bias_ih, bias_hh]`.
const W_IH: usize = 2;

/// One GRU step for one batch row: from `x̂` and `ĥ` (see the module docs)
/// it writes the activations `[r; z; n]` into `gates`, keeps `ĥ_n` in `h_hat_n`
/// for backward and updates `h` in place.
///
/// It is public for recurrences that compute `x̂` and `ĥ` themselves, such as
/// a decoder whose input at each step depends on its previous state
/// (Bahdanau's attention in `lingo-attention`); [`gru_sequence`] is built on it.
///
/// ```
/// use lingo_tensor::fused::gru::step_forward;
/// // One unit, every pre-activation 0: r = z = σ(0) = ½, n = tanh(0) = 0.
/// let (mut gates, mut h_hat_n, mut h) = ([0.0; 3], [0.0], [0.8]);
/// step_forward(&[0.0; 3], &[0.0; 3], &mut gates, &mut h_hat_n, &mut h);
/// assert_eq!(gates, [0.5, 0.5, 0.0]);
/// assert_eq!(h, [0.4]);   // h' = (1 - z)·n + z·h = ½·0.8
/// ```
pub fn step_forward(x_hat: &[f32], h_hat: &[f32], gates: &mut [f32], h_hat_n: &mut [f32], h: &mut [f32]) {
    let n_h = h.len();
    // r and z: σ(x̂ + ĥ) over one contiguous block of 2H, so it vectorizes.
    let (rz, n) = gates.split_at_mut(2 * n_h);
    for ((a, &x), &hh) in rz.iter_mut().zip(&x_hat[..2 * n_h]).zip(&h_hat[..2 * n_h]) {
        *a = x + hh;
    }
    sigmoid_slice(rz);
    let (r, z) = rz.split_at(n_h);
    h_hat_n.copy_from_slice(&h_hat[2 * n_h..]);
    for (((a, &x), &r), &hn) in n.iter_mut().zip(&x_hat[2 * n_h..]).zip(r).zip(&*h_hat_n) {
        *a = x + r * hn;
    }
    tanh_slice(n);
    for ((h, &z), &n) in h.iter_mut().zip(z).zip(&*n) {
        *h = (1.0 - z) * n + z * *h;
    }
}

/// The backward of [`step_forward`] for one batch row: from `dh` (at `h_t`)
/// it writes `dx̂` and `dĥ` and leaves the direct part `dh ⊙ z` of
/// `dh_{t-1}` in `dh` (the `dĥ · W_hh` part is added by the caller's GEMM).
///
/// ```
/// use lingo_tensor::fused::gru::{step_backward, step_forward};
/// let (h_prev, mut gates, mut h_hat_n, mut h) = ([0.8], [0.0; 3], [0.0], [0.8]);
/// step_forward(&[0.0; 3], &[0.0; 3], &mut gates, &mut h_hat_n, &mut h);
/// let (mut dh, mut dx_hat, mut dh_hat) = ([1.0], [0.0; 3], [0.0; 3]);
/// step_backward(&gates, &h_hat_n, &h_prev, &mut dh, &mut dx_hat, &mut dh_hat);
/// // ∂h'/∂x̂_n = (1 - z)·(1 - n²) = ½, and h_{t-1} passes through z = ½ directly.
/// assert_eq!((dx_hat[2], dh[0]), (0.5, 0.5));
/// ```
pub fn step_backward(
    gates: &[f32],
    h_hat_n: &[f32],
    h_prev: &[f32],
    dh: &mut [f32],
    dx_hat: &mut [f32],
    dh_hat: &mut [f32],
) {
    let n_h = dh.len();
    // Every block cut to exactly H, so the loop below has no bounds checks
    // left and vectorizes.
    let (r, z, n) = (&gates[..n_h], &gates[n_h..2 * n_h], &gates[2 * n_h..3 * n_h]);
    let (h_hat_n, h_prev) = (&h_hat_n[..n_h], &h_prev[..n_h]);
    let (dx_r, rest) = dx_hat[..3 * n_h].split_at_mut(n_h);
    let (dx_z, dx_n) = rest.split_at_mut(n_h);
    let (dh_r, rest) = dh_hat[..3 * n_h].split_at_mut(n_h);
    let (dh_z, dh_n) = rest.split_at_mut(n_h);
    for j in 0..n_h {
        let (r, z, n) = (r[j], z[j], n[j]);
        let (dn, dz) = (dh[j] * (1.0 - z), dh[j] * (h_prev[j] - n));
        let da_n = dn * (1.0 - n * n);
        let da_r = da_n * h_hat_n[j] * r * (1.0 - r);
        let da_z = dz * z * (1.0 - z);
        (dx_r[j], dx_z[j], dx_n[j]) = (da_r, da_z, da_n);
        (dh_r[j], dh_z[j], dh_n[j]) = (da_r, da_z, da_n * r);
        dh[j] *= z;
    }
}

/// Runs a GRU over a padded batch: `x (batch, time, input)`, `h0 (batch,
/// hidden)`, `lengths[b]` valid steps per row, forwards or (`reverse`)
/// backwards. One fused op with a hand-written backward; see the
/// [module docs](self) for the math and [`crate::fused`] for padding rules.
///
/// ```
/// use lingo_tensor::{RnnWeights, Tensor, fused::gru_sequence};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(1);
/// let (batch, time, input, hidden) = (3, 5, 2, 4);
/// let p = |shape: &[usize], rng: &mut _| Tensor::variable(Tensor::randn(shape, 0.3, rng).unwrap().data().clone());
/// let (w_ih, w_hh) = (p(&[3 * hidden, input], &mut rng), p(&[3 * hidden, hidden], &mut rng));
/// let (b_ih, b_hh) = (p(&[3 * hidden], &mut rng), p(&[3 * hidden], &mut rng));
/// let w = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b_ih, bias_hh: &b_hh };
/// let x = Tensor::randn(&[batch, time, input], 1.0, &mut rng).unwrap();
/// let out = gru_sequence(&x, &Tensor::zeros(&[batch, hidden]), &[5, 3, 1], true, w).unwrap();
/// // reverse direction: the final state of a row is its output at step 0
/// assert_eq!(out.h_n.data()[[1, 2]], out.output.data()[[1, 0, 2]]);
/// assert_eq!(out.output.data()[[2, 4, 0]], 0.0);   // padded step
/// let grads = out.output.sum_all().backward().unwrap();
/// assert_eq!(grads.get(&w_ih).unwrap().shape(), &[3 * hidden, input]);
/// ```
pub fn gru_sequence<'a>(
    x: impl Into<SeqInput<'a>>,
    h0: &Tensor,
    lengths: &[usize],
    reverse: bool,
    w: RnnWeights<'_>,
) -> Result<GruOutput> {
    gru_sequence_packed(x, h0, lengths, reverse, w, WeightPanels::default())
}

/// [`gru_sequence`] with the weights' panels packed by their owner (see
/// [`WeightPanels`]): the same op and bits, without packing the weights
/// at each call, which decoding makes once per step.
///
/// ```
/// use lingo_tensor::{RnnWeights, Tensor, fused::{WeightPanels, gru_sequence, gru_sequence_packed}};
/// let (w_ih, w_hh, b) = (Tensor::full(&[6, 3], 0.1), Tensor::full(&[6, 2], 0.2), Tensor::zeros(&[6]));
/// let w = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b, bias_hh: &b };
/// let (x, h0) = (Tensor::ones(&[1, 2, 3]), Tensor::zeros(&[1, 2]));
/// let packed = gru_sequence_packed(&x, &h0, &[2], false, w, WeightPanels::default()).unwrap();
/// assert_eq!(packed.h_n.to_vec(), gru_sequence(&x, &h0, &[2], false, w).unwrap().h_n.to_vec());
/// ```
pub fn gru_sequence_packed<'a>(
    x: impl Into<SeqInput<'a>>,
    h0: &Tensor,
    lengths: &[usize],
    reverse: bool,
    w: RnnWeights<'_>,
    panels: WeightPanels<'_>,
) -> Result<GruOutput> {
    let (x, source, d) = resolve("gru_sequence", x.into(), &[h0], lengths, &w, 3)?;
    let steps = Steps { lengths: lengths.to_vec(), reverse };
    let (output, h_n, saved) = forward(&x, &source, d, h0, steps, (w, panels));
    let outputs = vec![output.into_dyn(), d.state(h_n)];
    let inputs = source.recorded_inputs(&x, &[h0], &w);
    let results = Tensor::from_op_multi("gru_sequence", outputs, inputs, move |bw| backward(bw, &saved, &source));
    let [output, h_n] = <[Tensor; 2]>::try_from(results).expect("two outputs");
    Ok(GruOutput { output, h_n })
}

/// What forward keeps for backward, batch-major (row `b·T + t`): the
/// activated gates `[r; z; n]`, `ĥ_n`, and the state each step started from.
struct Saved {
    d: Dims,
    steps: Steps,
    gates: Vec<f32>,
    h_hat_n: Vec<f32>,
    h_prev: Vec<f32>,
}

/// The recurrence forwards: the outputs `(B, T, H)`, the final states and
/// what backward needs.
fn forward(
    x: &Tensor,
    source: &Source,
    d: Dims,
    h0: &Tensor,
    steps: Steps,
    (w, panels): (RnnWeights<'_>, WeightPanels<'_>),
) -> (Array3<f32>, Vec<f32>, Saved) {
    let (n_b, n_t, n_h) = (d.batch, d.time, d.hidden);
    let n_g = 3 * n_h;
    let b_ih = flat_vec(w.bias_ih.data());
    // x̂ = x·W_ihᵀ + b_ih for all steps at once: it does not depend on the recurrence.
    let xp = input_projection(x, source, &d, (matrix(w.weight_ih), panels.weight_ih), &b_ih);
    let xp = xp.as_slice().expect("freshly allocated");
    let w_hh_t = recurrent_weight_t(matrix(w.weight_hh), d.time, panels.weight_hh);
    let b_hh = w.bias_hh.data().view().into_shape_with_order((1, n_g)).expect("same element count");

    let mut saved = Saved {
        d,
        gates: vec![0.0; n_b * n_t * n_g],
        h_hat_n: vec![0.0; n_b * n_t * n_h],
        h_prev: vec![0.0; n_b * n_t * n_h],
        steps,
    };
    let mut h = flat_vec(h0.data());
    let mut h_hat = Array2::<f32>::zeros((n_b, n_g));
    let mut output = Array3::<f32>::zeros((n_b, n_t, n_h));
    let lengths = &saved.steps.lengths;
    for t in d.steps(saved.steps.reverse) {
        // ĥ = h_{t-1}·W_hhᵀ + b_hh for the whole batch: one GEMM per step.
        h_hat.assign(&b_hh.broadcast((n_b, n_g)).expect("shapes checked before"));
        gemm_rows(&active_rows(t, lengths), as_matrix(&h, n_h), &w_hh_t, 1.0, h_hat.view_mut());
        for b in 0..n_b {
            let Slots { state, kept, gates: gate_rows } = d.slots(b, t, 3);
            saved.h_prev[kept.clone()].copy_from_slice(&h[state.clone()]);
            if !Dims::valid(t, b, lengths) {
                continue; // padded: state passes through, gates stay 0
            }
            let h_hat_b = h_hat.row(b);
            let (gates, h_hat_n) = (&mut saved.gates[gate_rows.clone()], &mut saved.h_hat_n[kept]);
            step_forward(
                &xp[gate_rows],
                h_hat_b.as_slice().expect("standard layout"),
                gates,
                h_hat_n,
                &mut h[state.clone()],
            );
            output.slice_mut(s![b, t, ..]).assign(&ndarray::aview1(&h[state]));
        }
    }
    (output, h, saved)
}

/// The recurrence backwards from the gradients at the outputs and `h_n`
/// (an unused one is zero), then every weight gradient at once.
fn backward(bw: &BackwardMulti<'_>, f: &Saved, source: &Source) -> Vec<Option<ArrayD<f32>>> {
    let (d, lengths) = (f.d, &f.steps.lengths);
    let (n_b, n_t, n_h) = (d.batch, d.time, d.hidden);
    let n_g = 3 * n_h;
    let d_out = output_grad(bw.grad(0));
    let mut dh = final_grad(bw.grad(1), n_b * n_h);
    let w_hh = recurrent_weight(matrix(&bw.inputs[W_IH + 1]), d.time);
    let mut dx_hat = vec![0.0_f32; n_b * n_t * n_g];
    let mut dh_hat = vec![0.0_f32; n_b * n_t * n_g];
    let mut dh_prev = Array2::<f32>::zeros((n_b, n_h));
    for t in d.steps(f.steps.reverse).rev() {
        for b in (0..n_b).filter(|&b| Dims::valid(t, b, lengths)) {
            let Slots { state, kept, gates: gate_rows } = d.slots(b, t, 3);
            add_output_grad(&mut dh[state.clone()], d_out.as_ref(), b, t);
            let (dx_hat, dh_hat) = (&mut dx_hat[gate_rows.clone()], &mut dh_hat[gate_rows.clone()]);
            step_backward(
                &f.gates[gate_rows],
                &f.h_hat_n[kept.clone()],
                &f.h_prev[kept],
                &mut dh[state],
                dx_hat,
                dh_hat,
            );
        }
        // dh_{t-1} += dĥ_t · W_hh  (the direct part dh ⊙ z is already in dh)
        gemm_rows(&active_rows(t, lengths), step_rows(&dh_hat, &d, t, n_g), &w_hh, 0.0, dh_prev.view_mut());
        for b in (0..n_b).filter(|&b| Dims::valid(t, b, lengths)) {
            for (acc, g) in dh[b * n_h..(b + 1) * n_h].iter_mut().zip(dh_prev.row(b)) {
                *acc += g;
            }
        }
    }
    let (dx_hat, dh_hat, h_prev) = (as_matrix(&dx_hat, n_g), as_matrix(&dh_hat, n_g), as_matrix(&f.h_prev, n_h));
    let wg = weight_grads(bw, W_IH, &d, source, dx_hat, dh_hat, h_prev);
    wg.into_grads([bw.needs(H0).then(|| d.state(dh))])
}

/// One GRU step, `x (batch, input)`, `h (batch, hidden)` → `h'`: the
/// one-step case of [`gru_sequence`], with the same fused kernels.
///
/// ```
/// use lingo_tensor::{RnnWeights, Tensor, fused::gru_cell};
/// let (batch, input, hidden) = (2, 3, 4);
/// let w_ih = Tensor::zeros(&[3 * hidden, input]);
/// let w_hh = Tensor::zeros(&[3 * hidden, hidden]);
/// let b = Tensor::zeros(&[3 * hidden]);
/// let w = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b, bias_hh: &b };
/// let h = Tensor::ones(&[batch, hidden]);
/// let h1 = gru_cell(&Tensor::zeros(&[batch, input]), &h, w).unwrap();
/// // z = σ(0) = 0.5 and n = tanh(0) = 0, so h' = 0.5·h
/// assert_eq!(h1.to_vec(), vec![0.5; 8]);
/// ```
pub fn gru_cell(x: &Tensor, h: &Tensor, w: RnnWeights<'_>) -> Result<Tensor> {
    let x = as_one_step(x)?;
    Ok(gru_sequence(&x, h, &vec![1; x.shape()[0]], false, w)?.h_n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// L = h_t after one step of one unit, from x̂ = [x_r, x_z, x_n] (ĥ fixed) and h_{t-1}.
    fn loss(x_hat: [f32; 3], h_prev: f32) -> f32 {
        let (mut gates, mut h_hat_n, mut h) = (vec![0.0; 3], vec![0.0], vec![h_prev]);
        step_forward(&x_hat, &[0.2, -0.4, 0.6], &mut gates, &mut h_hat_n, &mut h);
        h[0]
    }

    #[test]
    fn step_backward_matches_finite_differences_of_step_forward() {
        let (x_hat, h_prev) = ([0.3, -0.2, 0.5], 0.7);
        let (mut gates, mut h_hat_n, mut h) = (vec![0.0; 3], vec![0.0], vec![h_prev]);
        step_forward(&x_hat, &[0.2, -0.4, 0.6], &mut gates, &mut h_hat_n, &mut h);
        let (mut dh, mut dx_hat, mut dh_hat) = (vec![1.0], vec![0.0; 3], vec![0.0; 3]);
        step_backward(&gates, &h_hat_n, &[h_prev], &mut dh, &mut dx_hat, &mut dh_hat);
        super::super::layout::assert_partials(|x| loss(x, h_prev), x_hat, &dx_hat);
        // With ĥ held fixed, h_{t-1} reaches h_t only through z ⊙ h_{t-1}.
        super::super::layout::assert_partials(|[h]| loss(x_hat, h), [h_prev], &dh);
        // dĥ_n is dx̂_n scaled by r.
        assert!((dh_hat[2] - dx_hat[2] * gates[0]).abs() < 1e-7);
    }
}
