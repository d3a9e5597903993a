//! Either model kind, chosen at run time: what a program holds when the
//! kind comes from a flag or a file (`lingo train --model`, a checkpoint
//! of `lingo train`). [`AnyModel`] is an [`EncoderDecoder`] itself, so
//! training, checkpoints, resume and decoding take it as they take
//! [`Seq2Seq`] or [`Transformer`]; each call is one `match` on the kind.
//!
//! ```
//! use lingo_nn::{AnyConfig, AnyModel, EncoderDecoder, TransformerConfig, greedy_decode};
//! use rand::SeedableRng;
//! let config = AnyConfig::from(TransformerConfig::new(9, 9));
//! let model = AnyModel::new(config, &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
//! assert_eq!(model.config().kind(), "transformer");
//! let out = greedy_decode(&model, &ndarray::arr2(&[[2_usize, 5, 3]]), &[3], 4, false).unwrap();
//! assert!(out[0].tokens.len() <= 4);
//! ```

use lingo_attention::Intervention;
use lingo_data::Batch;
use lingo_tensor::{Module, Tensor};
use ndarray::{Array2, Array3, Array5};
use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::layers::Mode;
use crate::model::{EncoderDecoder, ModelConfig, SelectRows, Step};
use crate::seq2seq::{DecoderContext, Seq2Seq, Seq2SeqConfig, Seq2SeqState};
use crate::state_dict::StateDict;
use crate::transformer::{DecoderState, Transformer, TransformerConfig, TransformerContext};

/// The configuration of either model kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AnyConfig {
    /// The recurrent encoder–decoder.
    Seq2Seq(Seq2SeqConfig),
    /// The Transformer.
    Transformer(TransformerConfig),
}

impl AnyConfig {
    /// `"rnn"` or `"transformer"`: the kind's name in messages and flags.
    ///
    /// ```
    /// let config = lingo_nn::AnyConfig::from(lingo_nn::Seq2SeqConfig::new(5, 5));
    /// assert_eq!(config.kind(), "rnn");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            AnyConfig::Seq2Seq(_) => "rnn",
            AnyConfig::Transformer(_) => "transformer",
        }
    }

    /// Whether the decoder attends to the source: always for a Transformer,
    /// for a recurrent model when it has a scorer.
    ///
    /// ```
    /// use lingo_nn::{AnyConfig, Seq2SeqConfig, TransformerConfig};
    /// assert!(!AnyConfig::from(Seq2SeqConfig::new(5, 5)).has_attention());
    /// assert!(AnyConfig::from(TransformerConfig::new(5, 5)).has_attention());
    /// ```
    pub fn has_attention(&self) -> bool {
        match self {
            AnyConfig::Seq2Seq(c) => c.attention.is_some(),
            AnyConfig::Transformer(_) => true,
        }
    }
}

impl From<Seq2SeqConfig> for AnyConfig {
    fn from(config: Seq2SeqConfig) -> Self {
        AnyConfig::Seq2Seq(config)
    }
}

impl From<TransformerConfig> for AnyConfig {
    fn from(config: TransformerConfig) -> Self {
        AnyConfig::Transformer(config)
    }
}

impl ModelConfig for AnyConfig {
    type Model = AnyModel;

    fn vocab_sizes(&self) -> (usize, usize) {
        match self {
            AnyConfig::Seq2Seq(c) => c.vocab_sizes(),
            AnyConfig::Transformer(c) => c.vocab_sizes(),
        }
    }

    /// The fields that differ, or the kinds when they do.
    ///
    /// ```
    /// use lingo_nn::{AnyConfig, ModelConfig, Seq2SeqConfig, TransformerConfig};
    /// let rnn = AnyConfig::from(Seq2SeqConfig::new(5, 5));
    /// let transformer = AnyConfig::from(TransformerConfig::new(5, 5));
    /// assert_eq!(rnn.differences(&transformer), ["model rnn (saved) vs transformer (this run)"]);
    /// ```
    fn differences(&self, ours: &Self) -> Vec<String> {
        match (self, ours) {
            (AnyConfig::Seq2Seq(saved), AnyConfig::Seq2Seq(ours)) => saved.differences(ours),
            (AnyConfig::Transformer(saved), AnyConfig::Transformer(ours)) => saved.differences(ours),
            _ => vec![format!("model {} (saved) vs {} (this run)", self.kind(), ours.kind())],
        }
    }
}

/// A model of either kind.
#[derive(Clone)]
pub enum AnyModel {
    /// The recurrent encoder–decoder.
    Seq2Seq(Seq2Seq),
    /// The Transformer.
    Transformer(Transformer),
}

impl AnyModel {
    /// A freshly initialised model of the kind `config` names.
    ///
    /// ```
    /// use lingo_nn::{AnyConfig, AnyModel, Seq2SeqConfig};
    /// use rand::SeedableRng;
    /// let model = AnyModel::new(Seq2SeqConfig::new(5, 6).into(), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// assert!(matches!(model, AnyModel::Seq2Seq(_)));
    /// ```
    pub fn new(config: AnyConfig, rng: &mut impl RngCore) -> Result<AnyModel> {
        Ok(match config {
            AnyConfig::Seq2Seq(c) => AnyModel::Seq2Seq(Seq2Seq::new(c, rng)?),
            AnyConfig::Transformer(c) => AnyModel::Transformer(Transformer::new(c, rng)?),
        })
    }

    /// Teacher-forced scores of a batch in evaluation mode, `(batch,
    /// tgt_len, tgt_vocab)`: what the loss reads, for comparing a model
    /// with another implementation of it (`tools/lingo_torch.py`).
    ///
    /// ```
    /// use lingo_data::{Batch, Example};
    /// let model = lingo_nn::translator::doc_translator();
    /// let batch = Batch::from_examples(&[Example { src: vec![2, 4, 3], tgt: vec![2, 5, 4, 3] }]).unwrap();
    /// assert_eq!(model.model().logits(&batch).unwrap().shape(), &[1, 3, 6]);
    /// ```
    pub fn logits(&self, batch: &Batch) -> Result<Tensor> {
        let (src, src_lens, tgt_in, tgt_lens) = (&batch.src, &batch.src_lens, &batch.tgt_in, &batch.tgt_lens);
        Ok(match self {
            AnyModel::Seq2Seq(m) => m.forward(src, src_lens, tgt_in, tgt_lens, Mode::Eval)?.logits,
            AnyModel::Transformer(m) => m.forward(src, src_lens, tgt_in, tgt_lens, Mode::Eval)?.logits,
        })
    }
}

impl From<Seq2Seq> for AnyModel {
    fn from(model: Seq2Seq) -> Self {
        AnyModel::Seq2Seq(model)
    }
}

impl From<Transformer> for AnyModel {
    fn from(model: Transformer) -> Self {
        AnyModel::Transformer(model)
    }
}

/// The kind and the number of weights (the weights themselves would fill pages).
///
/// ```
/// use rand::SeedableRng;
/// let config = lingo_nn::TransformerConfig { d_model: 8, heads: 2, ff_dim: 8, ..lingo_nn::TransformerConfig::new(5, 5) };
/// let model = lingo_nn::AnyModel::new(config.into(), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
/// assert_eq!(format!("{model:?}"), "AnyModel { kind: \"transformer\", params: 2621 }");
/// ```
impl std::fmt::Debug for AnyModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnyModel").field("kind", &self.config().kind()).field("params", &self.num_params()).finish()
    }
}

lingo_tensor::module!(
    AnyModel,
    match self {
        AnyModel::Seq2Seq(model) => [model],
        AnyModel::Transformer(model) => [model],
    }
);

/// What every decoder step of either kind reads from the source.
#[derive(Debug, Clone)]
pub enum AnyContext {
    /// The recurrent model's encoder outputs and prepared keys.
    Seq2Seq(DecoderContext),
    /// The Transformer's memory, projected to keys and values per layer.
    Transformer(TransformerContext),
}

/// What one decoder step of either kind hands the next.
#[derive(Debug, Clone)]
pub enum AnyState {
    /// The recurrent decoder's `h` (and `c`) and its position.
    Seq2Seq(Seq2SeqState),
    /// The Transformer decoder's cached keys and values.
    Transformer(DecoderState),
}

impl SelectRows for AnyContext {
    fn select_rows(&self, rows: &[usize]) -> Result<Self> {
        Ok(match self {
            AnyContext::Seq2Seq(c) => AnyContext::Seq2Seq(c.select_rows(rows)?),
            AnyContext::Transformer(c) => AnyContext::Transformer(c.select_rows(rows)?),
        })
    }
}

impl SelectRows for AnyState {
    fn select_rows(&self, rows: &[usize]) -> Result<Self> {
        Ok(match self {
            AnyState::Seq2Seq(s) => AnyState::Seq2Seq(SelectRows::select_rows(s, rows)?),
            AnyState::Transformer(s) => AnyState::Transformer(s.select_rows(rows)?),
        })
    }
}

impl EncoderDecoder for AnyModel {
    type Config = AnyConfig;
    type Context = AnyContext;
    type State = AnyState;

    fn config(&self) -> AnyConfig {
        match self {
            AnyModel::Seq2Seq(m) => AnyConfig::Seq2Seq(m.config().clone()),
            AnyModel::Transformer(m) => AnyConfig::Transformer(m.config().clone()),
        }
    }

    fn from_state_dict(config: &AnyConfig, params: &StateDict) -> Result<AnyModel> {
        Ok(match config {
            AnyConfig::Seq2Seq(c) => AnyModel::Seq2Seq(Seq2Seq::from_state_dict(c, params)?),
            AnyConfig::Transformer(c) => AnyModel::Transformer(Transformer::from_state_dict(c, params)?),
        })
    }

    fn loss_and_attention(
        &self,
        batch: &Batch,
        label_smoothing: f32,
        head: usize,
        mode: Mode<'_>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        match self {
            AnyModel::Seq2Seq(m) => m.loss_and_attention(batch, label_smoothing, head, mode),
            AnyModel::Transformer(m) => m.loss_and_attention(batch, label_smoothing, head, mode),
        }
    }

    fn loss(&self, batch: &Batch, label_smoothing: f32, mode: Mode<'_>) -> Result<Tensor> {
        match self {
            AnyModel::Seq2Seq(m) => m.loss(batch, label_smoothing, mode),
            AnyModel::Transformer(m) => m.loss(batch, label_smoothing, mode),
        }
    }

    fn attention(&self, batch: &Batch) -> Result<Option<Array3<f32>>> {
        match self {
            AnyModel::Seq2Seq(m) => EncoderDecoder::attention(m, batch),
            AnyModel::Transformer(m) => EncoderDecoder::attention(m, batch),
        }
    }

    fn head_attention(&self, batch: &Batch) -> Result<Option<Array5<f32>>> {
        match self {
            AnyModel::Seq2Seq(m) => m.head_attention(batch),
            AnyModel::Transformer(m) => m.head_attention(batch),
        }
    }

    fn start(&self, src: &Array2<usize>, src_lens: &[usize], copies: usize) -> Result<(AnyContext, AnyState)> {
        Ok(match self {
            AnyModel::Seq2Seq(m) => {
                let (ctx, state) = m.start(src, src_lens, copies)?;
                (AnyContext::Seq2Seq(ctx), AnyState::Seq2Seq(state))
            }
            AnyModel::Transformer(m) => {
                let (ctx, state) = m.start(src, src_lens, copies)?;
                (AnyContext::Transformer(ctx), AnyState::Transformer(state))
            }
        })
    }

    fn step(&self, ctx: &AnyContext, state: &AnyState, prev: &[usize]) -> Result<Step<AnyState>> {
        match (self, ctx, state) {
            (AnyModel::Seq2Seq(m), AnyContext::Seq2Seq(ctx), AnyState::Seq2Seq(state)) => {
                Ok(m.step(ctx, state, prev)?.map_state(AnyState::Seq2Seq))
            }
            (AnyModel::Transformer(m), AnyContext::Transformer(ctx), AnyState::Transformer(state)) => {
                Ok(m.step(ctx, state, prev)?.map_state(AnyState::Transformer))
            }
            _ => Err(Error::Config {
                what: "decoder step",
                reason: "the context or state comes from another kind of model than this one".into(),
            }),
        }
    }

    fn logits_with_source(&self, batch: &Batch, source: impl FnOnce(Tensor) -> Result<Tensor>) -> Result<Tensor> {
        match self {
            AnyModel::Seq2Seq(m) => m.logits_with_source(batch, source),
            AnyModel::Transformer(m) => m.logits_with_source(batch, source),
        }
    }

    fn intervene(&self, intervention: Option<Intervention>) -> AnyModel {
        match self {
            AnyModel::Seq2Seq(m) => AnyModel::Seq2Seq(m.intervene(intervention)),
            AnyModel::Transformer(m) => AnyModel::Transformer(m.intervene(intervention)),
        }
    }
}
