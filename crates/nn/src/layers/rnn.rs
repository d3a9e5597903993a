//! Multi-layer, optionally bidirectional LSTM and GRU layers on the fused
//! sequence ops [`lstm_sequence`](lingo_tensor::fused::lstm_sequence) and [`gru_sequence`](lingo_tensor::fused::gru_sequence).
//!
//! # What one forward pass computes
//!
//! With `D = 2` directions when bidirectional (else 1) and `x⁰ = x (batch, time, input)`:
//!
//! ```text
//! for layer l = 0 .. L-1:
//!     x̃ = dropout(xˡ)          if l > 0 (between layers, training only)
//!     forward:  (out_f, h_f, c_f) = seq(x̃, h0[l·D],     lengths, reverse = false)
//!     backward: (out_b, h_b, c_b) = seq(x̃, h0[l·D + 1], lengths, reverse = true)
//!     xˡ⁺¹ = [out_f ; out_b]   concatenated on features: (batch, time, D·H)
//! output = xᴸ,   h_n = stack(h_f⁰, h_b⁰, h_f¹, ...) : (L·D, batch, H)
//! ```
//!
//! which is PyTorch's `nn.LSTM(batch_first=True)` / `nn.GRU` on a packed
//! sequence: the reverse direction of a row of length `n` starts at its step
//! `n - 1`, padded steps output exactly 0, and each row's final state is taken
//! after its last valid step. Final states are ordered as PyTorch's,
//! index `layer · D + direction`.

use lingo_tensor::{
    Param, RnnWeights, Tensor,
    fused::{SeqInput, WeightPanels, gru_sequence_packed, lstm_sequence_packed},
};
use rand::RngCore;
use serde::{Deserialize, Serialize};

use super::{Dropout, Mode, param_name, positive};
use crate::error::{Result, config};
use crate::init::{Init, Weights};

/// Which recurrent cell a layer runs.
///
/// ```
/// use lingo_nn::RnnKind;
/// assert_eq!(RnnKind::Lstm.gates(), 4);
/// assert_eq!(RnnKind::Gru.gates(), 3);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum RnnKind {
    /// Long short-term memory, gates `i, f, g, o`; state `(h, c)`.
    #[default]
    #[cfg_attr(feature = "clap", value(help = "Long short-term memory"))]
    Lstm,
    /// Gated recurrent unit, gates `r, z, n`; state `h`.
    #[cfg_attr(feature = "clap", value(help = "Gated recurrent unit"))]
    Gru,
}

impl RnnKind {
    /// Gate blocks stacked in the weights: 4 for an LSTM, 3 for a GRU.
    ///
    /// ```
    /// assert_eq!(lingo_nn::RnnKind::Gru.gates() * 16, 48);   // weight_ih rows for H = 16
    /// ```
    pub fn gates(self) -> usize {
        match self {
            RnnKind::Lstm => 4,
            RnnKind::Gru => 3,
        }
    }
}

/// The shape of a recurrent layer, as PyTorch's `nn.LSTM` arguments.
///
/// ```
/// use lingo_nn::{RnnConfig, RnnKind};
/// let encoder = RnnConfig { num_layers: 2, bidirectional: true, dropout: 0.1, ..RnnConfig::new(RnnKind::Gru, 32, 64) };
/// assert_eq!(encoder.num_directions(), 2);
/// assert_eq!(encoder.output_size(), 128);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RnnConfig {
    /// LSTM or GRU.
    pub kind: RnnKind,
    /// Features per input step, `I`.
    pub input_size: usize,
    /// Features of the state per direction, `H`.
    pub hidden_size: usize,
    /// Stacked layers, `L ≥ 1`.
    pub num_layers: usize,
    /// Whether each layer also runs backwards in time.
    pub bidirectional: bool,
    /// Dropout on the input of every layer but the first, in `[0, 1)`.
    pub dropout: f32,
}

impl RnnConfig {
    /// One unidirectional layer without dropout.
    ///
    /// ```
    /// let c = lingo_nn::RnnConfig::new(lingo_nn::RnnKind::Lstm, 8, 16);
    /// assert_eq!((c.num_layers, c.bidirectional, c.dropout), (1, false, 0.0));
    /// ```
    pub fn new(kind: RnnKind, input_size: usize, hidden_size: usize) -> RnnConfig {
        RnnConfig { kind, input_size, hidden_size, num_layers: 1, bidirectional: false, dropout: 0.0 }
    }

    /// `D`: 2 when bidirectional, else 1.
    ///
    /// ```
    /// assert_eq!(lingo_nn::RnnConfig::new(lingo_nn::RnnKind::Lstm, 8, 16).num_directions(), 1);
    /// ```
    pub fn num_directions(&self) -> usize {
        if self.bidirectional { 2 } else { 1 }
    }

    /// Features of the output per step, `D·H`.
    ///
    /// ```
    /// assert_eq!(lingo_nn::RnnConfig::new(lingo_nn::RnnKind::Lstm, 8, 16).output_size(), 16);
    /// ```
    pub fn output_size(&self) -> usize {
        self.num_directions() * self.hidden_size
    }
}

/// The recurrent state of a whole stack: `h (L·D, batch, H)` and, for an
/// LSTM, `c (L·D, batch, H)`; entry `layer · D + direction`, as PyTorch's.
///
/// ```
/// use lingo_nn::{RnnConfig, RnnKind, RnnState};
/// let s = RnnState::zeros(&RnnConfig::new(RnnKind::Lstm, 3, 5), 2);
/// assert_eq!(s.h.shape(), &[1, 2, 5]);
/// assert!(s.c.is_some());
/// ```
#[derive(Debug, Clone)]
pub struct RnnState {
    /// Hidden states `(L·D, batch, H)`.
    pub h: Tensor,
    /// Cell states `(L·D, batch, H)`: `Some` for an LSTM, `None` for a GRU.
    pub c: Option<Tensor>,
}

impl RnnState {
    /// All-zero state for `batch` rows (what a forward pass without an initial state uses).
    ///
    /// ```
    /// use lingo_nn::{RnnConfig, RnnKind, RnnState};
    /// let c = RnnConfig { num_layers: 2, bidirectional: true, ..RnnConfig::new(RnnKind::Gru, 3, 4) };
    /// let s = RnnState::zeros(&c, 7);
    /// assert_eq!(s.h.shape(), &[4, 7, 4]);
    /// assert!(s.c.is_none());
    /// ```
    pub fn zeros(config: &RnnConfig, batch: usize) -> RnnState {
        let shape = [config.num_layers * config.num_directions(), batch, config.hidden_size];
        RnnState { h: Tensor::zeros(&shape), c: (config.kind == RnnKind::Lstm).then(|| Tensor::zeros(&shape)) }
    }

    /// The state of the given batch rows, in that order (repeats allowed):
    /// how beam search reorders and expands hypotheses. Differentiable.
    ///
    /// ```
    /// use lingo_nn::{RnnConfig, RnnKind, RnnState};
    /// let s = RnnState::zeros(&RnnConfig::new(RnnKind::Lstm, 3, 5), 2);
    /// let beams = s.select_rows(&[0, 0, 0, 1, 1, 1]).unwrap();
    /// assert_eq!(beams.h.shape(), &[1, 6, 5]);
    /// assert!(s.select_rows(&[2]).is_err());
    /// ```
    pub fn select_rows(&self, rows: &[usize]) -> Result<RnnState> {
        let h = self.h.index_select(1, rows)?;
        let c = self.c.as_ref().map(|c| c.index_select(1, rows)).transpose()?;
        Ok(RnnState { h, c })
    }
}

/// What [`Rnn::forward`] returns.
#[derive(Debug, Clone)]
pub struct RnnOutput {
    /// The last layer's outputs `(batch, time, D·H)`, directions concatenated
    /// on features (forward first); exactly 0 on padded steps.
    pub output: Tensor,
    /// The final state of every layer and direction (see [`RnnState`]).
    pub state: RnnState,
}

/// A multi-layer, optionally bidirectional LSTM or GRU over padded batches.
///
/// Parameters, per layer `k` and direction (suffix `_reverse` for the
/// backward one), in PyTorch's state-dict order and layout:
/// `{prefix}.weight_ih_l{k} (G·H, I_k)`, `weight_hh_l{k} (G·H, H)`,
/// `bias_ih_l{k} (G·H)`, `bias_hh_l{k} (G·H)`, with `I_0 = input_size` and
/// `I_k = D·H` above. See the [module docs](self) for the computation.
///
/// ```
/// use lingo_nn::{Init, Mode, Rnn, RnnConfig, RnnKind};
/// use lingo_tensor::{Module, Tensor};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let config = RnnConfig { num_layers: 2, bidirectional: true, ..RnnConfig::new(RnnKind::Lstm, 3, 4) };
/// let rnn = Rnn::new("encoder.rnn", config, Init::default(), &mut rng).unwrap();
/// assert_eq!(rnn.params()[4].name(), "encoder.rnn.weight_ih_l0_reverse");
/// assert_eq!(rnn.params()[9].shape(), &[16, 4]);              // weight_hh_l1, (4H, H)
///
/// let x = Tensor::randn(&[2, 5, 3], 1.0, &mut rng).unwrap();  // (batch, src_len, emb)
/// let out = rnn.forward(&x, &[5, 3], None, Mode::Eval).unwrap();
/// assert_eq!(out.output.shape(), &[2, 5, 8]);                  // (batch, src_len, 2H)
/// assert_eq!(out.state.h.shape(), &[4, 2, 4]);                 // (layers·dirs, batch, H)
/// assert_eq!(out.output.data()[[1, 4, 0]], 0.0);               // padded step
/// ```
#[derive(Debug, Clone)]
pub struct Rnn {
    config: RnnConfig,
    /// One `[weight_ih, weight_hh, bias_ih, bias_hh]` per layer and direction, index `layer · D + direction`.
    cells: Vec<[Param; 4]>,
    dropout: Dropout,
}

impl Rnn {
    /// A stack shaped by `config`, initialised by `init` from `rng` (in
    /// parameter order). Errors on a zero size or a dropout outside `[0, 1)`.
    ///
    /// ```
    /// use lingo_nn::{Init, Rnn, RnnConfig, RnnKind};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let gru = Rnn::new("decoder.rnn", RnnConfig::new(RnnKind::Gru, 8, 16), Init::PyTorch, &mut rng).unwrap();
    /// assert_eq!(gru.config().kind, RnnKind::Gru);
    /// let bad = RnnConfig { num_layers: 0, ..RnnConfig::new(RnnKind::Gru, 8, 16) };
    /// assert!(Rnn::new("r", bad, Init::PyTorch, &mut rng).is_err());
    /// ```
    pub fn new(prefix: &str, config: RnnConfig, init: Init, mut rng: &mut impl RngCore) -> Result<Rnn> {
        Rnn::build(prefix, config, &mut Weights::Fresh(init, &mut rng))
    }

    /// [`Rnn::new`] with its weights drawn or taken from saved ones.
    pub(crate) fn build(prefix: &str, config: RnnConfig, weights: &mut Weights<'_>) -> Result<Rnn> {
        positive("rnn input_size", config.input_size)?;
        positive("rnn hidden_size", config.hidden_size)?;
        positive("rnn num_layers", config.num_layers)?;
        let dropout = Dropout::new(config.dropout)?;
        let dirs = config.num_directions();
        let mut cells = Vec::with_capacity(config.num_layers * dirs);
        for layer in 0..config.num_layers {
            let input = if layer == 0 { config.input_size } else { config.output_size() };
            for dir in 0..dirs {
                let suffix = if dir == 1 { "_reverse" } else { "" };
                let name = |what: &str| param_name(prefix, &format!("{what}_l{layer}{suffix}"));
                let (rows, hidden) = (config.kind.gates() * config.hidden_size, config.hidden_size);
                let names = [name("weight_ih"), name("weight_hh"), name("bias_ih"), name("bias_hh")];
                let shapes: [&[usize]; 4] = [&[rows, input], &[rows, hidden], &[rows], &[rows]];
                cells
                    .push(weights.params(names, shapes, |init, rng| {
                        init.rnn_weights(config.kind.gates(), input, hidden, rng)
                    })?);
            }
        }
        Ok(Rnn { config, cells, dropout })
    }

    /// The layer's shape.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let c = lingo_nn::RnnConfig::new(lingo_nn::RnnKind::Lstm, 2, 3);
    /// assert_eq!(lingo_nn::Rnn::new("r", c, lingo_nn::Init::default(), &mut rng).unwrap().config(), &c);
    /// ```
    pub fn config(&self) -> &RnnConfig {
        &self.config
    }

    /// The weights of one layer and direction, ready for [`lstm_sequence`](lingo_tensor::fused::lstm_sequence) /
    /// [`gru_sequence`](lingo_tensor::fused::gru_sequence) (or the cells); errors when either is out of range.
    ///
    /// ```
    /// use lingo_nn::{Init, Rnn, RnnConfig, RnnKind};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let rnn = Rnn::new("r", RnnConfig::new(RnnKind::Lstm, 2, 3), Init::default(), &mut rng).unwrap();
    /// assert_eq!(rnn.weights(0, false).unwrap().weight_hh.shape(), &[12, 3]);
    /// assert!(rnn.weights(0, true).is_err());   // not bidirectional
    /// ```
    pub fn weights(&self, layer: usize, reverse: bool) -> Result<RnnWeights<'_>> {
        let dirs = self.config.num_directions();
        if layer >= self.config.num_layers || (reverse && dirs == 1) {
            return Err(config(
                "rnn layer",
                format!(
                    "layer {layer} (reverse: {reverse}) does not exist in {} layers x {dirs} directions",
                    self.config.num_layers
                ),
            ));
        }
        let [weight_ih, weight_hh, bias_ih, bias_hh] = &self.cells[layer * dirs + usize::from(reverse)];
        Ok(RnnWeights {
            weight_ih: weight_ih.tensor(),
            weight_hh: weight_hh.tensor(),
            bias_ih: bias_ih.tensor(),
            bias_hh: bias_hh.tensor(),
        })
    }

    /// Runs the stack over `x (batch, time, input_size)` with `lengths[b]`
    /// valid steps per row, from `initial` (zeros if `None`; see
    /// [`RnnState`] for its layout). Dropout between layers is active only
    /// in [`Mode::Train`].
    ///
    /// Decoding one step at a time is `time = 1` with the previous step's state.
    ///
    /// ```
    /// use lingo_nn::{Init, Mode, Rnn, RnnConfig, RnnKind};
    /// use lingo_tensor::Tensor;
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let rnn = Rnn::new("decoder.rnn", RnnConfig::new(RnnKind::Gru, 2, 3), Init::default(), &mut rng).unwrap();
    /// let x = Tensor::randn(&[1, 4, 2], 1.0, &mut rng).unwrap();
    /// let whole = rnn.forward(&x, &[4], None, Mode::Eval).unwrap();
    /// // the same four steps one at a time
    /// let mut state = None;
    /// for t in 0..4 {
    ///     let step = rnn.forward(&x.narrow(1, t, 1).unwrap(), &[1], state.as_ref(), Mode::Eval).unwrap();
    ///     state = Some(step.state);
    /// }
    /// assert_eq!(state.unwrap().h.to_vec(), whole.state.h.to_vec());
    /// ```
    pub fn forward<'a>(
        &self,
        x: impl Into<SeqInput<'a>>,
        lengths: &[usize],
        initial: Option<&RnnState>,
        mut mode: Mode<'_>,
    ) -> Result<RnnOutput> {
        let RnnConfig { kind, input_size, hidden_size, num_layers, .. } = self.config;
        let dirs = self.config.num_directions();
        let x = x.into();
        let (batch, width) = match &x {
            SeqInput::Dense(x) if x.ndim() == 3 => (x.shape()[0], x.shape()[2]),
            SeqInput::Dense(x) => {
                return Err(config(
                    "rnn input",
                    format!("expected x (batch, time, {input_size}), got shape {:?}", x.shape()),
                ));
            }
            SeqInput::Tokens { table, ids, features, .. } => {
                let extra = features.map_or(0, |f| f.shape().last().copied().unwrap_or(0));
                (ids.nrows(), table.shape().get(1).copied().unwrap_or(0) + extra)
            }
        };
        if width != input_size {
            return Err(config("rnn input", format!("expected {input_size} input features, got {width}")));
        }
        if let Some(s) = initial {
            self.check_state(s, batch)?;
        }
        let zeros = Tensor::zeros(&[batch, hidden_size]);
        // Entry k of a (L·D, batch, H) state as (batch, H), or zeros.
        let entry = |state: Option<&Tensor>, k: usize| -> Result<Tensor> {
            match state {
                Some(s) => Ok(s.narrow(0, k, 1)?.reshape(&[batch, hidden_size])?),
                None => Ok(zeros.clone()),
            }
        };
        let (mut h_n, mut c_n) = (Vec::with_capacity(self.cells.len()), Vec::with_capacity(self.cells.len()));
        // Layer 0 reads `x` as given (tokens or features); the layers above
        // read the features below them, through dropout when training.
        let mut below: Option<Tensor> = None;
        for layer in 0..num_layers {
            let dropped = below.as_ref().map(|b| self.dropout.forward(b, mode.reborrow())).transpose()?;
            let input: SeqInput<'_> = match &dropped {
                Some(features) => SeqInput::Dense(features),
                None => x,
            };
            let mut outputs = Vec::with_capacity(dirs);
            for dir in 0..dirs {
                let (k, reverse) = (layer * dirs + dir, dir == 1);
                let w = self.weights(layer, reverse)?;
                // Packed once and kept where no graph is recorded (decoding: one call per step).
                let [w_ih, w_hh, ..] = &self.cells[k];
                let panels = WeightPanels { weight_ih: w_ih.panels(), weight_hh: w_hh.panels() };
                let h0 = entry(initial.map(|s| &s.h), k)?;
                match kind {
                    RnnKind::Lstm => {
                        let c0 = entry(initial.and_then(|s| s.c.as_ref()), k)?;
                        let out = lstm_sequence_packed(input, &h0, &c0, lengths, reverse, w, panels)?;
                        outputs.push(out.output);
                        h_n.push(out.h_n);
                        c_n.push(out.c_n);
                    }
                    RnnKind::Gru => {
                        let out = gru_sequence_packed(input, &h0, lengths, reverse, w, panels)?;
                        outputs.push(out.output);
                        h_n.push(out.h_n);
                    }
                }
            }
            // (batch, time, D·H): forward features first, as PyTorch.
            below = Some(if dirs == 1 { outputs.swap_remove(0) } else { Tensor::cat(&outputs, 2)? });
        }
        let input = below.expect("num_layers ≥ 1 is checked at construction");
        let h = Tensor::stack(&h_n, 0)?;
        let c = (kind == RnnKind::Lstm).then(|| Tensor::stack(&c_n, 0)).transpose()?;
        Ok(RnnOutput { output: input, state: RnnState { h, c } })
    }

    /// Checks an initial state against this stack and a batch size.
    fn check_state(&self, s: &RnnState, batch: usize) -> Result<()> {
        let expected = [self.cells.len(), batch, self.config.hidden_size];
        let shapes_ok = s.h.shape() == expected && s.c.as_ref().is_none_or(|c| c.shape() == expected);
        match (self.config.kind, &s.c) {
            _ if !shapes_ok => {
                let c = s.c.as_ref().map(|c| c.shape().to_vec());
                Err(config(
                    "rnn initial state",
                    format!(
                        "expected (layers·dirs, batch, hidden) = {expected:?}, got h {:?} and c {c:?}",
                        s.h.shape()
                    ),
                ))
            }
            (RnnKind::Lstm, None) => Err(config("rnn initial state", "an LSTM needs a cell state c")),
            (RnnKind::Gru, Some(_)) => Err(config("rnn initial state", "a GRU has no cell state c")),
            _ => Ok(()),
        }
    }
}

lingo_tensor::module!(Rnn { cells });
