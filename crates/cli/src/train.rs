//! `lingo train`: a translation model on a real parallel corpus, trained
//! within a time budget and scored with BLEU and chrF on held-out sentences.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, ValueEnum};
use lingo::attention::Scorer;
use lingo::data::{
    Bpe, BpeConfig, Corpus, Example, ReadOptions, SplitFractions, TextTokenizer, Tokenizer, Vocab, VocabConfig,
    WordTokenizer, corpus_bleu, corpus_chrf,
};
use lingo::nn::{
    Activation, Algorithm, AnyConfig, AnyModel, Checkpoint, CheckpointSpec, EncoderDecoder, Next, NormPosition,
    Placement, PositionKind, Progress, RnnKind, Schedule, Seq2SeqConfig, StateDict, TrainConfig, TrainResult,
    TrainedModel, TransformerConfig, TranslateOptions, Translator, evaluate, load_own, load_resumable,
    remove_stale_temp_files, train_model_with,
};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::json;

use crate::config::{Given, RunFile, at_key, choice_name};
use crate::error::{Error, Result};
use crate::interrupt;
use crate::metrics::{MetricsLog, RoundMetrics};
use crate::output::{Output, print_err};
use crate::run_dir::RunDir;
use lingo::lessons::budget;
use lingo::lessons::models::{AttentionChoice, ModelChoice, check_widths};
use lingo::lessons::settings::{
    MAX_AVERAGE, MAX_BATCH, MAX_DIMENSION, MAX_EPOCHS, MAX_EXAMPLES, MAX_FEED_FORWARD, MAX_LAYERS, MAX_LENGTH,
    MAX_POSITION_TABLE, MAX_SHARDS, MAX_VOCAB, at_most, dimension, non_negative_real, positive, positive_real,
    unit_fraction,
};

/// Which kind of model `lingo train` trains.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// The LSTM encoder–decoder, with --attention
    Rnn,
    /// The Transformer: --layers layers of width --d-model on each side, --heads heads, pre-norm
    Transformer,
}

/// Where a Transformer's layer norms sit.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormChoice {
    /// After each residual sum, as in Vaswani et al. (2017)
    Post,
    /// Before each block, inside the residual: trains at higher learning rates
    Pre,
}

/// The settings whose defaults depend on `--model`.
struct Recipe {
    lr: f64,
    decay: DecayChoice,
    dropout: f32,
}

impl ModelKind {
    /// The defaults of the settings that differ between the kinds (see
    /// `docs/performance.md`, "Eng-spa: the recipe and the draws").
    fn recipe(self) -> Recipe {
        match self {
            ModelKind::Rnn => Recipe { lr: 3e-3, decay: DecayChoice::None, dropout: 0.0 },
            ModelKind::Transformer => Recipe { lr: 2e-3, decay: DecayChoice::InverseSqrt, dropout: 0.1 },
        }
    }
}

/// The recurrent model's cell.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RnnChoice {
    /// Long short-term memory
    Lstm,
    /// Gated recurrent unit
    Gru,
}

/// Where the recurrent model's attention sits.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementChoice {
    /// After the decoder's step, read by the output layer (Luong et al., 2015)
    Luong,
    /// Before the decoder's step, its context fed to the RNN (Bahdanau et al., 2014)
    Bahdanau,
}

/// The Transformer's feed-forward nonlinearity.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActivationChoice {
    /// max(x, 0)
    Relu,
    /// x·Φ(x)
    Gelu,
    /// GELU's tanh approximation
    GeluTanh,
}

/// The Transformer's positions.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PositionsChoice {
    /// Fixed sines and cosines (Vaswani et al., 2017)
    Sinusoidal,
    /// A learned embedding per position
    Learned,
}

/// The optimizer (PyTorch's, with their default betas and ε).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptimizerChoice {
    /// Adam; --weight-decay is added to the gradient
    Adam,
    /// AdamW; --weight-decay is applied to the weights directly
    Adamw,
    /// Stochastic gradient descent, with --momentum
    Sgd,
}

/// Word-level or subword vocabulary.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizerChoice {
    /// Lowercased words and punctuation marks
    Word,
    /// Byte-pair encoding learned on the training sentences of both languages
    Bpe,
}

/// How the learning rate falls after its warm-up (`η` is `--lr`, `w` the
/// warm-up steps, `t` the step).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecayChoice {
    /// Flat at η
    None,
    /// η·√(w/t), as in Vaswani et al. (2017)
    InverseSqrt,
    /// Half a cosine from η down to 0 at the last round (the last the time budget holds, at most --rounds)
    Cosine,
}

/// Settings of `lingo train`.
#[derive(Args, Debug, Clone)]
pub struct TrainArgs {
    /// Which of these flags the command line gave (a run file sets the
    /// others). First: clap takes each value out of its matches as it
    /// fills the field, and this reads them all.
    #[command(flatten)]
    pub given: Given,
    /// Parallel corpus: one `source<TAB>target` pair per line
    #[arg(long, required_unless_present = "config")]
    pub data: Option<PathBuf>,
    /// Run file (TOML) with any of these settings, by section (data, model, train, decode); a flag given here overrides it (see examples/run.toml)
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Directory for checkpoints (`model.ckpt` is the one to translate with)
    #[arg(long, default_value = "target/lingo-out/train")]
    pub out: PathBuf,
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
    #[arg(long, value_enum, default_value_t = TokenizerChoice::Bpe)]
    pub tokenizer: TokenizerChoice,
    /// BPE merges (with --tokenizer bpe)
    #[arg(long, default_value = "8000", value_parser = at_most::<MAX_VOCAB>)]
    pub bpe_merges: usize,
    /// Largest vocabulary per language, the four specials included
    #[arg(long, default_value = "10000", value_parser = at_most::<MAX_VOCAB>)]
    pub vocab_size: usize,
    /// One vocabulary for both languages, built from both sides' training sentences (at most --vocab-size); needed by --tie-source
    #[arg(long)]
    pub joint_vocab: bool,
    /// The kind of model
    #[arg(long, value_enum, default_value_t = ModelKind::Rnn)]
    pub model: ModelKind,
    /// Layers of the encoder and of the decoder
    #[arg(long, default_value = "1", value_parser = at_most::<MAX_LAYERS>)]
    pub layers: usize,
    /// Attention scorer, or none (rnn) [default: dot]
    #[arg(long)]
    pub attention: Option<AttentionChoice>,
    /// Embedding size (rnn) [default: 256]
    #[arg(long, value_parser = dimension)]
    pub emb: Option<usize>,
    /// LSTM hidden size (rnn) [default: 384]
    #[arg(long, value_parser = dimension)]
    pub hidden: Option<usize>,
    /// Also read the source backwards; the decoder starts from both directions' last states (rnn)
    #[arg(long)]
    pub bidirectional: bool,
    /// LSTM or GRU cells (rnn) [default: lstm]
    #[arg(long, value_enum)]
    pub rnn: Option<RnnChoice>,
    /// Where attention sits (rnn) [default: luong]
    #[arg(long, value_enum)]
    pub placement: Option<PlacementChoice>,
    /// Hidden size of the additive scorer, and model size of multi_head attention (rnn) [default: --hidden]
    #[arg(long, value_parser = dimension)]
    pub attn_dim: Option<usize>,
    /// Model width: embeddings, attention and every layer's output (transformer) [default: 256]
    #[arg(long, value_parser = dimension)]
    pub d_model: Option<usize>,
    /// Attention heads per layer; must divide --d-model (transformer) [default: 4]
    #[arg(long, value_parser = at_most::<MAX_DIMENSION>)]
    pub heads: Option<usize>,
    /// Hidden size of the feed-forward blocks (transformer) [default: 4 × --d-model]
    #[arg(long, value_parser = at_most::<MAX_FEED_FORWARD>)]
    pub ff_dim: Option<usize>,
    /// Where the layer norms sit (transformer) [default: pre]
    #[arg(long, value_enum)]
    pub norm: Option<NormChoice>,
    /// Encoder layers (transformer) [default: --layers]
    #[arg(long, value_parser = at_most::<MAX_LAYERS>)]
    pub encoder_layers: Option<usize>,
    /// Decoder layers (transformer) [default: --layers]
    #[arg(long, value_parser = at_most::<MAX_LAYERS>)]
    pub decoder_layers: Option<usize>,
    /// The feed-forward nonlinearity (transformer) [default: relu]
    #[arg(long, value_enum)]
    pub activation: Option<ActivationChoice>,
    /// Sinusoidal or learned positions (transformer) [default: sinusoidal]
    #[arg(long, value_enum)]
    pub positions: Option<PositionsChoice>,
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
    /// How weights start
    #[arg(long, value_enum, default_value = "xavier-orthogonal")]
    pub init: lingo::nn::Init,
    /// Dropout on embeddings and before the output layer; a Transformer's also on block outputs and the feed-forward hidden layer [default: 0 for rnn, 0.1 for transformer]
    #[arg(long, value_parser = unit_fraction, allow_hyphen_values = true)]
    pub dropout: Option<f32>,
    /// Sentence pairs per batch
    #[arg(long, default_value = "64", value_parser = at_most::<MAX_BATCH>)]
    pub batch_size: usize,
    /// Also cap each batch at this many padded tokens (rows × longest sentence), so batches of short sentences get more rows
    #[arg(long, value_parser = at_most::<MAX_BATCH>)]
    pub batch_tokens: Option<usize>,
    /// Cut each batch into this many row groups trained on parallel threads (data parallelism; results depend on this, not on --threads)
    #[arg(long, default_value = "2", value_parser = at_most::<MAX_SHARDS>)]
    pub shards: usize,
    /// The optimizer
    #[arg(long, value_enum, default_value_t = OptimizerChoice::Adam)]
    pub optimizer: OptimizerChoice,
    /// Weight decay: added to the gradient (adam, sgd) or applied to the weights (adamw)
    #[arg(long, default_value = "0", value_parser = non_negative_real, allow_hyphen_values = true)]
    pub weight_decay: f64,
    /// Momentum (sgd) [default: 0]
    #[arg(long, value_parser = non_negative_real, allow_hyphen_values = true)]
    pub momentum: Option<f64>,
    /// Clip the global gradient norm to this (0: no clipping)
    #[arg(long, default_value = "5", value_parser = non_negative_real, allow_hyphen_values = true)]
    pub max_grad_norm: f64,
    /// Stop after this many rounds without a better validation loss [default: never]
    #[arg(long, value_parser = at_most::<MAX_EPOCHS>)]
    pub patience: Option<usize>,
    /// The learning rate [default: 3e-3 for rnn, 2e-3 for transformer]
    #[arg(long, value_parser = positive_real, allow_hyphen_values = true)]
    pub lr: Option<f64>,
    /// Warm-up: the learning rate rises linearly to --lr over this many steps
    #[arg(long, default_value = "500", value_parser = positive)]
    pub warmup: usize,
    /// How the learning rate falls after the warm-up [default: none for rnn, inverse-sqrt for transformer]
    #[arg(long, value_enum)]
    pub decay: Option<DecayChoice>,
    /// Label smoothing of the loss
    #[arg(long, default_value = "0.1", value_parser = unit_fraction, allow_hyphen_values = true)]
    pub label_smoothing: f32,
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
    /// `--beam`, `--length-penalty`, `--coverage-penalty`, `--word-reward`, `--stopping` of the test set's search.
    #[command(flatten)]
    pub search: crate::args::SearchFlags,
    /// Example translations to print
    #[arg(long, default_value = "5")]
    pub show: usize,
    /// Continue the run whose checkpoints are in --out from its last.ckpt
    /// (same data, seed and flags; a changed one is refused and named): the
    /// rounds still to go are trained exactly as an uninterrupted run would
    /// have trained them (--time-budget and --rounds may change;
    /// --time-budget counts this process's time only)
    #[arg(long)]
    pub resume: bool,
    /// Replace the run already in --out (its checkpoints, metrics and test output) instead of refusing to start
    #[arg(long, conflicts_with = "resume")]
    pub overwrite: bool,
    /// Also write the split and its tokens to --out/splits (for training another toolkit on the same pairs)
    #[arg(long)]
    pub export_splits: bool,
    /// `--seed`, `--threads`, `--json`.
    #[command(flatten)]
    pub run: crate::args::RunFlags,
}

impl TrainArgs {
    /// These settings with `--config`'s file read in (the flags given on
    /// the command line override it), and the seed: checked as
    /// [`TrainArgs::check`] does, an error about a setting of the file
    /// naming the file, its line and its key.
    ///
    /// ```
    /// use clap::Parser;
    /// let dir = tempfile::tempdir().unwrap();
    /// let run = dir.path().join("run.toml");
    /// std::fs::write(&run, "[data]\npath = \"pairs.tsv\"\n[train]\nbatch_size = 32\nrounds = 7\nseed = 5\n").unwrap();
    /// let cli = lingo_cli::Cli::try_parse_from(["lingo", "train", "--config", run.to_str().unwrap(), "--rounds", "9"]).unwrap();
    /// let lingo_cli::Command::Train(args) = cli.command else { unreachable!() };
    /// let resolved = args.resolve().unwrap();
    /// assert_eq!((resolved.batch_size, resolved.rounds, resolved.run.seed), (32, 9, 5));
    /// assert_eq!(resolved.data, Some(dir.path().join("pairs.tsv")));
    /// ```
    pub fn resolve(&self) -> Result<TrainArgs> {
        let Some(path) = &self.config else {
            self.check()?;
            return Ok(self.clone());
        };
        let (file, text) = RunFile::read(path)?;
        let args = file.apply(self);
        if args.data.is_none() {
            return Err(Error::RunFile {
                path: path.clone(),
                line: None,
                message: "no corpus: set path in [data], or pass --data".into(),
            });
        }
        args.check().map_err(|e| at_key(e, path, &text, &self.given))?;
        Ok(args)
    }

    /// Rejects flags that do not fit together, before any work (a corpus too
    /// small for --test-size and --valid-size is found once it is read).
    ///
    /// ```
    /// use clap::Parser;
    /// let cli = lingo_cli::Cli::try_parse_from(["lingo", "train", "--data", "x.tsv", "--vocab-size", "4"]).unwrap();
    /// let lingo_cli::Command::Train(args) = cli.command else { unreachable!() };
    /// assert!(args.check().unwrap_err().to_string().starts_with("invalid --vocab-size"));
    /// ```
    pub fn check(&self) -> Result<()> {
        // The vocabulary holds <pad> <sos> <eos> <unk> besides the words.
        let specials = lingo::data::SPECIALS.len();
        if self.vocab_size <= specials {
            return Err(Error::usage(
                "--vocab-size",
                format!("must be above {specials}, the special tokens it includes, got {}", self.vocab_size),
            ));
        }
        self.check_model_flags()?;
        // Before the corpus is read, its vocabularies are at most --vocab-size
        // and its sentences (in subwords) at most about twice --max-len.
        let config = self.model_config(self.vocab_size, self.vocab_size);
        let len = 2 * self.max_len;
        let [model, batch] = budget::training_bytes(&config, self.batch_size, len);
        let kept = budget::param_bound(&config).saturating_mul(4 * self.average as u64);
        let decoding = self.search.options();
        let rows = decoding.sentences_per_batch() * decoding.search.beam_size;
        Ok(budget::fits(&[
            (if self.model == ModelKind::Rnn { "hidden" } else { "d_model" }, model),
            ("batch_size", batch),
            ("beam", budget::decoding_bytes(&config, rows, decoding.max_len(len), len)),
            ("average", kept),
        ])?)
    }

    /// Refuses a flag of the other kind of model, and sizes that do not fit together.
    fn check_model_flags(&self) -> Result<()> {
        let (other, given) = match self.model {
            ModelKind::Rnn => (
                "transformer",
                [
                    ("--d-model", self.d_model.is_some()),
                    ("--heads", self.heads.is_some()),
                    ("--ff-dim", self.ff_dim.is_some()),
                    ("--norm", self.norm.is_some()),
                    ("--encoder-layers", self.encoder_layers.is_some()),
                    ("--decoder-layers", self.decoder_layers.is_some()),
                    ("--activation", self.activation.is_some()),
                    ("--positions", self.positions.is_some()),
                    ("--max-positions", self.max_positions.is_some()),
                    ("--attention-dropout", self.attention_dropout.is_some()),
                    ("--tie-output", self.tie_output),
                    ("--tie-source", self.tie_source),
                    ("--layer-norm-eps", self.layer_norm_eps.is_some()),
                ]
                .to_vec(),
            ),
            ModelKind::Transformer => (
                "rnn",
                [
                    ("--attention", self.attention.is_some()),
                    ("--emb", self.emb.is_some()),
                    ("--hidden", self.hidden.is_some()),
                    ("--bidirectional", self.bidirectional),
                    ("--rnn", self.rnn.is_some()),
                    ("--placement", self.placement.is_some()),
                    ("--attn-dim", self.attn_dim.is_some()),
                ]
                .to_vec(),
            ),
        };
        if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
            return Err(Error::usage(
                flag,
                format!("is a setting of --model {other}, not of the model this run trains"),
            ));
        }
        if self.momentum.is_some() && self.optimizer != OptimizerChoice::Sgd {
            return Err(Error::usage(
                "--momentum",
                "is a setting of --optimizer sgd, not of the optimizer this run uses",
            ));
        }
        match self.model {
            ModelKind::Rnn => {
                let attention = self.attention();
                if self.bidirectional && attention.0 == Some(Scorer::Dot) {
                    return Err(Error::usage(
                        "--attention",
                        "dot compares decoder states with encoder outputs directly, so --bidirectional needs general or additive",
                    ));
                }
                Ok(check_widths(&[ModelChoice::Recurrent(attention)], self.attn_dim())?)
            }
            ModelKind::Transformer => {
                let (d, heads) = (self.d_model(), self.heads.unwrap_or(HEADS));
                if !d.is_multiple_of(heads) {
                    return Err(Error::usage("--d-model", format!("must be a multiple of --heads {heads}, got {d}")));
                }
                if self.tie_source && !self.joint_vocab {
                    return Err(Error::usage(
                        "--tie-source",
                        "needs --joint-vocab: one embedding table serves both languages only if they share one vocabulary",
                    ));
                }
                Ok(())
            }
        }
    }

    /// The settings whose defaults depend on `--model`.
    fn recipe(&self) -> Recipe {
        self.model.recipe()
    }

    fn attention(&self) -> AttentionChoice {
        self.attention.unwrap_or(AttentionChoice(Some(Scorer::Dot)))
    }

    fn attn_dim(&self) -> usize {
        self.attn_dim.or(self.hidden).unwrap_or(HIDDEN)
    }

    fn d_model(&self) -> usize {
        self.d_model.unwrap_or(D_MODEL)
    }

    fn lr(&self) -> f64 {
        self.lr.unwrap_or(self.recipe().lr)
    }

    fn decay(&self) -> DecayChoice {
        self.decay.unwrap_or(self.recipe().decay)
    }

    fn dropout(&self) -> f32 {
        self.dropout.unwrap_or(self.recipe().dropout)
    }

    /// The optimizer with its settings (PyTorch's betas and ε).
    fn algorithm(&self) -> Algorithm {
        let mut algorithm = match self.optimizer {
            OptimizerChoice::Adam => Algorithm::adam(),
            OptimizerChoice::Adamw => Algorithm::adamw(self.weight_decay),
            OptimizerChoice::Sgd => Algorithm::sgd(self.momentum.unwrap_or(0.0)),
        };
        if let Algorithm::Adam { weight_decay, .. } | Algorithm::Sgd { weight_decay, .. } = &mut algorithm {
            *weight_decay = self.weight_decay;
        }
        algorithm
    }

    /// These settings with every default made explicit (the recipe's of the
    /// model kind included): what `config.toml` holds. The settings of the
    /// other kind of model, and `--momentum` for another optimizer, stay unset.
    fn explicit(&self) -> TrainArgs {
        let mut args = self.clone();
        (args.lr, args.decay, args.dropout) = (Some(self.lr()), Some(self.decay()), Some(self.dropout()));
        match self.model {
            ModelKind::Rnn => {
                args.attention = Some(self.attention());
                args.emb = Some(self.emb.unwrap_or(EMB));
                args.hidden = Some(self.hidden.unwrap_or(HIDDEN));
                args.attn_dim = Some(self.attn_dim());
                args.rnn = Some(self.rnn.unwrap_or(RnnChoice::Lstm));
                args.placement = Some(self.placement.unwrap_or(PlacementChoice::Luong));
            }
            ModelKind::Transformer => {
                args.d_model = Some(self.d_model());
                args.heads = Some(self.heads.unwrap_or(HEADS));
                args.ff_dim = Some(self.ff_dim.unwrap_or(4 * self.d_model()));
                args.norm = Some(self.norm.unwrap_or(NormChoice::Pre));
                args.encoder_layers = Some(self.encoder_layers.unwrap_or(self.layers));
                args.decoder_layers = Some(self.decoder_layers.unwrap_or(self.layers));
                args.activation = Some(self.activation.unwrap_or(ActivationChoice::Relu));
                args.positions = Some(self.positions.unwrap_or(PositionsChoice::Sinusoidal));
                args.max_positions = Some(self.max_positions.unwrap_or(MAX_POSITIONS));
                args.attention_dropout = Some(self.attention_dropout.unwrap_or(0.0));
                args.layer_norm_eps = Some(self.layer_norm_eps.unwrap_or(LAYER_NORM_EPS));
            }
        }
        if self.optimizer == OptimizerChoice::Sgd {
            args.momentum = Some(self.momentum.unwrap_or(0.0));
        }
        args
    }

    /// The model the flags describe, for vocabularies of these sizes. It
    /// reads the explicit settings, so its defaults are those of
    /// [`TrainArgs::explicit`], which `config.toml` records.
    fn model_config(&self, src_vocab: usize, tgt_vocab: usize) -> AnyConfig {
        let explicit = self.explicit();
        let get = |value: Option<usize>| value.unwrap_or_default();
        match self.model {
            ModelKind::Rnn => AnyConfig::Seq2Seq(Seq2SeqConfig {
                attention: explicit.attention().0,
                emb_dim: get(explicit.emb),
                hidden_dim: get(explicit.hidden),
                num_layers: self.layers,
                bidirectional: self.bidirectional,
                attn_dim: get(explicit.attn_dim),
                dropout: self.dropout(),
                rnn: match explicit.rnn {
                    Some(RnnChoice::Lstm) | None => RnnKind::Lstm,
                    Some(RnnChoice::Gru) => RnnKind::Gru,
                },
                placement: match explicit.placement {
                    Some(PlacementChoice::Luong) | None => Placement::Luong,
                    Some(PlacementChoice::Bahdanau) => Placement::Bahdanau,
                },
                init: self.init,
                ..Seq2SeqConfig::new(src_vocab, tgt_vocab)
            }),
            ModelKind::Transformer => AnyConfig::Transformer(TransformerConfig {
                d_model: get(explicit.d_model),
                heads: get(explicit.heads),
                encoder_layers: get(explicit.encoder_layers),
                decoder_layers: get(explicit.decoder_layers),
                ff_dim: get(explicit.ff_dim),
                norm: match explicit.norm {
                    Some(NormChoice::Pre) | None => NormPosition::Pre,
                    Some(NormChoice::Post) => NormPosition::Post,
                },
                dropout: self.dropout(),
                attention_dropout: explicit.attention_dropout.unwrap_or_default(),
                activation: match explicit.activation {
                    Some(ActivationChoice::Relu) | None => Activation::Relu,
                    Some(ActivationChoice::Gelu) => Activation::Gelu,
                    Some(ActivationChoice::GeluTanh) => Activation::GeluTanh,
                },
                positions: match explicit.positions {
                    Some(PositionsChoice::Sinusoidal) | None => PositionKind::Sinusoidal,
                    Some(PositionsChoice::Learned) => PositionKind::Learned,
                },
                max_len: get(explicit.max_positions),
                tie_output: self.tie_output,
                tie_source: self.tie_source,
                layer_norm_eps: explicit.layer_norm_eps.unwrap_or(LAYER_NORM_EPS) as f32,
                init: self.init,
                ..TransformerConfig::new(src_vocab, tgt_vocab)
            }),
        }
    }
}

/// The recurrent model's sizes by default.
const EMB: usize = 256;
const HIDDEN: usize = 384;
/// The Transformer's width and heads by default.
const D_MODEL: usize = 256;
const HEADS: usize = 4;
/// The longest source or output a trained Transformer reads, in tokens.
const MAX_POSITIONS: usize = 1024;
/// The layer norms' ε, PyTorch's.
const LAYER_NORM_EPS: f64 = 1e-5;

/// Pairs encoded for training, with the raw target sentences for BLEU.
struct Prepared {
    tokenizer: TextTokenizer,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    train: Vec<Example>,
    valid: Vec<Example>,
    /// The training and validation pairs as text (for `--export-splits`).
    train_pairs: Corpus,
    valid_pairs: Corpus,
    test: Corpus,
}

/// Reads, filters, splits and encodes the corpus.
fn prepare(args: &TrainArgs, seed: u64, out: &Output) -> Result<Prepared> {
    let data = args.data.as_deref().ok_or_else(|| Error::usage("--data", "is needed, as a flag or in --config"))?;
    let loaded = Corpus::read_tsv(data, &ReadOptions { lenient: args.lenient, ..ReadOptions::default() })?;
    // Lenient reading says what it left out, in the note and in the too-few error.
    let skipped = match loaded.skipped.first() {
        Some(first) => format!(
            "; {} malformed lines skipped, the first {}:{}: {}",
            loaded.skipped.len(),
            data.display(),
            first.line,
            first.problem
        ),
        None => String::new(),
    };
    if let Some(first) = loaded.extra_columns.first() {
        let lines = loaded.extra_columns.len();
        out.note(&format!("note: {lines} lines have more than two columns, the first {}:{first}; only the first two (source, target) are read", data.display()));
    }
    let mut corpus = loaded.corpus;
    let read = corpus.len();
    let words = WordTokenizer::lowercased();
    corpus.filter_max_len(&words, args.max_len, args.max_len);
    corpus.dedup();
    let held_out = args.test_size + args.valid_size;
    if corpus.len() < 2 * held_out {
        return Err(Error::invalid(
            "--test-size/--valid-size",
            format!(
                "{}: {} usable pairs (of {read}, up to --max-len {} tokens{skipped}) is too few for --test-size {} and --valid-size {} (at least twice their sum is needed)",
                data.display(),
                corpus.len(),
                args.max_len,
                args.test_size,
                args.valid_size
            ),
        ));
    }
    let n = corpus.len() as f64;
    let fractions = SplitFractions { valid: args.valid_size as f64 / n, test: args.test_size as f64 / n };
    let split = corpus.split(fractions, &mut StdRng::seed_from_u64(args.split_seed.unwrap_or(seed)))?;
    let (tokenizer, src_vocab, tgt_vocab) = tokenizer_and_vocabs(args, words, &split.train);
    out.note(&format!(
        "{}: {read} pairs read{skipped}, {} kept (up to {} tokens, no duplicates); {} train / {} validation / {} test; vocabularies {} / {}",
        data.display(),
        corpus.len(),
        args.max_len,
        split.train.len(),
        split.valid.len(),
        split.test.len(),
        src_vocab.len(),
        tgt_vocab.len()
    ));
    Ok(Prepared {
        train: split.train.encode(&tokenizer, &src_vocab, &tokenizer, &tgt_vocab),
        valid: split.valid.encode(&tokenizer, &src_vocab, &tokenizer, &tgt_vocab),
        train_pairs: split.train,
        valid_pairs: split.valid,
        test: split.test,
        tokenizer,
        src_vocab,
        tgt_vocab,
    })
}

/// The tokenizer `--tokenizer` asks for and the vocabulary of each language
/// (one for both with `--joint-vocab`), all learned on the training pairs only.
fn tokenizer_and_vocabs(args: &TrainArgs, words: WordTokenizer, train: &Corpus) -> (TextTokenizer, Vocab, Vocab) {
    let tokenizer = match args.tokenizer {
        TokenizerChoice::Word => TextTokenizer::Word(words),
        TokenizerChoice::Bpe => {
            let texts = train.pairs.iter().flat_map(|p| [p.src.as_str(), p.tgt.as_str()]);
            TextTokenizer::Bpe(Box::new(Bpe::learn(
                texts,
                &BpeConfig { merges: args.bpe_merges, ..BpeConfig::default() },
            )))
        }
    };
    let config = VocabConfig { min_freq: 2, max_size: Some(args.vocab_size) };
    if args.joint_vocab {
        let vocab = Vocab::build(train.pairs.iter().flat_map(|p| [&p.src, &p.tgt]), &tokenizer, &config);
        return (tokenizer, vocab.clone(), vocab);
    }
    let src_vocab = Vocab::build(train.pairs.iter().map(|p| &p.src), &tokenizer, &config);
    let tgt_vocab = Vocab::build(train.pairs.iter().map(|p| &p.tgt), &tokenizer, &config);
    (tokenizer, src_vocab, tgt_vocab)
}

/// `lingo train`: prepare, train within the budget, keep the best round,
/// write `model.ckpt`, score the test set. Each round appends a line to
/// `metrics.jsonl` and redraws `loss.png` in `--out`.
/// `--config` is read first, and `--out` claimed once the settings are known.
pub(crate) fn train(args: &TrainArgs, out: &Output) -> Result<()> {
    let args = &args.resolve()?;
    let seed = args.run.seed;
    let _claimed = RunDir::claim(&args.out)?;
    claim_out_dir(args)?;
    let data = prepare(args, seed, out)?;
    let model_config = args.model_config(data.src_vocab.len(), data.tgt_vocab.len());
    let mut model = AnyModel::new(model_config.clone(), &mut StdRng::seed_from_u64(seed))?;
    let mut config = train_config(args, seed, &data.train)?;
    ready_out_dir(args, &data)?;
    let start = Instant::now();
    config.progress = Progress::Bar; // the round lines are printed below, with the time
    config.control = Some(interrupt::stop_control()?);
    let spec = CheckpointSpec {
        dir: args.out.clone(),
        src_vocab: data.src_vocab.clone(),
        tgt_vocab: data.tgt_vocab.clone(),
        keep_epochs: if args.average > 1 { args.average } else { 0 },
    };
    config.checkpoints = Some(spec.clone());
    let slice_sizes = data.train.chunks(args.round_size).map(|c| c.len() as u64).collect();
    let run = Run { args, out, data, model_config, config, spec, slice_sizes };
    let (resume, mut metrics) = run.resume_or_start()?;
    // After a resume's check, so a refused resume leaves the run's file as it was.
    write_run_file(args)?;
    let first_round = resume.as_ref().map_or(1, |ckpt| ckpt.epoch as usize + 1);
    let trained = run.train_rounds(&mut model, resume.as_ref(), &mut metrics, first_round, start)?;
    let kept = run.keep(model, &trained)?;
    run.score_test(&kept, &trained, &metrics, first_round)
}

/// Refuses an `--out` that holds a run already, unless asked to continue it or replace it.
fn claim_out_dir(args: &TrainArgs) -> Result<()> {
    let previous = previous_run(&args.out);
    if !args.resume && !previous.is_empty() && !args.overwrite {
        let reason = format!(
            "holds a run already ({}); pass --resume to continue it, --overwrite to replace it, or choose another --out",
            previous.join(", ")
        );
        return Err(Error::OutDir { path: args.out.clone(), reason });
    }
    Ok(())
}

/// The training the flags describe, with the settings a resume must bring again.
fn train_config(args: &TrainArgs, seed: u64, train: &[Example]) -> Result<TrainConfig> {
    let mut config = TrainConfig::new(args.rounds, args.lr());
    config.batching.batch_size = args.batch_size;
    config.shards = args.shards;
    config.batching.bucket = true; // similar lengths together: less padding
    config.batching.max_tokens = args.batch_tokens;
    config.label_smoothing = args.label_smoothing;
    // A "round" is an epoch of `round_size` pairs (a slice of the corpus).
    config.epoch_size = Some(args.round_size);
    config.max_grad_norm = (args.max_grad_norm > 0.0).then_some(args.max_grad_norm);
    config.algorithm = args.algorithm();
    config.patience = args.patience;
    config.seed = seed;
    // Only a cosine needs the plan of every round to its end (up to MAX_EPOCHS of them).
    let total_steps = if args.decay() == DecayChoice::Cosine { config.steps_through(train, args.rounds)? } else { 0 };
    config.schedule = schedule(args, total_steps);
    config.extra_settings = run_settings(args, seed, train);
    Ok(config)
}

/// Writes the run's settings, every one explicit, as `--out/config.toml`,
/// atomically: `lingo train --config` on it repeats the run.
fn write_run_file(args: &TrainArgs) -> Result<()> {
    let text = RunFile::of(&args.explicit()).to_toml()?;
    let header =
        "# The settings of this run, every one explicit: `lingo train --config config.toml --out DIR` repeats it.\n";
    crate::output::write_file(&args.out.join(CONFIG_FILE), format!("{header}{text}").as_bytes())
}

/// Readies `--out` for the run, only once the corpus is read: a bad --data keeps the old run.
fn ready_out_dir(args: &TrainArgs, data: &Prepared) -> Result<()> {
    if args.overwrite {
        remove_run(&args.out)?;
    }
    // Half-written files of killed runs: model.ckpt, and metrics.jsonl as a
    // resume rewrites it (train_model clears those of last.ckpt and best.ckpt).
    for name in ["model.ckpt", "metrics.jsonl", CONFIG_FILE] {
        remove_stale_temp_files(&args.out.join(name))?;
    }
    if args.export_splits {
        export_splits(&args.out.join("splits"), data)?;
    }
    Ok(())
}

/// What the phases of a run share once its corpus is read and its training planned.
struct Run<'a> {
    args: &'a TrainArgs,
    out: &'a Output,
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

impl Run<'_> {
    /// Round r trains slice (r - 1) mod k: the pairs seen after round `round`.
    fn pairs_seen(&self, round: usize) -> u64 {
        (0..round).map(|r| self.slice_sizes[r % self.slice_sizes.len().max(1)]).sum::<u64>()
    }

    /// With `--resume`, the last checkpoint (refused if another run's) and the metrics up to it; else fresh metrics.
    fn resume_or_start(&self) -> Result<(Option<Checkpoint<TrainedModel<AnyConfig>>>, MetricsLog)> {
        let metrics_path = self.args.out.join("metrics.jsonl");
        if !self.args.resume {
            return Ok((None, MetricsLog::create(metrics_path)?));
        }
        let path = self.args.out.join("last.ckpt");
        let ckpt = load_resumable(&path, &self.model_config, &self.config, &self.data.src_vocab, &self.data.tgt_vocab)?;
        self.out.note(&format!("resuming from {} after round {}", path.display(), ckpt.epoch));
        let metrics = MetricsLog::resume(metrics_path, &ckpt.config.train_losses, &ckpt.config.val_losses)?;
        Ok((Some(ckpt), metrics))
    }

    /// The rounds, from `first_round`: after each, its line, its metrics and chart, and a new last round.
    fn train_rounds(
        &self,
        model: &mut AnyModel,
        resume: Option<&Checkpoint<TrainedModel<AnyConfig>>>,
        metrics: &mut MetricsLog,
        first_round: usize,
        start: Instant,
    ) -> Result<TrainResult> {
        let (args, out) = (self.args, self.out);
        let seconds_before = metrics.seconds_before();
        let chart = args.out.join("loss.png");
        let mut told_stdout_lost = false;
        train_model_with(model, &self.data.train, &self.data.valid, &self.config, resume, |r, _| {
            let elapsed = start.elapsed();
            let round = RoundMetrics {
                round: r.epoch,
                pairs_seen: Some(self.pairs_seen(r.epoch)),
                steps: Some(r.steps),
                train_loss: r.train_loss,
                val_loss: r.val_loss,
                seconds: Some(seconds_before + elapsed.as_secs_f64()),
            };
            out.say(&format!(
                "Round {}/{} | Train: {:.4} | Val: {:.4} | {:.0} s",
                r.epoch,
                args.rounds,
                r.train_loss,
                r.val_loss,
                elapsed.as_secs_f64()
            ));
            out.json(&metrics.push(round)?);
            if let Some(e) = out.stdout_lost()
                && !told_stdout_lost
            {
                told_stdout_lost = true;
                print_err(&format!(
                    "note: standard output failed ({e}); training goes on, every round is in {}",
                    args.out.join("metrics.jsonl").display()
                ));
            }
            metrics.plot(&chart)?;
            Ok::<_, Error>(Next::EndAt(self.last_round(r.epoch, elapsed.as_secs_f64(), first_round)))
        })
    }

    /// The last round the budget holds at this process's pace so far, re-planned after every
    /// round (it also sets the end of a decay). The pace is per pair: rounds differ in size (the
    /// corpus's last slice is short).
    fn last_round(&self, epoch: usize, elapsed: f64, first_round: usize) -> usize {
        let pairs = |round: usize| (self.pairs_seen(round) - self.pairs_seen(first_round - 1)) as f64;
        let per_pair = elapsed / pairs(epoch);
        (epoch..=self.args.rounds)
            .take_while(|&end| pairs(end) * per_pair <= self.args.time_budget)
            .last()
            .unwrap_or(epoch)
    }

    /// Writes `model.ckpt`: the best round, or the average of the last rounds when its validation
    /// loss is lower. Interrupted, only the best round is kept, and an error says so.
    fn keep(&self, mut model: AnyModel, trained: &TrainResult) -> Result<Kept> {
        let completed = trained.val_losses.len();
        // Interrupted: nothing new (no average, no test set), only what is kept.
        let interrupted = trained.interrupted || interrupt::requested();
        if interrupted && trained.best_epoch == 0 {
            return Err(Error::Interrupted(format!(
                "before round {} ended: no round to keep, no model.ckpt written",
                completed + 1
            )));
        }
        // The best round's weights, saved with the tokenizer for `lingo translate`.
        let best = load_own::<AnyConfig>(&self.args.out.join("best.ckpt"), trained.run_id)?;
        best.restore(&mut model)?;
        let best_loss =
            best.config.val_losses.get(best.config.best_epoch.saturating_sub(1)).copied().unwrap_or(f32::NAN);
        self.out.note(&format!("best round {} (validation loss {best_loss:.4})", best.config.best_epoch));
        let mut chosen = format!("round {}", best.config.best_epoch);
        let path = self.args.out.join("model.ckpt");
        if interrupted {
            self.save(model, &path)?;
            let kept = format!("wrote {} ({chosen}, validation loss {best_loss:.4})", path.display());
            return Err(Error::Interrupted(format!(
                "in round {}: {kept}; --resume continues after round {completed}",
                completed + 1
            )));
        }
        let mut average_loss = None;
        if self.args.average > 1 {
            let (averaged, loss, rounds) = self.average_last(trained)?;
            average_loss = Some(loss);
            if loss < best_loss {
                model = averaged;
                chosen = format!("the average of {rounds}");
            }
        }
        let translator = self.save(model, &path)?;
        interrupt::training_done();
        self.out.note(&format!("wrote {} ({chosen})", path.display()));
        if interrupt::requested() {
            // Stopped while the average was scored: the model is whole, the test set not begun.
            return Err(Error::Interrupted(format!(
                "after round {completed}: wrote {} ({chosen}); the test set was not scored",
                path.display()
            )));
        }
        Ok(Kept { translator, chosen, average_loss })
    }

    /// Saves `model` with the tokenizer and vocabularies, all `lingo translate` needs.
    fn save(&self, model: AnyModel, path: &Path) -> Result<Translator> {
        let data = &self.data;
        let translator =
            Translator::new(model, data.tokenizer.clone(), data.src_vocab.clone(), data.tgt_vocab.clone())?;
        translator.save(path)?;
        Ok(translator)
    }

    /// `--average`: the average of the last rounds' weights, its validation loss, and which rounds.
    fn average_last(&self, trained: &TrainResult) -> Result<(AnyModel, f32, String)> {
        let last = trained.val_losses.len() as u64;
        let rounds = last.saturating_sub(self.args.average as u64 - 1).max(1)..=last;
        let dicts = rounds
            .clone()
            .map(|r| load_own::<AnyConfig>(&self.spec.epoch_path(r), trained.run_id).map(|c| c.params))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let averaged = AnyModel::from_state_dict(&self.model_config, &StateDict::average(&dicts)?)?;
        let loss = evaluate(&averaged, &self.config.validation_batches(&self.data.valid)?, self.args.label_smoothing)?;
        let rounds = format!("rounds {}-{}", rounds.start(), rounds.end());
        self.out.note(&format!("average of {rounds}: validation loss {loss:.4}"));
        Ok((averaged, loss, rounds))
    }

    /// Scores the kept model on the test set: `test.hyp.txt`, BLEU, chrF and examples, then the
    /// run's summary.
    fn score_test(&self, kept: &Kept, trained: &TrainResult, metrics: &MetricsLog, first_round: usize) -> Result<()> {
        let (args, data) = (self.args, &self.data);
        let train_seconds = trained.seconds;
        let sources: Vec<&str> = data.test.pairs.iter().map(|p| p.src.as_str()).collect();
        let decoding = Instant::now();
        let options = TranslateOptions { attention: false, ..args.search.options() };
        let hyps: Vec<String> = kept.translator.translate(&sources, &options)?.into_iter().map(|t| t.text).collect();
        let decode_seconds = decoding.elapsed().as_secs_f64();
        write_lines(&args.out.join("test.hyp.txt"), &hyps)?;
        // The word tokenizer lowercases, so the references are lowercased too:
        // this is case-insensitive BLEU (sacrebleu -lc).
        let refs: Vec<String> = data.test.pairs.iter().map(|p| p.tgt.to_lowercase()).collect();
        let bleu = corpus_bleu(&hyps, &refs)?;
        let chrf = corpus_chrf(&hyps, &refs)?;
        let mut lines = vec![format!(
            "\ntest set ({} pairs, {}): {bleu}",
            refs.len(),
            if args.search.beam > 1 { format!("beam {}", args.search.beam) } else { "greedy".into() }
        )];
        lines.push(format!("chrF = {chrf:.2}   (lowercased; {train_seconds:.0} s of training)"));
        for ((src, hyp), reference) in sources.iter().zip(&hyps).zip(&data.test.pairs).take(args.show) {
            lines.push(format!("\n  source:     {src}\n  reference:  {}\n  lingo:      {hyp}", reference.tgt));
        }
        self.out.say(&lines.join("\n"));
        let seen = metrics.rounds().last().and_then(|m| m.pairs_seen).unwrap_or(0);
        let this_process = seen.saturating_sub(self.pairs_seen(first_round - 1));
        self.out.json(&json!({
            "bleu": bleu.score,
            "chrf": chrf,
            "train_seconds": train_seconds,
            "rounds": trained.val_losses.len(),
            "best_round": trained.best_epoch,
            "average_val_loss": kept.average_loss,
            "model": kept.chosen,
            "pairs_seen": seen,
            "pairs_per_second": this_process as f64 / train_seconds.max(1e-9),
            "test_pairs": refs.len(),
            "test_decode_seconds": decode_seconds,
            "beam": args.search.beam,
            "length_penalty": args.search.length_penalty,
            "coverage_penalty": args.search.coverage_penalty,
            "word_reward": args.search.word_reward,
            "stopping": choice_name(&args.search.stopping),
        }));
        Ok(())
    }
}

/// The files of a `lingo train` run, besides the `epoch-<round>.ckpt` it keeps.
const RUN_FILES: [&str; 7] =
    ["model.ckpt", "last.ckpt", "best.ckpt", "metrics.jsonl", "loss.png", "test.hyp.txt", CONFIG_FILE];

/// The resolved settings of a run, in `--out` ([`crate::config`]).
const CONFIG_FILE: &str = "config.toml";

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

/// `--overwrite`: deletes the earlier run's files in `dir` (and its `splits/`), nothing else.
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

/// The flags that shape what `lingo train` computes, by flag, and a
/// fingerprint of the training pairs: a resume must bring the same (stored
/// in every checkpoint, compared by [`load_resumable`]).
fn run_settings(args: &TrainArgs, seed: u64, train: &[Example]) -> Vec<(String, String)> {
    let mut flags: Vec<(&str, String)> = vec![
        ("--seed", seed.to_string()),
        ("--split-seed", args.split_seed.unwrap_or(seed).to_string()),
        ("--lenient", args.lenient.to_string()),
        ("--max-len", args.max_len.to_string()),
        ("--test-size", args.test_size.to_string()),
        ("--valid-size", args.valid_size.to_string()),
        ("--tokenizer", format!("{:?}", args.tokenizer).to_lowercase()),
        ("--bpe-merges", args.bpe_merges.to_string()),
        ("--vocab-size", args.vocab_size.to_string()),
        ("--joint-vocab", args.joint_vocab.to_string()),
        ("--model", format!("{:?}", args.model).to_lowercase()),
        ("--layers", args.layers.to_string()),
        ("--init", choice_name(&args.init)),
    ];
    // The model's sizes by flag, so that a resume names the flag that changed.
    match args.model_config(0, 0) {
        AnyConfig::Seq2Seq(c) => flags.extend([
            ("--attention", AttentionChoice(c.attention).to_string()),
            ("--emb", c.emb_dim.to_string()),
            ("--hidden", c.hidden_dim.to_string()),
            ("--bidirectional", c.bidirectional.to_string()),
            ("--rnn", format!("{:?}", c.rnn).to_lowercase()),
            ("--placement", format!("{:?}", c.placement).to_lowercase()),
            ("--attn-dim", c.attn_dim.to_string()),
        ]),
        AnyConfig::Transformer(c) => flags.extend([
            ("--d-model", c.d_model.to_string()),
            ("--heads", c.heads.to_string()),
            ("--ff-dim", c.ff_dim.to_string()),
            ("--norm", format!("{:?}", c.norm).to_lowercase()),
            ("--encoder-layers", c.encoder_layers.to_string()),
            ("--decoder-layers", c.decoder_layers.to_string()),
            ("--activation", format!("{:?}", c.activation).to_lowercase()),
            ("--positions", format!("{:?}", c.positions).to_lowercase()),
            ("--max-positions", c.max_len.to_string()),
            ("--attention-dropout", c.attention_dropout.to_string()),
            ("--tie-output", c.tie_output.to_string()),
            ("--tie-source", c.tie_source.to_string()),
            ("--layer-norm-eps", c.layer_norm_eps.to_string()),
        ]),
    }
    flags.extend([
        ("--dropout", args.dropout().to_string()),
        ("--batch-size", args.batch_size.to_string()),
        ("--batch-tokens", args.batch_tokens.map_or("none".into(), |n| n.to_string())),
        ("--shards", args.shards.to_string()),
        ("--optimizer", choice_name(&args.optimizer)),
        ("--weight-decay", args.weight_decay.to_string()),
        ("--momentum", args.momentum.map_or("none".into(), |m| m.to_string())),
        ("--max-grad-norm", args.max_grad_norm.to_string()),
        ("--patience", args.patience.map_or("none".into(), |n| n.to_string())),
        ("--lr", args.lr().to_string()),
        ("--warmup", args.warmup.to_string()),
        ("--decay", format!("{:?}", args.decay()).to_lowercase()),
        ("--label-smoothing", args.label_smoothing.to_string()),
        ("--round-size", args.round_size.to_string()),
    ]);
    let mut settings: Vec<(String, String)> =
        flags.into_iter().map(|(flag, value)| (flag.to_string(), value)).collect();
    // The same flags on an edited corpus give other pairs.
    let ids: Vec<u8> = train
        .iter()
        .flat_map(|e| e.src.iter().chain([&usize::MAX]).chain(&e.tgt))
        .flat_map(|&id| (id as u64).to_le_bytes())
        .collect();
    settings.push((
        "--data".into(),
        format!("{} training pairs, fingerprint {:016x}", train.len(), lingo::nn::fnv1a64(&ids)),
    ));
    settings
}

/// `--warmup` and `--decay` as a schedule; the cosine ends at step
/// `total_steps` (the end of `--rounds`) until the pace, re-planned after
/// every round, moves the end to the last round the time budget holds.
fn schedule(args: &TrainArgs, total_steps: u64) -> Schedule {
    let warmup_steps = args.warmup as u64;
    match args.decay() {
        DecayChoice::None => Schedule::LinearWarmup { warmup_steps },
        DecayChoice::InverseSqrt => Schedule::InverseSqrt { warmup_steps },
        DecayChoice::Cosine => {
            Schedule::WarmupCosine { warmup_steps, total_steps: total_steps.max(warmup_steps + 1), min_lr: 0.0 }
        }
    }
}

/// Writes `lines`, one per line, to `path`.
fn write_lines(path: &Path, lines: &[String]) -> Result<()> {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

/// `--export-splits`: the split and the tokens the model trains on, for a
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
    let meta = json!({ "tokenizer": data.tokenizer.kind(), "end_of_word": lingo::data::END_OF_WORD });
    std::fs::write(dir.join("meta.json"), format!("{meta}\n")).map_err(|e| Error::io(dir.join("meta.json"), e))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{TrainArgs, schedule};
    use crate::{Cli, Command};
    use lingo::attention::Scorer;
    use lingo::nn::{Algorithm, AnyConfig, NormPosition, Schedule, Seq2SeqConfig, TransformerConfig};

    fn args(flags: &[&str]) -> TrainArgs {
        let cli = Cli::try_parse_from(["lingo", "train", "--data", "x.tsv"].iter().chain(flags)).unwrap();
        let Command::Train(args) = cli.command else { unreachable!() };
        *args
    }

    #[test]
    fn the_defaults_build_the_recipes_models() {
        let AnyConfig::Seq2Seq(rnn) = args(&[]).model_config(9, 9) else { panic!("not rnn") };
        let want = Seq2SeqConfig {
            attention: Some(Scorer::Dot),
            emb_dim: 256,
            hidden_dim: 384,
            attn_dim: 384,
            ..Seq2SeqConfig::new(9, 9)
        };
        assert_eq!(rnn, want);
        let AnyConfig::Transformer(transformer) = args(&["--model", "transformer"]).model_config(9, 9) else {
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
        assert_eq!(args(&[]).algorithm(), Algorithm::adam());
        assert_eq!(args(&["--optimizer", "adamw", "--weight-decay", "0.01"]).algorithm(), Algorithm::adamw(0.01));
        let sgd = args(&["--optimizer", "sgd", "--momentum", "0.9", "--weight-decay", "1e-4"]).algorithm();
        assert_eq!(sgd, Algorithm::Sgd { momentum: 0.9, dampening: 0.0, nesterov: false, weight_decay: 1e-4 });
        let adam = args(&["--weight-decay", "0.5"]).algorithm();
        assert!(matches!(adam, Algorithm::Adam { weight_decay: 0.5, beta2: 0.999, .. }), "{adam:?}");
    }

    #[test]
    fn each_decay_is_its_schedule() {
        let cosine = schedule(&args(&["--decay", "cosine", "--warmup", "3"]), 7);
        assert_eq!(cosine, Schedule::WarmupCosine { warmup_steps: 3, total_steps: 7, min_lr: 0.0 });
        assert_eq!(
            schedule(&args(&["--decay", "cosine"]), 7),
            Schedule::WarmupCosine { warmup_steps: 500, total_steps: 501, min_lr: 0.0 }
        );
        assert_eq!(schedule(&args(&[]), 7), Schedule::LinearWarmup { warmup_steps: 500 });
        assert_eq!(schedule(&args(&["--decay", "inverse-sqrt"]), 7), Schedule::InverseSqrt { warmup_steps: 500 });
    }
}
