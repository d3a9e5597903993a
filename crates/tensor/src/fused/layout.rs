//! What both fused sequences share that is not math: the checks of a
//! call's arguments, where each batch row and step lives in the flat
//! buffers, the per-step products over the rows still running, and what a
//! call records as its inputs. The math reads in `lstm.rs`, `gru.rs` and
//! the weight gradients of `mod.rs`; this file is off the reading path.

use ndarray::{Array2, ArrayD, ArrayView2, ArrayViewMut2, Axis, CowArray, Ix2};

use super::{SeqInput, tokens};
use crate::cells::RnnWeights;
use crate::error::{Result, bad_arg, mismatch};
use crate::tensor::Tensor;
use crate::values::flat_vec;
use lingo_kernels::gemm::{Panels, Prepared, gemm_prepared};

/// Sizes of one sequence call, after validation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dims {
    pub batch: usize,
    pub time: usize,
    pub input: usize,
    pub hidden: usize,
}

impl Dims {
    /// Checks the input shape `(batch, time, input)`, the states `(batch, hidden)`,
    /// the weights and the lengths, naming both shapes when they disagree.
    pub(crate) fn check(
        op: &'static str,
        xs: &[usize],
        states: &[&Tensor],
        lengths: &[usize],
        w: &RnnWeights<'_>,
        gates: usize,
    ) -> Result<Dims> {
        let hidden = w.hidden_size(gates)?;
        if xs.len() != 3 || xs[2] != w.input_size() {
            return Err(mismatch(
                op,
                xs,
                w.weight_ih.shape(),
                "expected x (batch, time, input) and weight_ih (gates·H, input)",
            ));
        }
        let (batch, time) = (xs[0], xs[1]);
        for s in states {
            if s.shape() != [batch, hidden] {
                return Err(mismatch(op, s.shape(), &[batch, hidden], "initial states must be (batch, hidden)"));
            }
        }
        if lengths.len() != batch {
            return Err(mismatch(op, xs, &[lengths.len()], "one length per batch row"));
        }
        if let Some(&bad) = lengths.iter().find(|&&n| n > time) {
            return Err(bad_arg(op, format!("length {bad} exceeds the {time} time steps of x")));
        }
        Ok(Dims { batch, time, input: xs[2], hidden })
    }

    /// Whether step `t` is a real (not padded) step of row `b`.
    pub(crate) fn valid(t: usize, b: usize, lengths: &[usize]) -> bool {
        t < lengths[b]
    }

    /// The order steps run in: forwards, or backwards for the reverse direction.
    pub(crate) fn steps(&self, reverse: bool) -> Box<dyn DoubleEndedIterator<Item = usize>> {
        if reverse { Box::new((0..self.time).rev()) } else { Box::new(0..self.time) }
    }

    /// Where row `b` at step `t` lives in the flat buffers: its state in a
    /// `(batch·H)` one, its slot in a saved `(batch·T·H)` one, its gates in a
    /// `(batch·T·gates·H)` one.
    pub(crate) fn slots(&self, b: usize, t: usize, gates: usize) -> Slots {
        let (row, h) = (b * self.time + t, self.hidden);
        Slots { state: b * h..(b + 1) * h, kept: row * h..(row + 1) * h, gates: row * gates * h..(row + 1) * gates * h }
    }

    /// A `(batch, hidden)` state from its values, row by row.
    pub(crate) fn state(&self, v: Vec<f32>) -> ArrayD<f32> {
        Array2::from_shape_vec((self.batch, self.hidden), v).expect("sized to fit").into_dyn()
    }
}

/// The ranges [`Dims::slots`] gives.
pub(crate) struct Slots {
    pub state: std::ops::Range<usize>,
    pub kept: std::ops::Range<usize>,
    pub gates: std::ops::Range<usize>,
}

/// Which steps a sequence op runs: each row's valid length, and the direction.
#[derive(Debug, Clone)]
pub(crate) struct Steps {
    pub lengths: Vec<usize>,
    pub reverse: bool,
}

/// The batch rows still inside their sequence at step `t` (`t < lengths[b]`).
pub(crate) fn active_rows(t: usize, lengths: &[usize]) -> Vec<usize> {
    (0..lengths.len()).filter(|&b| t < lengths[b]).collect()
}

/// `out[r] ← a[r]·w + beta·out[r]` for the batch rows `r` in `rows` only:
/// the per-step recurrent product, skipping the rows whose sequence has
/// ended (PyTorch's packed sequences skip them too). When every row is
/// active it is one GEMM; otherwise the active rows are gathered, multiplied
/// and scattered back. Each output element is the same dot product either
/// way (up to the last bits when so few rows are left that [`gemm`] takes
/// its direct path for small products).
pub(crate) fn gemm_rows(
    rows: &[usize],
    a: ArrayView2<'_, f32>,
    w: &Prepared<'_>,
    beta: f32,
    mut out: ArrayViewMut2<'_, f32>,
) {
    if rows.len() == a.nrows() {
        gemm_prepared(1.0, a, w, beta, out);
        return;
    }
    if rows.is_empty() {
        return;
    }
    let a_rows = a.select(Axis(0), rows);
    let mut c = if beta == 0.0 { Array2::zeros((rows.len(), w.view().ncols())) } else { out.select(Axis(0), rows) };
    gemm_prepared(1.0, a_rows.view(), w, beta, c.view_mut());
    for (i, &r) in rows.iter().enumerate() {
        out.row_mut(r).assign(&c.row(i));
    }
}

/// `W_hhᵀ (H, G·H)` for the per-step products `h_{t-1}·W_hhᵀ`, prepared
/// once for the sequence's steps: copied into row-major order when there is
/// more than one step (in that layout `gemm` reads the weight row by row
/// without packing it (see the `gemm` module docs); given the transposed view, it
/// would make that copy itself at every step), and packed for the panel
/// path where it runs (or given `panels`, the owner's packing of it). For
/// a single step the view is passed as it is. All give the same bits.
pub(crate) fn recurrent_weight_t<'a>(
    w_hh: ArrayView2<'a, f32>,
    steps: usize,
    panels: Option<&'a Panels>,
) -> Prepared<'a> {
    let w_hh_t = if steps > 1 {
        CowArray::from(lingo_kernels::gemm::row_major(w_hh.reversed_axes()))
    } else {
        CowArray::from(w_hh.reversed_axes())
    };
    match panels {
        Some(panels) => Prepared::with_panels(w_hh_t, panels),
        None => Prepared::new(w_hh_t, steps),
    }
}

/// `W_hh (G·H, H)` for the backward steps' products `dh_{t-1} = da_t·W_hh`,
/// prepared once for the sequence's steps (see [`recurrent_weight_t`]).
pub(crate) fn recurrent_weight(w_hh: ArrayView2<'_, f32>, steps: usize) -> Prepared<'_> {
    Prepared::new(CowArray::from(w_hh), steps)
}

/// A flat row-major buffer seen as a matrix with `cols` columns.
pub(crate) fn as_matrix(buf: &[f32], cols: usize) -> ArrayView2<'_, f32> {
    ArrayView2::from_shape((buf.len() / cols.max(1), cols), buf).expect("buffers are whole rows")
}

/// A 2-D view of a tensor known to be 2-D (or reshaped to it), contiguous.
pub(crate) fn matrix(t: &Tensor) -> ArrayView2<'_, f32> {
    t.data().view().into_dimensionality::<Ix2>().expect("shapes were validated")
}

/// `a` as a `(n_rows, n_cols)` matrix in row-major order (copied only if it is
/// not contiguous); for `x (batch, time, input)` row `b·T + t` is `x[b, t]`.
pub(crate) fn rows(a: &ndarray::ArrayD<f32>, n_rows: usize, n_cols: usize) -> CowArray<'_, f32, Ix2> {
    a.as_standard_layout().into_shape_with_order((n_rows, n_cols)).expect("callers pass n_rows * n_cols == a.len()")
}

/// The gradient at a sequence op's outputs `(batch, time, H)`, in row-major
/// order and as a 3-D array, so the per-step loops read it as plain rows
/// (indexing a dynamic-dimensional array is much slower).
pub(crate) fn output_grad(grad: Option<&ndarray::ArrayD<f32>>) -> Option<CowArray<'_, f32, ndarray::Ix3>> {
    grad.map(|g| g.as_standard_layout().into_dimensionality().expect("outputs are (batch, time, H)"))
}

/// The gradient at a final state as a flat `(batch·H)` buffer: a copy of
/// it, or zeros when no loss depends on that state.
pub(crate) fn final_grad(grad: Option<&ndarray::ArrayD<f32>>, len: usize) -> Vec<f32> {
    grad.map_or_else(|| vec![0.0; len], flat_vec)
}

/// `dh += ∂L/∂output[b, t]` for one row: the output at step `t` is `h_t`.
pub(crate) fn add_output_grad(dh: &mut [f32], d_out: Option<&CowArray<'_, f32, ndarray::Ix3>>, b: usize, t: usize) {
    if let Some(d_out) = d_out {
        for (acc, g) in dh.iter_mut().zip(d_out.slice(ndarray::s![b, t, ..])) {
            *acc += g;
        }
    }
}

/// How the input projection of a call is computed (chosen by [`resolve`]).
pub(crate) enum Source {
    /// `xp = X·W_ihᵀ`: recorded input 0 is `x (batch, time, input)`.
    Dense,
    /// `xp[b, t] = P[id] + f[b, t]·W_fᵀ` with `P = table·W_eᵀ`, where
    /// `W_ih = [W_e | W_f]` splits at the table's width: recorded input 0 is
    /// the table, and the features `f`, if any, are recorded last.
    Table { ids: Vec<usize>, padding_idx: Option<usize>, features: Option<Tensor> },
}

impl Source {
    /// The features a [`Source::Table`] reads after the embeddings.
    pub(crate) fn features(&self) -> Option<&Tensor> {
        match self {
            Source::Table { features, .. } => features.as_ref(),
            Source::Dense => None,
        }
    }

    /// The inputs a sequence op records, in the order its backward returns
    /// gradients: `x` (or the table), the initial states, the four weights,
    /// then the features of a [`Source::Table`] that has them.
    pub(crate) fn recorded_inputs(&self, x: &Tensor, states: &[&Tensor], w: &RnnWeights<'_>) -> Vec<Tensor> {
        let mut inputs = vec![x.clone()];
        inputs.extend(states.iter().map(|&s| s.clone()));
        inputs.extend([w.weight_ih, w.weight_hh, w.bias_ih, w.bias_hh].map(Tensor::clone));
        inputs.extend(self.features().cloned());
        inputs
    }
}

/// Checks a sequence op's arguments and picks how to project its input:
/// returns the tensor to record as input 0, the [`Source`] and the sizes.
pub(crate) fn resolve(
    op: &'static str,
    input: SeqInput<'_>,
    states: &[&Tensor],
    lengths: &[usize],
    w: &RnnWeights<'_>,
    gates: usize,
) -> Result<(Tensor, Source, Dims)> {
    match input {
        SeqInput::Dense(x) => Ok((x.clone(), Source::Dense, Dims::check(op, x.shape(), states, lengths, w, gates)?)),
        SeqInput::Tokens { table, ids, padding_idx, features } => {
            tokens::resolve(op, (table, ids, padding_idx, features), states, lengths, w, gates)
        }
    }
}

/// The rows `b·T + t`, `b = 0..batch`, of a `(batch·time, cols)` buffer: the
/// step-`t` slice of a batch-major buffer, as a strided `(batch, cols)` view.
pub(crate) fn step_rows<'a>(buf: &'a [f32], d: &Dims, t: usize, cols: usize) -> ArrayView2<'a, f32> {
    let view = ArrayView2::from_shape((d.batch * d.time, cols), buf).expect("sized to fit");
    view.slice_move(ndarray::s![t..;d.time, ..])
}

/// Mutable version of [`step_rows`].
pub(crate) fn step_rows_mut<'a>(buf: &'a mut [f32], d: &Dims, t: usize, cols: usize) -> ArrayViewMut2<'a, f32> {
    let view = ArrayViewMut2::from_shape((d.batch * d.time, cols), buf).expect("sized to fit");
    view.slice_move(ndarray::s![t..;d.time, ..])
}

/// Test helper: checks `analytic[k] ≈ ∂loss/∂at[k]` by central differences.
#[cfg(test)]
pub(crate) fn assert_partials<const N: usize>(loss: impl Fn([f32; N]) -> f32, at: [f32; N], analytic: &[f32]) {
    let eps = 1e-3;
    for k in 0..N {
        let (mut up, mut down) = (at, at);
        up[k] += eps;
        down[k] -= eps;
        let numeric = (loss(up) - loss(down)) / (2.0 * eps);
        assert!((numeric - analytic[k]).abs() < 1e-3, "input {k}: analytic {} numeric {numeric}", analytic[k]);
    }
}
