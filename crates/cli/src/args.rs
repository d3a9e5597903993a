//! The flag groups the commands share, and the parsers of the flags that
//! are not lessons' settings. Every number is checked while the arguments
//! are read, so a bad value is rejected before any work, with clap's
//! message naming the flag; the bounds themselves are the lessons'
//! ([`lingo::lessons::settings`]). The real-valued flags also set
//! `allow_hyphen_values`: clap's negative-number detection does not know
//! exponents, and would read `--lr -3e-3` as an unknown flag `-3`.

use lingo::lessons::settings::{MAX_BEAM, at_most, finite_real, non_negative_real, positive};
use lingo::nn::{BeamConfig, Stopping, TranslateOptions};

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

/// `--seed`, `--threads` and `--json`: the flags of a command that trains
/// and whose seed is not yet a lesson's setting (`alignment-suite`, `train`).
///
/// ```
/// use clap::Parser;
/// let cli = lingo_cli::Cli::try_parse_from(["lingo", "train", "--data", "x", "--seed", "3", "--json"]).unwrap();
/// let lingo_cli::Command::Train(args) = cli.command else { unreachable!() };
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
