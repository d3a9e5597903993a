//! Training a translation model on a parallel corpus within a time budget,
//! then scoring it with BLEU and chrF on held-out pairs: `lingo train`.
//!
//! A run owns a directory: `model.ckpt` (the model to translate with),
//! `last.ckpt` and `best.ckpt` (to resume), the last rounds' weights for
//! averaging, `metrics.jsonl` and `loss.png` (one line and one redraw per
//! round), `config.toml` (the settings, every one explicit: the run again
//! with [`run_file::read`](crate::run_file::read)) and `test.hyp.txt`.
//!
//! Training goes in rounds of `round_size` pairs (slices of the corpus),
//! each followed by validation and checkpoints; after every round the pace
//! so far decides the last round the time budget holds (and where a
//! cosine decay ends). The model kept is the best round, or the average of
//! the last rounds when its validation loss is lower.
//!
//! ```
//! use lingo_lessons::{CorpusSettings, RunOptions, train_corpus};
//! let dir = tempfile::tempdir()?;
//! let pairs: String = (0..200).map(|i| format!("number {} {}\tnúmero {} {}\n", i % 7, i % 11, i % 7, i % 11)).collect();
//! std::fs::write(dir.path().join("pairs.tsv"), pairs)?;
//! let mut settings = CorpusSettings::default();
//! settings.data.path = Some(dir.path().join("pairs.tsv"));
//! (settings.data.test_size, settings.data.valid_size, settings.data.tokenizer) = (8, 8, lingo_data::TokenizerKind::Word);
//! (settings.model.emb, settings.model.hidden) = (Some(16), Some(16));
//! (settings.train.rounds, settings.train.round_size, settings.train.average) = (2, 100, 1);
//! settings.decode.beam = 1;
//! let run = RunOptions { out: dir.path().join("run"), ..RunOptions::default() };
//! let results = train_corpus(&settings.check()?, &run, &mut ())?;
//! assert_eq!((results.summary.rounds, results.hypotheses.len()), (2, 8));
//! assert!(dir.path().join("run/model.ckpt").is_file() && dir.path().join("run/config.toml").is_file());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use lingo_attention::Scorer;
use lingo_data::{
    AerScore, AlignmentErrorRate, Batch, BleuScore, PrepareConfig, Prepared, Tokenizer, TokenizerKind, corpus_bleu,
    corpus_chrf, word_alignment,
};
use lingo_nn::{
    Activation, Algorithm, AnyConfig, AnyModel, BeamConfig, Checkpoint, CheckpointSpec, EncoderDecoder, EpochReport,
    GuidedAlignment, Init, Mode, Next, NormPosition, Placement, PositionKind, Progress, RnnKind, Schedule,
    Seq2SeqConfig, StateDict, StepReport, Stopping, TrainConfig, TrainHooks, TrainResult, TrainedModel,
    TransformerConfig, TranslateOptions, Translator, evaluate, load_own, load_resumable, remove_stale_temp_files,
    train_model_hooked,
};
use lingo_tensor::{Module, no_grad};
use ndarray::s;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};

use crate::budget;
use crate::error::{Error, Result};
use crate::metrics::{MetricsLog, RoundMetrics};
use crate::models::{AttentionChoice, HEADS, ModelChoice, check_widths};
use crate::observe::{
    CheckpointWritten, Event, Finished, Known, Note, Observer, Pinned, RunInfo, Shared, Started, Watch,
};
use crate::run_dir::{RunDir, write_file};
use crate::settings::{
    Checked, MAX_AVERAGE, MAX_BATCH, MAX_BEAM, MAX_DIMENSION, MAX_EPOCHS, MAX_EXAMPLES, MAX_FEED_FORWARD, MAX_LAYERS,
    MAX_LENGTH, MAX_POSITION_TABLE, MAX_SHARDS, MAX_VOCAB, at_most, check_fields, choice, defaults, dimension,
    finite_real, non_negative_real, positive, positive_real, unit_fraction,
};

/// Settings of a corpus run, by section as a run file has them.
///
/// ```
/// let settings = lingo_lessons::CorpusSettings::default();
/// assert_eq!((settings.data.max_len, settings.train.batch_size, settings.decode.beam), (10, 64, 5));
/// ```
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CorpusSettings {
    /// The corpus, its split and its tokens.
    #[command(flatten)]
    pub data: DataSettings,
    /// The model: its kind and every field of its configuration.
    #[command(flatten)]
    pub model: ModelSettings,
    /// The optimizer, its schedule, batches, rounds and the budget.
    #[command(flatten)]
    pub train: TrainingSettings,
    /// How the test set is translated.
    #[command(flatten)]
    pub decode: DecodeSettings,
}

/// `[data]`: the corpus, its split and its tokens.
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DataSettings {
    /// Parallel corpus: one `source<TAB>target` pair per line
    #[arg(id = "path", long = "data", value_name = "DATA")]
    pub path: Option<PathBuf>,
    /// Skip malformed lines instead of stopping at the first
    #[arg(long)]
    pub lenient: bool,
    /// Seed of the split into training, validation and test pairs [default: --seed]; fix it to train several seeds on the same held-out pairs
    #[arg(long)]
    pub split_seed: Option<u64>,
    /// Keep pairs of at most this many word tokens per side
    #[arg(long, default_value = "10", value_parser = at_most::<MAX_LENGTH>)]
    pub max_len: usize,
    /// Held-out test pairs (BLEU and chrF)
    #[arg(long, default_value = "1000", value_parser = at_most::<MAX_EXAMPLES>)]
    pub test_size: usize,
    /// Validation pairs (loss after each round, best checkpoint)
    #[arg(long, default_value = "1000", value_parser = at_most::<MAX_EXAMPLES>)]
    pub valid_size: usize,
    /// Word or BPE vocabulary (BPE: no `<unk>` in the output)
    #[arg(long, value_enum, default_value = "bpe")]
    #[serde(with = "choice")]
    pub tokenizer: TokenizerKind,
    /// BPE merges (with --tokenizer bpe)
    #[arg(long, default_value = "8000", value_parser = at_most::<MAX_VOCAB>)]
    pub bpe_merges: usize,
    /// Largest vocabulary per language, the four specials included
    #[arg(long, default_value = "10000", value_parser = at_most::<MAX_VOCAB>)]
    pub vocab_size: usize,
    /// One vocabulary for both languages, built from both sides' training sentences (at most --vocab-size); needed by --tie-source
    #[arg(long)]
    pub joint_vocab: bool,
    /// Word links to train attention towards (guided alignment): a Pharaoh file with one line per line of --data, `i-j` for source word i and target word j counted from 0, words as --tokenizer word splits them (tools/align.py writes one with eflomal)
    #[arg(long, value_name = "FILE")]
    pub alignments: Option<PathBuf>,
}

/// `[model]`: the kind of model and every field of its configuration. The
/// settings of the other kind of model are refused.
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelSettings {
    /// The kind of model
    #[arg(id = "kind", long = "model", value_name = "MODEL", value_enum, default_value = "rnn")]
    #[serde(with = "choice")]
    pub kind: ModelKind,
    /// Layers of the encoder and of the decoder
    #[arg(long, default_value = "1", value_parser = at_most::<MAX_LAYERS>)]
    pub layers: usize,
    /// Dropout on embeddings and before the output layer; a Transformer's also on block outputs and the feed-forward hidden layer [default: 0 for rnn, 0.1 for transformer]
    #[arg(long, value_parser = unit_fraction, allow_hyphen_values = true)]
    pub dropout: Option<f32>,
    /// How weights start
    #[arg(long, value_enum, default_value = "xavier-orthogonal")]
    #[serde(with = "choice")]
    pub init: Init,
    /// LSTM or GRU cells (rnn) [default: lstm]
    #[arg(long, value_enum)]
    #[serde(with = "choice::option")]
    pub rnn: Option<RnnKind>,
    /// Attention scorer, or none (rnn) [default: dot]
    #[arg(long)]
    pub attention: Option<AttentionChoice>,
    /// Where attention sits (rnn) [default: luong]
    #[arg(long, value_enum)]
    #[serde(with = "choice::option")]
    pub placement: Option<Placement>,
    /// Embedding size (rnn) [default: 256]
    #[arg(long, value_parser = dimension)]
    pub emb: Option<usize>,
    /// LSTM hidden size (rnn) [default: 384]
    #[arg(long, value_parser = dimension)]
    pub hidden: Option<usize>,
    /// Hidden size of the additive scorer, and model size of multi_head attention (rnn) [default: --hidden]
    #[arg(long, value_parser = dimension)]
    pub attn_dim: Option<usize>,
    /// Also read the source backwards; the decoder starts from both directions' last states (rnn)
    #[arg(long)]
    pub bidirectional: bool,
    /// Model width: embeddings, attention and every layer's output (transformer) [default: 256]
    #[arg(long, value_parser = dimension)]
    pub d_model: Option<usize>,
    /// Attention heads per layer; must divide --d-model (transformer) [default: 4]
    #[arg(long, value_parser = at_most::<MAX_DIMENSION>)]
    pub heads: Option<usize>,
    /// Encoder layers (transformer) [default: --layers]
    #[arg(long, value_parser = at_most::<MAX_LAYERS>)]
    pub encoder_layers: Option<usize>,
    /// Decoder layers (transformer) [default: --layers]
    #[arg(long, value_parser = at_most::<MAX_LAYERS>)]
    pub decoder_layers: Option<usize>,
    /// Hidden size of the feed-forward blocks (transformer) [default: 4 × --d-model]
    #[arg(long, value_parser = at_most::<MAX_FEED_FORWARD>)]
    pub ff_dim: Option<usize>,
    /// Where the layer norms sit (transformer) [default: pre]
    #[arg(long, value_enum)]
    #[serde(with = "choice::option")]
    pub norm: Option<NormPosition>,
    /// The feed-forward nonlinearity (transformer) [default: relu]
    #[arg(long, value_enum)]
    #[serde(with = "choice::option")]
    pub activation: Option<Activation>,
    /// Sinusoidal or learned positions (transformer) [default: sinusoidal]
    #[arg(long, value_enum)]
    #[serde(with = "choice::option")]
    pub positions: Option<PositionKind>,
    /// The longest source or output the positions cover, in tokens (transformer) [default: 1024]
    #[arg(long, value_parser = at_most::<MAX_POSITION_TABLE>)]
    pub max_positions: Option<usize>,
    /// Dropout on the attention weights; above 0 training runs the composed, slower attention (transformer) [default: 0]
    #[arg(long, value_parser = unit_fraction, allow_hyphen_values = true)]
    pub attention_dropout: Option<f32>,
    /// The output layer reuses the target embedding as its weight (transformer)
    #[arg(long)]
    pub tie_output: bool,
    /// The source reuses the target embedding, with --joint-vocab (transformer)
    #[arg(long)]
    pub tie_source: bool,
    /// The layer norms' ε (transformer) [default: 1e-5]
    #[arg(long, value_parser = positive_real, allow_hyphen_values = true)]
    pub layer_norm_eps: Option<f64>,
}

/// `[train]`: the optimizer, its schedule, batches, rounds, the budget and the seed.
#[derive(Debug, Clone, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainingSettings {
    /// Seed of every random choice (data, initialisation, batch order)
    #[arg(long, default_value = "0")]
    pub seed: u64,
    /// The optimizer
    #[arg(long, value_enum, default_value = "adam")]
    #[serde(with = "choice")]
    pub optimizer: OptimizerKind,
    /// The learning rate [default: 3e-3 for rnn, 2e-3 for transformer]
    #[arg(long, value_parser = positive_real, allow_hyphen_values = true)]
    pub lr: Option<f64>,
    /// Weight decay: added to the gradient (adam, sgd) or applied to the weights (adamw)
    #[arg(long, default_value = "0", value_parser = non_negative_real, allow_hyphen_values = true)]
    pub weight_decay: f64,
    /// Momentum (sgd) [default: 0]
    #[arg(long, value_parser = non_negative_real, allow_hyphen_values = true)]
    pub momentum: Option<f64>,
    /// Warm-up: the learning rate rises linearly to --lr over this many steps
    #[arg(long, default_value = "500", value_parser = positive)]
    pub warmup: usize,
    /// How the learning rate falls after the warm-up [default: none for rnn, inverse-sqrt for transformer]
    #[arg(long, value_enum)]
    #[serde(with = "choice::option")]
    pub decay: Option<Decay>,
    /// Clip the global gradient norm to this (0: no clipping)
    #[arg(long, default_value = "5", value_parser = non_negative_real, allow_hyphen_values = true)]
    pub max_grad_norm: f64,
    /// Label smoothing of the loss
    #[arg(long, default_value = "0.1", value_parser = unit_fraction, allow_hyphen_values = true)]
    pub label_smoothing: f32,
    /// Weight λ of guided alignment: the loss adds λ times the cross-entropy from --alignments' links to the attention (OpenNMT's -lambda_align; 0 reads the links and trains without them) [default: 1 with --alignments]
    #[arg(long, value_parser = non_negative_real, allow_hyphen_values = true)]
    pub guided_alignment: Option<f64>,
    /// The head of the Transformer's last decoder layer that guided alignment pulls, from 0 (the others stay free)
    #[arg(long, default_value = "0")]
    pub guided_head: usize,
    /// Stop after this many rounds without a better validation loss [default: never]
    #[arg(long, value_parser = at_most::<MAX_EPOCHS>)]
    pub patience: Option<usize>,
    /// Sentence pairs per batch
    #[arg(long, default_value = "64", value_parser = at_most::<MAX_BATCH>)]
    pub batch_size: usize,
    /// Also cap each batch at this many padded tokens (rows × longest sentence), so batches of short sentences get more rows
    #[arg(long, value_parser = at_most::<MAX_BATCH>)]
    pub batch_tokens: Option<usize>,
    /// Cut each batch into this many row groups trained on parallel threads (data parallelism; results depend on this, not on --threads)
    #[arg(long, default_value = "2", value_parser = at_most::<MAX_SHARDS>)]
    pub shards: usize,
    /// Training pairs per round (validation and a checkpoint after each)
    #[arg(long, default_value = "16000", value_parser = at_most::<MAX_EXAMPLES>)]
    pub round_size: usize,
    /// Most rounds
    #[arg(long, default_value = "100", value_parser = at_most::<MAX_EPOCHS>)]
    pub rounds: usize,
    /// Seconds of training; no round starts that would end after it
    #[arg(long, default_value = "600", value_parser = positive_real, allow_hyphen_values = true)]
    pub time_budget: f64,
    /// Average the weights of the last this-many rounds (kept in --out as
    /// epoch-N.ckpt), and keep the average instead of the best round
    /// when its validation loss is lower (1: the best round alone)
    #[arg(long, default_value = "5", value_parser = at_most::<MAX_AVERAGE>)]
    pub average: usize,
}

/// `[decode]`: how beam search finds and ranks outputs (the test set's,
/// and `lingo translate`'s).
#[derive(Debug, Clone, Copy, PartialEq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DecodeSettings {
    /// Beam size (1: greedy)
    #[arg(long, default_value = "5", value_parser = at_most::<MAX_BEAM>)]
    pub beam: usize,
    /// GNMT's length-penalty exponent α: beams are ranked by log p / ((5 + n) / 6)^α, so a larger α favours longer outputs (0: by log p alone)
    #[arg(long, default_value = "0.6", value_parser = non_negative_real)]
    pub length_penalty: f64,
    /// GNMT's coverage-penalty weight β: a beam gains β Σ_i log min(Σ_j p_ij, 1) over the source tokens i, so an output that left source tokens unread (by its attention p) ranks lower (0: none; no effect without attention)
    #[arg(long, default_value = "0", value_parser = non_negative_real)]
    pub coverage_penalty: f64,
    /// Word reward γ: a beam gains γ per output token, so a larger γ favours longer outputs (0: none; negative: a penalty per token)
    #[arg(long, default_value = "0", value_parser = finite_real, allow_hyphen_values = true)]
    pub word_reward: f64,
    /// When a sentence's search ends
    #[arg(long, value_enum, default_value = "k-finished")]
    #[serde(with = "choice")]
    pub stopping: Stopping,
}

macro_rules! defaults_of {
    ($($ty:ty),*) => {$(
        impl Default for $ty {
            fn default() -> $ty {
                defaults()
            }
        }
    )*};
}
defaults_of!(CorpusSettings, DataSettings, ModelSettings, TrainingSettings, DecodeSettings);

impl DecodeSettings {
    /// The search these settings ask for; every other option keeps
    /// [`TranslateOptions::default`]'s value.
    ///
    /// ```
    /// let search = lingo_lessons::DecodeSettings { length_penalty: 1.0, ..Default::default() }.options().search;
    /// assert_eq!((search.beam_size, search.alpha, search.beta), (5, 1.0, 0.0));
    /// ```
    pub fn options(&self) -> TranslateOptions {
        let search = BeamConfig {
            beam_size: self.beam,
            alpha: self.length_penalty as f32,
            beta: self.coverage_penalty as f32,
            gamma: self.word_reward as f32,
            stopping: self.stopping,
            ..BeamConfig::default()
        };
        TranslateOptions { search, ..TranslateOptions::default() }
    }
}

/// Which kind of model a corpus run trains.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// The LSTM encoder–decoder, with --attention
    Rnn,
    /// The Transformer: --layers layers of width --d-model on each side, --heads heads, pre-norm
    Transformer,
}

/// The optimizer (PyTorch's, with their default betas and ε).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptimizerKind {
    /// Adam; --weight-decay is added to the gradient
    Adam,
    /// AdamW; --weight-decay is applied to the weights directly
    Adamw,
    /// Stochastic gradient descent, with --momentum
    Sgd,
}

/// How the learning rate falls after its warm-up (`η` is `lr`, `w` the
/// warm-up steps, `t` the step).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decay {
    /// Flat at η
    None,
    /// η·√(w/t), as in Vaswani et al. (2017)
    InverseSqrt,
    /// Half a cosine from η down to 0 at the last round (the last the time budget holds, at most --rounds)
    Cosine,
}

/// The settings whose defaults depend on the kind of model (see
/// `docs/performance.md`, "Eng-spa: the recipe and the draws"), and the
/// model's own sizes by default.
struct Recipe {
    lr: f64,
    decay: Decay,
    dropout: f32,
}

impl ModelKind {
    fn recipe(self) -> Recipe {
        match self {
            ModelKind::Rnn => Recipe { lr: 3e-3, decay: Decay::None, dropout: 0.0 },
            ModelKind::Transformer => Recipe { lr: 2e-3, decay: Decay::InverseSqrt, dropout: 0.1 },
        }
    }

    /// The `[model]` keys of this kind alone; the other kind refuses them.
    fn own_keys(self) -> &'static [&'static str] {
        match self {
            ModelKind::Rnn => &["attention", "emb", "hidden", "bidirectional", "rnn", "placement", "attn_dim"],
            ModelKind::Transformer => &[
                "d_model",
                "heads",
                "ff_dim",
                "norm",
                "encoder_layers",
                "decoder_layers",
                "activation",
                "positions",
                "max_positions",
                "attention_dropout",
                "tie_output",
                "tie_source",
                "layer_norm_eps",
            ],
        }
    }

    /// The other kind.
    fn other(self) -> ModelKind {
        match self {
            ModelKind::Rnn => ModelKind::Transformer,
            ModelKind::Transformer => ModelKind::Rnn,
        }
    }
}

/// The recurrent model's sizes by default.
const EMB: usize = 256;
const HIDDEN: usize = 384;
/// The Transformer's width by default; its heads are [`HEADS`].
const D_MODEL: usize = 256;
/// The longest source or output a trained Transformer reads, in tokens.
const MAX_POSITIONS: usize = 1024;
/// The layer norms' ε, PyTorch's.
const LAYER_NORM_EPS: f64 = 1e-5;

impl CorpusSettings {
    /// Checks every setting's bound, the settings against each other (no
    /// setting of the other kind of model, none of another optimizer) and
    /// the run against the machine's memory, before any work (a corpus too
    /// small for `test_size` and `valid_size` is found once it is read).
    ///
    /// ```
    /// let settings = lingo_lessons::CorpusSettings::default();
    /// let small = lingo_lessons::CorpusSettings { data: lingo_lessons::DataSettings { vocab_size: 4, ..settings.data.clone() }, ..settings };
    /// assert!(small.check().unwrap_err().to_string().starts_with("invalid `vocab_size`"));
    /// ```
    pub fn check(self) -> Result<Checked<CorpusSettings>> {
        check_fields(&self)?;
        // The vocabulary holds <pad> <sos> <eos> <unk> besides the words.
        let specials = lingo_data::SPECIALS.len();
        if self.data.vocab_size <= specials {
            return Err(Error::setting(
                "vocab_size",
                format!("must be above {specials}, the special tokens it includes, got {}", self.data.vocab_size),
            ));
        }
        self.check_model()?;
        // Before the corpus is read, its vocabularies are at most vocab_size
        // and its sentences (in subwords) at most about twice max_len.
        let vocab = self.data.vocab_size;
        let config = self.resolved().model_config(vocab, vocab);
        let len = 2 * self.data.max_len;
        let [model, batch] = budget::training_bytes(&config, self.train.batch_size, len);
        let kept = budget::param_bound(&config).saturating_mul(4 * self.train.average as u64);
        let decoding = self.decode.options();
        let rows = decoding.sentences_per_batch() * decoding.search.beam_size;
        budget::fits(&[
            (if self.model.kind == ModelKind::Rnn { "hidden" } else { "d_model" }, model),
            ("batch_size", batch),
            ("beam", budget::decoding_bytes(&config, rows, decoding.max_len(len), len)),
            ("average", kept),
        ])?;
        Ok(Checked::new(self))
    }

    /// Refuses a setting of the other kind of model, and sizes that do not fit together.
    fn check_model(&self) -> Result<()> {
        let (kind, model) = (self.model.kind, model_section(self));
        let other = kind.other();
        if let Some(key) = other.own_keys().iter().find(|&&key| is_set(&model[key])) {
            let name = choice::name(&other);
            return Err(Error::setting(
                key,
                format!("is a setting of `kind` {name}, not of the model this run trains"),
            ));
        }
        if self.train.momentum.is_some() && self.train.optimizer != OptimizerKind::Sgd {
            return Err(Error::setting(
                "momentum",
                "is a setting of `optimizer` sgd, not of the optimizer this run uses",
            ));
        }
        let resolved = self.resolved();
        resolved.check_guidance()?;
        let model = &resolved.model;
        match kind {
            ModelKind::Rnn => {
                let attention = model.attention.unwrap_or(AttentionChoice(None));
                if model.bidirectional && attention.0 == Some(Scorer::Dot) {
                    return Err(Error::setting(
                        "attention",
                        "dot compares decoder states with encoder outputs directly, so `bidirectional` needs general or additive",
                    ));
                }
                // The scorer's width is attn_dim, which the error names as `hidden`.
                check_widths(&[ModelChoice::Recurrent(attention)], model.attn_dim.unwrap_or_default(), HEADS)
            }
            ModelKind::Transformer => {
                let (d, heads) = (model.d_model.unwrap_or_default(), model.heads.unwrap_or_default());
                if !d.is_multiple_of(heads) {
                    return Err(Error::setting("d_model", format!("must be a multiple of `heads` {heads}, got {d}")));
                }
                if model.tie_source && !self.data.joint_vocab {
                    return Err(Error::setting(
                        "tie_source",
                        "needs `joint_vocab`: one embedding table serves both languages only if they share one vocabulary",
                    ));
                }
                Ok(())
            }
        }
    }

    /// Guided alignment needs word links, attention to pull, and a head
    /// the Transformer has (of these resolved settings).
    fn check_guidance(&self) -> Result<()> {
        let model = &self.model;
        if self.data.alignments.is_none() {
            return match self.train.guided_alignment {
                Some(_) => {
                    Err(Error::setting("guided_alignment", "needs `alignments`, the links it pulls attention towards"))
                }
                None => Ok(()),
            };
        }
        match model.kind {
            ModelKind::Rnn if model.attention == Some(AttentionChoice(None)) => Err(Error::setting(
                "alignments",
                "guided alignment needs attention, and this model has none (`attention` none)",
            )),
            ModelKind::Transformer if self.train.guided_head >= model.heads.unwrap_or_default() => {
                let reason = format!(
                    "must be below the Transformer's {} heads, got {}",
                    model.heads.unwrap_or_default(),
                    self.train.guided_head
                );
                Err(Error::setting("guided_head", reason))
            }
            _ => Ok(()),
        }
    }

    /// Guided alignment as training takes it, when these (resolved)
    /// settings ask for it: links to read and a weight above 0.
    fn guide(&self) -> Option<GuidedAlignment> {
        self.data.alignments.as_ref()?;
        let weight = self.train.guided_alignment.filter(|&w| w > 0.0)?;
        Some(GuidedAlignment { weight: weight as f32, head: self.train.guided_head })
    }

    /// These settings with every default made explicit: the recipe of the
    /// model kind, its sizes, the split seed. The settings of the other
    /// kind of model, and `momentum` for another optimizer, stay unset.
    ///
    /// ```
    /// use lingo_lessons::{CorpusSettings, ModelKind};
    /// let mut settings = CorpusSettings::default();
    /// settings.model.kind = ModelKind::Transformer;
    /// let resolved = settings.resolved();
    /// assert_eq!((resolved.train.lr, resolved.model.d_model, resolved.model.hidden), (Some(2e-3), Some(256), None));
    /// ```
    pub fn resolved(&self) -> CorpusSettings {
        let mut s = self.clone();
        let recipe = s.model.kind.recipe();
        s.data.split_seed = s.data.split_seed.or(Some(s.train.seed));
        s.train.lr = s.train.lr.or(Some(recipe.lr));
        s.train.guided_alignment = s.train.guided_alignment.or(s.data.alignments.as_ref().map(|_| 1.0));
        s.train.decay = s.train.decay.or(Some(recipe.decay));
        s.model.dropout = s.model.dropout.or(Some(recipe.dropout));
        if s.train.optimizer == OptimizerKind::Sgd {
            s.train.momentum = s.train.momentum.or(Some(0.0));
        }
        let m = &mut s.model;
        match m.kind {
            ModelKind::Rnn => {
                m.attention = m.attention.or(Some(AttentionChoice(Some(Scorer::Dot))));
                m.emb = m.emb.or(Some(EMB));
                m.hidden = m.hidden.or(Some(HIDDEN));
                m.attn_dim = m.attn_dim.or(m.hidden);
                m.rnn = m.rnn.or(Some(RnnKind::Lstm));
                m.placement = m.placement.or(Some(Placement::Luong));
            }
            ModelKind::Transformer => {
                m.d_model = m.d_model.or(Some(D_MODEL));
                m.heads = m.heads.or(Some(HEADS));
                m.ff_dim = m.ff_dim.or(m.d_model.map(|d| 4 * d));
                m.norm = m.norm.or(Some(NormPosition::Pre));
                m.encoder_layers = m.encoder_layers.or(Some(m.layers));
                m.decoder_layers = m.decoder_layers.or(Some(m.layers));
                m.activation = m.activation.or(Some(Activation::Relu));
                m.positions = m.positions.or(Some(PositionKind::Sinusoidal));
                m.max_positions = m.max_positions.or(Some(MAX_POSITIONS));
                m.attention_dropout = m.attention_dropout.or(Some(0.0));
                m.layer_norm_eps = m.layer_norm_eps.or(Some(LAYER_NORM_EPS));
            }
        }
        s
    }

    /// The model of these (resolved) settings, for vocabularies of these sizes.
    pub(crate) fn model_config(&self, src_vocab: usize, tgt_vocab: usize) -> AnyConfig {
        let (m, dropout) = (&self.model, self.model.dropout.unwrap_or_default());
        match m.kind {
            ModelKind::Rnn => AnyConfig::Seq2Seq(Seq2SeqConfig {
                attention: m.attention.unwrap_or(AttentionChoice(None)).0,
                emb_dim: m.emb.unwrap_or_default(),
                hidden_dim: m.hidden.unwrap_or_default(),
                num_layers: m.layers,
                bidirectional: m.bidirectional,
                attn_dim: m.attn_dim.unwrap_or_default(),
                dropout,
                rnn: m.rnn.unwrap_or_default(),
                placement: m.placement.unwrap_or_default(),
                init: m.init,
                ..Seq2SeqConfig::new(src_vocab, tgt_vocab)
            }),
            ModelKind::Transformer => AnyConfig::Transformer(TransformerConfig {
                d_model: m.d_model.unwrap_or_default(),
                heads: m.heads.unwrap_or_default(),
                encoder_layers: m.encoder_layers.unwrap_or_default(),
                decoder_layers: m.decoder_layers.unwrap_or_default(),
                ff_dim: m.ff_dim.unwrap_or_default(),
                norm: m.norm.unwrap_or_default(),
                dropout,
                attention_dropout: m.attention_dropout.unwrap_or_default(),
                activation: m.activation.unwrap_or_default(),
                positions: m.positions.unwrap_or_default(),
                max_len: m.max_positions.unwrap_or_default(),
                tie_output: m.tie_output,
                tie_source: m.tie_source,
                layer_norm_eps: m.layer_norm_eps.unwrap_or(LAYER_NORM_EPS) as f32,
                init: m.init,
                ..TransformerConfig::new(src_vocab, tgt_vocab)
            }),
        }
    }

    /// The optimizer with its settings (PyTorch's betas and ε).
    fn algorithm(&self) -> Algorithm {
        let t = &self.train;
        let mut algorithm = match t.optimizer {
            OptimizerKind::Adam => Algorithm::adam(),
            OptimizerKind::Adamw => Algorithm::adamw(t.weight_decay),
            OptimizerKind::Sgd => Algorithm::sgd(t.momentum.unwrap_or(0.0)),
        };
        if let Algorithm::Adam { weight_decay, .. } | Algorithm::Sgd { weight_decay, .. } = &mut algorithm {
            *weight_decay = t.weight_decay;
        }
        algorithm
    }

    /// `warmup` and `decay` as a schedule; the cosine ends at step
    /// `total_steps` (the end of `rounds`) until the pace, re-planned after
    /// every round, moves the end to the last round the time budget holds.
    fn schedule(&self, total_steps: u64) -> Schedule {
        let warmup_steps = self.train.warmup as u64;
        match self.train.decay.unwrap_or(Decay::None) {
            Decay::None => Schedule::LinearWarmup { warmup_steps },
            Decay::InverseSqrt => Schedule::InverseSqrt { warmup_steps },
            Decay::Cosine => {
                Schedule::WarmupCosine { warmup_steps, total_steps: total_steps.max(warmup_steps + 1), min_lr: 0.0 }
            }
        }
    }

    /// The training these (resolved) settings describe, with the settings
    /// a resume must bring again.
    fn train_config(&self, data: &Prepared) -> Result<TrainConfig> {
        let (t, train) = (&self.train, &data.train);
        let mut config = TrainConfig::new(t.rounds, t.lr.unwrap_or_default());
        config.batching.batch_size = t.batch_size;
        config.shards = t.shards;
        config.batching.bucket = true; // similar lengths together: less padding
        config.batching.max_tokens = t.batch_tokens;
        config.label_smoothing = t.label_smoothing;
        config.guided_alignment = self.guide();
        // A "round" is an epoch of `round_size` pairs (a slice of the corpus).
        config.epoch_size = Some(t.round_size);
        config.max_grad_norm = (t.max_grad_norm > 0.0).then_some(t.max_grad_norm);
        config.algorithm = self.algorithm();
        config.patience = t.patience;
        config.seed = t.seed;
        // Only a cosine needs the plan of every round to its end (up to MAX_EPOCHS of them).
        let cosine = t.decay == Some(Decay::Cosine);
        let total_steps = if cosine { config.steps_through(train, t.rounds)? } else { 0 };
        config.schedule = self.schedule(total_steps);
        config.progress = Progress::Bar;
        config.extra_settings = self.run_settings(data);
        Ok(config)
    }

    /// The settings that shape what a run computes, by flag, and a
    /// fingerprint of the training pairs: a resume must bring the same
    /// (stored in every checkpoint, compared by [`load_resumable`]).
    /// `rounds`, `time_budget` and `average` may change, and the search
    /// only shapes the test set.
    fn run_settings(&self, data: &Prepared) -> Vec<(String, String)> {
        let value = serde_json::to_value(self).expect("settings serialize");
        let other = self.model.kind.other().own_keys();
        let mut left_out = vec!["path", "alignments", "rounds", "time_budget", "average"];
        // Unguided, as runs were before guided alignment: their checkpoints still resume.
        if self.data.alignments.is_none() {
            left_out.extend(["guided_alignment", "guided_head"]);
        }
        let command = CorpusSettings::augment_args(clap::Command::new("settings"));
        // In the order of the flags, the seed first: it decides the most.
        let mut args: Vec<&clap::Arg> = command.get_arguments().collect();
        args.sort_by_key(|a| a.get_id() != "seed");
        let mut settings = Vec::new();
        for arg in args {
            let key = arg.get_id().as_str();
            let Some((section, v)) = ["data", "model", "train"].iter().find_map(|s| Some((*s, value[*s].get(key)?)))
            else {
                continue;
            };
            let other_kinds = section == "model" && other.contains(&key);
            if !left_out.contains(&key) && !other_kinds {
                settings.push((format!("--{}", arg.get_long().unwrap_or(key)), setting_text(v)));
            }
        }
        // The same flags on an edited corpus (or edited links) give other pairs.
        let train = &data.train;
        let gold = data.train_gold.iter().flatten().flatten().flat_map(|row| row.iter().chain([&usize::MAX]));
        let ids: Vec<u8> = train
            .iter()
            .flat_map(|e| e.src.iter().chain([&usize::MAX]).chain(&e.tgt))
            .chain(gold)
            .flat_map(|&id| (id as u64).to_le_bytes())
            .collect();
        let fingerprint = format!("{} training pairs, fingerprint {:016x}", train.len(), lingo_nn::fnv1a64(&ids));
        settings.push(("--data".into(), fingerprint));
        settings
    }

    /// These (resolved) settings as a run file: the data path absolute,
    /// the other kind of model's switches left out.
    fn as_run_file(&self) -> Result<String> {
        let mut explicit = self.clone();
        let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        explicit.data.path = self.data.path.as_ref().map(absolute);
        explicit.data.alignments = self.data.alignments.as_ref().map(absolute);
        // Through text, so each f32 keeps its shortest decimal (0.1, not 0.10000000149011612).
        let text = crate::run_file::to_toml(&explicit)?;
        let mut table: toml::Table =
            text.parse().map_err(|e: toml::de::Error| Error::invalid("run file", e.to_string()))?;
        if let Some(toml::Value::Table(model)) = table.get_mut("model") {
            for key in self.model.kind.other().own_keys() {
                model.remove(*key);
            }
        }
        crate::run_file::to_toml(&table)
    }
}

/// The `[model]` section as JSON, to ask which keys are set.
fn model_section(settings: &CorpusSettings) -> serde_json::Value {
    serde_json::to_value(&settings.model).expect("settings serialize")
}

/// Whether a key's value sets something: a value, a switch turned on.
fn is_set(value: &serde_json::Value) -> bool {
    !matches!(value, serde_json::Value::Null | serde_json::Value::Bool(false))
}

/// A setting's value as text: a choice by its name, a number as Rust
/// writes it (an `f32` setting as the `f32` it is), `none` when unset.
fn setting_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "none".into(),
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or_default();
            if f64::from(x as f32) == x { (x as f32).to_string() } else { x.to_string() }
        }
        other => other.to_string(),
    }
}

/// Where a corpus run writes unless told: `lingo train`'s `--out`.
pub const TRAIN_OUT: &str = "target/lingo-out/train";

/// Where a run writes, and what it does with a directory that holds a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// The run's directory.
    pub out: PathBuf,
    /// Continue the run in `out` from its `last.ckpt`: the rounds still to
    /// go are trained exactly as an uninterrupted run would have.
    pub resume: bool,
    /// Replace the run already in `out` instead of refusing to start.
    pub overwrite: bool,
    /// Also write the split and its tokens to `out/splits`.
    pub export_splits: bool,
}

/// What a corpus run measured.
#[derive(Debug, Clone, Serialize)]
pub struct CorpusResults {
    /// The run's numbers: the last line of `lingo train --json`.
    pub summary: CorpusSummary,
    /// Corpus BLEU of the test translations (lowercased, as sacrebleu
    /// `-lc`), with the statistics behind it.
    pub bleu: BleuScore,
    /// The test sources, as read.
    pub sources: Vec<String>,
    /// Their references, as read.
    pub references: Vec<String>,
    /// The model's translations, one per source (`test.hyp.txt`).
    pub hypotheses: Vec<String>,
}

/// The numbers of a corpus run, as `lingo train --json` prints them last.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let pairs: String = (0..120).map(|i| format!("n {} {}\tn {} {}\n", i % 5, i % 7, i % 5, i % 7)).collect();
/// # std::fs::write(dir.path().join("p.tsv"), pairs)?;
/// # let mut s = lingo_lessons::CorpusSettings::default();
/// # s.data.path = Some(dir.path().join("p.tsv"));
/// # (s.data.test_size, s.data.valid_size, s.data.tokenizer) = (4, 4, lingo_data::TokenizerKind::Word);
/// # (s.model.emb, s.model.hidden, s.train.rounds, s.train.average, s.decode.beam) = (Some(8), Some(8), 1, 1, 1);
/// # let run = lingo_lessons::RunOptions { out: dir.path().join("run"), ..Default::default() };
/// let summary = lingo_lessons::train_corpus(&s.check()?, &run, &mut ())?.summary;
/// assert_eq!((summary.test_pairs, summary.beam, summary.stopping.as_str()), (4, 1, "k-finished"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorpusSummary {
    /// Corpus BLEU of the test translations.
    pub bleu: f64,
    /// chrF of the same.
    pub chrf: f64,
    /// Seconds of training in this process.
    pub train_seconds: f64,
    /// Rounds completed.
    pub rounds: usize,
    /// The round with the lowest validation loss.
    pub best_round: usize,
    /// The validation loss of the average of the last rounds, when averaged.
    pub average_val_loss: Option<f32>,
    /// Which round, or which average, `model.ckpt` holds.
    pub model: String,
    /// Training pairs seen since the run began.
    pub pairs_seen: u64,
    /// Training pairs per second in this process.
    pub pairs_per_second: f64,
    /// Test pairs translated.
    pub test_pairs: usize,
    /// Seconds translating the test set.
    pub test_decode_seconds: f64,
    /// The search's beam size (1: greedy).
    pub beam: usize,
    /// Its length penalty α.
    pub length_penalty: f64,
    /// Its coverage penalty β.
    pub coverage_penalty: f64,
    /// Its word reward γ.
    pub word_reward: f64,
    /// Its stopping rule, by name.
    pub stopping: String,
    /// With `alignments`, the alignment error rate of the attention
    /// guidance pulls against the test pairs' word links (teacher-forced
    /// on the references; each row's peak, moved to words).
    pub test_aer: Option<AerScore>,
}

/// The files of a corpus run, besides the `epoch-<round>.ckpt` it keeps.
const RUN_FILES: [&str; 7] =
    ["model.ckpt", "last.ckpt", "best.ckpt", "metrics.jsonl", "loss.png", "test.hyp.txt", CONFIG_FILE];

/// The resolved settings of a run, in its directory.
pub(crate) const CONFIG_FILE: &str = "config.toml";

/// Trains a model on the corpus of `settings` in `run.out`: prepare the
/// corpus, train within the budget, keep the best round (or the average of
/// the last), write `model.ckpt`, translate and score the test set. The
/// observer hears each round (with `metrics.jsonl`'s numbers), notes of
/// what was read and kept, and every `model.ckpt` written; its control
/// stops training between steps, and then `model.ckpt` holds the best
/// round so far and the run ends with [`Error::Interrupted`].
pub fn train_corpus(
    settings: &Checked<CorpusSettings>,
    run: &RunOptions,
    observer: &mut dyn Observer,
) -> Result<CorpusResults> {
    let settings = settings.resolved();
    let observer = Shared::new(observer);
    let _claimed = RunDir::claim(&run.out)?;
    claim_out_dir(run)?;
    let data = prepare(&settings, &observer)?;
    let model_config = settings.model_config(data.src_vocab.len(), data.tgt_vocab.len());
    let mut model = AnyModel::new(model_config.clone(), &mut StdRng::seed_from_u64(settings.train.seed))?;
    let mut config = settings.train_config(&data)?;
    ready_out_dir(run, &data)?;
    let start = Instant::now();
    config.control = observer.control();
    let spec = CheckpointSpec {
        dir: run.out.clone(),
        src_vocab: data.src_vocab.clone(),
        tgt_vocab: data.tgt_vocab.clone(),
        keep_epochs: if settings.train.average > 1 { settings.train.average } else { 0 },
    };
    config.checkpoints = Some(spec.clone());
    let slice_sizes = data.train.chunks(settings.train.round_size).map(|c| c.len() as u64).collect();
    let corpus =
        CorpusRun { settings: &settings, run, observer: &observer, data, model_config, config, spec, slice_sizes };
    let (resume, mut metrics) = corpus.resume_or_start()?;
    // After a resume's check, so a refused resume leaves the run's file as it was.
    write_file(&run.out.join(CONFIG_FILE), run_file_text(&settings)?.as_bytes())?;
    let first_round = resume.as_ref().map_or(1, |ckpt| ckpt.epoch as usize + 1);
    observer.send(Event::Started(Started {
        lesson: "corpus".into(),
        settings: crate::settings::to_json(&settings),
        data: BTreeMap::from([
            ("train".into(), corpus.data.train.len()),
            ("valid".into(), corpus.data.valid.len()),
            ("test".into(), corpus.data.test.len()),
        ]),
        runs: vec![RunInfo {
            run: "model".into(),
            label: corpus.model_config.kind().into(),
            params: model.num_params(),
        }],
    }));
    let trained = corpus.train_rounds(&mut model, resume.as_ref(), &mut metrics, first_round, start)?;
    let kept = corpus.keep(model, &trained)?;
    let results = corpus.score_test(&kept, &trained, &metrics, first_round)?;
    let value = serde_json::to_value(&results).expect("results serialize");
    observer.send(Event::Finished(Finished { lesson: "corpus".into(), results: value }));
    Ok(results)
}

/// The text of `config.toml`: the settings, every one explicit.
fn run_file_text(settings: &CorpusSettings) -> Result<String> {
    let header =
        "# The settings of this run, every one explicit: `lingo train --config config.toml --out DIR` repeats it.\n";
    Ok(format!("{header}{}", settings.as_run_file()?))
}

/// Refuses an `out` that holds a run already, unless asked to continue it or replace it.
fn claim_out_dir(run: &RunOptions) -> Result<()> {
    let previous = previous_run(&run.out);
    if !run.resume && !previous.is_empty() && !run.overwrite {
        let reason = format!(
            "holds a run already ({}); pass `resume` to continue it, `overwrite` to replace it, or choose another `out`",
            previous.join(", ")
        );
        return Err(Error::OutDir { path: run.out.clone(), reason });
    }
    Ok(())
}

/// The checkpoints of an earlier run in `dir`, by name (none: a fresh directory).
fn previous_run(dir: &Path) -> Vec<String> {
    let mut found: Vec<String> =
        RUN_FILES[..3].iter().filter(|name| dir.join(name).is_file()).map(|name| name.to_string()).collect();
    let epochs = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| is_epoch_file(&e.file_name().to_string_lossy()))
        .count();
    if epochs > 0 {
        found.push(format!("{epochs} epoch-<round>.ckpt"));
    }
    found
}

/// `epoch-<round>.ckpt`, as [`CheckpointSpec::epoch_path`] names them.
fn is_epoch_file(name: &str) -> bool {
    name.strip_prefix("epoch-")
        .and_then(|rest| rest.strip_suffix(".ckpt"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `overwrite`: deletes the earlier run's files in `dir` (and its `splits/`), nothing else.
fn remove_run(dir: &Path) -> Result<()> {
    let gone = |path: &Path, result: std::io::Result<()>| match result {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(path, e)),
        _ => Ok(()),
    };
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?.flatten() {
        let path = entry.path();
        if is_epoch_file(&entry.file_name().to_string_lossy()) {
            gone(&path, std::fs::remove_file(&path))?;
        }
    }
    for name in RUN_FILES {
        let path = dir.join(name);
        gone(&path, std::fs::remove_file(&path))?;
    }
    let splits = dir.join("splits");
    gone(&splits, std::fs::remove_dir_all(&splits))
}

/// Readies `out` for the run, only once the corpus is read: a bad corpus keeps the old run.
fn ready_out_dir(run: &RunOptions, data: &Prepared) -> Result<()> {
    if run.overwrite {
        remove_run(&run.out)?;
    }
    // Half-written files of killed runs: model.ckpt, and metrics.jsonl as a
    // resume rewrites it (training clears those of last.ckpt and best.ckpt).
    for name in ["model.ckpt", "metrics.jsonl", CONFIG_FILE] {
        remove_stale_temp_files(&run.out.join(name))?;
    }
    if run.export_splits {
        export_splits(&run.out.join("splits"), data)?;
    }
    Ok(())
}

/// Reads, filters, splits and encodes the corpus, telling the observer
/// what it read and kept.
pub(crate) fn prepare(settings: &CorpusSettings, observer: &Shared<'_>) -> Result<Prepared> {
    let d = &settings.data;
    let path = d.path.as_deref().ok_or_else(|| Error::setting("path", "is needed, as a flag or in a run file"))?;
    let filtered = lingo_data::filtered(path, d.lenient, d.max_len)?;
    // Lenient reading says what it left out, in the note and in the too-few error.
    let skipped = match filtered.skipped.first() {
        Some(first) => format!(
            "; {} malformed lines skipped, the first {}:{}: {}",
            filtered.skipped.len(),
            path.display(),
            first.line,
            first.problem
        ),
        None => String::new(),
    };
    if let Some(first) = filtered.extra_columns.first() {
        let lines = filtered.extra_columns.len();
        let text = format!(
            "note: {lines} lines have more than two columns, the first {}:{first}; only the first two (source, target) are read",
            path.display()
        );
        observer.send(Event::Note(Note { text }));
    }
    let (read, kept) = (filtered.read, filtered.corpus.len());
    if kept < 2 * (d.test_size + d.valid_size) {
        return Err(Error::invalid(
            "`test_size`/`valid_size`",
            format!(
                "{}: {kept} usable pairs (of {read}, up to `max_len` {} tokens{skipped}) is too few for `test_size` {} and `valid_size` {} (at least twice their sum is needed)",
                path.display(),
                d.max_len,
                d.test_size,
                d.valid_size
            ),
        ));
    }
    let config = PrepareConfig {
        test_size: d.test_size,
        valid_size: d.valid_size,
        split_seed: d.split_seed.unwrap_or(settings.train.seed),
        tokenizer: d.tokenizer,
        bpe_merges: d.bpe_merges,
        vocab_size: d.vocab_size,
        joint_vocab: d.joint_vocab,
    };
    let data = match &d.alignments {
        Some(file) => {
            let links = filtered.links(&lingo_data::read_pharaoh(file)?, file)?;
            let linked = links.iter().filter(|l| !l.is_empty()).count();
            let total: usize = links.iter().map(Vec::len).sum();
            let text = format!("{}: {total} word links, {linked} of {kept} pairs linked", file.display());
            observer.send(Event::Note(Note { text }));
            lingo_data::prepare_linked(filtered.corpus, links, &config)?
        }
        None => lingo_data::prepare(filtered.corpus, &config)?,
    };
    let text = format!(
        "{}: {read} pairs read{skipped}, {kept} kept (up to {} tokens, no duplicates); {} train / {} validation / {} test; vocabularies {} / {}",
        path.display(),
        d.max_len,
        data.train.len(),
        data.valid.len(),
        data.test.len(),
        data.src_vocab.len(),
        data.tgt_vocab.len()
    );
    observer.send(Event::Note(Note { text }));
    Ok(data)
}

/// Writes `lines`, one per line, to `path`.
fn write_lines(path: &Path, lines: &[String]) -> Result<()> {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

/// `export_splits`: the split and the tokens the model trains on, for a
/// model outside lingo (`benches/pytorch/engspa.py`) to train on the same
/// pairs with the same vocabularies and be scored on the same test set:
///
/// | file | what |
/// |---|---|
/// | `vocab.src.txt`, `vocab.tgt.txt` | one token per line, line `i` is id `i` |
/// | `train.tsv`, `valid.tsv`, `test.tsv` | `source tokens<TAB>target tokens`, space-separated, as the tokenizer made them |
/// | `test.src.txt`, `test.ref.txt` | the test sources as read, the references lowercased (what BLEU is scored against) |
/// | `meta.json` | `{"tokenizer": "word" or "bpe", "end_of_word": "</w>"}` |
fn export_splits(dir: &Path, data: &Prepared) -> Result<()> {
    use lingo_data::Tokenizer;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    write_lines(&dir.join("vocab.src.txt"), data.src_vocab.tokens())?;
    write_lines(&dir.join("vocab.tgt.txt"), data.tgt_vocab.tokens())?;
    let tokens = |text: &str| data.tokenizer.tokenize(text).join(" ");
    for (name, corpus) in [("train.tsv", &data.train_pairs), ("valid.tsv", &data.valid_pairs), ("test.tsv", &data.test)]
    {
        let rows: Vec<String> =
            corpus.pairs.iter().map(|p| format!("{}\t{}", tokens(&p.src), tokens(&p.tgt))).collect();
        write_lines(&dir.join(name), &rows)?;
    }
    write_lines(&dir.join("test.src.txt"), &data.test.pairs.iter().map(|p| p.src.clone()).collect::<Vec<_>>())?;
    write_lines(&dir.join("test.ref.txt"), &data.test.pairs.iter().map(|p| p.tgt.to_lowercase()).collect::<Vec<_>>())?;
    let meta = serde_json::json!({ "tokenizer": data.tokenizer.kind(), "end_of_word": lingo_data::END_OF_WORD });
    std::fs::write(dir.join("meta.json"), format!("{meta}\n")).map_err(|e| Error::io(dir.join("meta.json"), e))
}

/// What the phases of a run share once its corpus is read and its training planned.
struct CorpusRun<'a, 'o> {
    settings: &'a CorpusSettings,
    run: &'a RunOptions,
    observer: &'a Shared<'o>,
    data: Prepared,
    model_config: AnyConfig,
    config: TrainConfig,
    spec: CheckpointSpec,
    /// The pairs of each slice of the training pairs, one slice a round, in turn.
    slice_sizes: Vec<u64>,
}

/// The model `model.ckpt` holds, and what the summary says of it.
struct Kept {
    translator: Translator,
    /// Which round, or which average of rounds, it is.
    chosen: String,
    /// The validation loss of the average of the last rounds, when there is one.
    average_loss: Option<f32>,
}

/// The run's hooks: steps for the observer, and after each round its
/// metrics line, its chart and the new last round the budget holds.
struct Rounds<'r, 'a, 'o> {
    watch: Watch<'r, 'o>,
    corpus: &'r CorpusRun<'a, 'o>,
    metrics: &'r mut MetricsLog,
    first_round: usize,
    seconds_before: f64,
    start: Instant,
}

impl<M: EncoderDecoder + Clone + Into<AnyModel>> TrainHooks<M> for Rounds<'_, '_, '_> {
    type Error = Error;

    fn step_every(&self) -> u64 {
        TrainHooks::<M>::step_every(&self.watch)
    }

    fn after_step(&mut self, step: &StepReport, model: &M) -> Result<()> {
        self.watch.after_step(step, model)
    }

    fn after_epoch(&mut self, r: &EpochReport, model: &M) -> Result<Next> {
        let elapsed = self.start.elapsed().as_secs_f64();
        let round = RoundMetrics {
            round: r.epoch,
            pairs_seen: Some(self.corpus.pairs_seen(r.epoch)),
            steps: Some(r.steps),
            train_loss: r.train_loss,
            val_loss: r.val_loss,
            seconds: Some(self.seconds_before + elapsed),
        };
        // Training wrote the round's checkpoints before this call: best.ckpt
        // when the round improved, last.ckpt always.
        let out = &self.corpus.run.out;
        let names: &[&str] = if r.improved { &["best.ckpt", "last.ckpt"] } else { &["last.ckpt"] };
        for name in names {
            let written = CheckpointWritten { run: "model".into(), path: out.join(name) };
            self.corpus.observer.send(Event::Checkpoint(written));
        }
        self.metrics.push(round.clone())?;
        self.metrics.plot(&out.join("loss.png"))?;
        let known = Known { entropy: None, pairs: round.pairs_seen, seconds: round.seconds };
        self.watch.epoch(r, model, known)?;
        Ok(Next::EndAt(self.corpus.last_round(r.epoch, elapsed, self.first_round)))
    }
}

impl CorpusRun<'_, '_> {
    /// Round r trains slice (r - 1) mod k: the pairs seen after round `round`.
    fn pairs_seen(&self, round: usize) -> u64 {
        (0..round).map(|r| self.slice_sizes[r % self.slice_sizes.len().max(1)]).sum::<u64>()
    }

    /// With `resume`, the last checkpoint (refused if another run's) and the metrics up to it; else fresh metrics.
    fn resume_or_start(&self) -> Result<(Option<Checkpoint<TrainedModel<AnyConfig>>>, MetricsLog)> {
        let metrics_path = self.run.out.join("metrics.jsonl");
        if !self.run.resume {
            return Ok((None, MetricsLog::create(metrics_path)?));
        }
        let path = self.run.out.join("last.ckpt");
        let ckpt = load_resumable(&path, &self.model_config, &self.config, &self.data.src_vocab, &self.data.tgt_vocab)?;
        let text = format!("resuming from {} after round {}", path.display(), ckpt.epoch);
        self.observer.send(Event::Note(Note { text }));
        let metrics = MetricsLog::resume(metrics_path, &ckpt.config.train_losses, &ckpt.config.val_losses)?;
        Ok((Some(ckpt), metrics))
    }

    /// The rounds, from `first_round`: after each, its metrics and chart, and a new last round.
    fn train_rounds(
        &self,
        model: &mut AnyModel,
        resume: Option<&Checkpoint<TrainedModel<AnyConfig>>>,
        metrics: &mut MetricsLog,
        first_round: usize,
        start: Instant,
    ) -> Result<TrainResult> {
        let seconds_before = metrics.seconds_before();
        // The first validation pair is the one whose attention the snapshots show.
        let data = &self.data;
        let pinned: Vec<Pinned> = data
            .valid
            .first()
            .map(|pair| Pinned::new(pair, &data.src_vocab, &data.tgt_vocab))
            .transpose()?
            .into_iter()
            .collect();
        let watch = self.observer.watch("model", &[], &pinned);
        let mut hooks = Rounds { watch, corpus: self, metrics, first_round, seconds_before, start };
        match self.data.linked_train() {
            Some(linked) => train_model_hooked(model, &linked, &self.data.valid, &self.config, resume, &mut hooks),
            None => train_model_hooked(model, &self.data.train, &self.data.valid, &self.config, resume, &mut hooks),
        }
    }

    /// The last round the budget holds at this process's pace so far, re-planned after every
    /// round (it also sets the end of a decay). The pace is per pair: rounds differ in size (the
    /// corpus's last slice is short).
    fn last_round(&self, epoch: usize, elapsed: f64, first_round: usize) -> usize {
        let pairs = |round: usize| (self.pairs_seen(round) - self.pairs_seen(first_round - 1)) as f64;
        let per_pair = elapsed / pairs(epoch);
        (epoch..=self.settings.train.rounds)
            .take_while(|&end| pairs(end) * per_pair <= self.settings.train.time_budget)
            .last()
            .unwrap_or(epoch)
    }

    /// Whether the observer's control has stopped the run.
    fn stopped(&self) -> bool {
        self.config.control.as_ref().is_some_and(lingo_nn::RunControl::is_stopped)
    }

    /// Writes `model.ckpt`: the best round, or the average of the last rounds when its validation
    /// loss is lower. Stopped, only the best round is kept, and an error says so.
    fn keep(&self, mut model: AnyModel, trained: &TrainResult) -> Result<Kept> {
        let completed = trained.val_losses.len();
        // Stopped: nothing new (no average, no test set), only what is kept.
        let interrupted = trained.interrupted || self.stopped();
        if interrupted && trained.best_epoch == 0 {
            return Err(Error::Interrupted(format!(
                "before round {} ended: no round to keep, no model.ckpt written",
                completed + 1
            )));
        }
        // The best round's weights, saved with the tokenizer for translation.
        let best = load_own::<AnyConfig>(&self.run.out.join("best.ckpt"), trained.run_id)?;
        best.restore(&mut model)?;
        let best_loss =
            best.config.val_losses.get(best.config.best_epoch.saturating_sub(1)).copied().unwrap_or(f32::NAN);
        let text = format!("best round {} (validation loss {best_loss:.4})", best.config.best_epoch);
        self.observer.send(Event::Note(Note { text }));
        let mut chosen = format!("round {}", best.config.best_epoch);
        let path = self.run.out.join("model.ckpt");
        if interrupted {
            self.save(model, &path)?;
            let kept = format!("wrote {} ({chosen}, validation loss {best_loss:.4})", path.display());
            return Err(Error::Interrupted(format!(
                "in round {}: {kept}; `resume` continues after round {completed}",
                completed + 1
            )));
        }
        let mut average_loss = None;
        if self.settings.train.average > 1 {
            let (averaged, loss, rounds) = self.average_last(trained)?;
            average_loss = Some(loss);
            if loss < best_loss {
                model = averaged;
                chosen = format!("the average of {rounds}");
            }
        }
        let translator = self.save(model, &path)?;
        self.observer.send(Event::Note(Note { text: format!("wrote {} ({chosen})", path.display()) }));
        if self.stopped() {
            // Stopped while the average was scored: the model is whole, the test set not begun.
            return Err(Error::Interrupted(format!(
                "after round {completed}: wrote {} ({chosen}); the test set was not scored",
                path.display()
            )));
        }
        Ok(Kept { translator, chosen, average_loss })
    }

    /// The AER of the attention guidance pulls (the recurrent model's, or
    /// head `guided_head` of the Transformer's last layer) against the test
    /// pairs' word links, read under teacher forcing on the references;
    /// `None` without links.
    fn test_alignment(&self, translator: &Translator) -> Result<Option<AerScore>> {
        let (data, tokenizer) = (&self.data, translator.tokenizer());
        let Some(links) = &data.test_links else { return Ok(None) };
        let examples = data.test.encode(tokenizer, translator.src_vocab(), tokenizer, translator.tgt_vocab());
        let (head, mut aer) = (self.settings.train.guided_head, AlignmentErrorRate::new());
        for ((pairs, links), examples) in data.test.pairs.chunks(64).zip(links.chunks(64)).zip(examples.chunks(64)) {
            let batch = Batch::from_examples(examples)?;
            let (_, attention) = no_grad(|| translator.model().loss_and_attention(&batch, 0.0, head, Mode::Eval))?;
            let Some(attention) = attention else { return Ok(None) };
            let weights = attention.data(); // (batch, tgt_len, src_len)
            for (b, (pair, gold)) in pairs.iter().zip(links).enumerate() {
                let (src_words, tgt_words) = (tokenizer.token_words(&pair.src), tokenizer.token_words(&pair.tgt));
                let rows = weights.slice(s![b, ..tgt_words.len(), ..src_words.len() + 2]);
                aer.add_word_links(&word_alignment(rows, &src_words, &tgt_words)?, gold);
            }
        }
        Ok(Some(aer.score()))
    }

    /// Saves `model` with the tokenizer and vocabularies, all translation needs, and says so.
    fn save(&self, model: AnyModel, path: &Path) -> Result<Translator> {
        let data = &self.data;
        let translator =
            Translator::new(model, data.tokenizer.clone(), data.src_vocab.clone(), data.tgt_vocab.clone())?;
        translator.save(path)?;
        let written = CheckpointWritten { run: "model".into(), path: path.to_path_buf() };
        self.observer.send(Event::Checkpoint(written));
        Ok(translator)
    }

    /// `average`: the average of the last rounds' weights, its validation loss, and which rounds.
    fn average_last(&self, trained: &TrainResult) -> Result<(AnyModel, f32, String)> {
        let last = trained.val_losses.len() as u64;
        let rounds = last.saturating_sub(self.settings.train.average as u64 - 1).max(1)..=last;
        let dicts = rounds
            .clone()
            .map(|r| load_own::<AnyConfig>(&self.spec.epoch_path(r), trained.run_id).map(|c| c.params))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let averaged = AnyModel::from_state_dict(&self.model_config, &StateDict::average(&dicts)?)?;
        let smoothing = self.settings.train.label_smoothing;
        let loss = evaluate(&averaged, &self.config.validation_batches(&self.data.valid)?, smoothing)?;
        let rounds = format!("rounds {}-{}", rounds.start(), rounds.end());
        self.observer.send(Event::Note(Note { text: format!("average of {rounds}: validation loss {loss:.4}") }));
        Ok((averaged, loss, rounds))
    }

    /// Translates and scores the test set with the kept model, and writes `test.hyp.txt`.
    fn score_test(
        &self,
        kept: &Kept,
        trained: &TrainResult,
        metrics: &MetricsLog,
        first_round: usize,
    ) -> Result<CorpusResults> {
        let data = &self.data;
        let search = self.settings.decode;
        let sources: Vec<String> = data.test.pairs.iter().map(|p| p.src.clone()).collect();
        let decoding = Instant::now();
        let options = TranslateOptions { attention: false, ..search.options() };
        let texts: Vec<&str> = sources.iter().map(String::as_str).collect();
        let hypotheses: Vec<String> =
            kept.translator.translate(&texts, &options)?.into_iter().map(|t| t.text).collect();
        let test_decode_seconds = decoding.elapsed().as_secs_f64();
        write_lines(&self.run.out.join("test.hyp.txt"), &hypotheses)?;
        // The word tokenizer lowercases, so the references are lowercased too:
        // this is case-insensitive BLEU (sacrebleu -lc).
        let lowered: Vec<String> = data.test.pairs.iter().map(|p| p.tgt.to_lowercase()).collect();
        let seen = metrics.rounds().last().and_then(|m| m.pairs_seen).unwrap_or(0);
        let this_process = seen.saturating_sub(self.pairs_seen(first_round - 1));
        let bleu = corpus_bleu(&hypotheses, &lowered)?;
        let summary = CorpusSummary {
            bleu: bleu.score,
            chrf: corpus_chrf(&hypotheses, &lowered)?,
            train_seconds: trained.seconds,
            rounds: trained.val_losses.len(),
            best_round: trained.best_epoch,
            average_val_loss: kept.average_loss,
            model: kept.chosen.clone(),
            pairs_seen: seen,
            pairs_per_second: this_process as f64 / trained.seconds.max(1e-9),
            test_pairs: lowered.len(),
            test_decode_seconds,
            beam: search.beam,
            length_penalty: search.length_penalty,
            coverage_penalty: search.coverage_penalty,
            word_reward: search.word_reward,
            stopping: choice::name(&search.stopping),
            test_aer: self.test_alignment(&kept.translator)?,
        };
        let references = data.test.pairs.iter().map(|p| p.tgt.clone()).collect();
        Ok(CorpusResults { summary, bleu, sources, references, hypotheses })
    }
}

#[cfg(test)]
mod tests {
    use super::{CorpusSettings, Decay, ModelKind, OptimizerKind};
    use lingo_attention::Scorer;
    use lingo_data::{Corpus, Prepared, TextTokenizer, Vocab, WordTokenizer};
    use lingo_nn::{Algorithm, AnyConfig, NormPosition, Schedule, Seq2SeqConfig, TransformerConfig};

    fn of(kind: ModelKind) -> CorpusSettings {
        let mut settings = CorpusSettings::default();
        settings.model.kind = kind;
        settings.resolved()
    }

    #[test]
    fn the_defaults_build_the_recipes_models() {
        let AnyConfig::Seq2Seq(rnn) = of(ModelKind::Rnn).model_config(9, 9) else { panic!("not rnn") };
        let want = Seq2SeqConfig {
            attention: Some(Scorer::Dot),
            emb_dim: 256,
            hidden_dim: 384,
            attn_dim: 384,
            ..Seq2SeqConfig::new(9, 9)
        };
        assert_eq!(rnn, want);
        let AnyConfig::Transformer(transformer) = of(ModelKind::Transformer).model_config(9, 9) else {
            panic!("not a transformer")
        };
        let want = TransformerConfig {
            d_model: 256,
            encoder_layers: 1,
            decoder_layers: 1,
            ff_dim: 1024,
            norm: NormPosition::Pre,
            attention_dropout: 0.0,
            max_len: 1024,
            ..TransformerConfig::new(9, 9)
        };
        assert_eq!(transformer, want);
    }

    #[test]
    fn each_optimizer_gets_its_settings() {
        let with = |optimizer, weight_decay, momentum| {
            let mut settings = CorpusSettings::default();
            (settings.train.optimizer, settings.train.weight_decay, settings.train.momentum) =
                (optimizer, weight_decay, momentum);
            settings.resolved().algorithm()
        };
        assert_eq!(with(OptimizerKind::Adam, 0.0, None), Algorithm::adam());
        assert_eq!(with(OptimizerKind::Adamw, 0.01, None), Algorithm::adamw(0.01));
        let sgd = with(OptimizerKind::Sgd, 1e-4, Some(0.9));
        assert_eq!(sgd, Algorithm::Sgd { momentum: 0.9, dampening: 0.0, nesterov: false, weight_decay: 1e-4 });
        let adam = with(OptimizerKind::Adam, 0.5, None);
        assert!(matches!(adam, Algorithm::Adam { weight_decay: 0.5, beta2: 0.999, .. }), "{adam:?}");
    }

    #[test]
    fn each_decay_is_its_schedule() {
        let with = |decay, warmup| {
            let mut settings = CorpusSettings::default();
            (settings.train.decay, settings.train.warmup) = (Some(decay), warmup);
            settings
        };
        let cosine = with(Decay::Cosine, 3).schedule(7);
        assert_eq!(cosine, Schedule::WarmupCosine { warmup_steps: 3, total_steps: 7, min_lr: 0.0 });
        let short = with(Decay::Cosine, 500).schedule(7);
        assert_eq!(short, Schedule::WarmupCosine { warmup_steps: 500, total_steps: 501, min_lr: 0.0 });
        assert_eq!(of(ModelKind::Rnn).schedule(7), Schedule::LinearWarmup { warmup_steps: 500 });
        assert_eq!(with(Decay::InverseSqrt, 500).schedule(7), Schedule::InverseSqrt { warmup_steps: 500 });
    }

    #[test]
    fn a_resume_is_compared_on_the_settings_of_the_model_s_own_kind() {
        let settings = of(ModelKind::Transformer).run_settings(&empty_data());
        let names: Vec<&str> = settings.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names[..2], ["--seed", "--lenient"]);
        assert!(names.contains(&"--d-model") && names.contains(&"--model") && !names.contains(&"--hidden"));
        assert!(!names.contains(&"--rounds") && !names.contains(&"--beam"));
        let value = |name: &str| settings.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        assert_eq!(
            (value("--dropout"), value("--momentum"), value("--decay")),
            (Some("0.1"), Some("none"), Some("inverse-sqrt"))
        );
        // Guidance's settings only when it has links: unguided runs compare as they always did.
        assert!(!names.iter().any(|name| name.starts_with("--guided") || *name == "--alignments"));
        let mut guided = of(ModelKind::Transformer);
        guided.data.alignments = Some("pairs.align".into());
        let settings = guided.resolved().run_settings(&empty_data());
        let names: Vec<&str> = settings.iter().map(|(name, _)| name.as_str()).collect();
        assert!(names.contains(&"--guided-alignment") && names.contains(&"--guided-head"), "{names:?}");
        assert!(!names.contains(&"--alignments"));
    }

    /// Prepared data with no pairs at all.
    fn empty_data() -> Prepared {
        let no_words = Vocab::from_tokens(Vec::<String>::new());
        Prepared {
            tokenizer: TextTokenizer::Word(WordTokenizer::lowercased()),
            src_vocab: no_words.clone(),
            tgt_vocab: no_words,
            train: Vec::new(),
            train_gold: None,
            valid: Vec::new(),
            train_pairs: Corpus::default(),
            valid_pairs: Corpus::default(),
            test: Corpus::default(),
            test_links: None,
        }
    }
}
