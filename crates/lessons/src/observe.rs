//! Watching a lesson while it runs, and steering it.
//!
//! Every lesson takes an [`Observer`], which hears [`Event`]s as they
//! happen: the run starting, training steps, finished epochs with their
//! attention measures, snapshots of pinned examples' attention, and the
//! results. It says how often it wants to hear ([`Every`]) and may hand
//! the lesson a [`RunControl`] to pause, resume or stop its training
//! between steps. `&mut ()` observes nothing and costs nothing; a closure
//! `|event: &Event| ...` hears every epoch.
//!
//! ```
//! use lingo_lessons::{AblationSettings, Event, TaskTraining, ablation};
//! let settings = AblationSettings {
//!     configs: vec!["dot".parse().unwrap()],
//!     train_size: 64, val_size: 16, align_samples: 8,
//!     training: TaskTraining { epochs: 2, ..Default::default() },
//!     ..Default::default()
//! };
//! let mut epochs = Vec::new();
//! ablation(&settings.check()?, &mut |event: &Event| {
//!     if let Event::Epoch(e) = event { epochs.push((e.epoch, e.alignment)) }
//! })?;
//! assert_eq!(epochs.len(), 2);
//! assert!(epochs.iter().all(|(_, alignment)| alignment.is_some())); // dot attention, gold links
//! # Ok::<(), lingo_lessons::Error>(())
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use lingo_data::{AlignedExample, Batch, SeqPair, TextTokenizer, Vocab, WordTokenizer};
use lingo_nn::{AnyModel, EncoderDecoder, EpochReport, Next, RunControl, StepReport, TrainHooks, Translator};
use ndarray::{Array2, Array4, Axis};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::measure::{HeadScores, attention_measures};

/// Hears a lesson's [`Event`]s as they happen, and may steer it.
pub trait Observer: Send {
    /// How often to hear of steps and snapshots, and whether epochs carry
    /// the attention measures. The default: every epoch, with measures.
    fn every(&self) -> Every {
        Every::default()
    }

    /// One event; called on the thread that trains the run it is about.
    fn event(&mut self, event: &Event);

    /// A model the lesson has finished training, with the vocabularies it
    /// reads and writes: an observer that keeps it can translate with it
    /// or save it ([`Trained::translator`]). The default: ignored.
    fn trained(&mut self, _model: &Trained<'_>) {}

    /// A task lesson's model as it is at `step`, before it has finished:
    /// with each [`Event::Snapshot`] (and each step taken while held). An
    /// observer that keeps it translates with it mid-training; keeping it
    /// costs one copy of the weights, made by the next step that changes
    /// them. The default: ignored.
    fn training(&mut self, _model: &Trained<'_>, _step: u64) {}

    /// The control every training run of the lesson obeys: pause, resume
    /// or stop between steps. A stopped lesson ends with [`Error::Stopped`];
    /// a corpus run first writes `model.ckpt` from its best round and ends
    /// with [`Error::Interrupted`], saying so. The default: none.
    fn control(&self) -> Option<RunControl> {
        None
    }
}

/// No observer: no event is measured or built beyond what the lesson needs.
impl Observer for () {
    fn every(&self) -> Every {
        Every::NOTHING
    }

    fn event(&mut self, _: &Event) {}
}

/// A closure hears every epoch, with measures.
impl<F: FnMut(&Event) + Send> Observer for F {
    fn event(&mut self, event: &Event) {
        self(event);
    }
}

/// How often an observer hears of training.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Every {
    /// Steps between two [`Event::Step`]s (0: none); while the
    /// observer's control holds the run, every step it takes.
    pub steps: u64,
    /// Steps between two [`Event::Snapshot`]s of the pinned examples (0:
    /// none); while the control holds the run, every step it takes.
    pub snapshots: u64,
    /// Whether each [`Event::Epoch`] carries the attention measures,
    /// which cost a pass over the lesson's scored examples.
    pub measures: bool,
}

impl Every {
    /// No steps, no snapshots, no measures: what `()` asks for.
    pub const NOTHING: Every = Every { steps: 0, snapshots: 0, measures: false };

    /// Steps between two calls that serve both intervals (0: none).
    fn step_every(self) -> u64 {
        match (self.steps, self.snapshots) {
            (0, n) | (n, 0) => n,
            (a, b) => gcd(a, b),
        }
    }
}

/// Every epoch with its measures, no steps, no snapshots.
impl Default for Every {
    fn default() -> Every {
        Every { steps: 0, snapshots: 0, measures: true }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// What a lesson tells its observer. Its serde form, tagged by `event`,
/// is what a live view receives.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The lesson has its data and models, before the first step.
    Started(Started),
    /// A training step, every [`Every::steps`] steps.
    Step(Step),
    /// A finished epoch (a round, for a corpus).
    Epoch(Epoch),
    /// The attention of a pinned example, every [`Every::snapshots`] steps.
    Snapshot(Snapshot),
    /// A checkpoint was written.
    Checkpoint(CheckpointWritten),
    /// A remark for people: what was read, kept or written.
    Note(Note),
    /// The lesson ended; the function returns the same results.
    Finished(Finished),
}

/// A trained model as [`Observer::trained`] hears of it.
#[derive(Debug, Clone, Copy)]
pub struct Trained<'a> {
    /// The run it belongs to, as its events name it.
    pub run: &'a str,
    /// The model, as trained (a sort-study model at its best epoch).
    pub model: &'a AnyModel,
    /// The tokens it reads.
    pub src_vocab: &'a Vocab,
    /// The tokens it writes.
    pub tgt_vocab: &'a Vocab,
    /// Held-out examples with their gold alignments, those the lesson
    /// measures its attention on: what a probe of the model reads
    /// ([`lingo_nn::probe()`]).
    pub examples: &'a [AlignedExample],
}

impl Trained<'_> {
    /// The model as a [`Translator`] of space-separated task tokens, which
    /// `lingo translate` reads once saved ([`Translator::save`]).
    ///
    /// ```
    /// use lingo_lessons::{AblationSettings, TaskTraining, Trained, ablation, observe::Observer};
    /// struct Keep(Vec<lingo_nn::Translator>);
    /// impl Observer for Keep {
    ///     fn event(&mut self, _: &lingo_lessons::Event) {}
    ///     fn trained(&mut self, model: &Trained<'_>) { self.0.push(model.translator().unwrap()) }
    /// }
    /// let settings = AblationSettings { configs: vec!["dot".parse().unwrap()], train_size: 32, val_size: 8,
    ///     align_samples: 4, training: TaskTraining { epochs: 1, ..Default::default() }, ..Default::default() };
    /// let mut kept = Keep(Vec::new());
    /// ablation(&settings.check()?, &mut kept)?;
    /// let translation = kept.0[0].translate(&["the cat"], &Default::default())?;
    /// assert!(!translation[0].text.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn translator(&self) -> Result<Translator> {
        let words = TextTokenizer::Word(WordTokenizer::new());
        Ok(Translator::new(self.model.clone(), words, self.src_vocab.clone(), self.tgt_vocab.clone())?)
    }
}

/// [`Event::Note`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Note {
    /// The remark, one or more lines.
    pub text: String,
}

/// [`Event::Started`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Started {
    /// The lesson (`ablation`, `alignment_suite`, `probe`).
    pub lesson: String,
    /// Its settings, every one explicit.
    pub settings: serde_json::Value,
    /// Examples by use (`train`, `valid`, `scored`).
    pub data: BTreeMap<String, usize>,
    /// The models it trains (or probes), in order.
    pub runs: Vec<RunInfo>,
}

/// One model a lesson trains (or probes).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInfo {
    /// Its name in events and JSON (`dot`).
    pub run: String,
    /// Its name in tables (`dot (Luong)`).
    pub label: String,
    /// Its parameters.
    pub params: usize,
}

/// [`Event::Step`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// The run it belongs to.
    pub run: String,
    /// The epoch, from 1.
    pub epoch: usize,
    /// Optimizer steps so far.
    pub step: u64,
    /// The batch's training loss.
    pub loss: f32,
    /// The learning rate of the step.
    pub lr: f64,
    /// Training pairs per second since the last step event.
    pub pairs_per_second: f64,
    /// Seconds of the run's training so far.
    pub seconds: f64,
}

/// [`Event::Epoch`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Epoch {
    /// The run it belongs to.
    pub run: String,
    /// The epoch, from 1, and how many the run trains at most.
    pub epoch: usize,
    /// The most epochs.
    pub epochs: usize,
    /// Mean training loss of the epoch.
    pub train_loss: f32,
    /// Validation loss after it.
    pub val_loss: f32,
    /// Optimizer steps since the run began.
    pub steps: u64,
    /// Training pairs seen since the run began, for a corpus run (its
    /// rounds are slices of the corpus).
    pub pairs: Option<u64>,
    /// Seconds of the run's training so far (over every process of a resumed run).
    pub seconds: f64,
    /// Alignment accuracy on the scored examples, where they have gold
    /// links and the model attends (with [`Every::measures`]).
    pub alignment: Option<f64>,
    /// Mean attention entropy (nats) on the scored examples.
    pub entropy: Option<f32>,
    /// Every head's alignment and entropy.
    pub heads: Option<HeadScores>,
}

/// [`Event::Snapshot`]: one pinned example's attention under teacher forcing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    /// The run it belongs to.
    pub run: String,
    /// The epoch and the step after which it was taken.
    pub epoch: usize,
    /// Optimizer steps so far.
    pub step: u64,
    /// Which pinned example (from 0).
    pub example: usize,
    /// The source tokens, `<sos>` and `<eos>` included: the columns.
    pub source: Vec<String>,
    /// The decoder's inputs, `<sos>` first: the rows (row `n` predicts token `n + 1`).
    pub target: Vec<String>,
    /// `(layers, heads, tgt_len, src_len)`; one layer and head for a single-head model.
    pub weights: Array4<f32>,
}

/// [`Event::Checkpoint`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckpointWritten {
    /// The run it belongs to.
    pub run: String,
    /// The file.
    pub path: PathBuf,
}

/// [`Event::Finished`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finished {
    /// The lesson.
    pub lesson: String,
    /// Its results, as their serde form.
    pub results: serde_json::Value,
}

/// An example whose attention the snapshots show, as the model reads it.
#[derive(Debug, Clone)]
pub(crate) struct Pinned {
    source: Vec<String>,
    target: Vec<String>,
    batch: Batch,
}

impl Pinned {
    /// `example` with its tokens from the vocabularies it was encoded with.
    pub(crate) fn new<E: SeqPair>(example: &E, src_vocab: &Vocab, tgt_vocab: &Vocab) -> Result<Pinned> {
        let owned = |v: Vec<&str>| v.into_iter().map(str::to_owned).collect::<Vec<_>>();
        let tgt_in = &example.tgt()[..example.tgt().len().saturating_sub(1)];
        Ok(Pinned {
            source: owned(src_vocab.decode(example.src(), false)),
            target: owned(tgt_vocab.decode(tgt_in, false)),
            batch: Batch::from_examples(std::slice::from_ref(example))?,
        })
    }

    /// The source tokens.
    pub(crate) fn source(&self) -> &[String] {
        &self.source
    }

    /// The decoder's inputs.
    pub(crate) fn target(&self) -> &[String] {
        &self.target
    }

    /// The example alone in a batch.
    pub(crate) fn batch(&self) -> &Batch {
        &self.batch
    }

    /// `model`'s attention on the example, `(tgt_len, src_len)` (a
    /// Transformer's last layer), and every head, `(layers, heads,
    /// tgt_len, src_len)`, when it has more than one; `None` without attention.
    pub(crate) fn attention<M: EncoderDecoder>(&self, model: &M) -> Result<Option<Attention>> {
        let Some(weights) = model.attention(&self.batch)? else { return Ok(None) };
        let heads = model.head_attention(&self.batch)?.filter(|h| h.shape()[0] * h.shape()[1] > 1);
        Ok(Some((weights.index_axis_move(Axis(0), 0), heads.map(|h| h.index_axis_move(Axis(2), 0)))))
    }
}

/// A model's attention on one example, `(tgt_len, src_len)`, and every
/// head, `(layers, heads, tgt_len, src_len)`, when it has more than one.
pub(crate) type Attention = (Array2<f32>, Option<Array4<f32>>);

/// A lesson's observer, shared by the runs it trains side by side.
pub(crate) struct Shared<'a> {
    observer: Mutex<&'a mut dyn Observer>,
    every: Every,
    control: Option<RunControl>,
}

impl<'a> Shared<'a> {
    /// `observer`, asked once how often it listens.
    pub(crate) fn new(observer: &'a mut dyn Observer) -> Shared<'a> {
        let (every, control) = (observer.every(), observer.control());
        Shared { observer: Mutex::new(observer), every, control }
    }

    /// Tells the observer.
    pub(crate) fn send(&self, event: Event) {
        self.observer.lock().unwrap_or_else(PoisonError::into_inner).event(&event);
    }

    /// Tells the observer of a trained model.
    pub(crate) fn trained(&self, model: &Trained<'_>) {
        self.observer.lock().unwrap_or_else(PoisonError::into_inner).trained(model);
    }

    /// Tells the observer of a model in training, at `step`.
    fn training(&self, model: &Trained<'_>, step: u64) {
        self.observer.lock().unwrap_or_else(PoisonError::into_inner).training(model, step);
    }

    /// The control training obeys, if the observer gave one.
    pub(crate) fn control(&self) -> Option<RunControl> {
        self.control.clone()
    }

    /// [`Error::Stopped`] if the control stopped the lesson.
    pub(crate) fn check_stopped(&self) -> Result<()> {
        match &self.control {
            Some(control) if control.is_stopped() => Err(Error::Stopped),
            _ => Ok(()),
        }
    }

    /// Hooks that tell the observer of one run's training.
    pub(crate) fn watch<'w>(
        &'w self,
        run: &'w str,
        scored: &'w [AlignedExample],
        pinned: &'w [Pinned],
    ) -> Watch<'w, 'a> {
        Watch { shared: self, run, scored, pinned, vocabs: None, last: (0, 0.0), epoch_ends: Vec::new() }
    }
}

/// [`TrainHooks`] that turn one run's steps and epochs into events.
pub(crate) struct Watch<'w, 'a> {
    shared: &'w Shared<'a>,
    run: &'w str,
    /// The examples an epoch's attention measures are taken on.
    scored: &'w [AlignedExample],
    pinned: &'w [Pinned],
    /// A task model's vocabularies: then the observer hears of the model
    /// with each snapshot ([`Observer::training`]).
    vocabs: Option<(&'w Vocab, &'w Vocab)>,
    /// Pairs and seconds at the last step event, for its rate.
    last: (u64, f64),
    /// Seconds since training started, at the end of each epoch.
    epoch_ends: Vec<f64>,
}

impl<'w> Watch<'w, '_> {
    /// The same hooks, also handing the observer the model in training
    /// with each snapshot, as a model of these vocabularies.
    pub(crate) fn with_model(self, src_vocab: &'w Vocab, tgt_vocab: &'w Vocab) -> Self {
        Watch { vocabs: Some((src_vocab, tgt_vocab)), ..self }
    }

    /// Seconds since training started at the end of each epoch so far.
    pub(crate) fn epoch_ends(&self) -> &[f64] {
        &self.epoch_ends
    }

    /// Tells the observer of a finished epoch, with what the lesson knows
    /// of it besides the report: an attention entropy on the scored
    /// examples it measured already (then carried whatever the observer
    /// asked), the pairs and seconds of a corpus run.
    pub(crate) fn epoch<M: EncoderDecoder>(&mut self, report: &EpochReport, model: &M, known: Known) -> Result<Next> {
        self.epoch_ends.push(report.seconds);
        let measured = self.shared.every.measures && !self.scored.is_empty();
        let measures = if measured { attention_measures(model, self.scored)? } else { None };
        let (alignment, heads) = measures.as_ref().map(|(a, _, h)| (a.accuracy, h.clone())).unzip();
        let entropy = known.entropy.or(measures.map(|(_, e, _)| e));
        self.shared.send(Event::Epoch(Epoch {
            run: self.run.to_string(),
            epoch: report.epoch,
            epochs: report.epochs,
            train_loss: report.train_loss,
            val_loss: report.val_loss,
            steps: report.steps,
            pairs: known.pairs,
            seconds: known.seconds.unwrap_or(report.seconds),
            alignment,
            entropy,
            heads,
        }));
        Ok(Next::Continue)
    }
}

/// What a lesson knows of an epoch besides its report ([`Watch::epoch`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Known {
    /// The attention entropy on the scored examples.
    pub(crate) entropy: Option<f32>,
    /// Training pairs seen since the run began.
    pub(crate) pairs: Option<u64>,
    /// Seconds of training since the run began, over every process.
    pub(crate) seconds: Option<f64>,
}

impl<M: EncoderDecoder + Clone + Into<AnyModel>> TrainHooks<M> for Watch<'_, '_> {
    type Error = Error;

    fn step_every(&self) -> u64 {
        // A run that can be held is asked at every step: each step it takes
        // while held (stepped one at a time) is heard, whatever the interval.
        match self.shared.every.step_every() {
            0 => 0,
            _ if self.shared.control.is_some() => 1,
            n => n,
        }
    }

    fn after_step(&mut self, report: &StepReport, model: &M) -> Result<()> {
        let every = self.shared.every;
        let run = self.run.to_string();
        let held = self.shared.control.as_ref().is_some_and(RunControl::is_paused);
        let due = |interval: u64| interval > 0 && (held || report.step.is_multiple_of(interval));
        if due(every.steps) {
            let (pairs, seconds) = self.last;
            let rate = (report.pairs - pairs) as f64 / (report.seconds - seconds).max(1e-9);
            self.last = (report.pairs, report.seconds);
            let (epoch, step, loss, lr, seconds) = (report.epoch, report.step, report.loss, report.lr, report.seconds);
            let pairs_per_second = rate;
            self.shared.send(Event::Step(Step { run: run.clone(), epoch, step, loss, lr, pairs_per_second, seconds }));
        }
        if due(every.snapshots) {
            for (example, pinned) in self.pinned.iter().enumerate() {
                let Some(weights) = model.head_attention(&pinned.batch)? else { break };
                self.shared.send(Event::Snapshot(Snapshot {
                    run: run.clone(),
                    epoch: report.epoch,
                    step: report.step,
                    example,
                    source: pinned.source.clone(),
                    target: pinned.target.clone(),
                    weights: weights.index_axis_move(Axis(2), 0),
                }));
            }
            if let Some((src_vocab, tgt_vocab)) = self.vocabs {
                let model: AnyModel = model.clone().into();
                let trained = Trained { run: &run, model: &model, src_vocab, tgt_vocab, examples: self.scored };
                self.shared.training(&trained, report.step);
            }
        }
        Ok(())
    }

    fn after_epoch(&mut self, report: &EpochReport, model: &M) -> Result<Next> {
        self.epoch(report, model, Known::default())
    }
}
