//! # lingo-lessons
//!
//! lingo's lessons as a library: each one function that takes its
//! settings and an [`Observer`], and returns its results as plain
//! serializable structs. The `lingo` command line prints them, a live view
//! draws them, a program keeps them.
//!
//! | lesson | function | settings | results |
//! |---|---|---|---|
//! | the attention tutorial's ablation: no attention, dot, additive (and any scorer, the Transformer) on lexicon-translate-then-reverse | [`ablation()`] | [`AblationSettings`] | [`AblationResults`] |
//! | the sorting case study: bidirectional GRU, Bahdanau attention, with and without attention at two lengths; the failure modes (duplicates, longer inputs, a rare digit) | [`sort_study()`] | [`SortStudySettings`] | [`SortStudyResults`] |
//! | the alignment suite: each configuration trained on seven tasks of known alignment, scored by alignment accuracy and AER against sure and possible links, the misaligned sentences kept | [`alignment_suite()`] | [`SuiteSettings`] | [`SuiteResults`] |
//! | a translation model trained on a parallel corpus within a time budget, scored by BLEU and chrF on held-out pairs (`lingo train`) | [`train_corpus()`] | [`CorpusSettings`] with [`RunOptions`] | [`CorpusResults`] |
//! | five checks of a run of `lingo train` (the loss at initialisation, gradients, the train/validation gap, leakage, evaluation mode), and seven models broken on purpose to show each check catching its failure | [`diagnose()`](diagnose::diagnose()), [`diagnose::broken_models()`] | [`diagnose::DiagnoseSettings`] | [`diagnose::Diagnosis`] |
//! | the attention lab on a trained `model.ckpt`: held-out pairs as trained and with attention replaced (uniform, shuffled, one-hot, zero context), against a baseline without attention | [`probe_checkpoint()`] | [`ProbeSettings`] | [`ProbeResults`] |
//!
//! ## The ablation's table in a few lines
//!
//! ```
//! use lingo_lessons::{AblationSettings, TaskTraining, ablation};
//! let settings = AblationSettings { train_size: 256, val_size: 32, align_samples: 32, ..Default::default() };
//! let settings = AblationSettings { training: TaskTraining { epochs: 2, ..settings.training }, ..settings };
//! let table = ablation(&settings.check()?, &mut ())?;
//! for run in &table.runs {
//!     let alignment = run.alignment.map_or("n/a".into(), |a| format!("{:.1}%", 100.0 * a.accuracy));
//!     println!("{:<20} {:.4} {alignment}", run.label, run.val_loss());
//! }
//! # assert_eq!(table.runs.len(), 3);
//! # Ok::<(), lingo_lessons::Error>(())
//! ```
//!
//! ## The sorting case study, small
//!
//! ```
//! use lingo_lessons::{SortStudySettings, sort_study};
//! let settings = SortStudySettings {
//!     lengths: vec![4], digits: 6, train_size: 512, val_size: 32, test_size: 64,
//!     epochs: 3, emb: 16, hidden: 16, longer: vec![2], rare_share: 0.0,
//!     ..Default::default()
//! };
//! let study = sort_study(&settings.check()?, &mut ())?;
//! for run in &study.runs {
//!     println!("length {} {:<9} accuracy {:.1}% entropy {:?}", run.len, run.model, 100.0 * run.accuracy, run.entropy.last());
//! }
//! # assert_eq!(study.runs.len(), 2);
//! # Ok::<(), lingo_lessons::Error>(())
//! ```
//!
//! ## A model of a corpus, in a directory of its own
//!
//! ```
//! use lingo_lessons::{CorpusSettings, RunOptions, train_corpus};
//! let dir = tempfile::tempdir()?;
//! let pairs: String = (0..100).map(|i| format!("{i} cats\t{i} gatos\n")).collect();
//! std::fs::write(dir.path().join("cats.tsv"), pairs)?;
//! let mut settings = CorpusSettings::default();
//! settings.data.path = Some(dir.path().join("cats.tsv"));
//! (settings.data.test_size, settings.data.valid_size) = (5, 5);
//! (settings.model.emb, settings.model.hidden, settings.train.rounds, settings.decode.beam) = (Some(16), Some(16), 2, 1);
//! let run = RunOptions { out: dir.path().join("run"), ..Default::default() };
//! let results = train_corpus(&settings.check()?, &run, &mut ())?;
//! println!("BLEU {:.1} after {} rounds; model.ckpt holds {}", results.bleu.score, results.summary.rounds, results.summary.model);
//! # assert!(dir.path().join("run/model.ckpt").is_file());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The alignment suite and the probes of a checkpoint run the same way;
//! their modules ([`suite`], [`probe_checkpoint`](mod@probe_checkpoint))
//! each open with a small run.
//!
//! ## Settings
//!
//! Each lesson's settings are one struct ([`settings`]): the command
//! line's flags (clap) and a file's or a request's keys (serde) are its
//! fields, each default and bound stated once, on the field. A lesson runs
//! on [`Checked`] settings only: `settings.check()` tests every bound, the
//! settings against each other and the memory they need, before any work.
//!
//! ## Watching
//!
//! The [`observe`] module describes the events, how often an observer hears
//! them, and how it pauses or stops a lesson. Observers cost nothing when
//! absent: with `&mut ()` nothing is measured that the results do not need.
//! An observer also hears of each trained model and, with each snapshot,
//! of a task model in training ([`Observer::training`]): `lingo lab`'s
//! explorer translates with them. [`beam`] draws a beam search's trace.
//!
//! ## Determinism
//!
//! A lesson's results are the same bits for the same settings, whatever
//! the thread count and whether anything observes it.

#![warn(missing_docs)]

pub mod ablation;
pub mod beam;
pub mod budget;
pub mod corpus;
pub mod diagnose;
mod error;
pub mod measure;
pub mod metrics;
pub mod models;
pub mod observe;
pub mod probe_checkpoint;
pub mod probes;
pub mod request;
pub mod run_dir;
pub mod run_file;
pub mod settings;
pub mod sort_study;
pub mod suite;

pub use ablation::{
    AblationResults, AblationRun, AblationSettings, AblationSummary, ExampleMaps, ExampleTokens, ablation,
};
pub use corpus::{
    CorpusResults, CorpusSettings, CorpusSummary, DataSettings, Decay, DecodeSettings, ModelKind, ModelSettings,
    OptimizerKind, RunOptions, TrainingSettings, train_corpus,
};
pub use error::{Error, Result};
pub use models::{AttentionChoice, ModelChoice, TaskTraining};
pub use observe::{Event, Every, Observer, Trained};
pub use probe_checkpoint::{FirstPair, ProbeResults, ProbeSettings, ProbedPair, load_translator, probe_checkpoint};
pub use request::{CheckedRequest, Request};
pub use run_dir::RunDir;
pub use settings::Checked;
pub use sort_study::{
    EpochTimes, RareRow, SortExample, SortRun, SortStudyResults, SortStudySettings, SortSummary, StudyModel, sort_study,
};
pub use suite::{
    CaseSummary, MisalignedCase, SuiteAlignment, SuiteResults, SuiteRun, SuiteSettings, SuiteSummary, alignment_suite,
};
