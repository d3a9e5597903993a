//! Value parsers shared by the commands: every number is checked while the
//! arguments are read, so a bad value is rejected before any work, with
//! clap's message naming the flag. The real-valued flags also set
//! `allow_hyphen_values`: clap's negative-number detection does not know
//! exponents, and would read `--lr -3e-3` as an unknown flag `-3`.

use std::fmt;
use std::str::FromStr;

use lingo::attention::Scorer;
use lingo::nn::{BeamConfig, Stopping, TranslateOptions};

/// A count that must be at least 1 (sizes, epochs, batch, hidden units, beam).
///
/// ```
/// use lingo_cli::args::positive;
/// assert_eq!(positive("64"), Ok(64));
/// assert_eq!(positive("0").unwrap_err(), "must be at least 1, got 0");
/// assert!(positive("-3").is_err());
/// ```
pub fn positive(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1, got 0".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("must be a whole number at least 1, got {text:?}")),
    }
}

/// A count from 1 to `MAX`: every count flag has a bound, so no value can
/// ask for more than a machine holds before the memory estimate
/// ([`crate::budget`]) weighs the whole command.
///
/// ```
/// use lingo_cli::args::at_most;
/// assert_eq!(at_most::<10>("10"), Ok(10));
/// assert_eq!(at_most::<10>("11").unwrap_err(), "must be at most 10, got 11");
/// assert_eq!(at_most::<10>("0").unwrap_err(), "must be at least 1, got 0");
/// ```
pub fn at_most<const MAX: usize>(text: &str) -> Result<usize, String> {
    match positive(text)? {
        n if n > MAX => Err(format!("must be at most {MAX}, got {n}")),
        n => Ok(n),
    }
}

/// The largest embedding or hidden size ([`dimension`]): the recurrent
/// weights' orthogonal initialisation is cubic in it, and takes seconds
/// here (see `docs/reliability.md`).
pub const MAX_DIMENSION: usize = 2048;
/// The most layers of an encoder or a decoder.
pub const MAX_LAYERS: usize = 64;
/// The largest feed-forward hidden size of a Transformer.
pub const MAX_FEED_FORWARD: usize = 4 * MAX_DIMENSION;
/// The most tokens in a sequence (`--max-len`, `--max-words`, `--lengths`).
pub const MAX_LENGTH: usize = 256;
/// The widest beam.
pub const MAX_BEAM: usize = 256;
/// The most sentence pairs (or padded tokens) in a batch.
pub const MAX_BATCH: usize = 65_536;
/// The most epochs or rounds.
pub const MAX_EPOCHS: usize = 100_000;
/// The most generated or held-out examples; the memory estimate decides below it.
pub const MAX_EXAMPLES: usize = 100_000_000;
/// The most shards (row groups on their own threads) a batch is cut into.
pub const MAX_SHARDS: usize = 256;
/// The largest vocabulary, and the most BPE merges.
pub const MAX_VOCAB: usize = 1_000_000;
/// The most positions a Transformer's table of positions covers.
pub const MAX_POSITION_TABLE: usize = 65_536;
/// The most rounds averaged (each one's weights are in memory at once).
pub const MAX_AVERAGE: usize = 100;

/// A model size (embedding, hidden units): from 1 to [`MAX_DIMENSION`].
///
/// ```
/// use lingo_cli::args::dimension;
/// assert_eq!(dimension("256"), Ok(256));
/// assert_eq!(dimension("0").unwrap_err(), "must be at least 1, got 0");
/// assert_eq!(dimension("100000").unwrap_err(), "must be at most 2048, got 100000");
/// ```
pub fn dimension(text: &str) -> Result<usize, String> {
    at_most::<MAX_DIMENSION>(text)
}

/// A thread count: from 1 to four times the cores this machine has (more
/// threads than that only wait on each other).
///
/// ```
/// use lingo_cli::args::threads;
/// let cores = std::thread::available_parallelism().unwrap().get();
/// assert_eq!(threads("1"), Ok(1));
/// assert!(threads(&(4 * cores).to_string()).is_ok());
/// assert!(threads(&(4 * cores + 1).to_string()).unwrap_err().contains("cores"));
/// ```
pub fn threads(text: &str) -> Result<usize, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match positive(text)? {
        n if n > 4 * cores => {
            Err(format!("must be at most {} (four times the {cores} cores here), got {n}", 4 * cores))
        }
        n => Ok(n),
    }
}

/// `--json`, which every command reads.
///
/// ```
/// use clap::Parser;
/// let cli = lingo_cli::Cli::try_parse_from(["lingo", "score", "--hyp", "h", "--ref", "r", "--json"]).unwrap();
/// let lingo_cli::Command::Score(args) = cli.command else { unreachable!() };
/// assert!(args.output.json);
/// ```
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct JsonFlag {
    /// Print one JSON object per line instead of tables
    #[arg(long)]
    pub json: bool,
}

/// `--threads` and `--json`: the flags of a command that runs a model
/// without drawing random numbers (`lingo translate`).
///
/// ```
/// use clap::Parser;
/// let cli = lingo_cli::Cli::try_parse_from(["lingo", "translate", "--checkpoint", "m", "--threads", "1"]).unwrap();
/// let lingo_cli::Command::Translate(args) = cli.command else { unreachable!() };
/// assert_eq!(args.compute.threads, Some(1));
/// ```
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct ComputeFlags {
    /// Worker threads (rayon's pool; it also shares out large products; default: all cores; at most four times the cores)
    #[arg(long, value_parser = threads)]
    pub threads: Option<usize>,
    /// `--json`.
    #[command(flatten)]
    pub output: JsonFlag,
}

/// `--beam`, `--length-penalty`, `--coverage-penalty`, `--word-reward` and
/// `--stopping`: how beam search finds and ranks outputs, for `lingo
/// translate` and for the test set of `lingo train`.
///
/// ```
/// use clap::Parser;
/// let cli = lingo_cli::Cli::try_parse_from(["lingo", "translate", "--checkpoint", "m", "--length-penalty", "1"]).unwrap();
/// let lingo_cli::Command::Translate(args) = cli.command else { unreachable!() };
/// let search = args.search.options().search;
/// assert_eq!((search.beam_size, search.alpha, search.beta), (5, 1.0, 0.0));
/// ```
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct SearchFlags {
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
    pub stopping: StoppingChoice,
}

/// When beam search ends a sentence's search (`--stopping`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoppingChoice {
    /// Once --beam outputs have ended (fairseq's rule): the shortest end first, and the penalties rank only those
    KFinished,
    /// Once no live beam can outscore the best ended output (Tensor2Tensor's rule): longer outputs get to end, at the cost of more steps
    Bound,
}

impl SearchFlags {
    /// The search these flags ask for; every other option keeps
    /// [`TranslateOptions::default`]'s value.
    ///
    /// ```
    /// use clap::Parser;
    /// let cli = lingo_cli::Cli::try_parse_from(["lingo", "translate", "--checkpoint", "m", "--beam", "1"]).unwrap();
    /// let lingo_cli::Command::Translate(args) = cli.command else { unreachable!() };
    /// assert_eq!(args.search.options().search.beam_size, 1);
    /// ```
    pub fn options(&self) -> TranslateOptions {
        let search = BeamConfig {
            beam_size: self.beam,
            alpha: self.length_penalty as f32,
            beta: self.coverage_penalty as f32,
            gamma: self.word_reward as f32,
            stopping: match self.stopping {
                StoppingChoice::KFinished => Stopping::KFinished,
                StoppingChoice::Bound => Stopping::Bound,
            },
            ..BeamConfig::default()
        };
        TranslateOptions { search, ..TranslateOptions::default() }
    }
}

/// How the commands that train on a generated task (`ablation`,
/// `alignment-suite`) train each model; the Transformer keeps its own
/// learning-rate schedule.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct TaskTraining {
    /// Epochs per model
    #[arg(long, default_value = "16", value_parser = at_most::<MAX_EPOCHS>)]
    pub epochs: usize,
    /// Sentences per batch
    #[arg(long, default_value = "64", value_parser = at_most::<MAX_BATCH>)]
    pub batch_size: usize,
    /// Adam's learning rate of the recurrent models (the Transformer has its own schedule)
    #[arg(long, default_value = "5e-3", value_parser = positive_real, allow_hyphen_values = true)]
    pub lr: f64,
    /// Embedding size
    #[arg(long, default_value = "64", value_parser = dimension)]
    pub emb: usize,
    /// LSTM hidden size, and the Transformer's width
    #[arg(long, default_value = "64", value_parser = dimension)]
    pub hidden: usize,
}

/// `--seed`, `--threads` and `--json`: the flags of a command that trains
/// (`ablation`, `sort-study`, `train`).
///
/// ```
/// use clap::Parser;
/// let cli = lingo_cli::Cli::try_parse_from(["lingo", "ablation", "--seed", "3", "--json"]).unwrap();
/// let lingo_cli::Command::Ablation(args) = cli.command else { unreachable!() };
/// assert_eq!((args.run.seed, args.run.compute.output.json), (3, true));
/// ```
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct RunFlags {
    /// Seed of every random choice (data, initialisation, batch order)
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// `--threads` and `--json`.
    #[command(flatten)]
    pub compute: ComputeFlags,
}

/// Checks that every multi-head scorer among `choices` splits `hidden`
/// (the attention size) evenly, naming `--hidden`; the commands call it
/// before any work.
///
/// ```
/// use lingo_cli::args::{AttentionChoice, check_heads};
/// let choices: Vec<AttentionChoice> = vec!["dot".parse().unwrap(), "multi_head:3".parse().unwrap()];
/// assert!(check_heads(&choices, 63).is_ok());
/// assert_eq!(check_heads(&choices, 64).unwrap_err().to_string(), "invalid --hidden: must be a multiple of 3 for multi_head:3, got 64");
/// ```
pub fn check_heads<'a>(choices: impl IntoIterator<Item = &'a AttentionChoice>, hidden: usize) -> crate::Result<()> {
    for choice in choices {
        if let Some(Scorer::MultiHead { heads }) = choice.0
            && !hidden.is_multiple_of(heads)
        {
            return Err(crate::Error::usage(
                "--hidden",
                format!("must be a multiple of {heads} for {choice}, got {hidden}"),
            ));
        }
    }
    Ok(())
}

/// One configuration of `lingo ablation`: the recurrent model with an
/// attention choice, or the Transformer.
///
/// ```
/// use lingo_cli::args::ModelChoice;
/// let t: ModelChoice = "transformer".parse().unwrap();
/// assert_eq!((t.to_string(), t.label()), ("transformer".to_string(), "Transformer (2+2 layers)".to_string()));
/// assert_eq!("dot".parse::<ModelChoice>().unwrap().label(), "dot (Luong)");
/// assert!("luong".parse::<ModelChoice>().unwrap_err().contains("transformer"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelChoice {
    /// The LSTM encoder–decoder with this attention (or none).
    Recurrent(AttentionChoice),
    /// The encoder–decoder Transformer.
    Transformer,
}

impl ModelChoice {
    /// The name in tables.
    ///
    /// ```
    /// assert_eq!(lingo_cli::args::ModelChoice::Transformer.label(), "Transformer (2+2 layers)");
    /// ```
    pub fn label(self) -> String {
        match self {
            ModelChoice::Recurrent(choice) => choice.label(),
            ModelChoice::Transformer => "Transformer (2+2 layers)".into(),
        }
    }
}

impl fmt::Display for ModelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelChoice::Recurrent(choice) => choice.fmt(f),
            ModelChoice::Transformer => f.write_str("transformer"),
        }
    }
}

impl FromStr for ModelChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "transformer" => Ok(ModelChoice::Transformer),
            name => name.parse().map(ModelChoice::Recurrent).map_err(|e| format!("{e}, or transformer")),
        }
    }
}

/// A finite number above 0 (learning rates, seconds).
///
/// ```
/// use lingo_cli::args::positive_real;
/// assert_eq!(positive_real("5e-3"), Ok(0.005));
/// assert_eq!(positive_real("-0.1").unwrap_err(), "must be a finite number above 0, got -0.1");
/// assert!(positive_real("NaN").is_err());
/// ```
pub fn positive_real(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("must be a finite number above 0, got {text}")),
    }
}

/// A finite number of at least 0 (weight decay, momentum; a clipping norm, where 0 is none).
///
/// ```
/// use lingo_cli::args::non_negative_real;
/// assert_eq!(non_negative_real("0"), Ok(0.0));
/// assert_eq!(non_negative_real("-1").unwrap_err(), "must be a finite number of at least 0, got -1");
/// assert!(non_negative_real("inf").is_err());
/// ```
pub fn non_negative_real(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("must be a finite number of at least 0, got {text}")),
    }
}

/// Any finite number (a word reward, where a negative one is a penalty).
///
/// ```
/// use lingo_cli::args::finite_real;
/// assert_eq!(finite_real("-0.5"), Ok(-0.5));
/// assert_eq!(finite_real("inf").unwrap_err(), "must be a finite number, got inf");
/// ```
pub fn finite_real(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(format!("must be a finite number, got {text}")),
    }
}

/// A probability-like value in `[0, 1)` (label smoothing, dropout).
///
/// ```
/// use lingo_cli::args::unit_fraction;
/// assert_eq!(unit_fraction("0.1"), Ok(0.1));
/// assert!(unit_fraction("1").is_err());
/// ```
pub fn unit_fraction(text: &str) -> Result<f32, String> {
    match text.trim().parse::<f32>() {
        Ok(x) if (0.0..1.0).contains(&x) => Ok(x),
        _ => Err(format!("must be a number in [0, 1), got {text}")),
    }
}

/// One configuration of an ablation: no attention, or a scorer.
///
/// ```
/// use lingo_cli::args::AttentionChoice;
/// let dot: AttentionChoice = "dot".parse().unwrap();
/// assert_eq!(dot.label(), "dot (Luong)");
/// assert_eq!("none".parse::<AttentionChoice>().unwrap().to_string(), "none");
/// assert!("luong".parse::<AttentionChoice>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionChoice(pub Option<Scorer>);

impl AttentionChoice {
    /// The name in tables: the scorer and the paper it comes from.
    ///
    /// ```
    /// let additive: lingo_cli::args::AttentionChoice = "additive".parse().unwrap();
    /// assert_eq!(additive.label(), "additive (Bahdanau)");
    /// ```
    pub fn label(self) -> String {
        match self.0 {
            None => "no attention".into(),
            Some(Scorer::Dot | Scorer::General) => format!("{} (Luong)", self),
            Some(Scorer::Additive) => "additive (Bahdanau)".into(),
            Some(scorer) => format!("{scorer} (Transformer)"),
        }
    }
}

impl fmt::Display for AttentionChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("none"),
            Some(scorer) => write!(f, "{scorer}"),
        }
    }
}

impl FromStr for AttentionChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "none" => Ok(AttentionChoice(None)),
            name => name.parse::<Scorer>().map(|s| AttentionChoice(Some(s))).map_err(|e| format!("{e}, or none")),
        }
    }
}
