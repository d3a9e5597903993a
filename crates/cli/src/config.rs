//! `lingo train --config run.toml`: the settings of a run in a TOML file.
//!
//! A run file has four sections, `[data]`, `[model]`, `[train]` and
//! `[decode]`, as JoeyNMT's and OpenNMT's configurations do; each key is a
//! flag of `lingo train` in snake case (`batch_size` for `--batch-size`),
//! with two exceptions that read better in their section: `[data] path`
//! is `--data` and `[model] kind` is `--model`. A key left out takes the
//! flag's default (for `lr`, `decay` and `dropout`, the default of the
//! model kind the run resolves to); a flag given on the command line
//! overrides the file. `examples/run.toml` shows every key.
//!
//! What stays on the command line only is where a run writes and what it
//! shows, not what it computes: `--out`, `--resume`, `--overwrite`,
//! `--export-splits`, `--show`, `--threads`, `--json`.
//!
//! A few fields of lingo-nn's configurations have no key, because `lingo
//! train` fixes them: batches are always bucketed by length and shuffled;
//! Adam's betas and ε, and SGD's dampening and Nesterov switch, are
//! PyTorch's defaults; the time budget is planned per round by the command
//! (`time_budget`), not `TrainConfig::time_budget`; and the schedules are
//! the three of `decay` (no reduce-on-plateau, a cosine down to 0).
//!
//! Before training, `lingo train` writes the resolved run (file, flags and
//! defaults, every key explicit, the data path absolute) to `--out` as
//! `config.toml`; `lingo train --config OUT/config.toml --out OTHER`
//! trains the same run again.
//!
//! A file is read with the bounds of the flags (the parsers of
//! [`crate::args`]); an unknown key, a wrong type, a bad value or a syntax
//! error is one error naming the file, the line and the key:
//!
//! ```
//! let err = lingo_cli::config::RunFile::parse("[model]\nhiden = 64\n", "run.toml".as_ref()).unwrap_err();
//! assert!(err.to_string().starts_with("run.toml:2: unknown key \"hiden\" in [model] (expected one of "));
//! let err = lingo_cli::config::RunFile::parse("[train]\nbatch_size = \"64\"\n", "run.toml".as_ref()).unwrap_err();
//! assert_eq!(err.to_string(), "run.toml:2: batch_size in [train]: invalid type: string \"64\", expected u64");
//! ```

use std::collections::BTreeSet;
use std::fmt::Display;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, FromArgMatches, ValueEnum};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use lingo::lessons::models::AttentionChoice;
use lingo::lessons::settings::{
    MAX_AVERAGE, MAX_BATCH, MAX_BEAM, MAX_EPOCHS, MAX_EXAMPLES, MAX_FEED_FORWARD, MAX_LAYERS, MAX_LENGTH,
    MAX_POSITION_TABLE, MAX_SHARDS, MAX_VOCAB, at_most, dimension, finite_real, non_negative_real, positive,
    positive_real, unit_fraction,
};

use crate::args::StoppingChoice;
use crate::error::{Error, Result};
use crate::train::{
    ActivationChoice, DecayChoice, ModelKind, NormChoice, OptimizerChoice, PlacementChoice, PositionsChoice, RnnChoice,
    TokenizerChoice, TrainArgs,
};

/// The most bytes a run file may hold (the example, every key
/// documented, holds under 5 KB).
const MAX_RUN_FILE_BYTES: u64 = 1 << 20;

/// The flags given on the command line, by clap id (the field's name), as
/// opposed to those clap filled in with a default: only these override a
/// run file. It adds no flag of its own; flattened into [`TrainArgs`], it
/// reads the same matches.
///
/// ```
/// use clap::Parser;
/// let cli = lingo_cli::Cli::try_parse_from(["lingo", "train", "--data", "x.tsv", "--rounds", "100"]).unwrap();
/// let lingo_cli::Command::Train(args) = cli.command else { unreachable!() };
/// assert!(args.given.has("rounds") && args.given.has("data"));
/// assert!(!args.given.has("batch_size"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Given(BTreeSet<String>);

impl Given {
    /// Whether the flag with this clap id was on the command line.
    ///
    /// ```
    /// assert!(!lingo_cli::config::Given::default().has("seed"));
    /// ```
    pub fn has(&self, id: &str) -> bool {
        self.0.contains(id)
    }
}

impl FromArgMatches for Given {
    fn from_arg_matches(matches: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        let given = matches.ids().filter(|id| matches.value_source(id.as_str()) == Some(ValueSource::CommandLine));
        Ok(Given(given.map(|id| id.to_string()).collect()))
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = Given::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for Given {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        cmd
    }
}

/// A run file: every setting of `lingo train`, by section (see the module
/// docs). Every key may be left out.
///
/// ```
/// use lingo_cli::config::RunFile;
/// let file = RunFile::parse("[model]\nkind = \"transformer\"\nheads = 8\n", "run.toml".as_ref()).unwrap();
/// assert_eq!(file.to_toml().unwrap(), "[data]\n\n[model]\nkind = \"transformer\"\nheads = 8\n\n[train]\n\n[decode]\n");
/// assert_eq!(RunFile::parse(&file.to_toml().unwrap(), "again.toml".as_ref()).unwrap(), file);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFile {
    /// The corpus, its split and its tokens.
    #[serde(default)]
    pub(crate) data: DataSection,
    /// The model: its kind and every field of its configuration.
    #[serde(default)]
    pub(crate) model: ModelSection,
    /// The optimizer, its schedule, batches, rounds and the budget.
    #[serde(default)]
    pub(crate) train: TrainSection,
    /// How the test set is translated.
    #[serde(default)]
    pub(crate) decode: DecodeSection,
}

/// `[data]`: `--data` (as `path`), `--lenient`, `--split-seed`, `--max-len`,
/// `--test-size`, `--valid-size`, `--tokenizer`, `--bpe-merges`, `--vocab-size`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DataSection {
    pub(crate) path: Option<PathBuf>,
    pub(crate) lenient: Option<bool>,
    pub(crate) split_seed: Option<u64>,
    #[serde(default, deserialize_with = "count::<MAX_LENGTH, _>")]
    pub(crate) max_len: Option<usize>,
    #[serde(default, deserialize_with = "count::<MAX_EXAMPLES, _>")]
    pub(crate) test_size: Option<usize>,
    #[serde(default, deserialize_with = "count::<MAX_EXAMPLES, _>")]
    pub(crate) valid_size: Option<usize>,
    #[serde(default, with = "choice")]
    pub(crate) tokenizer: Option<TokenizerChoice>,
    #[serde(default, deserialize_with = "count::<MAX_VOCAB, _>")]
    pub(crate) bpe_merges: Option<usize>,
    #[serde(default, deserialize_with = "count::<MAX_VOCAB, _>")]
    pub(crate) vocab_size: Option<usize>,
    pub(crate) joint_vocab: Option<bool>,
}

/// `[model]`: `--model` (as `kind`) and every flag of the model's shape.
/// The keys of the other kind of model are refused, as their flags are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ModelSection {
    #[serde(default, with = "choice")]
    pub(crate) kind: Option<ModelKind>,
    #[serde(default, deserialize_with = "count::<MAX_LAYERS, _>")]
    pub(crate) layers: Option<usize>,
    #[serde(default, deserialize_with = "unit")]
    pub(crate) dropout: Option<f32>,
    #[serde(default, with = "choice")]
    pub(crate) init: Option<lingo::nn::Init>,
    #[serde(default, with = "choice")]
    pub(crate) rnn: Option<RnnChoice>,
    #[serde(default, with = "named")]
    pub(crate) attention: Option<AttentionChoice>,
    #[serde(default, with = "choice")]
    pub(crate) placement: Option<PlacementChoice>,
    #[serde(default, deserialize_with = "size")]
    pub(crate) emb: Option<usize>,
    #[serde(default, deserialize_with = "size")]
    pub(crate) hidden: Option<usize>,
    #[serde(default, deserialize_with = "size")]
    pub(crate) attn_dim: Option<usize>,
    pub(crate) bidirectional: Option<bool>,
    #[serde(default, deserialize_with = "size")]
    pub(crate) d_model: Option<usize>,
    #[serde(default, deserialize_with = "size")]
    pub(crate) heads: Option<usize>,
    #[serde(default, deserialize_with = "count::<MAX_LAYERS, _>")]
    pub(crate) encoder_layers: Option<usize>,
    #[serde(default, deserialize_with = "count::<MAX_LAYERS, _>")]
    pub(crate) decoder_layers: Option<usize>,
    #[serde(default, deserialize_with = "count::<MAX_FEED_FORWARD, _>")]
    pub(crate) ff_dim: Option<usize>,
    #[serde(default, with = "choice")]
    pub(crate) norm: Option<NormChoice>,
    #[serde(default, with = "choice")]
    pub(crate) activation: Option<ActivationChoice>,
    #[serde(default, with = "choice")]
    pub(crate) positions: Option<PositionsChoice>,
    #[serde(default, deserialize_with = "count::<MAX_POSITION_TABLE, _>")]
    pub(crate) max_positions: Option<usize>,
    #[serde(default, deserialize_with = "unit")]
    pub(crate) attention_dropout: Option<f32>,
    pub(crate) tie_output: Option<bool>,
    pub(crate) tie_source: Option<bool>,
    #[serde(default, deserialize_with = "real")]
    pub(crate) layer_norm_eps: Option<f64>,
}

/// `[train]`: the optimizer, the schedule, batches, rounds, the budget and
/// the seed (`--seed`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TrainSection {
    pub(crate) seed: Option<u64>,
    #[serde(default, with = "choice")]
    pub(crate) optimizer: Option<OptimizerChoice>,
    #[serde(default, deserialize_with = "real")]
    pub(crate) lr: Option<f64>,
    #[serde(default, deserialize_with = "non_negative")]
    pub(crate) weight_decay: Option<f64>,
    #[serde(default, deserialize_with = "non_negative")]
    pub(crate) momentum: Option<f64>,
    #[serde(default, deserialize_with = "whole")]
    pub(crate) warmup: Option<usize>,
    #[serde(default, with = "choice")]
    pub(crate) decay: Option<DecayChoice>,
    #[serde(default, deserialize_with = "non_negative")]
    pub(crate) max_grad_norm: Option<f64>,
    #[serde(default, deserialize_with = "unit")]
    pub(crate) label_smoothing: Option<f32>,
    #[serde(default, deserialize_with = "count::<MAX_EPOCHS, _>")]
    pub(crate) patience: Option<usize>,
    #[serde(default, deserialize_with = "count::<MAX_BATCH, _>")]
    pub(crate) batch_size: Option<usize>,
    #[serde(default, deserialize_with = "count::<MAX_BATCH, _>")]
    pub(crate) batch_tokens: Option<usize>,
    #[serde(default, deserialize_with = "count::<MAX_SHARDS, _>")]
    pub(crate) shards: Option<usize>,
    #[serde(default, deserialize_with = "count::<MAX_EXAMPLES, _>")]
    pub(crate) round_size: Option<usize>,
    #[serde(default, deserialize_with = "count::<MAX_EPOCHS, _>")]
    pub(crate) rounds: Option<usize>,
    #[serde(default, deserialize_with = "real")]
    pub(crate) time_budget: Option<f64>,
    #[serde(default, deserialize_with = "count::<MAX_AVERAGE, _>")]
    pub(crate) average: Option<usize>,
}

/// `[decode]`: `--beam`, `--length-penalty`, `--coverage-penalty`, `--word-reward` and `--stopping`, the search of the test set's translations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecodeSection {
    /// `--beam` (1: greedy).
    #[serde(default, deserialize_with = "count::<MAX_BEAM, _>")]
    pub(crate) beam: Option<usize>,
    /// `--length-penalty`: GNMT's α.
    #[serde(default, deserialize_with = "non_negative")]
    pub(crate) length_penalty: Option<f64>,
    /// `--coverage-penalty`: GNMT's β.
    #[serde(default, deserialize_with = "non_negative")]
    pub(crate) coverage_penalty: Option<f64>,
    /// `--word-reward`: γ per output token.
    #[serde(default, deserialize_with = "finite")]
    pub(crate) word_reward: Option<f64>,
    /// `--stopping`: when a sentence's search ends.
    #[serde(default, with = "choice")]
    pub(crate) stopping: Option<StoppingChoice>,
}

impl RunFile {
    /// Reads the run file at `path`, and returns it with its text (for
    /// errors found later, at the line of their key). A relative `[data]
    /// path` is taken from the file's folder, as Cargo takes paths in
    /// `Cargo.toml`, so a run file works from any directory.
    ///
    /// ```
    /// let err = lingo_cli::config::RunFile::read("no/such/run.toml".as_ref()).unwrap_err();
    /// assert!(err.to_string().starts_with("no/such/run.toml: "));
    /// ```
    pub fn read(path: &Path) -> Result<(RunFile, String)> {
        // A run file is a few kilobytes: stop early on anything far larger
        // (a device that never ends, say) rather than read it all.
        let mut bytes = Vec::new();
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        file.take(MAX_RUN_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
        if bytes.len() as u64 > MAX_RUN_FILE_BYTES {
            let message = format!("longer than {MAX_RUN_FILE_BYTES} bytes; a run file is a few kilobytes of TOML");
            return Err(run_file_error(path, None, message));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|&&b| b == b'\n').count();
            run_file_error(path, Some(line), format!("invalid UTF-8 at byte {}", e.utf8_error().valid_up_to()))
        })?;
        let mut file = RunFile::parse(&text, path)?;
        let dir = path.parent().unwrap_or(Path::new(""));
        file.data.path = file.data.path.map(|data| dir.join(data));
        Ok((file, text))
    }

    /// Parses a run file's text; errors name `path`, the line and the key.
    ///
    /// ```
    /// let err = lingo_cli::config::RunFile::parse("[model]\ndropout = 1.5\n", "run.toml".as_ref()).unwrap_err();
    /// assert_eq!(err.to_string(), "run.toml:2: dropout in [model]: must be a number in [0, 1), got 1.5");
    /// ```
    pub fn parse(text: &str, path: &Path) -> Result<RunFile> {
        toml::from_str(text).map_err(|e| {
            let line = e.span().map(|span| 1 + text[..span.start.min(text.len())].matches('\n').count());
            let message = match line {
                Some(line) => explain(e.message(), text, line),
                None => e.message().to_string(),
            };
            run_file_error(path, line, message)
        })
    }

    /// The file as TOML, sections in order, keys left out when not set.
    ///
    /// ```
    /// let file = lingo_cli::config::RunFile::parse("[train]\nbatch_size = 32", "run.toml".as_ref()).unwrap();
    /// assert_eq!(file.to_toml().unwrap(), "[data]\n\n[model]\n\n[train]\nbatch_size = 32\n\n[decode]\n");
    /// ```
    pub fn to_toml(&self) -> Result<String> {
        toml::to_string(self).map_err(|e| Error::invalid("run file", e.to_string()))
    }

    /// The run that `args` (already resolved) describe, every key
    /// explicit: what `lingo train` writes as `config.toml`.
    pub(crate) fn of(args: &TrainArgs) -> RunFile {
        let seed = args.run.seed;
        let mut file = fields::to_file(args);
        file.data.path = args.data.as_ref().map(|data| std::path::absolute(data).unwrap_or_else(|_| data.clone()));
        file.data.split_seed = Some(args.split_seed.unwrap_or(seed));
        file.train.seed = Some(seed);
        // The other kind's switches are off: leave them out, so the file
        // names only settings of the model it trains.
        match args.model {
            ModelKind::Rnn => {
                file.model.tie_output = None;
                file.model.tie_source = None;
            }
            ModelKind::Transformer => file.model.bidirectional = None,
        }
        file
    }

    /// `args` with every setting this file has and the command line did
    /// not give. The seed is one of them, set apart only because its flag
    /// sits with `--threads` and `--json` ([`RunFlags`](crate::args::RunFlags)).
    pub(crate) fn apply(&self, args: &TrainArgs) -> TrainArgs {
        let mut args = args.clone();
        fields::from_file(self, &mut args);
        if let Some(seed) = self.train.seed
            && !args.given.has("seed")
        {
            args.run.seed = seed;
        }
        args
    }
}

/// Each key of a run file and the [`TrainArgs`] field it sets: `plain` for
/// a field with clap's default, `opt` for an optional one, `in GROUP` for
/// a field of a flattened group (`args.GROUP.field`); written once, for
/// reading a file into flags and writing flags as a file.
macro_rules! run_file_fields {
    ($($section:ident . $key:ident = $kind:ident $field:ident $(in $group:ident)?),* $(,)?) => {
        mod fields {
            use super::{RunFile, TrainArgs};

            /// Sets each field of `args` from `file`, unless the command line gave it.
            pub(super) fn from_file(file: &RunFile, args: &mut TrainArgs) {
                $(
                    if let Some(value) = file.$section.$key.clone()
                        && !args.given.has(stringify!($field))
                    {
                        args$(.$group)?.$field = run_file_fields!(@set $kind value);
                    }
                )*
            }

            /// `args` as a file: every field its section has.
            pub(super) fn to_file(args: &TrainArgs) -> RunFile {
                let mut file = RunFile::default();
                $( file.$section.$key = run_file_fields!(@get $kind args$(.$group)?.$field); )*
                file
            }
        }
    };
    (@set plain $value:ident) => { $value };
    (@set opt $value:ident) => { Some($value) };
    (@get plain $($value:tt)+) => { Some($($value)+.clone()) };
    (@get opt $($value:tt)+) => { $($value)+.clone() };
}

run_file_fields! {
    data.path = opt data,
    data.lenient = plain lenient,
    data.split_seed = opt split_seed,
    data.max_len = plain max_len,
    data.test_size = plain test_size,
    data.valid_size = plain valid_size,
    data.tokenizer = plain tokenizer,
    data.bpe_merges = plain bpe_merges,
    data.vocab_size = plain vocab_size,
    data.joint_vocab = plain joint_vocab,
    model.kind = plain model,
    model.layers = plain layers,
    model.dropout = opt dropout,
    model.init = plain init,
    model.rnn = opt rnn,
    model.attention = opt attention,
    model.placement = opt placement,
    model.emb = opt emb,
    model.hidden = opt hidden,
    model.attn_dim = opt attn_dim,
    model.bidirectional = plain bidirectional,
    model.d_model = opt d_model,
    model.heads = opt heads,
    model.encoder_layers = opt encoder_layers,
    model.decoder_layers = opt decoder_layers,
    model.ff_dim = opt ff_dim,
    model.norm = opt norm,
    model.activation = opt activation,
    model.positions = opt positions,
    model.max_positions = opt max_positions,
    model.attention_dropout = opt attention_dropout,
    model.tie_output = plain tie_output,
    model.tie_source = plain tie_source,
    model.layer_norm_eps = opt layer_norm_eps,
    train.optimizer = plain optimizer,
    train.lr = opt lr,
    train.weight_decay = plain weight_decay,
    train.momentum = opt momentum,
    train.warmup = plain warmup,
    train.decay = opt decay,
    train.max_grad_norm = plain max_grad_norm,
    train.label_smoothing = plain label_smoothing,
    train.patience = opt patience,
    train.batch_size = plain batch_size,
    train.batch_tokens = opt batch_tokens,
    train.shards = plain shards,
    train.round_size = plain round_size,
    train.rounds = plain rounds,
    train.time_budget = plain time_budget,
    train.average = plain average,
    decode.beam = plain beam in search,
    decode.length_penalty = plain length_penalty in search,
    decode.coverage_penalty = plain coverage_penalty in search,
    decode.word_reward = plain word_reward in search,
    decode.stopping = plain stopping in search,
}

/// The clap id of a flag: its field's name (`--batch-size` is `batch_size`).
fn flag_id(flag: &str) -> String {
    flag.trim_start_matches('-').replace('-', "_")
}

/// The run file's key for a flag: its id, but for `--data` and `--model`.
fn key_of(flag: &str) -> String {
    match flag {
        "--data" => "path".into(),
        "--model" => "kind".into(),
        _ => flag_id(flag),
    }
}

/// A usage error about a flag the file set (and the command line did not)
/// becomes an error at the file's line for its key; others pass unchanged.
pub(crate) fn at_key(err: Error, path: &Path, text: &str, given: &Given) -> Error {
    let Error::Usage { flag, reason } = &err else { return err };
    if given.has(&flag_id(flag)) {
        return err;
    }
    let key = key_of(flag);
    match key_line(text, &key) {
        Some((line, section)) => run_file_error(path, Some(line), format!("{key} in [{section}]: {reason}")),
        None => err,
    }
}

/// The line (1-based) where `key` is set, and its section.
fn key_line(text: &str, key: &str) -> Option<(usize, String)> {
    let mut section = String::new();
    for (i, line) in text.lines().enumerate() {
        match parse_line(line) {
            Line::Header(name) => section = name,
            Line::Key(name) if name == key => return Some((i + 1, section)),
            _ => {}
        }
    }
    None
}

/// What a line of TOML holds, as far as an error message needs.
enum Line {
    /// `[name]`.
    Header(String),
    /// `name = ...`.
    Key(String),
    /// Anything else.
    Other,
}

fn parse_line(line: &str) -> Line {
    let line = line.trim();
    if let Some((name, _)) = line.strip_prefix('[').and_then(|rest| rest.split_once(']')) {
        return Line::Header(name.trim_matches(['[', ' ']).to_string());
    }
    match line.split_once('=') {
        Some((key, _)) if !key.trim().is_empty() => Line::Key(key.trim().trim_matches(['"', '\'']).to_string()),
        _ => Line::Other,
    }
}

/// toml's message, with the key and section of `line` (serde's "field" is
/// a key to a user).
fn explain(message: &str, text: &str, line: usize) -> String {
    let mut section = String::new();
    let mut here = Line::Other;
    for (i, l) in text.lines().enumerate().take(line) {
        here = parse_line(l);
        if let (Line::Header(name), true) = (&here, i + 1 < line) {
            section = name.clone();
        }
    }
    let message = message.trim();
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let (key, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let expected = expected.trim_start_matches(", ").replace('`', "");
        return match here {
            Line::Header(_) => format!("unknown section [{key}] ({expected})"),
            _ if section.is_empty() => format!("unknown key \"{key}\" outside a section ({expected} sections)"),
            _ => format!("unknown key \"{key}\" in [{section}] ({expected})"),
        };
    }
    match here {
        Line::Key(key) if section.is_empty() => format!("{key}: {message}"),
        Line::Key(key) => format!("{key} in [{section}]: {message}"),
        Line::Header(name) => format!("[{name}]: {message}"),
        Line::Other => message.to_string(),
    }
}

/// An error at `path` (and `line`).
fn run_file_error(path: &Path, line: Option<usize>, message: String) -> Error {
    Error::RunFile { path: path.to_path_buf(), line, message }
}

/// A count from 1 to `MAX`, checked as its flag is ([`at_most`]).
fn count<'de, const MAX: usize, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<usize>, D::Error> {
    checked(d, |n: u64| at_most::<MAX>(&n.to_string()))
}

/// A size, checked as `--emb` and `--hidden` are ([`dimension`]).
fn size<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<usize>, D::Error> {
    checked(d, |n: u64| dimension(&n.to_string()))
}

/// A count of at least 1 ([`positive`]).
fn whole<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<usize>, D::Error> {
    checked(d, |n: u64| positive(&n.to_string()))
}

/// A number in `[0, 1)` ([`unit_fraction`]).
fn unit<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<f32>, D::Error> {
    checked(d, |x: f64| unit_fraction(&x.to_string()))
}

/// A finite number above 0 ([`positive_real`]).
fn real<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<f64>, D::Error> {
    checked(d, |x: f64| positive_real(&x.to_string()))
}

/// A finite number of at least 0 ([`non_negative_real`]).
fn non_negative<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<f64>, D::Error> {
    checked(d, |x: f64| non_negative_real(&x.to_string()))
}

/// Any finite number ([`finite_real`]).
fn finite<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<f64>, D::Error> {
    checked(d, |x: f64| finite_real(&x.to_string()))
}

/// A value of type `T` from the file, through the flag's own parser.
fn checked<'de, T: Deserialize<'de>, U, D: Deserializer<'de>>(
    d: D,
    parse: impl FnOnce(T) -> std::result::Result<U, String>,
) -> std::result::Result<Option<U>, D::Error> {
    parse(T::deserialize(d)?).map(Some).map_err(D::Error::custom)
}

/// A choice of a flag with clap's value names (`inverse-sqrt`), as a string.
mod choice {
    use super::*;

    pub(super) fn serialize<T: ValueEnum, S: Serializer>(
        value: &Option<T>,
        s: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match value {
            Some(value) => s.serialize_str(&super::choice_name(value)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, T: ValueEnum, D: Deserializer<'de>>(
        d: D,
    ) -> std::result::Result<Option<T>, D::Error> {
        let name = String::deserialize(d)?;
        T::from_str(&name, false).map(Some).map_err(|_| {
            let names: Vec<String> = T::value_variants().iter().map(super::choice_name).collect();
            D::Error::custom(format!("{name:?} is not one of {}", names.join(", ")))
        })
    }
}

/// A value written and read as its name (`multi_head:4`), as its flag is.
mod named {
    use super::*;

    pub(super) fn serialize<T: Display, S: Serializer>(
        value: &Option<T>,
        s: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match value {
            Some(value) => s.serialize_str(&value.to_string()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, T, D>(d: D) -> std::result::Result<Option<T>, D::Error>
    where
        T: FromStr<Err = String>,
        D: Deserializer<'de>,
    {
        String::deserialize(d)?.parse().map(Some).map_err(D::Error::custom)
    }
}

/// The name clap gives a choice on the command line (`inverse-sqrt`).
///
/// ```
/// assert_eq!(lingo_cli::config::choice_name(&lingo_cli::TokenizerChoice::Bpe), "bpe");
/// ```
pub fn choice_name<T: ValueEnum>(value: &T) -> String {
    value.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default()
}
