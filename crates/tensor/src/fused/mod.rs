//! Fused recurrent ops: LSTM and GRU cells and whole sequences, with
//! backward passes derived and written by hand (see [`lstm`] and [`gru`] for
//! the derivations). Read the plain cells first ([`lstm_cell`](crate::lstm_cell),
//! [`gru_cell`](crate::gru_cell)): the same cells composed from tensor ops,
//! which the fused ones are tested against.
//!
//! # Why fused
//!
//! Composed from primitive ops, one LSTM step is about fifteen graph nodes,
//! each allocating its output and its gradient. Fused, a whole sequence is
//! one node:
//!
//! * the input projection `X·W_ihᵀ` for **all** time steps is one GEMM
//!   (it does not depend on the recurrence);
//! * only `h_{t-1}·W_hhᵀ` runs per step, followed by the gate math in one
//!   pass over the `(batch, 4H)` or `(batch, 3H)` pre-activations;
//! * backward mirrors it: one GEMM per step for `dh_{t-1}`, then the weight
//!   gradients `dW_ih = dGᵀ·X` and `dW_hh = dGᵀ·H_prev` as two large GEMMs over
//!   all steps at once.
//!
//! # Padding
//!
//! Every batch row `b` has a length `lengths[b]`; step `t` is *valid* for row
//! `b` when `t < lengths[b]`. On a padded step the row's state passes through
//! unchanged, its output is exactly 0, and in backward it receives no gradient
//! (PyTorch's packed sequences behave the same). So the final state of a row is
//! its state after its last valid step, in either direction: with `reverse`,
//! steps run from `T-1` down to `0` and a row of length `n` starts at step
//! `n-1`, which is what the backward half of a bidirectional layer needs.
//!
//! # Conventions (PyTorch's, so weights map one to one)
//!
//! * LSTM gates are stacked `i, f, g, o` along the rows of `weight_ih (4H, I)`,
//!   `weight_hh (4H, H)`, `bias_ih (4H)`, `bias_hh (4H)`.
//! * GRU gates are stacked `r, z, n` along the rows of `(3H, ·)` weights, and
//!   `n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))`.
//!
//! # Token input
//!
//! A first layer reading embeddings can take token ids instead
//! ([`SeqInput::Tokens`]): with a small vocabulary the op then projects the
//! vocabulary once and looks rows up, a speed-up kept apart in `tokens.rs`
//! (off the reading path; its tests hold it to the dense path).
//!
//! # Several results, one op
//!
//! A sequence op produces the outputs and the final state(s); it records them
//! with [`Tensor::from_op_multi`], so each is an ordinary tensor and the
//! backward pass runs once with all their gradients (an unused one, say `c_n`
//! of an encoder whose cell state is dropped, counts as zero).

pub mod gru;
mod layout;
pub mod lstm;
mod tokens;

pub use gru::{GruOutput, gru_cell, gru_sequence, gru_sequence_packed};
pub use lstm::{LstmOutput, lstm_cell, lstm_sequence, lstm_sequence_packed};

use ndarray::{Array2, ArrayD, ArrayView2, Axis};

use crate::tensor::Tensor;
use layout::{Dims, Source, matrix, rows};
use lingo_kernels::gemm::{Panels, gemm_new, gemm_with_panels};

/// What a sequence op reads at each step.
///
/// ```
/// use lingo_tensor::{Tensor, fused::SeqInput};
/// let x = Tensor::zeros(&[2, 5, 3]);
/// assert!(matches!(SeqInput::from(&x), SeqInput::Dense(_)));
/// ```
#[derive(Debug, Clone, Copy)]
pub enum SeqInput<'a> {
    /// Features `x (batch, time, input)`.
    Dense(&'a Tensor),
    /// Token ids `(batch, time)` read from an embedding `table (vocab, E)`,
    /// optionally followed by `features (batch, time, F)` at every step
    /// (`input = E + F`): the same as [`Tensor::embedding`], then
    /// [`Tensor::cat`] with the features along the last axis, then
    /// [`SeqInput::Dense`] (the row `padding_idx` gets no gradient), computed
    /// faster when the vocabulary is smaller than `batch · time`: see
    /// [`crate::fused`]. (A decoder in Bahdanau's placement reads
    /// `[embed(y_{t-1}); context_t]` this way.)
    Tokens {
        /// The embedding table `(vocab, E)`.
        table: &'a Tensor,
        /// Token ids `(batch, time)`. (A reference to an owned array rather
        /// than a view keeps `SeqInput` covariant, so a short-lived input can
        /// stand where a long-lived one is expected.)
        ids: &'a Array2<usize>,
        /// The padding token, whose row never receives gradient.
        padding_idx: Option<usize>,
        /// Features read after each token's embedding, `(batch, time, F)`.
        features: Option<&'a Tensor>,
    },
}

/// A layer's weights already packed for the products' panel path,
/// `W_ihᵀ` and `W_hhᵀ` as [`Param::panels`](crate::Param::panels) keeps
/// them: decoding runs a sequence op for every step it takes, and would
/// otherwise pack both weights at every one. `None` packs as usual.
///
/// ```
/// let none = lingo_tensor::fused::WeightPanels::default();
/// assert!(none.weight_ih.is_none() && none.weight_hh.is_none());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct WeightPanels<'a> {
    /// `W_ihᵀ (I, G·H)` packed, for the input projection `X·W_ihᵀ`.
    pub weight_ih: Option<&'a Panels>,
    /// `W_hhᵀ (H, G·H)` packed, for the per-step products `h_{t-1}·W_hhᵀ`.
    pub weight_hh: Option<&'a Panels>,
}

impl<'a> From<&'a Tensor> for SeqInput<'a> {
    fn from(x: &'a Tensor) -> SeqInput<'a> {
        SeqInput::Dense(x)
    }
}

/// The input projection for every step at once, `xp = X·W_ihᵀ + bias`,
/// `(batch·time, G·H)`: one GEMM instead of one per step (for a
/// [`Source::Table`], through the product table). `panels`: `W_ihᵀ`
/// packed, if its owner keeps it so.
pub(crate) fn input_projection(
    x: &Tensor,
    source: &Source,
    d: &Dims,
    (w_ih, panels): (ArrayView2<'_, f32>, Option<&Panels>),
    bias: &[f32],
) -> Array2<f32> {
    let n_g = w_ih.nrows();
    match source {
        Source::Dense => {
            let mut xp = Array2::from_shape_fn((d.batch * d.time, n_g), |(_, j)| bias[j]);
            let x = rows(x.data(), d.batch * d.time, d.input);
            gemm_with_panels(1.0, x.view(), w_ih.t(), || panels, 1.0, xp.view_mut());
            xp
        }
        Source::Table { ids, features, .. } => tokens::projection(matrix(x), ids, features.as_ref(), d, w_ih, bias),
    }
}

/// The gradients every recurrent backward ends with, from the per-step
/// pre-activation gradients gathered over all steps (batch-major rows `b·T + t`):
///
/// * `dX = dG_x · W_ih`,  `dW_ih = dG_xᵀ · X`,  `db_ih = Σ_rows dG_x`
/// * `dW_hh = dG_hᵀ · H_prev`,  `db_hh = Σ_rows dG_h`
///
/// `dG_x` and `dG_h` are the same array for an LSTM; they differ for a GRU
/// (its `n` gate sees `r ⊙ (W_hn h + b_hn)`). Entries are `None` where the
/// input does not need a gradient.
pub(crate) struct WeightGrads {
    dx: Option<ArrayD<f32>>,
    dw_ih: Option<ArrayD<f32>>,
    dw_hh: Option<ArrayD<f32>>,
    db_ih: Option<ArrayD<f32>>,
    db_hh: Option<ArrayD<f32>>,
    /// `Some` when the op recorded features after the table (see [`Source::Table`]).
    d_features: Option<Option<ArrayD<f32>>>,
}

impl WeightGrads {
    /// All the op's input gradients in the order of
    /// [`Source::recorded_inputs`], given those of the initial states.
    pub(crate) fn into_grads(self, states: impl IntoIterator<Item = Option<ArrayD<f32>>>) -> Vec<Option<ArrayD<f32>>> {
        let mut grads = vec![self.dx];
        grads.extend(states);
        grads.extend([self.dw_ih, self.dw_hh, self.db_ih, self.db_hh]);
        grads.extend(self.d_features);
        grads
    }
}

/// Position of `x` (or, for a [`Source::Table`], the embedding table) among a
/// fused sequence op's recorded inputs (`[x, h0, (c0,) weight_ih, weight_hh, bias_ih, bias_hh (, features)]`).
pub(crate) const X: usize = 0;
/// Position of `h0` among a fused sequence op's recorded inputs.
pub(crate) const H0: usize = 1;

/// Computes the [`WeightGrads`]; `first_weight` is the input position of
/// `weight_ih`. (For a [`Source::Table`] the input side goes back through
/// the product table.)
pub(crate) fn weight_grads(
    b: &crate::tensor::BackwardMulti<'_>,
    first_weight: usize,
    d: &Dims,
    source: &Source,
    dg_x: ArrayView2<'_, f32>,
    dg_h: ArrayView2<'_, f32>,
    h_prev: ArrayView2<'_, f32>,
) -> WeightGrads {
    let w_ih = matrix(&b.inputs[first_weight]);
    let (wih, whh, bih, bhh) = (first_weight, first_weight + 1, first_weight + 2, first_weight + 3);
    let (dx, dw_ih, d_features) = match source {
        Source::Dense => {
            let x = rows(b.input(X), d.batch * d.time, d.input);
            let dx = b.needs(X).then(|| {
                let dx = gemm_new(1.0, dg_x, w_ih).into_dyn(); // dX = dG_x·W_ih
                dx.into_shape_with_order(b.input(X).raw_dim()).expect("same element count")
            });
            (dx, b.needs(wih).then(|| gemm_new(1.0, dg_x.t(), x.view()).into_dyn()), None) // dW_ih = dG_xᵀ·X
        }
        Source::Table { ids, padding_idx, features } => {
            tokens::input_grads(b, (X, wih, first_weight + 4), d, (ids, *padding_idx, features.as_ref()), dg_x, w_ih)
        }
    };
    WeightGrads {
        dx,
        dw_ih,
        dw_hh: b.needs(whh).then(|| gemm_new(1.0, dg_h.t(), h_prev).into_dyn()),
        db_ih: b.needs(bih).then(|| dg_x.sum_axis(Axis(0)).into_dyn()),
        db_hh: b.needs(bhh).then(|| dg_h.sum_axis(Axis(0)).into_dyn()),
        d_features,
    }
}
