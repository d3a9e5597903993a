//! The encoder–decoder model: attention off (the bottleneck baseline) or on,
//! with any `lingo-attention` scorer, in Luong's or Bahdanau's placement.
//!
//! # The three models in one
//!
//! ```text
//! encoder:   enc_out, (h, c) = RNN_enc(embed(src))            enc_out: (batch, src_len, D·H)
//! bridge:    s_0 = tanh(W_b [h_fwd; h_bwd])   (bidirectional only; per layer, h and c)
//!
//! no attention (the bottleneck):     s_t = RNN_dec(embed(y_{t-1}), s_{t-1})
//!                                    logits_t = W_out s_t            enc_out is never read
//!
//! Luong (attention after the RNN):   s_t = RNN_dec(embed(y_{t-1}), s_{t-1})
//!                                    context_t, weights_t = attend(s_t, enc_out)
//!                                    logits_t = W_out tanh(W_c [s_t; context_t])
//!
//! Bahdanau (attention before it):    context_t, weights_t = attend(s_{t-1}, enc_out)
//!                                    s_t = RNN_dec([embed(y_{t-1}); context_t], s_{t-1})
//!                                    logits_t = W_out s_t
//! ```
//!
//! In Luong's placement the decoder RNN does not depend on the context, so
//! teacher-forced training runs it over the whole target at once (one fused
//! sequence op) and attends for all steps with one batched kernel call.
//! Bahdanau's placement feeds each step's context into the RNN, so it runs
//! step by step, through the same [`Seq2Seq::decode_step`] that decoding uses.
//!
//! # The bottleneck, visible
//!
//! [`Seq2Seq::encode_source`] returns `(enc_out, state, src_pad_mask)` for
//! every configuration. Without attention, the decoder starts from `state`
//! and nothing else ever reads `enc_out`: one vector per source token is
//! computed and thrown away.

use lingo_attention::{Attention, AttentionConfig, AttentionOutput, Intervention, Prepared, ScoreSteps, Scorer};
use lingo_data::{Batch, Example, PAD};
use lingo_tensor::{Param, Tensor, fused::SeqInput};
use ndarray::{Array2, Array3, Array5, Axis, Ix3, Ix4};
use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::error::{Result, config as invalid};
use crate::init::{Init, Weights};
use crate::inspect::{AttentionKind, Cell, check_row, only_row};
use crate::layers::{Dropout, Embedding, Linear, Mode, Rnn, RnnConfig, RnnKind, RnnState};
use crate::model::{
    EncoderDecoder, ModelConfig, SelectRows, Step, copies_of, field_differences, from_saved, output_loss,
};
use crate::state_dict::StateDict;

/// Where attention sits relative to the decoder RNN.
///
/// ```
/// assert_eq!(lingo_nn::Placement::default(), lingo_nn::Placement::Luong);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Placement {
    /// Luong et al. (2015): the RNN steps first, attention reads its output,
    /// and `tanh(W_c [s_t; context_t])` feeds the output layer.
    #[default]
    #[cfg_attr(
        feature = "clap",
        value(help = "After the decoder's step, read by the output layer (Luong et al., 2015)")
    )]
    Luong,
    /// Bahdanau et al. (2014): attention reads the previous state, and the
    /// context joins the RNN's input at each step.
    #[cfg_attr(
        feature = "clap",
        value(help = "Before the decoder's step, its context fed to the RNN (Bahdanau et al., 2014)")
    )]
    Bahdanau,
}

/// Everything that shapes a [`Seq2Seq`]; stored in checkpoints.
///
/// The defaults are the tutorial's baseline: a one-layer LSTM, embedding
/// and hidden size 64, no dropout, and **no attention**, the bottleneck
/// model that attention is measured against.
///
/// ```
/// use lingo_nn::Seq2SeqConfig;
/// let base = Seq2SeqConfig::new(30, 30);
/// assert!(base.attention.is_none());
/// let dot = Seq2SeqConfig { attention: Some("dot".parse().unwrap()), ..base.clone() };
/// assert_eq!(dot.attention.unwrap().to_string(), "dot");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Seq2SeqConfig {
    /// Source vocabulary size.
    pub src_vocab: usize,
    /// Target vocabulary size.
    pub tgt_vocab: usize,
    /// LSTM or GRU, for both encoder and decoder.
    pub rnn: RnnKind,
    /// Embedding size (source and target).
    pub emb_dim: usize,
    /// Hidden size per direction of the encoder, and of the decoder.
    pub hidden_dim: usize,
    /// Layers of the encoder and of the decoder.
    pub num_layers: usize,
    /// Whether the encoder also reads the source backwards.
    pub bidirectional: bool,
    /// Dropout on embeddings, between layers and before the output layer.
    pub dropout: f32,
    /// The attention scorer, or `None` for the plain encoder–decoder.
    #[serde(with = "scorer_name")]
    pub attention: Option<Scorer>,
    /// Where attention sits (ignored without attention).
    pub placement: Placement,
    /// Size of the additive scorer's hidden layer and of multi-head attention's model dimension.
    pub attn_dim: usize,
    /// How weights are initialised.
    pub init: Init,
}

/// `Option<Scorer>` stored by name, so checkpoints stay readable across versions.
mod scorer_name {
    use lingo_attention::Scorer;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(scorer: &Option<Scorer>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&scorer.map(|k| k.to_string()).unwrap_or_default())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Scorer>, D::Error> {
        let name = String::deserialize(d)?;
        if name.is_empty() { Ok(None) } else { name.parse().map(Some).map_err(serde::de::Error::custom) }
    }
}

impl Seq2SeqConfig {
    /// The defaults for the given vocabulary sizes (see the type's docs).
    ///
    /// ```
    /// let c = lingo_nn::Seq2SeqConfig::new(10, 12);
    /// assert_eq!((c.emb_dim, c.hidden_dim, c.num_layers), (64, 64, 1));
    /// ```
    pub fn new(src_vocab: usize, tgt_vocab: usize) -> Seq2SeqConfig {
        Seq2SeqConfig {
            src_vocab,
            tgt_vocab,
            rnn: RnnKind::Lstm,
            emb_dim: 64,
            hidden_dim: 64,
            num_layers: 1,
            bidirectional: false,
            dropout: 0.0,
            attention: None,
            placement: Placement::Luong,
            attn_dim: 64,
            init: Init::default(),
        }
    }

    /// Features per source position in `enc_out`: `D·H`.
    fn enc_dim(&self) -> usize {
        self.hidden_dim * if self.bidirectional { 2 } else { 1 }
    }
}

/// What [`Seq2Seq::encode_source`] returns.
#[derive(Debug, Clone)]
pub struct Encoded {
    /// One vector per source token, `(batch, src_len, D·H)`.
    pub enc_out: Tensor,
    /// The decoder's initial state (after the bridge when bidirectional):
    /// all a model without attention knows about the source.
    pub state: RnnState,
    /// `true` at source padding, `(batch, src_len)`.
    pub src_pad_mask: Array2<bool>,
}

impl Encoded {
    /// The same encodings for the given batch rows, in that order (repeats
    /// allowed): how beam search makes one copy of each source per beam.
    ///
    /// ```
    /// # use lingo_nn::{Mode, Seq2Seq, Seq2SeqConfig};
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// # let model = Seq2Seq::new(Seq2SeqConfig::new(8, 8), &mut rng).unwrap();
    /// let src = ndarray::arr2(&[[2_usize, 5, 3]]);
    /// let enc = model.encode_source(&src, &[3], Mode::Eval).unwrap();
    /// let beams = enc.select_rows(&[0, 0, 0]).unwrap();
    /// assert_eq!(beams.enc_out.shape(), &[3, 3, 64]);
    /// ```
    pub fn select_rows(&self, rows: &[usize]) -> Result<Encoded> {
        Ok(Encoded {
            enc_out: self.enc_out.index_select(0, rows)?,
            state: self.state.select_rows(rows)?,
            src_pad_mask: self.src_pad_mask.select(Axis(0), rows),
        })
    }
}

/// What [`Seq2Seq::forward`] returns.
#[derive(Debug, Clone)]
pub struct Forward {
    /// Unnormalised scores over the target vocabulary, `(batch, tgt_len, tgt_vocab)`.
    pub logits: Tensor,
    /// Attention weights `(batch, tgt_len, src_len)`, `None` without attention.
    pub weights: Option<Tensor>,
    /// Each head's weights `(batch, heads, tgt_len, src_len)`; `multi_head` only.
    pub head_weights: Option<Tensor>,
}

/// What every decoder step reads from the source: with attention, the
/// keys prepared once per source (projected, for the scorers that project
/// them) and the padding mask; without attention, nothing.
#[derive(Debug, Clone)]
pub struct DecoderContext {
    prepared: Option<Prepared>,
}

impl DecoderContext {
    /// The same context for the given batch rows, in that order: how
    /// decoding drops the rows of sentences it has finished.
    ///
    /// ```
    /// # use lingo_nn::{Mode, Seq2Seq, Seq2SeqConfig};
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let config = Seq2SeqConfig { attention: Some("dot".parse().unwrap()), ..Seq2SeqConfig::new(8, 8) };
    /// let model = Seq2Seq::new(config, &mut rng).unwrap();
    /// let enc = model.encode_source(&ndarray::arr2(&[[2_usize, 4, 3], [2, 5, 3]]), &[3, 3], Mode::Eval).unwrap();
    /// let second = model.decoder_context(&enc).unwrap().select_rows(&[1]).unwrap();
    /// let state = enc.state.select_rows(&[1]).unwrap().into();
    /// let step = model.decode_step(&second, &state, &[lingo_data::SOS], Mode::Eval).unwrap();
    /// assert_eq!(step.logits.shape(), &[1, 8]);
    /// ```
    pub fn select_rows(&self, rows: &[usize]) -> Result<DecoderContext> {
        Ok(DecoderContext { prepared: self.prepared.as_ref().map(|p| p.select_rows(rows)).transpose()? })
    }
}

/// The weights of an attention call: their mean over heads and, for
/// `multi_head`, each head's (as [`AttentionOutput`]'s, without the context).
struct Attended {
    /// `(batch, tgt_len, src_len)`.
    weights: Tensor,
    /// `(batch, heads, tgt_len, src_len)`.
    head_weights: Option<Tensor>,
}

impl Attended {
    fn of(a: AttentionOutput) -> Attended {
        Attended { weights: a.weights, head_weights: a.head_weights }
    }

    /// One step's weights after another, along the target axis; `None` for no steps.
    fn cat(steps: Vec<Attended>) -> Result<Option<Attended>> {
        if steps.is_empty() {
            return Ok(None);
        }
        let weights: Vec<Tensor> = steps.iter().map(|a| a.weights.clone()).collect();
        let heads: Option<Vec<Tensor>> = steps.into_iter().map(|a| a.head_weights).collect();
        Ok(Some(Attended {
            weights: Tensor::cat(&weights, 1)?,
            head_weights: heads.map(|h| Tensor::cat(&h, 2)).transpose()?,
        }))
    }
}

/// What [`Seq2Seq::step_features`] returns: a [`Step`] before the output layer.
struct StepFeatures {
    /// What the output layer reads, `(batch, 1, H)`.
    features: Tensor,
    /// This step's attention, `(batch, 1, src_len)`.
    weights: Option<Attended>,
    /// The decoder state after the step.
    state: Seq2SeqState,
}

/// What one recurrent decoder step hands the next: the RNN's state, and
/// the target position the next step predicts (0 before the first), by
/// which a [`Gold`](Intervention::Gold) intervention finds its links.
///
/// ```
/// use lingo_nn::{Mode, RnnConfig, RnnKind, RnnState, Seq2SeqState};
/// let state = Seq2SeqState::from(RnnState::zeros(&RnnConfig::new(RnnKind::Gru, 3, 4), 2));
/// assert_eq!((state.position, state.rnn.h.shape()), (0, &[1, 2, 4][..]));
/// ```
#[derive(Debug, Clone)]
pub struct Seq2SeqState {
    /// The decoder RNN's `h` (and `c`).
    pub rnn: RnnState,
    /// The target position the next step predicts.
    pub position: usize,
}

impl From<RnnState> for Seq2SeqState {
    /// The state before the first step (position 0).
    fn from(rnn: RnnState) -> Seq2SeqState {
        Seq2SeqState { rnn, position: 0 }
    }
}

impl SelectRows for Seq2SeqState {
    fn select_rows(&self, rows: &[usize]) -> Result<Self> {
        Ok(Seq2SeqState { rnn: self.rnn.select_rows(rows)?, position: self.position })
    }
}

/// Here rather than beside `RnnState`: the layers know nothing of the
/// models built on them.
impl SelectRows for RnnState {
    fn select_rows(&self, rows: &[usize]) -> Result<Self> {
        RnnState::select_rows(self, rows)
    }
}

/// An encoder–decoder translation model; see the [module docs](self).
///
/// ```
/// use lingo_nn::{Mode, Seq2Seq, Seq2SeqConfig};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let config = Seq2SeqConfig { attention: Some("dot".parse().unwrap()), ..Seq2SeqConfig::new(20, 20) };
/// let model = Seq2Seq::new(config, &mut rng).unwrap();
/// let src = ndarray::arr2(&[[2_usize, 7, 9, 3], [2, 5, 3, 0]]);     // <sos> .. <eos>, padded
/// let tgt_in = ndarray::arr2(&[[2_usize, 11, 12], [2, 13, 0]]);
/// let out = model.forward(&src, &[4, 3], &tgt_in, &[3, 2], Mode::Eval).unwrap();
/// assert_eq!(out.logits.shape(), &[2, 3, 20]);
/// assert_eq!(out.weights.unwrap().shape(), &[2, 3, 4]);           // (batch, tgt_len, src_len)
/// ```
#[derive(Debug, Clone)]
pub struct Seq2Seq {
    config: Seq2SeqConfig,
    src_embedding: Embedding,
    encoder: Rnn,
    /// Bidirectional only: `[W_b for h, W_b for c]` mapping `2H → H`.
    bridge: Vec<Linear>,
    tgt_embedding: Embedding,
    decoder: Rnn,
    attention: Option<Attention>,
    /// Luong placement with attention only: `W_c`, `(H + D·H) → H`.
    combine: Option<Linear>,
    out: Linear,
    dropout: Dropout,
    /// What replaces the attention weights, if anything ([`EncoderDecoder::intervene`]).
    intervention: Option<Intervention>,
}

impl Seq2Seq {
    /// Builds and initialises a model from `rng`, after checking the
    /// configuration: sizes must be positive, and the scorer must fit the
    /// sizes (`dot` compares decoder states with encoder outputs directly, so
    /// it needs `D·H = H`, i.e. a unidirectional encoder).
    ///
    /// ```
    /// use lingo_nn::{Seq2Seq, Seq2SeqConfig};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let bad = Seq2SeqConfig { bidirectional: true, attention: Some("dot".parse().unwrap()), ..Seq2SeqConfig::new(9, 9) };
    /// let err = Seq2Seq::new(bad, &mut rng).err().unwrap().to_string();
    /// assert!(err.contains("general") || err.contains("additive"), "{err}");
    /// ```
    pub fn new(config: Seq2SeqConfig, mut rng: &mut impl RngCore) -> Result<Seq2Seq> {
        let init = config.init;
        Seq2Seq::build(config, &mut Weights::Fresh(init, &mut rng))
    }

    /// [`Seq2Seq::new`] with every weight drawn fresh or taken from saved ones.
    fn build(config: Seq2SeqConfig, weights: &mut Weights<'_>) -> Result<Seq2Seq> {
        let c = &config;
        if !(0.0..1.0).contains(&c.dropout) {
            return Err(invalid("dropout", format!("must be in [0, 1), got {}", c.dropout)));
        }
        let (h, enc_dim) = (c.hidden_dim, c.enc_dim());
        let src_embedding = Embedding::build("encoder.embedding", c.src_vocab, c.emb_dim, Some(PAD), weights)?;
        let rnn = |input, bidirectional| RnnConfig {
            num_layers: c.num_layers,
            bidirectional,
            dropout: c.dropout,
            ..RnnConfig::new(c.rnn, input, h)
        };
        let encoder = Rnn::build("encoder.rnn", rnn(c.emb_dim, c.bidirectional), weights)?;
        let mut bridge = Vec::new();
        if c.bidirectional {
            bridge.push(Linear::build("bridge.h", 2 * h, h, true, weights)?);
            if c.rnn == RnnKind::Lstm {
                bridge.push(Linear::build("bridge.c", 2 * h, h, true, weights)?);
            }
        }
        let tgt_embedding = Embedding::build("decoder.embedding", c.tgt_vocab, c.emb_dim, Some(PAD), weights)?;
        let bahdanau = c.attention.is_some() && c.placement == Placement::Bahdanau;
        let dec_input = c.emb_dim + if bahdanau { enc_dim } else { 0 };
        let decoder = Rnn::build("decoder.rnn", rnn(dec_input, false), weights)?;
        let attention = c
            .attention
            .map(|scorer| {
                weights.attention(
                    "attention",
                    &AttentionConfig { scorer, query_dim: h, key_dim: enc_dim, attn_dim: c.attn_dim },
                )
            })
            .transpose()?;
        let combine = (attention.is_some() && !bahdanau)
            .then(|| Linear::build("combine", h + enc_dim, h, false, weights))
            .transpose()?;
        let out = Linear::build("out", h, c.tgt_vocab, true, weights)?;
        let dropout = Dropout::new(c.dropout)?;
        Ok(Seq2Seq {
            config,
            src_embedding,
            encoder,
            bridge,
            tgt_embedding,
            decoder,
            attention,
            combine,
            out,
            dropout,
            intervention: None,
        })
    }

    /// Builds the model `config` describes straight from saved weights, with
    /// no random initialisation: every parameter must be in `params` with
    /// the shape the model needs, and `params` may hold nothing else (as
    /// [`StateDict::load_into`]). Errors name the first parameter that does
    /// not fit ([`Error::Param`](crate::Error::Param)), or what is wrong with the configuration.
    ///
    /// ```
    /// use lingo_nn::{Seq2Seq, Seq2SeqConfig, StateDict};
    /// use rand::SeedableRng;
    /// let config = Seq2SeqConfig { attention: Some("general".parse().unwrap()), ..Seq2SeqConfig::new(7, 9) };
    /// let trained = Seq2Seq::new(config.clone(), &mut rand::rngs::StdRng::seed_from_u64(3)).unwrap();
    /// let saved = StateDict::from_module(&trained).unwrap();
    /// let loaded = Seq2Seq::from_state_dict(&config, &saved).unwrap();
    /// assert_eq!(StateDict::from_module(&loaded).unwrap(), saved);
    ///
    /// let without_attention = Seq2SeqConfig { attention: None, ..config };
    /// let err = Seq2Seq::from_state_dict(&without_attention, &saved).err().unwrap();
    /// assert_eq!(err.to_string(), "parameter attention.W: not a parameter of the model");
    /// ```
    pub fn from_state_dict(config: &Seq2SeqConfig, params: &StateDict) -> Result<Seq2Seq> {
        from_saved(params, |weights| Seq2Seq::build(config.clone(), weights))
    }

    /// The configuration the model was built from.
    ///
    /// ```
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let model = lingo_nn::Seq2Seq::new(lingo_nn::Seq2SeqConfig::new(5, 6), &mut rng).unwrap();
    /// assert_eq!(model.config().tgt_vocab, 6);
    /// ```
    pub fn config(&self) -> &Seq2SeqConfig {
        &self.config
    }

    /// Reads the source: `src (batch, src_len)` token ids, `src_lens[b]`
    /// valid tokens per row. Returns `(enc_out, state, src_pad_mask)` as an
    /// [`Encoded`]; the encoder ignores padding (padded steps leave the
    /// state alone, in both directions).
    ///
    /// ```
    /// use lingo_nn::{Mode, Seq2Seq, Seq2SeqConfig};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let plain = Seq2Seq::new(Seq2SeqConfig::new(30, 30), &mut rng).unwrap();   // attention off
    /// let src = ndarray::Array2::from_elem((1, 7), 5_usize);                   // one 7-token sentence
    /// let enc = plain.encode_source(&src, &[7], Mode::Eval).unwrap();
    /// assert_eq!(enc.enc_out.shape(), &[1, 7, 64]);   // one 64-dim vector per source token...
    /// assert_eq!(enc.state.h.shape(), &[1, 1, 64]);   // ...and ONE vector for the whole sentence
    /// ```
    pub fn encode_source(&self, src: &Array2<usize>, src_lens: &[usize], mut mode: Mode<'_>) -> Result<Encoded> {
        let dropped = self.dropped_embeddings(&self.src_embedding, src, mode.reborrow())?;
        self.encode(src, rnn_input(&self.src_embedding, src, dropped.as_ref(), None), src_lens, mode)
    }

    /// The encoder reading `input`, the source `src` as tokens or as embeddings, and the bridge.
    fn encode(&self, src: &Array2<usize>, input: SeqInput<'_>, src_lens: &[usize], mode: Mode<'_>) -> Result<Encoded> {
        let enc = self.encoder.forward(input, src_lens, None, mode)?;
        let state = self.bridge_state(enc.state)?;
        let src_pad_mask = Array2::from_shape_fn(src.raw_dim(), |(b, s)| s >= src_lens[b]);
        Ok(Encoded { enc_out: enc.output, state, src_pad_mask })
    }

    /// The decoder's initial state from the encoder's final one. Unidirectional:
    /// unchanged. Bidirectional: per layer `s = tanh(W_b [fwd; bwd])`, for `h`
    /// and (LSTM) `c`.
    fn bridge_state(&self, state: RnnState) -> Result<RnnState> {
        if self.bridge.is_empty() {
            return Ok(state);
        }
        let (layers, h) = (self.config.num_layers, self.config.hidden_dim);
        let bridge = |s: &Tensor, w: &Linear| -> Result<Tensor> {
            // (L·2, batch, H) → (L, 2, batch, H) → (L, batch, 2H): [fwd; bwd] per layer
            let batch = s.shape()[1];
            let pairs = s.reshape(&[layers, 2, batch, h])?.permute(&[0, 2, 1, 3])?.reshape(&[layers, batch, 2 * h])?;
            Ok(w.forward(&pairs)?.tanh())
        };
        let h_0 = bridge(&state.h, &self.bridge[0])?;
        let c_0 = state.c.as_ref().map(|c| bridge(c, &self.bridge[1])).transpose()?;
        Ok(RnnState { h: h_0, c: c_0 })
    }

    /// Teacher-forced scores: `tgt_in (batch, tgt_len)` is the target shifted
    /// right (`<sos> y_1 .. y_n`), `tgt_lens[b]` its valid length. Returns the
    /// logits for `y_1 .. y_n <eos>` and, with attention, the weights.
    ///
    /// ```
    /// use lingo_nn::{Mode, Placement, Seq2Seq, Seq2SeqConfig};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let config = Seq2SeqConfig { attention: Some("additive".parse().unwrap()), placement: Placement::Bahdanau, ..Seq2SeqConfig::new(9, 9) };
    /// let model = Seq2Seq::new(config, &mut rng).unwrap();
    /// let (src, tgt_in) = (ndarray::arr2(&[[2_usize, 4, 5, 6, 3]]), ndarray::arr2(&[[2_usize, 6, 5, 4]]));
    /// let out = model.forward(&src, &[5], &tgt_in, &[4], Mode::Eval).unwrap();
    /// assert_eq!(out.logits.shape(), &[1, 4, 9]);         // (batch, tgt_len, tgt_vocab)
    /// assert_eq!(out.weights.unwrap().shape(), &[1, 4, 5]); // (batch, tgt_len, src_len)
    /// ```
    pub fn forward(
        &self,
        src: &Array2<usize>,
        src_lens: &[usize],
        tgt_in: &Array2<usize>,
        tgt_lens: &[usize],
        mode: Mode<'_>,
    ) -> Result<Forward> {
        let (features, attended) = self.output_features(src, src_lens, tgt_in, tgt_lens, mode)?;
        let (weights, head_weights) = attended.map_or((None, None), |a| (Some(a.weights), a.head_weights));
        Ok(Forward { logits: self.out.forward(&features)?, weights, head_weights })
    }

    /// What the output layer reads under teacher forcing, `(batch, tgt_len, H)`
    /// (dropped out when training), and the attention weights.
    fn output_features(
        &self,
        src: &Array2<usize>,
        src_lens: &[usize],
        tgt_in: &Array2<usize>,
        tgt_lens: &[usize],
        mut mode: Mode<'_>,
    ) -> Result<(Tensor, Option<Attended>)> {
        let encoded = self.encode_source(src, src_lens, mode.reborrow())?;
        self.decoded_features(encoded, tgt_in, tgt_lens, mode)
    }

    /// [`output_features`](Self::output_features) from the encoded source.
    fn decoded_features(
        &self,
        encoded: Encoded,
        tgt_in: &Array2<usize>,
        tgt_lens: &[usize],
        mut mode: Mode<'_>,
    ) -> Result<(Tensor, Option<Attended>)> {
        let (features, weights) = match (&self.attention, self.config.placement) {
            (Some(_), Placement::Bahdanau) => self.features_stepwise(encoded, tgt_in, mode.reborrow())?,
            _ => self.features_whole(encoded, tgt_in, tgt_lens, mode.reborrow())?,
        };
        Ok((self.dropout.forward(&features, mode)?, weights))
    }

    /// No attention, or Luong's placement: the decoder RNN over the whole
    /// target at once, then attention for all steps in one call.
    fn features_whole(
        &self,
        encoded: Encoded,
        tgt_in: &Array2<usize>,
        tgt_lens: &[usize],
        mut mode: Mode<'_>,
    ) -> Result<(Tensor, Option<Attended>)> {
        let dec_out = self.decoder_outputs(&encoded, tgt_in, tgt_lens, mode.reborrow())?;
        let (features, weights) = match &self.attention {
            None => (dec_out, None), // enc_out is not read: the bottleneck
            Some(attention) => {
                let source = attention.prepare(&encoded.enc_out, &encoded.enc_out, Some(&encoded.src_pad_mask))?;
                let a = source.intervene(self.intervention.clone()).attend(&dec_out, false)?;
                (self.combined(&dec_out, &a.context)?, Some(Attended::of(a)))
            }
        };
        Ok((features, weights))
    }

    /// The decoder RNN over the whole target at once from the encoder's
    /// state, `(batch, tgt_len, H)`: Luong's `s_t` (it does not read the context).
    fn decoder_outputs(
        &self,
        encoded: &Encoded,
        tgt_in: &Array2<usize>,
        tgt_lens: &[usize],
        mut mode: Mode<'_>,
    ) -> Result<Tensor> {
        let dropped = self.dropped_embeddings(&self.tgt_embedding, tgt_in, mode.reborrow())?;
        let input = rnn_input(&self.tgt_embedding, tgt_in, dropped.as_ref(), None);
        Ok(self.decoder.forward(input, tgt_lens, Some(&encoded.state), mode)?.output)
    }

    /// One score of `example`'s attention worked through
    /// ([`Attention::explain`]): the decoder state the row's step attends
    /// with (`s_t` in Luong's placement, `s_{t-1}` in Bahdanau's) as the
    /// query, the encoder's outputs as keys and values. The model's own
    /// weights, whatever intervention it carries.
    ///
    /// # Errors
    /// A model without attention, a cell other than cross-attention's one
    /// layer, or a row or column outside the example's map.
    ///
    /// ```
    /// use lingo_nn::{AttentionKind, Cell, EncoderDecoder, Seq2Seq, Seq2SeqConfig};
    /// use rand::SeedableRng;
    /// let config = Seq2SeqConfig { attention: Some("additive".parse().unwrap()), ..Seq2SeqConfig::new(9, 9) };
    /// let model = Seq2Seq::new(config, &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let example = lingo_data::Example { src: vec![2, 5, 6, 3], tgt: vec![2, 7, 3] };
    /// let steps = model.explain(&example, Cell { kind: AttentionKind::Cross, layer: 0, row: 1, col: 2 }).unwrap();
    /// let batch = lingo_data::Batch::from_examples(&[example]).unwrap();
    /// let map = model.attention(&batch).unwrap().unwrap(); // (batch, tgt_len, src_len)
    /// assert!((steps.weights[2] - map[[0, 1, 2]]).abs() < 1e-6);
    /// ```
    pub fn explain(&self, example: &Example, cell: Cell) -> Result<ScoreSteps> {
        let attention =
            self.attention.as_ref().ok_or_else(|| invalid("kind", "a model without attention has no scores"))?;
        if cell.kind != AttentionKind::Cross {
            return Err(invalid("kind", format!("a recurrent model has cross-attention only, not {}", cell.kind)));
        }
        if cell.layer != 0 {
            return Err(invalid(
                "layer",
                format!("a recurrent model has one attention layer, not layer {}", cell.layer + 1),
            ));
        }
        let batch = Batch::from_examples(std::slice::from_ref(example))?;
        let own = self.intervene(None);
        let (enc_out, queries) = lingo_tensor::no_grad(|| {
            let encoded = own.encode_source(&batch.src, &batch.src_lens, Mode::Eval)?;
            let queries = match self.config.placement {
                Placement::Luong => own.decoder_outputs(&encoded, &batch.tgt_in, &batch.tgt_lens, Mode::Eval)?,
                Placement::Bahdanau => {
                    // s_{t-1}: the initial state, then each step's output but the last.
                    let before = own.top_state(&encoded.state)?;
                    let (outputs, _) =
                        own.decoded_features(encoded.clone(), &batch.tgt_in, &batch.tgt_lens, Mode::Eval)?;
                    let steps = outputs.shape()[1];
                    Tensor::cat(&[before, outputs.narrow(1, 0, steps - 1)?], 1)?
                }
            };
            Ok::<_, crate::Error>((encoded.enc_out, queries))
        })?;
        let (enc_out, queries) = (only_row(&enc_out), only_row(&queries));
        check_row(&cell, queries.nrows())?;
        Ok(attention.explain(queries.row(cell.row), enc_out.view(), enc_out.view(), None, cell.col)?)
    }

    /// Luong's attentional state `tanh(W_c [s; context])`, over the last axis.
    fn combined(&self, dec_out: &Tensor, context: &Tensor) -> Result<Tensor> {
        let combine =
            self.combine.as_ref().ok_or_else(|| invalid("combine", "only Luong attention has a combine layer"))?;
        Ok(combine.forward(&Tensor::cat(&[dec_out.clone(), context.clone()], dec_out.ndim() - 1)?)?.tanh())
    }

    /// Bahdanau's placement: the decoder steps of [`decode_step`](Self::decode_step)
    /// one target position at a time; the output layer then runs once over
    /// all of them (it does not feed back, so it need not run per step).
    ///
    /// The case study's model (additive scorer, one GRU layer) runs the same
    /// recurrence as one fused op instead,
    /// [`Prepared::gru_recurrence`](lingo_attention::Prepared::gru_recurrence):
    /// the same numbers up to rounding, without the graph's per-step bookkeeping.
    fn features_stepwise(
        &self,
        encoded: Encoded,
        tgt_in: &Array2<usize>,
        mut mode: Mode<'_>,
    ) -> Result<(Tensor, Option<Attended>)> {
        let ctx = self.decoder_context(&encoded)?;
        let fused = self.config.attention == Some(Scorer::Additive)
            && self.config.rnn == RnnKind::Gru
            && self.config.num_layers == 1
            && self.intervention.is_none();
        let (features, weights) = match &ctx.prepared {
            Some(prepared) if fused => {
                // x_t = embed(y_{t-1}), dropped out when training: (batch, tgt_len, E)
                let emb = self.tgt_embedding.forward(tgt_in.view())?;
                let emb = self.dropout.forward(&emb, mode.reborrow())?;
                let h0 = self.top_state(&encoded.state)?; // (batch, 1, H)
                let h0 = h0.reshape(&[h0.shape()[0], h0.shape()[2]])?;
                let out = prepared.gru_recurrence(&emb, &h0, self.decoder.weights(0, false)?)?;
                (out.output, Some(Attended { weights: out.weights, head_weights: None }))
            }
            _ => {
                let mut state = Seq2SeqState::from(encoded.state);
                let (mut features, mut weights) = (Vec::new(), Vec::new());
                for column in tgt_in.columns() {
                    let prev: Vec<usize> = column.to_vec();
                    let step = self.step_features(&ctx, &state, &prev, mode.reborrow())?;
                    features.push(step.features); // (batch, 1, H)
                    weights.extend(step.weights);
                    state = step.state;
                }
                (Tensor::cat(&features, 1)?, Attended::cat(weights)?)
            }
        };
        Ok((features, weights))
    }

    /// Prepares what every decoder step reads from the source (for
    /// attention: keys projected once, not once per step).
    ///
    /// ```
    /// # use lingo_nn::{Mode, Seq2Seq, Seq2SeqConfig};
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// # let model = Seq2Seq::new(Seq2SeqConfig::new(8, 8), &mut rng).unwrap();
    /// let enc = model.encode_source(&ndarray::arr2(&[[2_usize, 4, 3]]), &[3], Mode::Eval).unwrap();
    /// let ctx = model.decoder_context(&enc).unwrap();
    /// let step = model.decode_step(&ctx, &enc.state.clone().into(), &[lingo_data::SOS], Mode::Eval).unwrap();
    /// assert_eq!(step.logits.shape(), &[1, 8]);
    /// ```
    pub fn decoder_context(&self, encoded: &Encoded) -> Result<DecoderContext> {
        let prepared = self
            .attention
            .as_ref()
            .map(|a| a.prepare(&encoded.enc_out, &encoded.enc_out, Some(&encoded.src_pad_mask)))
            .transpose()?
            .map(|p| p.intervene(self.intervention.clone()));
        Ok(DecoderContext { prepared })
    }

    /// One decoder step for a batch: from the previous tokens `prev (batch)`
    /// and state, the next-token scores, this step's attention and the new
    /// state. Greedy and beam search decode with it; Bahdanau's placement
    /// also trains with it.
    ///
    /// ```
    /// use lingo_nn::{Mode, Seq2Seq, Seq2SeqConfig};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let config = Seq2SeqConfig { attention: Some("dot".parse().unwrap()), ..Seq2SeqConfig::new(8, 8) };
    /// let model = Seq2Seq::new(config, &mut rng).unwrap();
    /// let enc = model.encode_source(&ndarray::arr2(&[[2_usize, 4, 3], [2, 5, 3]]), &[3, 3], Mode::Eval).unwrap();
    /// let ctx = model.decoder_context(&enc).unwrap();
    /// let first = model.decode_step(&ctx, &enc.state.clone().into(), &[lingo_data::SOS; 2], Mode::Eval).unwrap();
    /// let second = model.decode_step(&ctx, &first.state, &[6, 7], Mode::Eval).unwrap();
    /// assert_eq!(second.logits.shape(), &[2, 8]);            // (batch, tgt_vocab)
    /// assert_eq!(second.weights.unwrap().shape(), &[2, 3]);  // (batch, src_len)
    /// ```
    pub fn decode_step(
        &self,
        ctx: &DecoderContext,
        state: &Seq2SeqState,
        prev: &[usize],
        mut mode: Mode<'_>,
    ) -> Result<Step<Seq2SeqState>> {
        let step = self.step_features(ctx, state, prev, mode.reborrow())?;
        let logits = self.out.forward(&self.dropout.forward(&step.features, mode)?)?;
        let squeeze = |t: Tensor| -> Result<Tensor> {
            let shape = [t.shape()[0], t.shape()[2]];
            Ok(t.reshape(&shape)?)
        };
        let weights = step.weights.map(|a| squeeze(a.weights)).transpose()?;
        Ok(Step { logits: squeeze(logits)?, weights, state: step.state })
    }

    /// One decoder step up to the output layer: what the output layer reads
    /// `(batch, 1, H)`, this step's weights `(batch, 1, src_len)` and the new state.
    fn step_features(
        &self,
        ctx: &DecoderContext,
        state: &Seq2SeqState,
        prev: &[usize],
        mut mode: Mode<'_>,
    ) -> Result<StepFeatures> {
        let Seq2SeqState { rnn: state, position } = state;
        let batch = prev.len();
        let ids = Array2::from_shape_vec((batch, 1), prev.to_vec()).expect("batch × 1 ids");
        let ones = vec![1; batch];
        let (features, weights, state) = match (&ctx.prepared, self.config.placement) {
            (prepared, Placement::Luong) | (prepared @ None, Placement::Bahdanau) => {
                // No attention, or Luong's: the RNN steps on the token first.
                let dropped = self.dropped_embeddings(&self.tgt_embedding, &ids, mode.reborrow())?;
                let out = self.decoder.forward(
                    rnn_input(&self.tgt_embedding, &ids, dropped.as_ref(), None),
                    &ones,
                    Some(state),
                    mode.reborrow(),
                )?;
                match prepared {
                    None => (out.output, None, out.state),
                    Some(prepared) => {
                        let a = prepared.attend_at(&out.output, false, *position)?;
                        (self.combined(&out.output, &a.context)?, Some(Attended::of(a)), out.state)
                    }
                }
            }
            (Some(prepared), Placement::Bahdanau) => {
                let a = prepared.attend_at(&self.top_state(state)?, false, *position)?; // query: s_{t-1}
                // The RNN reads [embed(y_{t-1}); context_t] (batch, 1, E + D·H): the
                // context as features after the tokens, or concatenated to the
                // embeddings when those are dropped out.
                let dropped = self.dropped_embeddings(&self.tgt_embedding, &ids, mode.reborrow())?;
                let dense = dropped.map(|emb| Tensor::cat(&[emb, a.context.clone()], 2)).transpose()?;
                let input = rnn_input(&self.tgt_embedding, &ids, dense.as_ref(), Some(&a.context));
                let out = self.decoder.forward(input, &ones, Some(state), mode.reborrow())?;
                (out.output, Some(Attended::of(a)), out.state)
            }
        };
        Ok(StepFeatures { features, weights, state: Seq2SeqState { rnn: state, position: position + 1 } })
    }

    /// Embeddings of `ids` with dropout applied, when dropout is active
    /// (training with `p > 0`); `None` otherwise, and then the recurrent op
    /// reads the tokens itself ([`rnn_input`]).
    fn dropped_embeddings(&self, embedding: &Embedding, ids: &Array2<usize>, mode: Mode<'_>) -> Result<Option<Tensor>> {
        if !(mode.is_training() && self.dropout.p() > 0.0) {
            return Ok(None);
        }
        Ok(Some(self.dropout.forward(&embedding.forward(ids.view())?, mode)?))
    }

    /// The top decoder layer's hidden state as a one-step query `(batch, 1, H)`.
    fn top_state(&self, state: &RnnState) -> Result<Tensor> {
        let (layers, batch, h) = (state.h.shape()[0], state.h.shape()[1], state.h.shape()[2]);
        Ok(state.h.narrow(0, layers - 1, 1)?.reshape(&[batch, 1, h])?)
    }

    /// Mean cross-entropy of a batch's `tgt_out` under teacher forcing,
    /// padding ignored, with label smoothing `epsilon`.
    ///
    /// ```
    /// use lingo_data::Batch;
    /// use lingo_nn::{Mode, Seq2Seq, Seq2SeqConfig};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let model = Seq2Seq::new(Seq2SeqConfig::new(10, 10), &mut rng).unwrap();
    /// let batch = Batch::from_examples(&[lingo_data::Example { src: vec![2, 5, 3], tgt: vec![2, 6, 7, 3] }]).unwrap();
    /// let loss = model.loss(&batch, 0.0, Mode::Eval).unwrap().item().unwrap();
    /// assert!((loss - 10_f32.ln()).abs() < 0.5);   // near chance before training
    /// ```
    pub fn loss(&self, batch: &Batch, label_smoothing: f32, mode: Mode<'_>) -> Result<Tensor> {
        Ok(self.loss_and_weights(batch, label_smoothing, mode)?.0)
    }

    /// [`loss`](Self::loss) and the attention's weights of the same pass
    /// (the mean over heads for `multi_head`; `None` without attention).
    fn loss_and_weights(
        &self,
        batch: &Batch,
        label_smoothing: f32,
        mode: Mode<'_>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let (features, attended) =
            self.output_features(&batch.src, &batch.src_lens, &batch.tgt_in, &batch.tgt_lens, mode)?;
        let out = (self.out.weight().tensor(), self.out.bias().map(Param::tensor));
        Ok((output_loss(&features, out, batch, label_smoothing)?, attended.map(|a| a.weights)))
    }
}

/// What a recurrent stack reads for token `ids`, each followed by its
/// `features` if any: the `dense` input when the caller built one (the
/// dropped-out embeddings, with the features after them), else the tokens
/// and their table, so the fused op can use its product table
/// (`embed(x)·W_ihᵀ = (E·W_ihᵀ)[x]`, see [`lingo_tensor::fused::SeqInput`]) instead
/// of embedding, concatenating and projecting.
fn rnn_input<'t>(
    embedding: &'t Embedding,
    ids: &'t Array2<usize>,
    dense: Option<&'t Tensor>,
    features: Option<&'t Tensor>,
) -> SeqInput<'t> {
    match dense {
        Some(x) => SeqInput::Dense(x),
        None => {
            SeqInput::Tokens { table: embedding.weight().tensor(), ids, padding_idx: embedding.padding_idx(), features }
        }
    }
}

lingo_tensor::module!(Seq2Seq { src_embedding, encoder, bridge, tgt_embedding, decoder, attention, combine, out });

impl Forward {
    /// The attention weights as a plain `(batch, tgt_len, src_len)` array,
    /// the form viz and the metrics take (`None` without attention).
    ///
    /// ```
    /// # use lingo_nn::{Mode, Seq2Seq, Seq2SeqConfig};
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let config = Seq2SeqConfig { attention: Some("additive".parse().unwrap()), ..Seq2SeqConfig::new(9, 9) };
    /// let model = Seq2Seq::new(config, &mut rng).unwrap();
    /// let src = ndarray::arr2(&[[2_usize, 4, 5, 3]]);
    /// let out = model.forward(&src, &[4], &ndarray::arr2(&[[2_usize, 6]]), &[2], Mode::Eval).unwrap();
    /// let weights = out.weights_array().unwrap();
    /// assert_eq!(weights.dim(), (1, 2, 4));
    /// assert!((weights.sum() - 2.0).abs() < 1e-5);   // each row is a distribution
    /// ```
    pub fn weights_array(&self) -> Option<Array3<f32>> {
        self.weights.as_ref().map(|w| w.data().clone().into_dimensionality().expect("weights are 3-D"))
    }
}

impl ModelConfig for Seq2SeqConfig {
    type Model = Seq2Seq;

    fn vocab_sizes(&self) -> (usize, usize) {
        (self.src_vocab, self.tgt_vocab)
    }

    fn differences(&self, ours: &Self) -> Vec<String> {
        field_differences!(self, ours; src_vocab, tgt_vocab, rnn, emb_dim, hidden_dim, num_layers, bidirectional,
            dropout, attention, placement, attn_dim, init)
    }
}

impl SelectRows for DecoderContext {
    fn select_rows(&self, rows: &[usize]) -> Result<Self> {
        DecoderContext::select_rows(self, rows)
    }
}

impl EncoderDecoder for Seq2Seq {
    type Config = Seq2SeqConfig;
    type Context = DecoderContext;
    type State = Seq2SeqState;

    fn config(&self) -> Seq2SeqConfig {
        Seq2Seq::config(self).clone()
    }

    fn from_state_dict(config: &Seq2SeqConfig, params: &StateDict) -> Result<Seq2Seq> {
        Seq2Seq::from_state_dict(config, params)
    }

    fn loss(&self, batch: &Batch, label_smoothing: f32, mode: Mode<'_>) -> Result<Tensor> {
        Seq2Seq::loss(self, batch, label_smoothing, mode)
    }

    /// The attention's weights (the mean over heads for `multi_head`); `head` is not read.
    fn loss_and_attention(
        &self,
        batch: &Batch,
        label_smoothing: f32,
        _head: usize,
        mode: Mode<'_>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        self.loss_and_weights(batch, label_smoothing, mode)
    }

    fn attention(&self, batch: &Batch) -> Result<Option<Array3<f32>>> {
        let out = lingo_tensor::no_grad(|| {
            self.forward(&batch.src, &batch.src_lens, &batch.tgt_in, &batch.tgt_lens, Mode::Eval)
        })?;
        Ok(out.weights_array())
    }

    fn head_attention(&self, batch: &Batch) -> Result<Option<Array5<f32>>> {
        let out = lingo_tensor::no_grad(|| {
            self.forward(&batch.src, &batch.src_lens, &batch.tgt_in, &batch.tgt_lens, Mode::Eval)
        })?;
        Ok(match (out.head_weights, out.weights) {
            // (batch, heads, tgt_len, src_len) → (1, heads, batch, tgt_len, src_len)
            (Some(heads), _) => {
                let heads = heads.data().clone().into_dimensionality::<Ix4>().expect("4-D");
                Some(heads.permuted_axes([1, 0, 2, 3]).insert_axis(Axis(0)).as_standard_layout().into_owned())
            }
            // (batch, tgt_len, src_len) → (1, 1, batch, tgt_len, src_len)
            (None, Some(w)) => {
                let w = w.data().clone().into_dimensionality::<Ix3>().expect("3-D");
                Some(w.insert_axis(Axis(0)).insert_axis(Axis(0)))
            }
            (None, None) => None,
        })
    }

    fn start(&self, src: &Array2<usize>, src_lens: &[usize], copies: usize) -> Result<(DecoderContext, Seq2SeqState)> {
        let mut encoded = self.encode_source(src, src_lens, Mode::Eval)?;
        let rows = copies_of(src.nrows(), copies);
        if copies > 1 {
            // Copied before the keys are prepared, as beam search always did,
            // so that its outputs keep their bits.
            encoded = encoded.select_rows(&rows)?;
        }
        let mut ctx = self.decoder_context(&encoded)?;
        // The intervention's rows are the sources': copy them as the encodings were.
        ctx.prepared = ctx.prepared.map(|p| p.intervene(self.intervention.as_ref().map(|i| i.select_rows(&rows))));
        Ok((ctx, encoded.state.into()))
    }

    fn step(&self, ctx: &DecoderContext, state: &Seq2SeqState, prev: &[usize]) -> Result<Step<Seq2SeqState>> {
        self.decode_step(ctx, state, prev, Mode::Eval)
    }

    /// The encoder reads the embeddings as a dense input here, not through
    /// its product table, so the scores may differ from [`Seq2Seq::forward`]'s in the last bits.
    fn logits_with_source(&self, batch: &Batch, source: impl FnOnce(Tensor) -> Result<Tensor>) -> Result<Tensor> {
        let embedded = source(self.src_embedding.forward(batch.src.view())?)?;
        let encoded = self.encode(&batch.src, SeqInput::Dense(&embedded), &batch.src_lens, Mode::Eval)?;
        let (features, _) = self.decoded_features(encoded, &batch.tgt_in, &batch.tgt_lens, Mode::Eval)?;
        self.out.forward(&features)
    }

    fn intervene(&self, intervention: Option<Intervention>) -> Seq2Seq {
        Seq2Seq { intervention, ..self.clone() }
    }
}
