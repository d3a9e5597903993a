//! What every translation model offers, so that training, checkpoints,
//! greedy and beam search serve the recurrent [`Seq2Seq`](crate::Seq2Seq)
//! and the [`Transformer`](crate::Transformer) with one copy of the code.
//!
//! ```text
//! training:   loss(batch) ─ backward ─ optimizer step          (train_model)
//! decoding:   start(src) → (context, state)                      once per batch
//!             step(context, state, prev) → (logits, weights, state)   once per token
//! ```
//!
//! The context is what every step reads from the source (keys projected
//! once); the state is what one step hands the next (an RNN's `h`, `c`; a
//! Transformer's cached keys and values). Both can be cut to some rows and
//! repeated ([`SelectRows`]): how beam search copies a source per beam and
//! how finished sentences leave the batch.

use std::fmt::Debug;
use std::path::Path;

use lingo_attention::Intervention;
use lingo_data::{Batch, PAD};
use lingo_tensor::{CrossEntropy, Module, Param, Tensor};
use ndarray::{Array2, Array3, Array5};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::checkpoint::{Checkpoint, problem as checkpoint_problem};
use crate::error::{CheckpointProblem, Error, Result};
use crate::init::Weights;
use crate::layers::Mode;
use crate::state_dict::{StateDict, check_unique};

/// Row `b·copies + j` is copy `j` of row `b`: the rows [`EncoderDecoder::start`] expands to.
pub(crate) fn copies_of(batch: usize, copies: usize) -> Vec<usize> {
    (0..batch).flat_map(|b| std::iter::repeat_n(b, copies)).collect()
}

/// A model built from saved weights by `build` (every parameter must be in
/// `params` once with its shape; `params` may hold nothing else): the body
/// of both models' `from_state_dict`.
pub(crate) fn from_saved<M: Module>(
    params: &StateDict,
    build: impl FnOnce(&mut Weights<'_>) -> Result<M>,
) -> Result<M> {
    check_unique(params.tensors().iter().map(|t| t.name.as_str()))?;
    let model = build(&mut Weights::Saved(params))?;
    params.check_no_extra(model.params().into_iter().map(Param::name))?;
    Ok(model)
}

/// The mean cross-entropy of a batch's `tgt_out` from the decoder's
/// `features (batch, tgt_len, d)` through the output layer `(weight, bias)`,
/// padding ignored: both models' `loss`. The output layer and the loss are
/// one op: no logits for padding, and one `(tokens, vocab)` buffer for
/// logits, probabilities and gradient.
pub(crate) fn output_loss(
    features: &Tensor,
    (weight, bias): (&Tensor, Option<&Tensor>),
    batch: &Batch,
    label_smoothing: f32,
) -> Result<Tensor> {
    let (b, t, d) = (features.shape()[0], features.shape()[1], features.shape()[2]);
    let targets: Vec<usize> = batch.tgt_out.iter().copied().collect();
    let opts = CrossEntropy { ignore_index: Some(PAD), label_smoothing };
    Ok(features.reshape(&[b * t, d])?.linear_cross_entropy(weight, bias, &targets, opts)?)
}

/// Something with one row per sentence of a batch.
pub trait SelectRows: Sized {
    /// The given rows, in that order (repeats allowed).
    ///
    /// ```
    /// use lingo_nn::SelectRows;
    /// let state = lingo_nn::DecoderState::default();
    /// assert!(state.select_rows(&[0, 0, 0]).unwrap().is_empty());
    /// ```
    fn select_rows(&self, rows: &[usize]) -> Result<Self>;
}

/// A model's configuration: everything that shapes it, stored in checkpoints.
pub trait ModelConfig: Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync {
    /// The model this configuration builds.
    type Model: EncoderDecoder<Config = Self>;

    /// Source and target vocabulary sizes.
    ///
    /// ```
    /// use lingo_nn::ModelConfig;
    /// assert_eq!(lingo_nn::TransformerConfig::new(7, 9).vocab_sizes(), (7, 9));
    /// ```
    fn vocab_sizes(&self) -> (usize, usize);

    /// `field saved (saved) vs ours (this run)` for every field that differs,
    /// with `self` the saved side: how a resume explains a mismatch.
    ///
    /// ```
    /// use lingo_nn::{ModelConfig, Seq2SeqConfig};
    /// let (a, b) = (Seq2SeqConfig::new(5, 5), Seq2SeqConfig { hidden_dim: 8, ..Seq2SeqConfig::new(5, 5) });
    /// assert_eq!(a.differences(&b), ["hidden_dim 64 (saved) vs 8 (this run)"]);
    /// ```
    fn differences(&self, ours: &Self) -> Vec<String>;
}

/// `name saved (saved) vs ours (this run)` for each listed field of two
/// configurations that differs: the body of [`ModelConfig::differences`].
macro_rules! field_differences {
    ($saved:expr, $ours:expr; $($field:ident),* $(,)?) => {{
        let mut out = Vec::new();
        $(
            if $saved.$field != $ours.$field {
                out.push(format!("{} {:?} (saved) vs {:?} (this run)", stringify!($field), $saved.$field, $ours.$field));
            }
        )*
        out
    }};
}
pub(crate) use field_differences;

/// What one decoder step returns.
#[derive(Debug, Clone)]
pub struct Step<S> {
    /// Scores for the next token, `(batch, tgt_vocab)`.
    pub logits: Tensor,
    /// This step's attention over the source, `(batch, src_len)`, when the
    /// model has attention (for a Transformer: its last layer's, averaged
    /// over heads).
    pub weights: Option<Tensor>,
    /// What the next step continues from.
    pub state: S,
}

impl<S> Step<S> {
    /// The same step with its state wrapped (or converted) by `f`.
    ///
    /// ```
    /// let step = lingo_nn::Step { logits: lingo_tensor::Tensor::zeros(&[1, 2]), weights: None, state: 3 };
    /// assert_eq!(step.map_state(|s| s * 2).state, 6);
    /// ```
    pub fn map_state<T>(self, f: impl FnOnce(S) -> T) -> Step<T> {
        Step { logits: self.logits, weights: self.weights, state: f(self.state) }
    }
}

/// An encoder–decoder translation model: what [`train_model`](crate::train_model),
/// [`greedy_decode`](crate::greedy_decode), [`beam_search`](crate::beam_search)
/// and checkpoints need. See the [module docs](self).
///
/// ```
/// use lingo_nn::{EncoderDecoder, Mode, Transformer, TransformerConfig};
/// use rand::SeedableRng;
/// let model = Transformer::new(TransformerConfig::new(9, 9), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
/// let (ctx, state) = model.start(&ndarray::arr2(&[[2_usize, 5, 3]]), &[3], 1).unwrap();
/// let step = model.step(&ctx, &state, &[lingo_data::SOS]).unwrap();
/// assert_eq!(step.logits.shape(), &[1, 9]);
/// assert_eq!(step.weights.unwrap().shape(), &[1, 3]);
/// let batch = lingo_data::Batch::from_examples(&[lingo_data::Example { src: vec![2, 5, 3], tgt: vec![2, 6, 3] }]).unwrap();
/// assert_eq!(model.attention(&batch).unwrap().unwrap().dim(), (1, 2, 3));
/// ```
pub trait EncoderDecoder: Module + Sized + Sync {
    /// The configuration type, stored in checkpoints.
    type Config: ModelConfig;
    /// What every decoder step reads from the source.
    type Context: SelectRows;
    /// What one decoder step hands the next.
    type State: SelectRows;

    /// The configuration the model was built from (a copy: configurations are small).
    fn config(&self) -> Self::Config;

    /// The model `config` describes with the given weights, by name, and
    /// nothing else ([`StateDict::load_into`]'s strictness).
    fn from_state_dict(config: &Self::Config, params: &StateDict) -> Result<Self>;

    /// Mean cross-entropy of a batch's `tgt_out` under teacher forcing,
    /// padding ignored, with label smoothing `label_smoothing`.
    fn loss(&self, batch: &Batch, label_smoothing: f32, mode: Mode<'_>) -> Result<Tensor>;

    /// [`loss`](Self::loss) and, from the same teacher-forced pass, the
    /// attention guided alignment pulls ([`crate::guided`]): `(batch,
    /// tgt_len, src_len)` weights in the graph, for a recurrent model its
    /// attention, for a Transformer head `head` of its last decoder layer's
    /// cross-attention. `None` without attention.
    ///
    /// ```
    /// use lingo_nn::{EncoderDecoder, Mode, Transformer, TransformerConfig};
    /// use rand::SeedableRng;
    /// let model = Transformer::new(TransformerConfig { d_model: 8, ff_dim: 16, heads: 2, ..TransformerConfig::new(9, 9) }, &mut rand::rngs::StdRng::seed_from_u64(0))?;
    /// let batch = lingo_data::Batch::from_examples(&[lingo_data::Example { src: vec![2, 5, 6, 3], tgt: vec![2, 6, 3] }])?;
    /// let (loss, attention) = model.loss_and_attention(&batch, 0.0, 1, Mode::Eval)?;
    /// assert_eq!(loss.item()?, model.loss(&batch, 0.0, Mode::Eval)?.item()?);
    /// let heads = model.head_attention(&batch)?.unwrap();                 // (layers, heads, batch, tgt, src)
    /// assert_eq!(attention.unwrap().data().as_slice().unwrap(), heads.slice(ndarray::s![1, 1, 0, .., ..]).to_owned().as_slice().unwrap());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn loss_and_attention(
        &self,
        batch: &Batch,
        label_smoothing: f32,
        head: usize,
        mode: Mode<'_>,
    ) -> Result<(Tensor, Option<Tensor>)>;

    /// The attention weights under teacher forcing, `(batch, tgt_len,
    /// src_len)`, what alignment metrics and heatmaps read (for a
    /// Transformer: its last layer's cross-attention averaged over heads);
    /// `None` without attention.
    fn attention(&self, batch: &Batch) -> Result<Option<Array3<f32>>>;

    /// Every head's weights under teacher forcing, `(layers, heads, batch,
    /// tgt_len, src_len)`: for a Transformer each decoder layer's
    /// cross-attention heads; for a recurrent model one layer, with the
    /// `multi_head` scorer's heads or one head. `None` without attention.
    ///
    /// ```
    /// use lingo_nn::{EncoderDecoder, Seq2Seq, Seq2SeqConfig};
    /// use rand::SeedableRng;
    /// let config = Seq2SeqConfig { attention: Some("multi_head:2".parse().unwrap()), emb_dim: 8, hidden_dim: 8, attn_dim: 8, ..Seq2SeqConfig::new(9, 9) };
    /// let model = Seq2Seq::new(config, &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let batch = lingo_data::Batch::from_examples(&[lingo_data::Example { src: vec![2, 5, 6, 3], tgt: vec![2, 6, 3] }]).unwrap();
    /// let heads = model.head_attention(&batch).unwrap().unwrap();
    /// assert_eq!(heads.dim(), (1, 2, 1, 2, 4)); // (layers, heads, batch, tgt_len, src_len)
    /// ```
    fn head_attention(&self, batch: &Batch) -> Result<Option<Array5<f32>>>;

    /// Teacher-forced scores `(batch, tgt_len, tgt_vocab)` in evaluation
    /// mode, with the source's token embeddings `(batch, src_len, d)` handed
    /// to `source` on their way to the encoder and replaced by what it
    /// returns: how [`saliency`](crate::saliency()) takes gradients with
    /// respect to them. They are the embedding rows of the source tokens,
    /// for a [`Transformer`](crate::Transformer) scaled by `√d`, which then
    /// adds the positions to what the hook returns.
    ///
    /// ```
    /// use lingo_nn::{EncoderDecoder, Mode, Transformer, TransformerConfig};
    /// use rand::SeedableRng;
    /// let model = Transformer::new(TransformerConfig::new(9, 9), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let batch = lingo_data::Batch::from_examples(&[lingo_data::Example { src: vec![2, 5, 3], tgt: vec![2, 6, 3] }]).unwrap();
    /// let own = model.forward(&batch.src, &batch.src_lens, &batch.tgt_in, &batch.tgt_lens, Mode::Eval).unwrap();
    /// assert_eq!(model.logits_with_source(&batch, Ok).unwrap().to_vec(), own.logits.to_vec());
    /// let silent = model.logits_with_source(&batch, |e| Ok(e.mul_scalar(0.0))).unwrap();
    /// assert_ne!(silent.to_vec(), own.logits.to_vec());
    /// ```
    fn logits_with_source(&self, batch: &Batch, source: impl FnOnce(Tensor) -> Result<Tensor>) -> Result<Tensor>;

    /// Reads a batch of sources `src (batch, src_len)` with lengths
    /// `src_lens`: the context every step reads and the first step's state,
    /// each source repeated `copies` times (row `b·copies + j` is copy `j`
    /// of source `b`: one per beam).
    fn start(&self, src: &Array2<usize>, src_lens: &[usize], copies: usize) -> Result<(Self::Context, Self::State)>;

    /// One decoder step (evaluation mode): the previous tokens `prev (batch)`
    /// to the next-token scores, the attention and the next state.
    fn step(&self, ctx: &Self::Context, state: &Self::State, prev: &[usize]) -> Result<Step<Self::State>>;

    /// The same model with its attention weights replaced by `intervention`
    /// wherever the decoder attends to the source (every cross-attention
    /// layer and head of a Transformer), in [`loss`](Self::loss),
    /// [`attention`](Self::attention) and every decoding step; `None`
    /// restores its own. For probing a trained model (`lingo probe`): the
    /// replaced context carries no gradient. The weights are shared, not copied.
    ///
    /// ```
    /// use lingo_attention::Intervention;
    /// use lingo_nn::{EncoderDecoder, Seq2Seq, Seq2SeqConfig};
    /// use rand::SeedableRng;
    /// let config = Seq2SeqConfig { attention: Some("dot".parse().unwrap()), ..Seq2SeqConfig::new(9, 9) };
    /// let model = Seq2Seq::new(config, &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let batch = lingo_data::Batch::from_examples(&[lingo_data::Example { src: vec![2, 5, 6, 3], tgt: vec![2, 6, 3] }]).unwrap();
    /// let uniform = model.intervene(Some(Intervention::Uniform)).attention(&batch).unwrap().unwrap();
    /// assert!(uniform.iter().all(|&w| w == 0.25));
    /// ```
    fn intervene(&self, intervention: Option<Intervention>) -> Self;

    /// Rebuilds the model a checkpoint holds: `config` (the checkpoint's own
    /// model configuration) must agree with the checkpoint's vocabularies,
    /// describe a valid model, and fit every saved parameter. Anything else
    /// is an [`Error::Checkpoint`] naming `path` (which only labels errors),
    /// with [`CheckpointProblem::Inconsistent`] saying what disagrees.
    ///
    /// ```
    /// use lingo_data::Vocab;
    /// use lingo_nn::{Checkpoint, EncoderDecoder, Seq2Seq, Seq2SeqConfig};
    /// use rand::SeedableRng;
    /// let (src, tgt) = (Vocab::from_tokens(["a", "b"]), Vocab::from_tokens(["x"]));
    /// let config = Seq2SeqConfig { emb_dim: 4, hidden_dim: 4, ..Seq2SeqConfig::new(src.len(), tgt.len()) };
    /// let model = Seq2Seq::new(config.clone(), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let ckpt = Checkpoint::new(config.clone(), &model, src.clone(), tgt).unwrap();
    /// let path = std::path::Path::new("model.ckpt");
    /// assert!(Seq2Seq::from_checkpoint(&config, &ckpt, path).is_ok());
    ///
    /// let wider = Seq2SeqConfig { tgt_vocab: 9, ..config };
    /// let err = Seq2Seq::from_checkpoint(&wider, &ckpt, path).err().unwrap();
    /// assert_eq!(err.to_string(), "checkpoint model.ckpt: inconsistent: the model configuration has a target vocabulary of 9 tokens, the stored target vocabulary 5");
    /// ```
    fn from_checkpoint<C>(config: &Self::Config, ckpt: &Checkpoint<C>, path: &Path) -> Result<Self> {
        let inconsistent = |reason: String| checkpoint_problem(path, CheckpointProblem::Inconsistent(reason));
        let (src, tgt) = config.vocab_sizes();
        for (side, configured, stored) in [("source", src, ckpt.src_vocab.len()), ("target", tgt, ckpt.tgt_vocab.len())]
        {
            if configured != stored {
                return Err(inconsistent(format!(
                    "the model configuration has a {side} vocabulary of {configured} tokens, the stored {side} vocabulary {stored}"
                )));
            }
        }
        Self::from_state_dict(config, &ckpt.params).map_err(|e| match e {
            Error::Param { .. } => {
                inconsistent(format!("the saved parameters do not fit the model configuration: {e}"))
            }
            _ => inconsistent(format!("the model configuration is not valid: {e}")),
        })
    }
}
