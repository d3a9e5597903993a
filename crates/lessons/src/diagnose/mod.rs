//! Diagnosing a trained model: five checks, each with a one-line verdict
//! and the numbers behind it (`lingo diagnose`, `docs/tutorials/diagnosing.md`).
//!
//! | check | catches | function |
//! |---|---|---|
//! | loss at initialisation | weights initialised too large (loss far above `ln V`), a mask that shows the answer (far below) | [`initial_loss`] |
//! | gradients | a parameter whose gradient explodes, vanishes, is missing, or that training never moved | [`gradient_report`] |
//! | training against validation loss | a model learning its training pairs: validation loss rising while training loss falls | [`gap()`] |
//! | leakage | held-out pairs that are in the training data, as written or once lowercased without punctuation | [`leakage()`] |
//! | evaluation mode | dropout (or anything random) left on at evaluation; a translation that depends on its batchmates | [`eval_mode()`] |
//!
//! Each check is a function of what it needs (a model, batches, pairs, a
//! run's rounds), so a program diagnoses a model it trained itself;
//! [`diagnose()`] runs all five on a directory `lingo train` wrote, and
//! [`broken_models()`] on a healthy model and seven broken on purpose
//! (TorchLingo's tutorial 6), one [`Breakage`] each. The
//! loss at initialisation comes from the model as it was before its first
//! step, rebuilt from `config.toml` with the run's seed, and
//! "never updated" compares each weight with that model's.
//!
//! ```
//! use lingo_lessons::diagnose::{DiagnoseSettings, Verdict, diagnose};
//! use lingo_lessons::{CorpusSettings, RunOptions, train_corpus};
//! let dir = tempfile::tempdir()?;
//! let pairs: String = (0..300).map(|i| format!("number {} {}\tnúmero {} {}\n", i % 7, i % 13, i % 7, i % 13)).collect();
//! std::fs::write(dir.path().join("pairs.tsv"), pairs)?;
//! let mut settings = CorpusSettings::default();
//! settings.data.path = Some(dir.path().join("pairs.tsv"));
//! (settings.data.test_size, settings.data.valid_size, settings.data.tokenizer) = (10, 10, lingo_data::TokenizerKind::Word);
//! (settings.model.emb, settings.model.hidden, settings.train.rounds, settings.decode.beam) = (Some(16), Some(16), 2, 1);
//! let run = RunOptions { out: dir.path().join("run"), ..RunOptions::default() };
//! train_corpus(&settings.check()?, &run, &mut ())?;
//!
//! let diagnosis = diagnose(&DiagnoseSettings::new(run.out).check()?, &mut ())?;
//! for check in diagnosis.checks() {
//!     println!("{:<16} {:<5} {}", check.name, check.verdict, check.line);
//! }
//! assert_eq!(diagnosis.init.verdict, Verdict::Pass);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod broken;
mod data;
mod model;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lingo_nn::{AnyModel, EncoderDecoder, Mode, evaluate};
use lingo_tensor::Module;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};

pub use broken::{Breakage, BrokenModel, broken_model, broken_models};
pub use data::{Gap, Leakage, LeakedPair, Trend, gap, leakage, normalize};
pub use model::{
    EvalMode, GradientFlag, GradientReport, InitialLoss, ParamGradient, eval_mode, gradient_report, initial_loss,
};

use crate::corpus::{CorpusSettings, prepare};
use crate::error::{Error, Result};
use crate::observe::{Event, Finished, Observer, RunInfo, Shared, Started};
use crate::probe_checkpoint::load_translator;
use crate::settings::{Checked, MAX_BATCH, MAX_EXAMPLES, at_most, check_fields, default_of, positive};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Nothing wrong found.
    Pass,
    /// Worth a look; the model may still be fine.
    Warn,
    /// The check found what it looks for.
    Fail,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            Verdict::Pass => "pass",
            Verdict::Warn => "warn",
            Verdict::Fail => "FAIL",
        })
    }
}

/// Settings of `lingo diagnose`: which run, and how much of its data.
///
/// ```
/// let settings = lingo_lessons::diagnose::DiagnoseSettings::new("run".into());
/// assert_eq!((settings.batches, settings.batch_size, settings.pairs), (4, 32, 1000));
/// ```
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiagnoseSettings {
    /// A directory `lingo train` wrote: its model.ckpt, config.toml (to rebuild the data split and the model as
    /// initialised) and metrics.jsonl
    #[arg(long)]
    pub run: PathBuf,
    /// Training batches the loss at initialisation and the gradients are measured on
    #[arg(long, default_value = "4", value_parser = at_most::<1000>)]
    #[serde(default = "default_batches")]
    pub batches: usize,
    /// Pairs per batch
    #[arg(long, default_value = "32", value_parser = at_most::<MAX_BATCH>)]
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
    /// Training and validation pairs the losses of the gap are measured on (the first of each)
    #[arg(long, default_value = "1000", value_parser = positive_examples)]
    #[serde(default = "default_pairs")]
    pub pairs: usize,
}

fn positive_examples(text: &str) -> std::result::Result<usize, String> {
    positive(text).and_then(|n| at_most::<MAX_EXAMPLES>(&n.to_string()))
}

fn default_batches() -> usize {
    default_of::<DiagnoseSettings, _>("batches")
}

fn default_batch_size() -> usize {
    default_of::<DiagnoseSettings, _>("batch_size")
}

fn default_pairs() -> usize {
    default_of::<DiagnoseSettings, _>("pairs")
}

impl DiagnoseSettings {
    /// The run in `run`, every other setting at its default.
    ///
    /// ```
    /// let read: lingo_lessons::diagnose::DiagnoseSettings = serde_json::from_str(r#"{"run": "out"}"#).unwrap();
    /// assert_eq!(read, lingo_lessons::diagnose::DiagnoseSettings::new("out".into()));
    /// ```
    pub fn new(run: PathBuf) -> DiagnoseSettings {
        DiagnoseSettings { run, batches: default_batches(), batch_size: default_batch_size(), pairs: default_pairs() }
    }

    /// Checks every setting's bound.
    ///
    /// ```
    /// let settings = lingo_lessons::diagnose::DiagnoseSettings { batches: 0, ..lingo_lessons::diagnose::DiagnoseSettings::new("run".into()) };
    /// assert_eq!(settings.check().unwrap_err().to_string(), "invalid `batches`: must be at least 1, got 0");
    /// ```
    pub fn check(self) -> Result<Checked<DiagnoseSettings>> {
        check_fields(&self)?;
        Ok(Checked::new(self))
    }
}

/// The five checks of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnosis {
    /// The model as initialised, against `ln V`.
    pub init: InitialLoss,
    /// The trained model's gradients.
    pub gradients: GradientReport,
    /// Training against validation loss.
    pub gap: Gap,
    /// The test pairs, then the validation pairs, against the training pairs.
    pub leakage: Vec<Leakage>,
    /// Evaluating twice, and alone against batched.
    pub eval_mode: EvalMode,
}

/// One check's outcome, as a line of the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckLine {
    /// The check.
    pub name: &'static str,
    /// Its verdict.
    pub verdict: Verdict,
    /// The numbers behind it.
    pub line: String,
}

impl Diagnosis {
    /// Every check's line, in the order of the module's table (one per
    /// held-out set for leakage).
    pub fn checks(&self) -> Vec<CheckLine> {
        let mut lines = vec![
            CheckLine { name: "initial loss", verdict: self.init.verdict, line: self.init.line() },
            CheckLine { name: "gradients", verdict: self.gradients.verdict, line: self.gradients.line() },
            CheckLine { name: "train/valid gap", verdict: self.gap.verdict, line: self.gap.line() },
        ];
        lines.extend(self.leakage.iter().map(|l| CheckLine { name: "leakage", verdict: l.verdict, line: l.line() }));
        lines.push(CheckLine { name: "eval mode", verdict: self.eval_mode.verdict, line: self.eval_mode.line() });
        lines
    }

    /// The worst verdict of all.
    pub fn verdict(&self) -> Verdict {
        self.checks().iter().map(|c| c.verdict).max().unwrap_or(Verdict::Pass)
    }
}

/// Diagnoses the run in `settings.run`: rebuilds its data split and its
/// model as initialised from `config.toml`, loads `model.ckpt`, reads
/// `metrics.jsonl`, and runs the five checks.
pub fn diagnose(settings: &Checked<DiagnoseSettings>, observer: &mut dyn Observer) -> Result<Diagnosis> {
    let corpus = run_settings(&settings.run)?;
    let observer = Shared::new(observer);
    let data = prepare(&corpus, &observer)?;
    let translator = load_translator(&settings.run.join("model.ckpt"))?;
    if translator.src_vocab() != &data.src_vocab || translator.tgt_vocab() != &data.tgt_vocab {
        return Err(Error::invalid(
            format!("`run` {}", settings.run.display()),
            "model.ckpt's vocabularies are not the ones config.toml's data gives: was the corpus changed since training?",
        ));
    }
    let model = translator.model();
    let config = corpus.model_config(data.src_vocab.len(), data.tgt_vocab.len());
    let initial = AnyModel::new(config, &mut StdRng::seed_from_u64(corpus.train.seed))?;
    let rounds = crate::metrics::read(&settings.run.join("metrics.jsonl"))?;
    observer.send(Event::Started(Started {
        lesson: "diagnose".into(),
        settings: crate::settings::to_json(&**settings),
        data: BTreeMap::from([
            ("train".into(), data.train.len()),
            ("valid".into(), data.valid.len()),
            ("test".into(), data.test.len()),
        ]),
        runs: vec![RunInfo { run: "model".into(), label: model.config().kind().into(), params: model.num_params() }],
    }));
    let size = settings.batch_size;
    let steps = model::batches_of(&data.train, settings.batches * size, size)?;
    let init = initial_loss(&initial, &steps)?;
    let gradients = gradient_report(model, Some(&initial), &steps, corpus.train.seed)?;
    observer.check_stopped()?;
    let train = model::batches_of(&data.train, settings.pairs, size)?;
    let valid = model::batches_of(&data.valid, settings.pairs, size)?;
    let gap = gap(f64::from(evaluate(model, &train, 0.0)?), f64::from(evaluate(model, &valid, 0.0)?), &rounds);
    let leakage = vec![
        leakage("test", &data.train_pairs.pairs, &data.test.pairs),
        leakage("valid", &data.train_pairs.pairs, &data.valid_pairs.pairs),
    ];
    let repeated = &valid[..valid.len().min(settings.batches)];
    let eval_mode = eval_mode(model, repeated, |b| Ok(model.loss(b, 0.0, Mode::Eval)?.item()?))?;
    let diagnosis = Diagnosis { init, gradients, gap, leakage, eval_mode };
    let value = serde_json::to_value(&diagnosis).expect("results serialize");
    observer.send(Event::Finished(Finished { lesson: "diagnose".into(), results: value }));
    Ok(diagnosis)
}

/// The settings a run was trained with, from its `config.toml` (a relative
/// corpus path taken from the run's folder, as `lingo train --config` does).
fn run_settings(run: &Path) -> Result<CorpusSettings> {
    let path = run.join(crate::corpus::CONFIG_FILE);
    let (mut file, text) = crate::run_file::read::<CorpusSettings>(&path)?;
    file.data.path = file.data.path.map(|data| run.join(data));
    let checked = file.check().map_err(|e| crate::run_file::at_key(e, &path, &text))?;
    Ok(checked.resolved())
}
