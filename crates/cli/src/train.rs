//! `lingo train`: [`lingo::lessons::train_corpus()`] with its settings from
//! the flags and `--config`'s run file, each round and note printed as it
//! comes, then the test set's scores and a few translations.

use std::path::PathBuf;

use clap::Args;
use lingo::lessons::metrics::RoundMetrics;
use lingo::lessons::observe::{Every, Observer};
use lingo::lessons::{Checked, CorpusResults, CorpusSettings, Event, RunOptions, run_file};
use lingo::nn::RunControl;

use crate::config::{Given, under_flags};
use crate::error::{Error, Result};
use crate::interrupt;
use crate::output::{Output, print_err};

/// Settings of `lingo train`: the lesson's, and where the run goes and
/// what it shows.
#[derive(Args, Debug, Clone)]
pub struct TrainArgs {
    /// Which of these flags the command line gave (a run file sets the
    /// others). First: clap takes each value out of its matches as it
    /// fills the field, and this reads them all.
    #[command(flatten)]
    pub given: Given,
    /// The lesson's settings, by section.
    #[command(flatten)]
    pub settings: CorpusSettings,
    /// Run file (TOML) with any of these settings, by section (data, model, train, decode); a flag given here overrides it (see examples/run.toml)
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Directory for checkpoints (`model.ckpt` is the one to translate with)
    #[arg(long, default_value = lingo::lessons::corpus::TRAIN_OUT)]
    pub out: PathBuf,
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
    /// `--threads`, `--json`.
    #[command(flatten)]
    pub compute: crate::args::ComputeFlags,
}

impl TrainArgs {
    /// The run's settings: `--config`'s file under the flags given on the
    /// command line, checked; an error about a setting of the file names
    /// the file, its line and its key.
    ///
    /// ```
    /// use clap::Parser;
    /// let dir = tempfile::tempdir().unwrap();
    /// let run = dir.path().join("run.toml");
    /// std::fs::write(&run, "[data]\npath = \"pairs.tsv\"\nalignments = \"pairs.align\"\n[train]\nbatch_size = 32\nrounds = 7\nseed = 5\n").unwrap();
    /// let cli = lingo_cli::Cli::try_parse_from(["lingo", "train", "--config", run.to_str().unwrap(), "--rounds", "9"]).unwrap();
    /// let lingo_cli::Command::Train(args) = cli.command else { unreachable!() };
    /// let settings = args.settings().unwrap();
    /// assert_eq!((settings.train.batch_size, settings.train.rounds, settings.train.seed), (32, 9, 5));
    /// assert_eq!(settings.data.path, Some(dir.path().join("pairs.tsv")));
    /// assert_eq!(settings.data.alignments, Some(dir.path().join("pairs.align")));
    /// ```
    pub fn settings(&self) -> Result<Checked<CorpusSettings>> {
        let Some(path) = &self.config else {
            if self.settings.data.path.is_none() {
                return Err(Error::usage("--data", "is needed, as a flag or in --config"));
            }
            return Ok(self.settings.clone().check()?);
        };
        let (mut file, text) = run_file::read::<CorpusSettings>(path)?;
        // A relative corpus (or links) path is taken from the file's folder, as Cargo
        // takes paths in `Cargo.toml`, so a run file works from any directory.
        let dir = path.parent().unwrap_or(std::path::Path::new(""));
        file.data.path = file.data.path.map(|data| dir.join(data));
        file.data.alignments = file.data.alignments.map(|links| dir.join(links));
        let settings = under_flags(file, &self.settings, &self.given);
        if settings.data.path.is_none() {
            let message = "no corpus: set path in [data], or pass --data".into();
            return Err(lingo::lessons::Error::File { path: path.clone(), line: None, message }.into());
        }
        settings
            .check()
            .map_err(|e| match &e {
                lingo::lessons::Error::Setting { name, .. } if !self.given.has(name) => {
                    run_file::at_key(e, path, &text)
                }
                _ => e,
            })
            .map_err(Error::from)
    }
}

/// Prints each round as it ends (a line, or its `metrics.jsonl` object)
/// and each note; hands training the Ctrl-C handler's control, and ends
/// that control's hold once `model.ckpt` is written.
struct Rounds {
    out: Output,
    control: RunControl,
    told_stdout_lost: bool,
    metrics: PathBuf,
}

impl Observer for Rounds {
    fn every(&self) -> Every {
        Every::NOTHING
    }

    fn event(&mut self, event: &Event) {
        match event {
            Event::Epoch(e) => {
                let (round, rounds, seconds) = (e.epoch, e.epochs, e.seconds);
                let (train, val) = (e.train_loss, e.val_loss);
                self.out.say(&format!("Round {round}/{rounds} | Train: {train:.4} | Val: {val:.4} | {seconds:.0} s"));
                let line = RoundMetrics {
                    round,
                    pairs_seen: e.pairs,
                    steps: Some(e.steps),
                    train_loss: train,
                    val_loss: val,
                    seconds: Some(seconds),
                };
                self.out.json(&line.json());
                if let Some(err) = self.out.stdout_lost()
                    && !self.told_stdout_lost
                {
                    self.told_stdout_lost = true;
                    let every = self.metrics.display();
                    print_err(&format!(
                        "note: standard output failed ({err}); training goes on, every round is in {every}"
                    ));
                }
            }
            Event::Note(note) => self.out.note(&note.text),
            Event::Checkpoint(written) if written.path.ends_with("model.ckpt") => interrupt::training_done(),
            _ => {}
        }
    }

    fn control(&self) -> Option<RunControl> {
        Some(self.control.clone())
    }
}

/// `lingo train`: the settings (`--config` read first), the run, the test set.
pub(crate) fn run(args: &TrainArgs, out: Output) -> Result<()> {
    let settings = args.settings()?;
    let run = RunOptions {
        out: args.out.clone(),
        resume: args.resume,
        overwrite: args.overwrite,
        export_splits: args.export_splits,
    };
    let metrics = args.out.join("metrics.jsonl");
    let mut rounds = Rounds { out, control: interrupt::stop_control()?, told_stdout_lost: false, metrics };
    let results = lingo::lessons::train_corpus(&settings, &run, &mut rounds)?;
    print_test(args, &results, out);
    Ok(())
}

/// The test set's BLEU and chrF (and AER with links), a few translations, and the run's summary.
fn print_test(args: &TrainArgs, results: &CorpusResults, out: Output) {
    let (summary, beam) = (&results.summary, results.summary.beam);
    let search = if beam > 1 { format!("beam {beam}") } else { "greedy".into() };
    let mut lines = vec![format!("\ntest set ({} pairs, {search}): {}", results.references.len(), results.bleu)];
    lines.push(format!("chrF = {:.2}   (lowercased; {:.0} s of training)", summary.chrf, summary.train_seconds));
    if let Some(aer) = &summary.test_aer {
        let ratio = |a: usize, b: usize| a as f64 / b.max(1) as f64;
        lines.push(format!(
            "AER = {:.3}   (the attention guidance pulls, against --alignments' links: precision {:.3}, recall {:.3})",
            aer.aer,
            ratio(aer.possible_hits, aer.links),
            ratio(aer.sure_hits, aer.sure)
        ));
    }
    let shown = results.sources.iter().zip(&results.hypotheses).zip(&results.references).take(args.show);
    for ((source, hyp), reference) in shown {
        lines.push(format!("\n  source:     {source}\n  reference:  {reference}\n  lingo:      {hyp}"));
    }
    out.say(&lines.join("\n"));
    out.json(&serde_json::to_value(summary).expect("a summary serializes"));
}
