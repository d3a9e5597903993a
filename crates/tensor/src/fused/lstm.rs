//! The LSTM, forward and backward, fused.
//!
//! # Forward (one step, one batch row)
//!
//! With `a = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh`, split into four blocks of `H`:
//!
//! ```text
//! i = σ(a_i)      f = σ(a_f)      g = tanh(a_g)      o = σ(a_o)
//! c_t = f ⊙ c_{t-1} + i ⊙ g
//! h_t = o ⊙ tanh(c_t)
//! ```
//!
//! # Backward (derivation)
//!
//! Given `dh = ∂L/∂h_t` (from the output at `t` plus from step `t+1`) and
//! `dc = ∂L/∂c_t` (from step `t+1`):
//!
//! ```text
//! do   = dh ⊙ tanh(c_t)                            (h_t = o ⊙ tanh c_t)
//! dc  += dh ⊙ o ⊙ (1 - tanh²(c_t))                 (through tanh c_t)
//! di   = dc ⊙ g,   dg = dc ⊙ i,   df = dc ⊙ c_{t-1} (c_t = f c_{t-1} + i g)
//! dc_{t-1} = dc ⊙ f
//! da_i = di ⊙ i(1-i)   da_f = df ⊙ f(1-f)          (σ' = σ(1-σ))
//! da_g = dg ⊙ (1-g²)   da_o = do ⊙ o(1-o)          (tanh' = 1 - tanh²)
//! dh_{t-1} = da · W_hh                             (a is linear in h_{t-1})
//! ```
//!
//! and over all steps `dW_ih = Σ_t daᵀ x_t`, `dW_hh = Σ_t daᵀ h_{t-1}`,
//! `db_ih = db_hh = Σ_t da`, `dx_t = da · W_ih`: four GEMMs over all steps
//! at once.

use ndarray::{Array2, Array3, ArrayD, s};

use super::layout::{
    Dims, Slots, Source, Steps, active_rows, add_output_grad, as_matrix, final_grad, gemm_rows, matrix, output_grad,
    recurrent_weight, recurrent_weight_t, resolve, step_rows, step_rows_mut,
};
use super::{H0, SeqInput, WeightPanels, input_projection, weight_grads};
use crate::cells::RnnWeights;
use crate::error::Result;
use crate::tensor::{BackwardMulti, Tensor};
use crate::values::flat_vec;
use lingo_kernels::math::{sigmoid_slice, tanh_slice};

/// What [`lstm_sequence`] returns.
#[derive(Debug, Clone)]
pub struct LstmOutput {
    /// `h_t` for every step, `(batch, time, hidden)`; exactly 0 on padded steps.
    pub output: Tensor,
    /// The hidden state after each row's last valid step, `(batch, hidden)`.
    pub h_n: Tensor,
    /// The cell state after each row's last valid step, `(batch, hidden)`.
    pub c_n: Tensor,
}

/// Position of `c0` among the recorded inputs `[x, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh]`.
const C0: usize = 2;
/// Position of `weight_ih` among the recorded inputs.
const W_IH: usize = 3;

/// One LSTM step for one batch row. `gates` holds the pre-activations
/// `a = [a_i; a_f; a_g; a_o]` on entry and the activations `[i; f; g; o]` on
/// exit (kept for backward); `c` and `h` are updated in place.
fn step_forward(gates: &mut [f32], c: &mut [f32], h: &mut [f32], tanh_c: &mut [f32]) {
    let n = h.len();
    // Activations block by block over contiguous slices, so they vectorize.
    let (i_f, g_o) = gates.split_at_mut(2 * n);
    let (g, o) = g_o.split_at_mut(n);
    sigmoid_slice(i_f);
    tanh_slice(g);
    sigmoid_slice(o);
    let (i, f) = i_f.split_at(n);
    for (((c, &i), &f), &g) in c.iter_mut().zip(i).zip(f).zip(&*g) {
        *c = f * *c + i * g;
    }
    tanh_c.copy_from_slice(c);
    tanh_slice(tanh_c);
    for ((h, &o), &tc) in h.iter_mut().zip(&*o).zip(&*tanh_c) {
        *h = o * tc;
    }
}

/// The backward of [`step_forward`] for one batch row: from `dh` and `dc`
/// (gradients at `h_t`, `c_t`) it writes `da` into `d_gates` and turns `dc`
/// into `dc_{t-1}`. See the module docs for the derivation.
fn step_backward(gates: &[f32], tanh_c: &[f32], c_prev: &[f32], dh: &[f32], dc: &mut [f32], d_gates: &mut [f32]) {
    let n = dh.len();
    let (i, f, g, o) = (&gates[..n], &gates[n..2 * n], &gates[2 * n..3 * n], &gates[3 * n..]);
    let (da_i, rest) = d_gates.split_at_mut(n);
    let (da_f, rest) = rest.split_at_mut(n);
    let (da_g, da_o) = rest.split_at_mut(n);
    for j in 0..n {
        let d_o = dh[j] * tanh_c[j];
        let d_c = dc[j] + dh[j] * o[j] * (1.0 - tanh_c[j] * tanh_c[j]);
        let (d_i, d_f, d_g) = (d_c * g[j], d_c * c_prev[j], d_c * i[j]);
        dc[j] = d_c * f[j];
        da_i[j] = d_i * i[j] * (1.0 - i[j]);
        da_f[j] = d_f * f[j] * (1.0 - f[j]);
        da_g[j] = d_g * (1.0 - g[j] * g[j]);
        da_o[j] = d_o * o[j] * (1.0 - o[j]);
    }
}

/// Runs an LSTM over a padded batch: `x (batch, time, input)`, initial states
/// `h0, c0 (batch, hidden)`, `lengths[b]` valid steps per row, forwards or
/// (`reverse`) backwards. One fused op with a hand-written backward; see the
/// [module docs](self) for the math and [`crate::fused`] for padding rules.
///
/// ```
/// use lingo_tensor::{RnnWeights, Tensor, fused::lstm_sequence};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let (batch, time, input, hidden) = (2, 4, 3, 5);
/// let p = |shape: &[usize], rng: &mut _| Tensor::variable(Tensor::randn(shape, 0.3, rng).unwrap().data().clone());
/// let (w_ih, w_hh) = (p(&[4 * hidden, input], &mut rng), p(&[4 * hidden, hidden], &mut rng));
/// let (b_ih, b_hh) = (p(&[4 * hidden], &mut rng), p(&[4 * hidden], &mut rng));
/// let w = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b_ih, bias_hh: &b_hh };
/// let x = Tensor::randn(&[batch, time, input], 1.0, &mut rng).unwrap();
/// let zeros = Tensor::zeros(&[batch, hidden]);
/// let out = lstm_sequence(&x, &zeros, &zeros, &[4, 2], false, w).unwrap();
/// assert_eq!(out.output.shape(), &[batch, time, hidden]);
/// assert_eq!(out.output.data()[[1, 3, 0]], 0.0);                  // row 1 is padded after step 1
/// assert_eq!(out.h_n.data()[[1, 0]], out.output.data()[[1, 1, 0]]); // its last valid step
/// let grads = out.h_n.sum_all().backward().unwrap();
/// assert!(grads.get(&w_hh).is_some());
/// ```
pub fn lstm_sequence<'a>(
    x: impl Into<SeqInput<'a>>,
    h0: &Tensor,
    c0: &Tensor,
    lengths: &[usize],
    reverse: bool,
    w: RnnWeights<'_>,
) -> Result<LstmOutput> {
    lstm_sequence_packed(x, h0, c0, lengths, reverse, w, WeightPanels::default())
}

/// [`lstm_sequence`] with the weights' panels packed by their owner (see
/// [`WeightPanels`]): the same op and bits, without packing the weights
/// at each call, which decoding makes once per step.
///
/// ```
/// use lingo_tensor::{RnnWeights, Tensor, fused::{WeightPanels, lstm_sequence, lstm_sequence_packed}};
/// let (w_ih, w_hh, b) = (Tensor::full(&[8, 3], 0.1), Tensor::full(&[8, 2], 0.2), Tensor::zeros(&[8]));
/// let w = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b, bias_hh: &b };
/// let (x, h0) = (Tensor::ones(&[1, 2, 3]), Tensor::zeros(&[1, 2]));
/// let packed = lstm_sequence_packed(&x, &h0, &h0, &[2], false, w, WeightPanels::default()).unwrap();
/// assert_eq!(packed.h_n.to_vec(), lstm_sequence(&x, &h0, &h0, &[2], false, w).unwrap().h_n.to_vec());
/// ```
pub fn lstm_sequence_packed<'a>(
    x: impl Into<SeqInput<'a>>,
    h0: &Tensor,
    c0: &Tensor,
    lengths: &[usize],
    reverse: bool,
    w: RnnWeights<'_>,
    panels: WeightPanels<'_>,
) -> Result<LstmOutput> {
    let (x, source, d) = resolve("lstm_sequence", x.into(), &[h0, c0], lengths, &w, 4)?;
    let steps = Steps { lengths: lengths.to_vec(), reverse };
    let (output, (h_n, c_n), saved) = forward(&x, &source, d, (h0, c0), steps, (w, panels));
    let outputs = vec![output.into_dyn(), d.state(h_n), d.state(c_n)];
    let inputs = source.recorded_inputs(&x, &[h0, c0], &w);
    let results = Tensor::from_op_multi("lstm_sequence", outputs, inputs, move |bw| backward(bw, &saved, &source));
    let [output, h_n, c_n] = <[Tensor; 3]>::try_from(results).expect("three outputs");
    Ok(LstmOutput { output, h_n, c_n })
}

/// What forward keeps for backward, batch-major (row `b·T + t`): the
/// activated gates, the states each step started from, and `tanh(c_t)`.
struct Saved {
    d: Dims,
    steps: Steps,
    gates: Vec<f32>,
    h_prev: Vec<f32>,
    c_prev: Vec<f32>,
    tanh_c: Vec<f32>,
}

/// The recurrence forwards: the outputs `(B, T, H)`, the final `(h, c)` and
/// what backward needs.
fn forward(
    x: &Tensor,
    source: &Source,
    d: Dims,
    (h0, c0): (&Tensor, &Tensor),
    steps: Steps,
    (w, panels): (RnnWeights<'_>, WeightPanels<'_>),
) -> (Array3<f32>, (Vec<f32>, Vec<f32>), Saved) {
    let (n_b, n_t, n_h) = (d.batch, d.time, d.hidden);
    let n_g = 4 * n_h;
    // b_ih and b_hh both add to a, so they are added once, to the input projection.
    let bias = flat_vec(&(w.bias_ih.data() + w.bias_hh.data()));
    let xp = input_projection(x, source, &d, (matrix(w.weight_ih), panels.weight_ih), &bias);
    let xp = xp.as_slice().expect("freshly allocated");
    let w_hh_t = recurrent_weight_t(matrix(w.weight_hh), d.time, panels.weight_hh);

    let cells = n_b * n_t * n_h;
    let mut saved = Saved {
        d,
        steps,
        gates: vec![0.0; n_b * n_t * n_g],
        h_prev: vec![0.0; cells],
        c_prev: vec![0.0; cells],
        tanh_c: vec![0.0; cells],
    };
    let (mut h, mut c) = (flat_vec(h0.data()), flat_vec(c0.data()));
    let mut output = Array3::<f32>::zeros((n_b, n_t, n_h));
    let lengths = &saved.steps.lengths;
    for t in d.steps(saved.steps.reverse) {
        // a_t = (x_t·W_ihᵀ + b) + h_{t-1}·W_hhᵀ, written straight into the gate buffer.
        let mut a = step_rows_mut(&mut saved.gates, &d, t, n_g);
        a.assign(&step_rows(xp, &d, t, n_g));
        gemm_rows(&active_rows(t, lengths), as_matrix(&h, n_h), &w_hh_t, 1.0, a);
        for b in 0..n_b {
            let Slots { state, kept, gates: gate_rows } = d.slots(b, t, 4);
            saved.h_prev[kept.clone()].copy_from_slice(&h[state.clone()]);
            saved.c_prev[kept.clone()].copy_from_slice(&c[state.clone()]);
            let gates = &mut saved.gates[gate_rows];
            if !Dims::valid(t, b, lengths) {
                gates.fill(0.0); // padded: state passes through
                continue;
            }
            step_forward(gates, &mut c[state.clone()], &mut h[state.clone()], &mut saved.tanh_c[kept]);
            output.slice_mut(s![b, t, ..]).assign(&ndarray::aview1(&h[state]));
        }
    }
    (output, (h, c), saved)
}

/// The recurrence backwards from the gradients at the outputs, `h_n` and
/// `c_n` (an unused one is zero), then every weight gradient at once.
fn backward(bw: &BackwardMulti<'_>, f: &Saved, source: &Source) -> Vec<Option<ArrayD<f32>>> {
    let (d, lengths) = (f.d, &f.steps.lengths);
    let (n_b, n_t, n_h) = (d.batch, d.time, d.hidden);
    let n_g = 4 * n_h;
    let d_out = output_grad(bw.grad(0));
    let mut dh = final_grad(bw.grad(1), n_b * n_h);
    let mut dc = final_grad(bw.grad(2), n_b * n_h);
    let w_hh = recurrent_weight(matrix(&bw.inputs[W_IH + 1]), d.time);
    let mut d_gates = vec![0.0_f32; n_b * n_t * n_g];
    let mut dh_prev = Array2::<f32>::zeros((n_b, n_h));
    for t in d.steps(f.steps.reverse).rev() {
        // Padded steps are skipped: dh, dc pass through to the previous step.
        for b in (0..n_b).filter(|&b| Dims::valid(t, b, lengths)) {
            let Slots { state, kept, gates: gate_rows } = d.slots(b, t, 4);
            add_output_grad(&mut dh[state.clone()], d_out.as_ref(), b, t);
            let (gates, d_gates) = (&f.gates[gate_rows.clone()], &mut d_gates[gate_rows]);
            step_backward(gates, &f.tanh_c[kept.clone()], &f.c_prev[kept], &dh[state.clone()], &mut dc[state], d_gates);
        }
        // dh_{t-1} = da_t · W_hh (h_{t-1} reaches the loss only through a_t).
        gemm_rows(&active_rows(t, lengths), step_rows(&d_gates, &d, t, n_g), &w_hh, 0.0, dh_prev.view_mut());
        for b in (0..n_b).filter(|&b| Dims::valid(t, b, lengths)) {
            dh[b * n_h..(b + 1) * n_h].copy_from_slice(dh_prev.row(b).as_slice().expect("standard layout"));
        }
    }
    let d_a = as_matrix(&d_gates, n_g);
    let wg = weight_grads(bw, W_IH, &d, source, d_a, d_a, as_matrix(&f.h_prev, n_h));
    wg.into_grads([bw.needs(H0).then(|| d.state(dh)), bw.needs(C0).then(|| d.state(dc))])
}

/// One LSTM step, `x (batch, input)`, `h, c (batch, hidden)` → `(h', c')`:
/// the one-step case of [`lstm_sequence`], with the same fused kernels.
///
/// ```
/// use lingo_tensor::{RnnWeights, Tensor, fused::lstm_cell};
/// let (batch, input, hidden) = (2, 3, 4);
/// let w_ih = Tensor::zeros(&[4 * hidden, input]);
/// let w_hh = Tensor::zeros(&[4 * hidden, hidden]);
/// let b = Tensor::zeros(&[4 * hidden]);
/// let w = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b, bias_hh: &b };
/// let c = Tensor::ones(&[batch, hidden]);
/// let (h1, c1) = lstm_cell(&Tensor::zeros(&[batch, input]), &Tensor::zeros(&[batch, hidden]), &c, w).unwrap();
/// // all gates are σ(0) = 0.5 and g = tanh(0) = 0, so c' = 0.5·c and h' = 0.5·tanh(c')
/// assert_eq!(c1.to_vec(), vec![0.5; 8]);
/// assert!((h1.to_vec()[0] - 0.5 * 0.5_f32.tanh()).abs() < 1e-7);
/// ```
pub fn lstm_cell(x: &Tensor, h: &Tensor, c: &Tensor, w: RnnWeights<'_>) -> Result<(Tensor, Tensor)> {
    let x = as_one_step(x)?;
    let out = lstm_sequence(&x, h, c, &vec![1; x.shape()[0]], false, w)?;
    Ok((out.h_n, out.c_n))
}

/// `x (batch, input)` as a one-step sequence `(batch, 1, input)`.
pub(crate) fn as_one_step(x: &Tensor) -> Result<Tensor> {
    if x.ndim() != 2 {
        return Err(crate::error::bad_shape("rnn cell", x.shape(), "x must be (batch, input)"));
    }
    x.unsqueeze(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// L = h_t + c_t after one step of one unit, from a = [a_i, a_f, a_g, a_o] and c_{t-1}.
    fn loss(a: [f32; 4], c_prev: f32) -> f32 {
        let (mut g, mut c, mut h, mut tc) = (a.to_vec(), vec![c_prev], vec![0.0], vec![0.0]);
        step_forward(&mut g, &mut c, &mut h, &mut tc);
        h[0] + c[0]
    }

    #[test]
    fn step_backward_matches_finite_differences_of_step_forward() {
        let (a, c_prev) = ([0.3, -0.2, 0.5, 0.1], 0.7);
        let (mut g, mut c, mut h, mut tc) = (a.to_vec(), vec![c_prev], vec![0.0], vec![0.0]);
        step_forward(&mut g, &mut c, &mut h, &mut tc);
        let (mut dc, mut da) = (vec![1.0], vec![0.0; 4]);
        step_backward(&g, &tc, &[c_prev], &[1.0], &mut dc, &mut da);
        super::super::layout::assert_partials(|x| loss(x, c_prev), a, &da);
        super::super::layout::assert_partials(|[c]| loss(a, c), [c_prev], &dc);
    }
}
