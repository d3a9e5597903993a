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
//! The file is the serde form of [`CorpusSettings`], read by
//! [`lingo::lessons::run_file`] with the bounds of the flags; an unknown
//! key, a wrong type, a bad value or a syntax error is one error naming the
//! file, the line and the key, and so is a setting of the file that does
//! not fit the others.

use std::collections::BTreeSet;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, FromArgMatches};
use lingo::lessons::CorpusSettings;

/// The flags given on the command line, by clap id (the field's name), as
/// opposed to those clap filled in with a default: only these override a
/// run file. It adds no flag of its own; flattened into [`TrainArgs`](crate::TrainArgs), it
/// reads the same matches.
///
/// ```
/// use clap::Parser;
/// let cli = lingo_cli::Cli::try_parse_from(["lingo", "train", "--data", "x.tsv", "--rounds", "100"]).unwrap();
/// let lingo_cli::Command::Train(args) = cli.command else { unreachable!() };
/// assert!(args.given.has("rounds") && args.given.has("path"));
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

/// The settings of a run file with every setting the command line gave
/// taken from `flags` instead: field by field, through their serde form,
/// so no setting is listed here.
///
/// ```
/// use clap::Parser;
/// let cli = lingo_cli::Cli::try_parse_from(["lingo", "train", "--rounds", "9"]).unwrap();
/// let lingo_cli::Command::Train(args) = cli.command else { unreachable!() };
/// let mut file = lingo::lessons::CorpusSettings::default();
/// (file.train.rounds, file.train.batch_size) = (7, 32);
/// let merged = lingo_cli::config::under_flags(file, &args.settings, &args.given);
/// assert_eq!((merged.train.rounds, merged.train.batch_size), (9, 32));
/// ```
pub fn under_flags(file: CorpusSettings, flags: &CorpusSettings, given: &Given) -> CorpusSettings {
    let mut merged = serde_json::to_value(file).expect("settings serialize");
    let flags = serde_json::to_value(flags).expect("settings serialize");
    for (section, fields) in flags.as_object().into_iter().flatten() {
        for (key, value) in fields.as_object().into_iter().flatten().filter(|(key, _)| given.has(key)) {
            merged[section][key] = value.clone();
        }
    }
    serde_json::from_value(merged).expect("the serde form of settings reads back")
}
