//! Layers: [`Embedding`], [`Linear`], [`Dropout`], the recurrent [`Rnn`]
//! (LSTM or GRU), and the Transformer's [`MultiheadAttention`], [`LayerNorm`]
//! and [`Positions`]. Each owns named [`Param`](lingo_tensor::Param)s and
//! implements [`Module`](lingo_tensor::Module).
//!
//! A layer is built with a *prefix*, the path of the layer in its model, and
//! names its parameters as PyTorch's state dict does: `Linear::new("out", ..)`
//! owns `out.weight` and `out.bias`, `Rnn::new("encoder.rnn", ..)` owns
//! `encoder.rnn.weight_ih_l0`, `encoder.rnn.weight_hh_l1_reverse`, ...

pub mod dropout;
pub mod embedding;
pub mod linear;
pub mod multihead;
pub mod norm;
pub mod positions;
pub mod rnn;

pub use dropout::Dropout;
pub use embedding::Embedding;
pub use linear::Linear;
pub use multihead::{HeadsOutput, MultiheadAttention, Projected};
pub use norm::{LayerNorm, layer_norm};
pub use positions::{PositionKind, Positions, sinusoidal_positions};
pub use rnn::{Rnn, RnnConfig, RnnKind, RnnOutput, RnnState};

use rand::RngCore;

/// Whether a forward pass trains (dropout active, drawing from the given
/// RNG) or evaluates (dropout is the identity).
///
/// Layers take a `Mode` by value; pass it on to inner layers with
/// [`Mode::reborrow`].
///
/// ```
/// use lingo_nn::Mode;
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let mut mode = Mode::Train(&mut rng);
/// assert!(mode.reborrow().is_training());
/// assert!(mode.is_training());              // still usable after the reborrow
/// assert!(!Mode::Eval.is_training());
/// ```
pub enum Mode<'r> {
    /// Evaluation: no dropout, no randomness.
    Eval,
    /// Training: dropout masks are drawn from this RNG (a seeded `StdRng`, say).
    Train(&'r mut dyn RngCore),
}

impl Mode<'_> {
    /// A shorter-lived copy of this mode, sharing the RNG, to hand to an inner layer.
    ///
    /// ```
    /// use lingo_nn::Mode;
    /// let mut mode = Mode::Eval;
    /// assert!(!mode.reborrow().is_training());
    /// ```
    pub fn reborrow(&mut self) -> Mode<'_> {
        match self {
            Mode::Eval => Mode::Eval,
            Mode::Train(rng) => Mode::Train(&mut **rng),
        }
    }

    /// Whether this is [`Mode::Train`].
    ///
    /// ```
    /// assert!(!lingo_nn::Mode::Eval.is_training());
    /// ```
    pub fn is_training(&self) -> bool {
        matches!(self, Mode::Train(_))
    }
}

impl std::fmt::Debug for Mode<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_training() { "Train" } else { "Eval" })
    }
}

/// `prefix.name`, or just `name` for an empty prefix.
pub(crate) fn param_name(prefix: &str, name: &str) -> String {
    if prefix.is_empty() { name.to_owned() } else { format!("{prefix}.{name}") }
}

/// Rejects a zero size with an error naming the setting.
pub(crate) fn positive(what: &'static str, value: usize) -> crate::Result<usize> {
    if value == 0 { Err(crate::error::config(what, "must be at least 1")) } else { Ok(value) }
}
