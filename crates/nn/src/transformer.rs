//! The Transformer (Vaswani et al., 2017): attention without recurrence,
//! built from the same dot-product kernel as Luong's attention.
//!
//! # The model
//!
//! ```text
//! encoder:  x = dropout(embed(src)·√d + PE)                          (batch, src_len, d)
//!           per layer:  x = block(x, self_attn(x, x, src_pad_mask))
//!                       x = block(x, ff(x))
//!           enc_out = norm(x)
//! decoder:  y = dropout(embed(tgt_in)·√d + PE)                       (batch, tgt_len, d)
//!           per layer:  y = block(y, self_attn(y, y, tgt_pad_mask, causal))
//!                       y = block(y, cross_attn(y, enc_out, src_pad_mask))
//!                       y = block(y, ff(y))
//!           logits = norm(y)·W_outᵀ + b_out                          (batch, tgt_len, tgt_vocab)
//!
//! ff(x) = W_2 · dropout(act(W_1 x + b_1)) + b_2                     act: ReLU or GELU
//! post-norm block(x, f) = norm(x + dropout(f(x)))                    (the paper's)
//! pre-norm  block(x, f) = x + dropout(f(norm(x)))                    (trains deeper stacks without warm-up tricks)
//! ```
//!
//! Each `self_attn`, `cross_attn` is a [`MultiheadAttention`]: the scaled
//! dot-product attention of [`lingo_attention::dot_product_attention`], in
//! heads, on learned projections. Cross-attention is exactly Luong's
//! attention of the recurrent model, with the decoder's layer output as the
//! query; self-attention points the same operation at one sequence.
//!
//! # Names and layouts
//!
//! Parameters carry the names and shapes of PyTorch's `nn.Transformer`
//! (`encoder.layers.0.self_attn.in_proj_weight`, `decoder.layers.1.norm3.bias`,
//! `encoder.norm.weight`, ...), so weights map one to one. Around it:
//! `encoder.embedding.weight`, `decoder.embedding.weight`, learned positions
//! as `encoder.positions.weight` and `decoder.positions.weight`, and the
//! output layer `out.weight` and `out.bias`. Tying the output layer to the
//! target embedding drops `out.weight` (the logits use `decoder.embedding.weight`);
//! tying the source embedding too (a joint vocabulary) drops
//! `encoder.embedding.weight`. Like `nn.Transformer`, both stacks end in a
//! layer norm (`encoder.norm`, `decoder.norm`) in either placement.
//!
//! # Decoding with a cache
//!
//! In a decoder step only the new position's query is new: the keys and
//! values of earlier positions do not change (the causal mask kept them
//! from seeing later ones), so [`Transformer::decode_step`] keeps them per
//! layer in a [`DecoderState`] and appends one row a step, and the
//! cross-attention keys and values of the source are projected once, in
//! [`Transformer::decoder_context`].

use lingo_attention::{Intervention, ScoreSteps};
use lingo_data::{Batch, Example, PAD};
use lingo_tensor::{Param, Tensor};
use ndarray::{Array, Array2, Array4, Array5, Axis, Dimension, Ix4, RemoveAxis};
use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::error::{Result, config as invalid};
use crate::init::{Init, Weights};
use crate::inspect::{AttentionKind, Cell, check_row, only_row};
use crate::layers::{
    Dropout, Embedding, HeadsOutput, LayerNorm, Linear, Mode, MultiheadAttention, PositionKind, Positions,
};
use crate::model::{
    EncoderDecoder, ModelConfig, SelectRows, Step, copies_of, field_differences, from_saved, output_loss,
};
use crate::state_dict::StateDict;

/// Where each block's layer norm sits (PyTorch's `norm_first`).
///
/// ```
/// assert_eq!(lingo_nn::NormPosition::default(), lingo_nn::NormPosition::Post);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum NormPosition {
    /// `norm(x + dropout(f(x)))`, the paper's (`norm_first=False`).
    #[default]
    #[cfg_attr(feature = "clap", value(help = "After each residual sum, as in Vaswani et al. (2017)"))]
    Post,
    /// `x + dropout(f(norm(x)))` (`norm_first=True`).
    #[cfg_attr(
        feature = "clap",
        value(help = "Before each block, inside the residual: trains at higher learning rates")
    )]
    Pre,
}

/// The feed-forward block's nonlinearity.
///
/// ```
/// assert_eq!(lingo_nn::Activation::default(), lingo_nn::Activation::Relu);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Activation {
    /// `max(x, 0)`, the paper's and PyTorch's default.
    #[default]
    #[cfg_attr(feature = "clap", value(help = "max(x, 0)"))]
    Relu,
    /// `x·Φ(x)`, [`Tensor::gelu`] (`activation="gelu"`).
    #[cfg_attr(feature = "clap", value(help = "x·Φ(x)"))]
    Gelu,
    /// GELU's tanh form, [`Tensor::gelu_tanh`].
    #[cfg_attr(feature = "clap", value(help = "GELU's tanh approximation"))]
    GeluTanh,
}

impl Activation {
    fn apply(self, x: &Tensor) -> Tensor {
        match self {
            Activation::Relu => x.relu(),
            Activation::Gelu => x.gelu(),
            Activation::GeluTanh => x.gelu_tanh(),
        }
    }
}

/// Everything that shapes a [`Transformer`]; stored in checkpoints.
///
/// The defaults ([`TransformerConfig::new`]) are the ablation's size:
/// `d = 64`, 2 + 2 layers, 4 heads, feed-forward 256, dropout 0.1,
/// sinusoidal positions, post-norm, ReLU, nothing tied.
///
/// ```
/// let c = lingo_nn::TransformerConfig::new(30, 40);
/// assert_eq!((c.d_model, c.heads, c.encoder_layers, c.decoder_layers, c.ff_dim), (64, 4, 2, 2, 256));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransformerConfig {
    /// Source vocabulary size.
    pub src_vocab: usize,
    /// Target vocabulary size.
    pub tgt_vocab: usize,
    /// Model dimension `d`: embeddings, attention and every layer's output.
    pub d_model: usize,
    /// Attention heads per layer; must divide `d_model`.
    pub heads: usize,
    /// Encoder layers.
    pub encoder_layers: usize,
    /// Decoder layers.
    pub decoder_layers: usize,
    /// Hidden size of the feed-forward blocks.
    pub ff_dim: usize,
    /// Dropout on embeddings, block outputs and the feed-forward hidden layer.
    pub dropout: f32,
    /// Dropout on the attention weights.
    pub attention_dropout: f32,
    /// The feed-forward nonlinearity.
    pub activation: Activation,
    /// Post-norm or pre-norm blocks.
    pub norm: NormPosition,
    /// Sinusoidal or learned positions.
    pub positions: PositionKind,
    /// The longest sequence the positions cover.
    pub max_len: usize,
    /// Whether the output layer reuses the target embedding as its weight.
    pub tie_output: bool,
    /// Whether the source reuses the target embedding (needs one joint vocabulary).
    pub tie_source: bool,
    /// The layer norms' `ε`.
    pub layer_norm_eps: f32,
    /// How weights are initialised.
    pub init: Init,
}

impl TransformerConfig {
    /// The defaults for the given vocabulary sizes (see the type's docs).
    ///
    /// ```
    /// let c = lingo_nn::TransformerConfig::new(10, 12);
    /// assert_eq!((c.src_vocab, c.tgt_vocab, c.max_len), (10, 12, 256));
    /// ```
    pub fn new(src_vocab: usize, tgt_vocab: usize) -> TransformerConfig {
        TransformerConfig {
            src_vocab,
            tgt_vocab,
            d_model: 64,
            heads: 4,
            encoder_layers: 2,
            decoder_layers: 2,
            ff_dim: 256,
            dropout: 0.1,
            attention_dropout: 0.1,
            activation: Activation::Relu,
            norm: NormPosition::Post,
            positions: PositionKind::Sinusoidal,
            max_len: 256,
            tie_output: false,
            tie_source: false,
            layer_norm_eps: 1e-5,
            init: Init::default(),
        }
    }

    fn validate(&self) -> Result<()> {
        for (what, p) in [("dropout", self.dropout), ("attention_dropout", self.attention_dropout)] {
            if !(0.0..1.0).contains(&p) {
                return Err(invalid(what, format!("must be in [0, 1), got {p}")));
            }
        }
        if self.tie_source && self.src_vocab != self.tgt_vocab {
            return Err(invalid(
                "tie_source",
                format!(
                    "needs one joint vocabulary, got {} source and {} target tokens",
                    self.src_vocab, self.tgt_vocab
                ),
            ));
        }
        if self.encoder_layers == 0 || self.decoder_layers == 0 {
            return Err(invalid("layers", "the encoder and the decoder need at least one layer each"));
        }
        Ok(())
    }
}

/// `x + dropout(f(norm(x)))` or `norm(x + dropout(f(x)))`: one residual
/// block around sublayer `f`, which may return something besides its
/// output (an attention's weights).
fn block<T>(
    placement: NormPosition,
    dropout: &Dropout,
    norm: &LayerNorm,
    x: &Tensor,
    mut mode: Mode<'_>,
    f: impl FnOnce(&Tensor, Mode<'_>) -> Result<(Tensor, T)>,
) -> Result<(Tensor, T)> {
    Ok(match placement {
        NormPosition::Post => {
            let (out, extra) = f(x, mode.reborrow())?;
            (norm.forward_residual(x, &dropout.forward(&out, mode)?)?, extra)
        }
        NormPosition::Pre => {
            let (out, extra) = f(&norm.forward(x)?, mode.reborrow())?;
            (x.add(&dropout.forward(&out, mode)?)?, extra)
        }
    })
}

/// `W_2 · dropout(act(W_1 x + b_1)) + b_2`, PyTorch's `linear1`, `linear2`.
#[derive(Debug, Clone)]
struct FeedForward {
    linear1: Linear,
    linear2: Linear,
}

impl FeedForward {
    fn forward(&self, x: &Tensor, activation: Activation, dropout: &Dropout, mode: Mode<'_>) -> Result<Tensor> {
        let hidden = dropout.forward(&activation.apply(&self.linear1.forward(x)?), mode)?;
        self.linear2.forward(&hidden)
    }
}

/// Keys and values of one attention, `(batch, len, d)` each.
#[derive(Debug, Clone)]
struct Kv {
    k: Tensor,
    v: Tensor,
}

impl Kv {
    fn select_rows(&self, rows: &[usize]) -> Result<Kv> {
        Ok(Kv { k: self.k.index_select(0, rows)?, v: self.v.index_select(0, rows)? })
    }
}

/// `nn.TransformerEncoderLayer`: `self_attn`, `linear1`, `linear2`, `norm1`, `norm2`.
#[derive(Debug, Clone)]
struct EncoderLayer {
    self_attn: MultiheadAttention,
    ff: FeedForward,
    norm1: LayerNorm,
    norm2: LayerNorm,
}

/// `nn.TransformerDecoderLayer`: `self_attn`, `multihead_attn`, `linear1`,
/// `linear2`, `norm1`, `norm2`, `norm3`.
#[derive(Debug, Clone)]
struct DecoderLayer {
    self_attn: MultiheadAttention,
    cross_attn: MultiheadAttention,
    ff: FeedForward,
    norm1: LayerNorm,
    norm2: LayerNorm,
    norm3: LayerNorm,
}

/// What [`Transformer::encode_source`] returns.
#[derive(Debug, Clone)]
pub struct TransformerEncoded {
    /// The encoder stack's output, `(batch, src_len, d)`.
    pub enc_out: Tensor,
    /// `true` at source padding, `(batch, src_len)`.
    pub src_pad_mask: Array2<bool>,
    /// Every encoder layer's self-attention, `(layers, heads, batch, src_len, src_len)`.
    pub self_weights: Array5<f32>,
    /// What each encoder layer's self-attention read, `(batch, src_len, d)`
    /// (after its norm when the norm comes first): for [`Transformer::explain`].
    reads: Vec<Tensor>,
}

/// What [`Transformer::forward`] returns.
#[derive(Debug, Clone)]
pub struct TransformerForward {
    /// Scores over the target vocabulary, `(batch, tgt_len, tgt_vocab)`.
    pub logits: Tensor,
    /// Every decoder layer's cross-attention, `(layers, heads, batch, tgt_len, src_len)`.
    pub cross_weights: Array5<f32>,
    /// Every decoder layer's causal self-attention, `(layers, heads, batch, tgt_len, tgt_len)`.
    pub self_weights: Array5<f32>,
    /// Every encoder layer's self-attention, `(layers, heads, batch, src_len, src_len)`.
    pub encoder_weights: Array5<f32>,
}

/// The decoder stack's output before the output layer, `(batch, tgt_len, d)`,
/// the weights of [`TransformerForward`], and what each decoder layer's
/// self- and cross-attention read.
struct Decoded {
    features: Tensor,
    self_weights: Array5<f32>,
    cross_weights: Array5<f32>,
    /// The last layer's cross-attention heads in the graph, `(batch, heads, tgt_len, src_len)`.
    last_cross: Tensor,
    encoder_weights: Array5<f32>,
    reads: Vec<(Tensor, Tensor)>,
}

/// What one decoder layer computes ([`Transformer::decoder_layer`]).
struct LayerOut {
    /// The layer's output, `(batch, len, d)`.
    y: Tensor,
    /// Its self-attention keys and values: the cache, extended.
    kv: Kv,
    /// Its self- and cross-attention weights, `(batch, heads, len, keys)`.
    weights: (Tensor, Tensor),
    /// What its self- and cross-attention read, `(batch, len, d)` (after
    /// their norms when the norm comes first).
    reads: (Tensor, Tensor),
}

/// What every decoder step reads from the source: each layer's
/// cross-attention keys and values, projected once, and the padding mask.
#[derive(Debug, Clone)]
pub struct TransformerContext {
    memory: Vec<Kv>,
    src_pad_mask: Array2<bool>,
    /// What replaces the cross-attention weights, rows matching the memory's.
    intervention: Option<Intervention>,
}

impl TransformerContext {
    /// The same context for the given batch rows, in that order (repeats
    /// allowed): beam search's copies, or the rows still decoding.
    ///
    /// ```
    /// # use lingo_nn::{Mode, Transformer, TransformerConfig};
    /// # use rand::SeedableRng;
    /// # let model = Transformer::new(TransformerConfig::new(9, 9), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let enc = model.encode_source(&ndarray::arr2(&[[2_usize, 5, 3]]), &[3], Mode::Eval).unwrap();
    /// let beams = model.decoder_context(&enc).unwrap().select_rows(&[0, 0]).unwrap();
    /// let step = model.decode_step(&beams, &lingo_nn::DecoderState::default(), &[2, 2], Mode::Eval).unwrap();
    /// assert_eq!(step.logits.shape(), &[2, 9]);
    /// ```
    pub fn select_rows(&self, rows: &[usize]) -> Result<TransformerContext> {
        Ok(TransformerContext {
            memory: self.memory.iter().map(|kv| kv.select_rows(rows)).collect::<Result<_>>()?,
            src_pad_mask: self.src_pad_mask.select(Axis(0), rows),
            intervention: self.intervention.as_ref().map(|i| i.select_rows(rows)),
        })
    }
}

/// The decoder's cache: each layer's self-attention keys and values of the
/// positions decoded so far. [`DecoderState::default`] is the empty cache
/// of the first step.
///
/// Choosing rows ([`DecoderState::select_rows`], a beam step keeping its
/// best continuations) copies nothing: the order is kept, and the next
/// step applies it while it appends its own keys and values
/// ([`Tensor::select_cat`]), so the cache is copied once per step, not twice.
#[derive(Debug, Clone, Default)]
pub struct DecoderState {
    layers: Vec<Kv>,
    /// Row `i` of the cache is row `order[i]` of `layers` (`None`: as stored).
    order: Option<Vec<usize>>,
}

impl DecoderState {
    /// How many positions the cache holds.
    ///
    /// ```
    /// assert_eq!(lingo_nn::DecoderState::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.layers.first().map_or(0, |kv| kv.k.shape()[1])
    }

    /// Whether the cache is empty (before the first step).
    ///
    /// ```
    /// assert!(lingo_nn::DecoderState::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The same cache for the given batch rows, in that order.
    ///
    /// ```
    /// let empty = lingo_nn::DecoderState::default();
    /// assert!(empty.select_rows(&[0, 0]).unwrap().is_empty());
    /// ```
    pub fn select_rows(&self, rows: &[usize]) -> Result<DecoderState> {
        let order = match &self.order {
            Some(order) => rows.iter().map(|&r| order[r]).collect(),
            None => rows.to_vec(),
        };
        Ok(DecoderState { layers: self.layers.clone(), order: Some(order) })
    }
}

/// What one [`Transformer::decode_step`] returns.
#[derive(Debug, Clone)]
pub struct TransformerStep {
    /// Scores for the next token, `(batch, tgt_vocab)`.
    pub logits: Tensor,
    /// This step's cross-attention, `(layers, heads, batch, src_len)`.
    pub cross_weights: Array4<f32>,
    /// The cache with this step's keys and values appended.
    pub state: DecoderState,
}

/// The encoder–decoder Transformer; see the [module docs](self).
///
/// ```
/// use lingo_nn::{Mode, Transformer, TransformerConfig};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let model = Transformer::new(TransformerConfig::new(20, 20), &mut rng).unwrap();
/// let src = ndarray::arr2(&[[2_usize, 7, 9, 3], [2, 5, 3, 0]]);     // <sos> .. <eos>, padded
/// let tgt_in = ndarray::arr2(&[[2_usize, 11, 12], [2, 13, 0]]);
/// let out = model.forward(&src, &[4, 3], &tgt_in, &[3, 2], Mode::Eval).unwrap();
/// assert_eq!(out.logits.shape(), &[2, 3, 20]);
/// assert_eq!(out.cross_weights.shape(), &[2, 4, 2, 3, 4]);        // (layers, heads, batch, tgt_len, src_len)
/// assert_eq!(out.cross_weights[[1, 3, 1, 0, 3]], 0.0);            // padding gets no weight
/// ```
#[derive(Debug, Clone)]
pub struct Transformer {
    config: TransformerConfig,
    /// `None` when tied to the target embedding.
    src_embedding: Option<Embedding>,
    src_positions: Positions,
    encoder: Vec<EncoderLayer>,
    encoder_norm: LayerNorm,
    tgt_embedding: Embedding,
    tgt_positions: Positions,
    decoder: Vec<DecoderLayer>,
    decoder_norm: LayerNorm,
    /// `None` when tied to the target embedding.
    out_weight: Option<Param>,
    out_bias: Param,
    dropout: Dropout,
    /// What replaces the cross-attention weights of every layer, if anything
    /// ([`EncoderDecoder::intervene`]).
    intervention: Option<Intervention>,
}

impl Transformer {
    /// Builds and initialises a model from `rng`, after checking the
    /// configuration (heads must divide `d_model`, dropout in `[0, 1)`, a
    /// joint vocabulary for `tie_source`, ...).
    ///
    /// ```
    /// use lingo_nn::{Transformer, TransformerConfig};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let bad = TransformerConfig { heads: 5, ..TransformerConfig::new(9, 9) };
    /// assert!(Transformer::new(bad, &mut rng).unwrap_err().to_string().contains("divide"));
    /// ```
    pub fn new(config: TransformerConfig, mut rng: &mut impl RngCore) -> Result<Transformer> {
        let init = config.init;
        Transformer::build(config, &mut Weights::Fresh(init, &mut rng))
    }

    /// [`Transformer::new`] with every weight drawn fresh or taken from saved ones.
    pub(crate) fn build(config: TransformerConfig, weights: &mut Weights<'_>) -> Result<Transformer> {
        config.validate()?;
        let c = &config;
        let (d, eps) = (c.d_model, c.layer_norm_eps);
        let attention = |prefix: &str, weights: &mut Weights<'_>| {
            MultiheadAttention::build(prefix, d, c.heads, c.attention_dropout, weights)
        };
        let ff = |prefix: &str, weights: &mut Weights<'_>| -> Result<FeedForward> {
            Ok(FeedForward {
                linear1: Linear::build(&format!("{prefix}.linear1"), d, c.ff_dim, true, weights)?,
                linear2: Linear::build(&format!("{prefix}.linear2"), c.ff_dim, d, true, weights)?,
            })
        };
        let norm = |prefix: &str, name: &str, weights: &mut Weights<'_>| {
            LayerNorm::build(&format!("{prefix}.{name}"), d, eps, weights)
        };
        let src_embedding = (!c.tie_source)
            .then(|| Embedding::build_transformer("encoder.embedding", c.src_vocab, d, Some(PAD), weights))
            .transpose()?;
        let src_positions = Positions::build("encoder.positions", c.positions, c.max_len, d, weights)?;
        let mut encoder = Vec::with_capacity(c.encoder_layers);
        for i in 0..c.encoder_layers {
            let p = format!("encoder.layers.{i}");
            encoder.push(EncoderLayer {
                self_attn: attention(&format!("{p}.self_attn"), weights)?,
                ff: ff(&p, weights)?,
                norm1: norm(&p, "norm1", weights)?,
                norm2: norm(&p, "norm2", weights)?,
            });
        }
        let encoder_norm = LayerNorm::build("encoder.norm", d, eps, weights)?;
        let tgt_embedding = Embedding::build_transformer("decoder.embedding", c.tgt_vocab, d, Some(PAD), weights)?;
        let tgt_positions = Positions::build("decoder.positions", c.positions, c.max_len, d, weights)?;
        let mut decoder = Vec::with_capacity(c.decoder_layers);
        for i in 0..c.decoder_layers {
            let p = format!("decoder.layers.{i}");
            decoder.push(DecoderLayer {
                self_attn: attention(&format!("{p}.self_attn"), weights)?,
                cross_attn: attention(&format!("{p}.multihead_attn"), weights)?,
                ff: ff(&p, weights)?,
                norm1: norm(&p, "norm1", weights)?,
                norm2: norm(&p, "norm2", weights)?,
                norm3: norm(&p, "norm3", weights)?,
            });
        }
        let decoder_norm = LayerNorm::build("decoder.norm", d, eps, weights)?;
        let (v, d_in) = (c.tgt_vocab, d);
        let out_weight = (!c.tie_output)
            .then(|| {
                weights.params(["out.weight".to_owned()], [&[v, d_in]], |init, rng| {
                    Ok([init.linear_weight(v, d_in, rng)?])
                })
            })
            .transpose()?
            .map(|[w]| w);
        let [out_bias] =
            weights.params(["out.bias".to_owned()], [&[v]], |init, rng| Ok([init.linear_bias(v, d_in, rng)]))?;
        let dropout = Dropout::new(c.dropout)?;
        Ok(Transformer {
            config,
            src_embedding,
            src_positions,
            encoder,
            encoder_norm,
            tgt_embedding,
            tgt_positions,
            decoder,
            decoder_norm,
            out_weight,
            out_bias,
            dropout,
            intervention: None,
        })
    }

    /// A model with the given weights (by name, in any order; every
    /// parameter of the configuration's model exactly once, nothing else):
    /// how a PyTorch `nn.Transformer` state dict comes in.
    ///
    /// ```
    /// use lingo_nn::{StateDict, Transformer, TransformerConfig};
    /// use lingo_tensor::Module;
    /// # use rand::SeedableRng;
    /// let config = TransformerConfig { d_model: 8, heads: 2, ff_dim: 16, ..TransformerConfig::new(9, 9) };
    /// let model = Transformer::new(config.clone(), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let saved = StateDict::from_module(&model).unwrap();
    /// assert!(Transformer::from_state_dict(&config, &saved).is_ok());
    /// let tied = TransformerConfig { tie_output: true, ..config };
    /// let err = Transformer::from_state_dict(&tied, &saved).err().unwrap();
    /// assert_eq!(err.to_string(), "parameter out.weight: not a parameter of the model");
    /// ```
    pub fn from_state_dict(config: &TransformerConfig, params: &StateDict) -> Result<Transformer> {
        from_saved(params, |weights| Transformer::build(config.clone(), weights))
    }

    /// The configuration this model was built from.
    ///
    /// ```
    /// # use rand::SeedableRng;
    /// let config = lingo_nn::TransformerConfig::new(7, 8);
    /// let model = lingo_nn::Transformer::new(config.clone(), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// assert_eq!(model.config(), &config);
    /// ```
    pub fn config(&self) -> &TransformerConfig {
        &self.config
    }

    /// `dropout(embed(ids)·√d + PE[start..])`, `(batch, len, d)`, with
    /// `embed(ids)·√d` handed to `tokens` and what it returns read instead.
    fn embed(
        &self,
        embedding: &Embedding,
        positions: &Positions,
        ids: &Array2<usize>,
        start: usize,
        tokens: impl FnOnce(Tensor) -> Result<Tensor>,
        mode: Mode<'_>,
    ) -> Result<Tensor> {
        let scaled = embedding.forward(ids.view())?.mul_scalar((self.config.d_model as f32).sqrt());
        self.dropout.forward(&positions.forward(&tokens(scaled)?, start)?, mode)
    }

    /// Runs the encoder stack over `src (batch, src_len)` with lengths `src_lens`.
    ///
    /// ```
    /// # use lingo_nn::{Mode, Transformer, TransformerConfig};
    /// # use rand::SeedableRng;
    /// # let model = Transformer::new(TransformerConfig::new(9, 9), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let enc = model.encode_source(&ndarray::arr2(&[[2_usize, 5, 3], [2, 3, 0]]), &[3, 2], Mode::Eval).unwrap();
    /// assert_eq!(enc.enc_out.shape(), &[2, 3, 64]);
    /// assert_eq!(enc.self_weights.shape(), &[2, 4, 2, 3, 3]);
    /// assert!(enc.src_pad_mask[[1, 2]]);
    /// ```
    pub fn encode_source(&self, src: &Array2<usize>, src_lens: &[usize], mode: Mode<'_>) -> Result<TransformerEncoded> {
        self.encode_with(src, src_lens, Ok, mode)
    }

    /// [`encode_source`](Self::encode_source) with the source's token
    /// embeddings `embed(src)·√d` `(batch, src_len, d)` handed to `source`
    /// before the positions join them, and what it returns read instead.
    fn encode_with(
        &self,
        src: &Array2<usize>,
        src_lens: &[usize],
        source: impl FnOnce(Tensor) -> Result<Tensor>,
        mut mode: Mode<'_>,
    ) -> Result<TransformerEncoded> {
        let src_pad_mask = pad_mask(src, src_lens)?;
        let embedding = self.src_embedding.as_ref().unwrap_or(&self.tgt_embedding);
        let mut x = self.embed(embedding, &self.src_positions, src, 0, source, mode.reborrow())?;
        let (c, mut weights, mut reads) = (&self.config, Vec::new(), Vec::new());
        for layer in &self.encoder {
            let (y, w) = block(c.norm, &self.dropout, &layer.norm1, &x, mode.reborrow(), |x, mode| {
                reads.push(x.clone());
                let HeadsOutput { out, weights } = layer.self_attn.forward(x, x, Some(&src_pad_mask), false, mode)?;
                Ok((out, weights))
            })?;
            let (y, ()) = block(c.norm, &self.dropout, &layer.norm2, &y, mode.reborrow(), |x, mode| {
                Ok((layer.ff.forward(x, c.activation, &self.dropout, mode)?, ()))
            })?;
            x = y;
            weights.push(w);
        }
        Ok(TransformerEncoded {
            enc_out: self.encoder_norm.forward(&x)?,
            src_pad_mask,
            self_weights: stack_layers(weights)?,
            reads,
        })
    }

    /// One decoder layer over `y (batch, len, d)`: with `cache` (and the
    /// order its rows are to take), `y` is the next position and attends to
    /// the cached positions and itself; without, `y` is the whole target
    /// under the causal mask.
    fn decoder_layer(
        &self,
        layer: &DecoderLayer,
        y: &Tensor,
        (memory, ctx): (&Kv, &TransformerContext),
        tgt_pad_mask: Option<&Array2<bool>>,
        cache: Option<(&Kv, Option<&[usize]>)>,
        mut mode: Mode<'_>,
    ) -> Result<LayerOut> {
        let (c, src_pad_mask) = (&self.config, &ctx.src_pad_mask);
        let (y, (kv, self_w, self_read)) =
            block(c.norm, &self.dropout, &layer.norm1, y, mode.reborrow(), |x, mode| {
                let p = layer.self_attn.project_self(x)?;
                // The cache in its rows' order, grown by this position: one copy.
                let grown = |past: &Tensor, order: Option<&[usize]>, new: Tensor| match order {
                    Some(rows) => past.select_cat(rows, &new),
                    None => Tensor::cat(&[past.clone(), new], 1),
                };
                let kv = match cache {
                    Some((past, order)) => Kv { k: grown(&past.k, order, p.k)?, v: grown(&past.v, order, p.v)? },
                    None => Kv { k: p.k, v: p.v },
                };
                // The cached positions all precede the new one; a whole target needs the causal mask.
                let h = layer.self_attn.attend(&p.q, &kv.k, &kv.v, tgt_pad_mask, cache.is_none(), mode)?;
                Ok((h.out, (kv, h.weights, x.clone())))
            })?;
        let (y, (cross_w, cross_read)) = block(c.norm, &self.dropout, &layer.norm2, &y, mode.reborrow(), |x, mode| {
            let q = layer.cross_attn.project_query(x)?;
            let h = match &ctx.intervention {
                // The cache holds the positions before this one.
                Some(intervention) => {
                    let position = cache.map_or(0, |(past, _)| past.k.shape()[1]);
                    layer.cross_attn.attend_intervened(
                        &q,
                        &memory.k,
                        &memory.v,
                        Some(src_pad_mask),
                        intervention,
                        position,
                    )?
                }
                None => layer.cross_attn.attend(&q, &memory.k, &memory.v, Some(src_pad_mask), false, mode)?,
            };
            Ok((h.out, (h.weights, x.clone())))
        })?;
        let (y, ()) = block(c.norm, &self.dropout, &layer.norm3, &y, mode.reborrow(), |x, mode| {
            Ok((layer.ff.forward(x, c.activation, &self.dropout, mode)?, ()))
        })?;
        Ok(LayerOut { y, kv, weights: (self_w, cross_w), reads: (self_read, cross_read) })
    }

    /// Projects each decoder layer's cross-attention keys and values of the
    /// source once, for every step that follows.
    ///
    /// ```
    /// # use lingo_nn::{Mode, Transformer, TransformerConfig};
    /// # use rand::SeedableRng;
    /// # let model = Transformer::new(TransformerConfig::new(9, 9), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let enc = model.encode_source(&ndarray::arr2(&[[2_usize, 5, 3]]), &[3], Mode::Eval).unwrap();
    /// let ctx = model.decoder_context(&enc).unwrap();
    /// let first = model.decode_step(&ctx, &lingo_nn::DecoderState::default(), &[2], Mode::Eval).unwrap();
    /// assert_eq!(first.state.len(), 1);
    /// ```
    pub fn decoder_context(&self, encoded: &TransformerEncoded) -> Result<TransformerContext> {
        let memory = self
            .decoder
            .iter()
            .map(|layer| layer.cross_attn.project_memory(&encoded.enc_out).map(|(k, v)| Kv { k, v }))
            .collect::<Result<_>>()?;
        Ok(TransformerContext {
            memory,
            src_pad_mask: encoded.src_pad_mask.clone(),
            intervention: self.intervention.clone(),
        })
    }

    /// The teacher-forced forward pass: logits for every target position
    /// and every layer's and head's attention weights.
    ///
    /// ```
    /// # use lingo_nn::{Mode, Transformer, TransformerConfig};
    /// # use rand::SeedableRng;
    /// # let model = Transformer::new(TransformerConfig::new(9, 9), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let out = model.forward(&ndarray::arr2(&[[2_usize, 5, 3]]), &[3], &ndarray::arr2(&[[2_usize, 6]]), &[2], Mode::Eval).unwrap();
    /// assert_eq!(out.self_weights[[0, 0, 0, 0, 1]], 0.0);            // the causal mask
    /// ```
    pub fn forward(
        &self,
        src: &Array2<usize>,
        src_lens: &[usize],
        tgt_in: &Array2<usize>,
        tgt_lens: &[usize],
        mode: Mode<'_>,
    ) -> Result<TransformerForward> {
        let d = self.output_features(src, src_lens, tgt_in, tgt_lens, mode)?;
        let logits = self.out_weight().linear(&d.features, Some(self.out_bias.tensor()))?;
        let (cross_weights, self_weights, encoder_weights) = (d.cross_weights, d.self_weights, d.encoder_weights);
        Ok(TransformerForward { logits, cross_weights, self_weights, encoder_weights })
    }

    /// One score of `example`'s attention worked through
    /// ([`MultiheadAttention::explain`]): the layer's input at the cell's row
    /// as the query, what it attends to as the memory (the encoder's output
    /// for cross-attention), the later positions masked in the decoder's
    /// self-attention. The model's own weights, whatever intervention it carries.
    ///
    /// # Errors
    /// A layer, row or column outside the example's maps.
    ///
    /// ```
    /// use lingo_nn::{AttentionKind, Cell, Mode, Transformer, TransformerConfig};
    /// use rand::SeedableRng;
    /// let model = Transformer::new(TransformerConfig::new(9, 9), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let example = lingo_data::Example { src: vec![2, 5, 3], tgt: vec![2, 6, 7, 3] };
    /// let cell = Cell { kind: AttentionKind::DecoderSelf, layer: 0, row: 1, col: 2 };
    /// let steps = model.explain(&example, cell).unwrap();
    /// assert_eq!(steps.weights[2], 0.0); // row 1 cannot read position 2: the causal mask
    /// ```
    pub fn explain(&self, example: &Example, cell: Cell) -> Result<ScoreSteps> {
        let layers = match cell.kind {
            AttentionKind::EncoderSelf => self.encoder.len(),
            _ => self.decoder.len(),
        };
        if cell.layer >= layers {
            return Err(invalid(
                "layer",
                format!("layer {} is outside the {layers} layers of {}", cell.layer, cell.kind),
            ));
        }
        let batch = Batch::from_examples(std::slice::from_ref(example))?;
        let own = self.intervene(None);
        let encoded = lingo_tensor::no_grad(|| own.encode_source(&batch.src, &batch.src_lens, Mode::Eval))?;
        // The decoder runs only for the decoder's attentions.
        let decoded = || {
            lingo_tensor::no_grad(|| own.decoded_features(encoded.clone(), &batch.tgt_in, &batch.tgt_lens, Mode::Eval))
        };
        let l = cell.layer;
        let (attn, query, memory) = match cell.kind {
            AttentionKind::EncoderSelf => {
                let x = only_row(&encoded.reads[l]);
                (&self.encoder[l].self_attn, x.clone(), x)
            }
            AttentionKind::DecoderSelf => {
                let x = only_row(&decoded()?.reads[l].0);
                (&self.decoder[l].self_attn, x.clone(), x)
            }
            AttentionKind::Cross => {
                (&self.decoder[l].cross_attn, only_row(&decoded()?.reads[l].1), only_row(&encoded.enc_out))
            }
        };
        check_row(&cell, query.nrows())?;
        let causal: Option<Vec<bool>> =
            (cell.kind == AttentionKind::DecoderSelf).then(|| (0..memory.nrows()).map(|j| j > cell.row).collect());
        attn.explain(query.row(cell.row), memory.view(), causal.as_deref(), cell.col)
    }

    /// The decoder stack's output under teacher forcing, with every attention's weights.
    fn output_features(
        &self,
        src: &Array2<usize>,
        src_lens: &[usize],
        tgt_in: &Array2<usize>,
        tgt_lens: &[usize],
        mut mode: Mode<'_>,
    ) -> Result<Decoded> {
        let encoded = self.encode_source(src, src_lens, mode.reborrow())?;
        self.decoded_features(encoded, tgt_in, tgt_lens, mode)
    }

    /// [`output_features`](Self::output_features) from the encoded source.
    fn decoded_features(
        &self,
        encoded: TransformerEncoded,
        tgt_in: &Array2<usize>,
        tgt_lens: &[usize],
        mut mode: Mode<'_>,
    ) -> Result<Decoded> {
        let ctx = self.decoder_context(&encoded)?;
        let tgt_pad_mask = pad_mask(tgt_in, tgt_lens)?;
        let mut y = self.embed(&self.tgt_embedding, &self.tgt_positions, tgt_in, 0, Ok, mode.reborrow())?;
        let (mut self_w, mut cross_w, mut reads) = (Vec::new(), Vec::new(), Vec::new());
        for (layer, memory) in self.decoder.iter().zip(&ctx.memory) {
            let out = self.decoder_layer(layer, &y, (memory, &ctx), Some(&tgt_pad_mask), None, mode.reborrow())?;
            y = out.y;
            self_w.push(out.weights.0);
            cross_w.push(out.weights.1);
            reads.push(out.reads);
        }
        let last_cross = cross_w.last().cloned().expect("a decoder has at least one layer");
        Ok(Decoded {
            features: self.decoder_norm.forward(&y)?,
            self_weights: stack_layers(self_w)?,
            cross_weights: stack_layers(cross_w)?,
            last_cross,
            encoder_weights: encoded.self_weights,
            reads,
        })
    }

    /// One decoder step for a batch: the previous tokens `prev (batch)` at
    /// position `state.len()`, attending to the cached keys and values, to
    /// the next-token scores, this step's cross-attention and the extended cache.
    ///
    /// ```
    /// # use lingo_nn::{DecoderState, Mode, Transformer, TransformerConfig};
    /// # use rand::SeedableRng;
    /// # let model = Transformer::new(TransformerConfig::new(9, 9), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let enc = model.encode_source(&ndarray::arr2(&[[2_usize, 5, 3], [2, 4, 3]]), &[3, 3], Mode::Eval).unwrap();
    /// let ctx = model.decoder_context(&enc).unwrap();
    /// let first = model.decode_step(&ctx, &DecoderState::default(), &[2, 2], Mode::Eval).unwrap();
    /// let second = model.decode_step(&ctx, &first.state, &[6, 7], Mode::Eval).unwrap();
    /// assert_eq!(second.logits.shape(), &[2, 9]);                     // (batch, tgt_vocab)
    /// assert_eq!(second.cross_weights.shape(), &[2, 4, 2, 3]);       // (layers, heads, batch, src_len)
    /// ```
    pub fn decode_step(
        &self,
        ctx: &TransformerContext,
        state: &DecoderState,
        prev: &[usize],
        mut mode: Mode<'_>,
    ) -> Result<TransformerStep> {
        let batch = prev.len();
        let ids = Array2::from_shape_vec((batch, 1), prev.to_vec()).expect("batch × 1 ids");
        let mut y = self.embed(&self.tgt_embedding, &self.tgt_positions, &ids, state.len(), Ok, mode.reborrow())?;
        let (mut layers, mut cross_w) = (Vec::with_capacity(self.decoder.len()), Vec::new());
        for (i, (layer, memory)) in self.decoder.iter().zip(&ctx.memory).enumerate() {
            let cache = state.layers.get(i).map(|kv| (kv, state.order.as_deref()));
            let out = self.decoder_layer(layer, &y, (memory, ctx), None, cache, mode.reborrow())?;
            y = out.y;
            layers.push(out.kv);
            cross_w.push(out.weights.1);
        }
        // (batch, 1, d) -> (batch, d) before the output layer, whose rows are
        // twenty times wider: a reshape copies, so it copies the narrow side.
        let features = self.decoder_norm.forward(&y)?.reshape(&[batch, self.config.d_model])?;
        let logits = self.out_weight().linear(&features, Some(self.out_bias.tensor()))?;
        // (layers, heads, batch, 1, src_len) without the one target position
        let cross_weights = stack_layers(cross_w)?.index_axis_move(Axis(3), 0);
        Ok(TransformerStep { logits, cross_weights, state: DecoderState { layers, order: None } })
    }

    /// The output layer's weight: its own, or the target embedding when tied.
    fn out_weight(&self) -> &Param {
        self.out_weight.as_ref().unwrap_or(self.tgt_embedding.weight())
    }

    /// Mean cross-entropy of a batch's `tgt_out` under teacher forcing,
    /// padding ignored, with label smoothing `epsilon`.
    ///
    /// ```
    /// use lingo_data::{Batch, Example};
    /// use lingo_nn::{Mode, Transformer, TransformerConfig};
    /// use rand::SeedableRng;
    /// let model = Transformer::new(TransformerConfig::new(10, 10), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let batch = Batch::from_examples(&[Example { src: vec![2, 5, 3], tgt: vec![2, 6, 7, 3] }]).unwrap();
    /// let loss = model.loss(&batch, 0.0, Mode::Eval).unwrap().item().unwrap();
    /// assert!(loss.is_finite() && loss > 0.0);
    /// ```
    pub fn loss(&self, batch: &Batch, label_smoothing: f32, mode: Mode<'_>) -> Result<Tensor> {
        Ok(self.loss_and_decoded(batch, label_smoothing, mode)?.0)
    }

    /// [`loss`](Self::loss) and the teacher-forced pass it came from.
    fn loss_and_decoded(&self, batch: &Batch, label_smoothing: f32, mode: Mode<'_>) -> Result<(Tensor, Decoded)> {
        let d = self.output_features(&batch.src, &batch.src_lens, &batch.tgt_in, &batch.tgt_lens, mode)?;
        let out = (self.out_weight().tensor(), Some(self.out_bias.tensor()));
        Ok((output_loss(&d.features, out, batch, label_smoothing)?, d))
    }
}

/// `true` where position `s` of row `b` is at or past `lens[b]`, `(batch, len)`.
fn pad_mask(ids: &Array2<usize>, lens: &[usize]) -> Result<Array2<bool>> {
    if lens.len() != ids.nrows() || lens.iter().any(|&n| n > ids.ncols()) {
        return Err(invalid(
            "lengths",
            format!("{:?} do not fit a batch of {} rows of {} positions", lens, ids.nrows(), ids.ncols()),
        ));
    }
    Ok(Array2::from_shape_fn(ids.dim(), |(b, s)| s >= lens[b]))
}

/// The last layer's weights averaged over its heads: from
/// `(layers, heads, rest…)` to `(rest…)`, what the shared decoders and the
/// alignment metrics read as a Transformer's attention.
fn last_layer_mean<D>(weights: &Array<f32, D>) -> Array<f32, <D::Smaller as Dimension>::Smaller>
where
    D: RemoveAxis,
    D::Smaller: RemoveAxis,
{
    let last = weights.index_axis(Axis(0), weights.len_of(Axis(0)) - 1); // (heads, rest…)
    last.mean_axis(Axis(0)).expect("a layer has at least one head")
}

/// Per-layer `(batch, heads, tgt, src)` weights as one `(layers, heads, batch, tgt, src)` array.
fn stack_layers(layers: Vec<Tensor>) -> Result<Array5<f32>> {
    let views: Vec<_> = layers
        .iter()
        .map(|w| w.data().view().into_dimensionality::<Ix4>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| invalid("attention weights", e.to_string()))?;
    let stacked = ndarray::stack(Axis(0), &views).map_err(|e| invalid("attention weights", e.to_string()))?;
    Ok(stacked.permuted_axes([0, 2, 1, 3, 4]).as_standard_layout().into_owned())
}

lingo_tensor::module!(FeedForward { linear1, linear2 });
lingo_tensor::module!(EncoderLayer { self_attn, ff, norm1, norm2 });
lingo_tensor::module!(DecoderLayer { self_attn, cross_attn, ff, norm1, norm2, norm3 });

// The order of `nn.Transformer`'s state dict: a checkpoint's and the optimizer's.
lingo_tensor::module!(Transformer {
    src_embedding,
    src_positions,
    encoder,
    encoder_norm,
    tgt_embedding,
    tgt_positions,
    decoder,
    decoder_norm,
    out_weight,
    out_bias,
});

impl ModelConfig for TransformerConfig {
    type Model = Transformer;

    fn vocab_sizes(&self) -> (usize, usize) {
        (self.src_vocab, self.tgt_vocab)
    }

    fn differences(&self, ours: &Self) -> Vec<String> {
        field_differences!(self, ours; src_vocab, tgt_vocab, d_model, heads, encoder_layers, decoder_layers, ff_dim,
            dropout, attention_dropout, activation, norm, positions, max_len, tie_output, tie_source, layer_norm_eps,
            init)
    }
}

impl SelectRows for TransformerContext {
    fn select_rows(&self, rows: &[usize]) -> Result<Self> {
        TransformerContext::select_rows(self, rows)
    }
}

impl SelectRows for DecoderState {
    fn select_rows(&self, rows: &[usize]) -> Result<Self> {
        DecoderState::select_rows(self, rows)
    }
}

impl EncoderDecoder for Transformer {
    type Config = TransformerConfig;
    type Context = TransformerContext;
    type State = DecoderState;

    fn config(&self) -> TransformerConfig {
        Transformer::config(self).clone()
    }

    fn from_state_dict(config: &TransformerConfig, params: &StateDict) -> Result<Transformer> {
        Transformer::from_state_dict(config, params)
    }

    fn loss(&self, batch: &Batch, label_smoothing: f32, mode: Mode<'_>) -> Result<Tensor> {
        Transformer::loss(self, batch, label_smoothing, mode)
    }

    fn loss_and_attention(
        &self,
        batch: &Batch,
        label_smoothing: f32,
        head: usize,
        mode: Mode<'_>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        if head >= self.config.heads {
            return Err(invalid("head", format!("guided alignment's head {head} of {} heads", self.config.heads)));
        }
        let (loss, d) = self.loss_and_decoded(batch, label_smoothing, mode)?;
        // (batch, heads, tgt_len, src_len) → head `head`'s (batch, tgt_len, src_len)
        let &[b, _, t, s] = d.last_cross.shape() else { unreachable!("heads' weights are 4-d") };
        Ok((loss, Some(d.last_cross.narrow(1, head, 1)?.reshape(&[b, t, s])?)))
    }

    /// The last layer's cross-attention averaged over heads.
    fn attention(&self, batch: &Batch) -> Result<Option<ndarray::Array3<f32>>> {
        let out = lingo_tensor::no_grad(|| {
            self.forward(&batch.src, &batch.src_lens, &batch.tgt_in, &batch.tgt_lens, Mode::Eval)
        })?;
        Ok(Some(last_layer_mean(&out.cross_weights)))
    }

    fn head_attention(&self, batch: &Batch) -> Result<Option<Array5<f32>>> {
        let out = lingo_tensor::no_grad(|| {
            self.forward(&batch.src, &batch.src_lens, &batch.tgt_in, &batch.tgt_lens, Mode::Eval)
        })?;
        Ok(Some(out.cross_weights))
    }

    fn start(
        &self,
        src: &Array2<usize>,
        src_lens: &[usize],
        copies: usize,
    ) -> Result<(TransformerContext, DecoderState)> {
        let ctx = self.decoder_context(&self.encode_source(src, src_lens, Mode::Eval)?)?;
        // Each source's keys and values are projected once, then copied.
        let ctx = if copies > 1 { ctx.select_rows(&copies_of(src.nrows(), copies))? } else { ctx };
        Ok((ctx, DecoderState::default()))
    }

    /// The step's weights are the last layer's cross-attention, averaged over heads.
    fn step(&self, ctx: &TransformerContext, state: &DecoderState, prev: &[usize]) -> Result<Step<DecoderState>> {
        let step = self.decode_step(ctx, state, prev, Mode::Eval)?;
        let weights = Tensor::new(last_layer_mean(&step.cross_weights).into_dyn());
        Ok(Step { logits: step.logits, weights: Some(weights), state: step.state })
    }

    /// The source embeddings here are the token embeddings scaled,
    /// `embed(src)·√d`; the positions join them after the hook.
    fn logits_with_source(&self, batch: &Batch, source: impl FnOnce(Tensor) -> Result<Tensor>) -> Result<Tensor> {
        let encoded = self.encode_with(&batch.src, &batch.src_lens, source, Mode::Eval)?;
        let features = self.decoded_features(encoded, &batch.tgt_in, &batch.tgt_lens, Mode::Eval)?.features;
        Ok(self.out_weight().linear(&features, Some(self.out_bias.tensor()))?)
    }

    fn intervene(&self, intervention: Option<Intervention>) -> Transformer {
        Transformer { intervention, ..self.clone() }
    }
}
