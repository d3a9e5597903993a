//! The sorting case study: a bidirectional GRU encoder and a GRU decoder
//! learn to sort digit sequences, with Bahdanau's additive attention (in
//! Bahdanau's placement: the context joins the decoder's input) and
//! without it, at two sequence lengths; then the failure modes the case
//! study describes are measured instead of described: duplicates, inputs
//! longer than any seen in training, and a digit that is rare in training.
//! Each model is measured with the weights of its epoch with the lowest
//! validation loss (its `measured_epoch`).
//!
//! With [`StudyModel::Transformer`] the task Transformer (2 + 2 layers of
//! width `hidden`, 4 heads, its own schedule) takes the recurrent pair's
//! place at each length, measured the same way. With `time_epochs` the
//! lesson only times training (the workload of
//! `benches/pytorch/sort_study.py`).
//!
//! ```
//! use lingo_lessons::{SortStudySettings, sort_study};
//! let settings = SortStudySettings {
//!     lengths: vec![3], digits: 5, train_size: 256, val_size: 32, test_size: 32,
//!     epochs: 2, emb: 8, hidden: 8, longer: vec![1], rare_share: 0.0,
//!     ..Default::default()
//! };
//! let results = sort_study(&settings.check()?, &mut ())?;
//! let models: Vec<&str> = results.runs.iter().map(|r| r.model).collect();
//! assert_eq!(models, ["additive", "none"]);
//! assert_eq!(results.runs[0].entropy.len(), 3); // before training, and after each epoch
//! # Ok::<(), lingo_lessons::Error>(())
//! ```

use std::collections::BTreeMap;

use lingo_attention::Scorer;
use lingo_data::{AlignedExample, DigitOp, DigitTask, Task};
use lingo_nn::{
    AnyModel, EncoderDecoder, EpochReport, Init, Next, Placement, Progress, RnnKind, SaliencyComparison, Seq2SeqConfig,
    StateDict, StepReport, TrainConfig, TrainHooks, compare_saliency, train_model_hooked,
};
use lingo_tensor::Module;
use ndarray::{Array2, Array4};
use rand::distr::Distribution;
use rand::distr::weighted::WeightedIndex;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::budget;
use crate::error::{Error, Result};
use crate::measure::{AttentionSummary, HeadScores, alignment_accuracy, head_scores, mean_entropy, sequence_accuracy};
use crate::models::{HEADS, ModelChoice, check_widths, transformer, transformer_schedule};
use crate::observe::{Event, Finished, Known, Observer, Pinned, RunInfo, Shared, Started, Trained, Watch};
use crate::probes::{ProbeRow, baseline_loss, probe_model};
use crate::settings::{
    Checked, MAX_BATCH, MAX_EPOCHS, MAX_EXAMPLES, MAX_LENGTH, MAX_SHARDS, at_most, check_fields, choice, defaults,
    dimension, positive_real, unit_fraction,
};

/// Settings of the sorting case study; the defaults are the case study's.
///
/// ```
/// let settings = lingo_lessons::SortStudySettings::default();
/// assert_eq!((settings.lengths.clone(), settings.epochs, settings.hidden), (vec![5, 10], 8, 64));
/// ```
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SortStudySettings {
    /// Sequence lengths to train at (each trained with and without attention)
    #[arg(long, value_delimiter = ',', default_value = "5,10", value_parser = at_most::<MAX_LENGTH>)]
    pub lengths: Vec<usize>,
    /// Distinct digits (the vocabulary besides the specials), at most 2048
    #[arg(long, default_value = "10", value_parser = dimension)]
    pub digits: usize,
    /// Training sequences per run
    #[arg(long, default_value = "10000", value_parser = at_most::<MAX_EXAMPLES>)]
    pub train_size: usize,
    /// Validation sequences (loss and attention entropy after each epoch)
    #[arg(long, default_value = "500", value_parser = at_most::<MAX_EXAMPLES>)]
    pub val_size: usize,
    /// Test sequences per measurement
    #[arg(long, default_value = "1000", value_parser = at_most::<MAX_EXAMPLES>)]
    pub test_size: usize,
    /// Epochs per run
    #[arg(long, default_value = "8", value_parser = at_most::<MAX_EPOCHS>)]
    pub epochs: usize,
    /// Sequences per batch
    #[arg(long, default_value = "64", value_parser = at_most::<MAX_BATCH>)]
    pub batch_size: usize,
    /// Cut each batch into this many row groups trained on parallel threads (data parallelism; results depend on this, not on --threads)
    #[arg(long, default_value = "2", value_parser = at_most::<MAX_SHARDS>)]
    pub shards: usize,
    /// Adam's learning rate
    #[arg(long, default_value = "3e-3", value_parser = positive_real, allow_hyphen_values = true)]
    pub lr: f64,
    /// Embedding size
    #[arg(long, default_value = "32", value_parser = dimension)]
    pub emb: usize,
    /// GRU hidden size (per direction in the encoder)
    #[arg(long, default_value = "64", value_parser = dimension)]
    pub hidden: usize,
    /// How much longer than trained the test inputs get (comma-separated offsets)
    #[arg(long, value_delimiter = ',', default_value = "1,2,5", value_parser = at_most::<MAX_LENGTH>)]
    pub longer: Vec<usize>,
    /// The digit made rare in the rare-value run
    #[arg(long, default_value = "7")]
    pub rare_digit: usize,
    /// Probability of the rare digit at each position in the rare-value run's training data (0: skip that run)
    #[arg(long, default_value = "0.01", value_parser = unit_fraction, allow_hyphen_values = true)]
    pub rare_share: f32,
    /// After training, probe each model on fresh sequences: its attention replaced by uniform, shuffled,
    /// one-hot and gold weights and by a zero context
    #[arg(long)]
    pub probe: bool,
    /// Only time training epochs: train the attention model at the first length without validation, report the seconds of each epoch and their median, measure nothing else
    #[arg(long)]
    pub time_epochs: bool,
    /// The model: the case study's recurrent one (with and without attention), or the Transformer
    #[arg(long, value_enum, default_value = "rnn")]
    #[serde(with = "choice")]
    pub model: StudyModel,
    /// Seed of every random choice (data, initialisation, batch order)
    #[arg(long, default_value = "0")]
    pub seed: u64,
}

impl Default for SortStudySettings {
    fn default() -> SortStudySettings {
        defaults()
    }
}

/// Which model the case study trains.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum StudyModel {
    /// Bidirectional GRU encoder, GRU decoder, additive attention in Bahdanau's placement (and without attention)
    Rnn,
    /// The Transformer: 2 + 2 layers of width --hidden, 4 heads
    Transformer,
}

impl SortStudySettings {
    /// Checks every setting's bound, the settings against each other and
    /// the whole against the machine's memory, before any work. The rare
    /// digit matters only when the rare-value run happens: not with
    /// `time_epochs`, nor with `rare_share` 0.
    ///
    /// ```
    /// use lingo_lessons::SortStudySettings;
    /// let few = SortStudySettings { digits: 5, ..Default::default() };
    /// assert_eq!(few.clone().check().unwrap_err().to_string(), "invalid `rare_digit`: must be below `digits` (5), got 7");
    /// assert!(SortStudySettings { time_epochs: true, ..few }.check().is_ok());
    /// ```
    pub fn check(self) -> Result<Checked<SortStudySettings>> {
        check_fields(&self)?;
        if self.model == StudyModel::Transformer {
            check_widths(&[ModelChoice::Transformer], self.hidden, HEADS)?;
        }
        let rare_run = !self.time_epochs && self.rare_share > 0.0;
        if rare_run && self.rare_digit >= self.digits {
            return Err(Error::setting(
                "rare_digit",
                format!("must be below `digits` ({}), got {}", self.digits, self.rare_digit),
            ));
        }
        if let Some(&len) = self.lengths.iter().find(|&&len| len < 2) {
            return Err(Error::setting(
                "lengths",
                format!(
                    "must be at least 2 (one digit is sorted already, and the duplicates test needs two), got {len}"
                ),
            ));
        }
        // The lengths train one after the other: the longest decides.
        let longest = self.lengths.iter().copied().max().unwrap_or(1);
        let test_len = longest + self.longer.iter().copied().max().unwrap_or(0);
        let task = self.task(longest)?;
        let [model, batch] = budget::training_bytes(&self.recurrent(&task, true).into(), self.batch_size, longest);
        budget::fits(&[
            ("train_size", budget::example_bytes(self.train_size, longest)),
            ("val_size", budget::example_bytes(self.val_size, longest)),
            ("test_size", budget::example_bytes(self.test_size, test_len).saturating_mul(4)),
            ("hidden", model),
            ("batch_size", batch),
        ])?;
        Ok(Checked::new(self))
    }

    /// Sorting sequences of `len` digits.
    fn task(&self, len: usize) -> Result<DigitTask> {
        Ok(DigitTask::new(DigitOp::Sort, self.digits, len, len)?)
    }

    /// The case study's model: bidirectional GRU encoder, GRU decoder, and
    /// Bahdanau's additive attention in Bahdanau's placement (or none).
    fn recurrent(&self, task: &DigitTask, attention: bool) -> Seq2SeqConfig {
        Seq2SeqConfig {
            rnn: RnnKind::Gru,
            bidirectional: true,
            emb_dim: self.emb,
            hidden_dim: self.hidden,
            attn_dim: self.hidden,
            attention: attention.then_some(Scorer::Additive),
            placement: Placement::Bahdanau,
            ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len())
        }
    }

    /// A fresh model for `task`, from the same seed as every other, so
    /// only the architecture differs.
    fn model(&self, task: &DigitTask, attention: bool) -> Result<AnyModel> {
        let config = match self.model {
            StudyModel::Rnn => self.recurrent(task, attention).into(),
            StudyModel::Transformer => {
                let (src, tgt) = (task.src_vocab().len(), task.tgt_vocab().len());
                transformer(src, tgt, self.hidden, Init::default()).into()
            }
        };
        Ok(AnyModel::new(config, &mut StdRng::seed_from_u64(self.seed))?)
    }

    /// With and without attention for the recurrent pair; the Transformer alone.
    fn attentions(&self) -> &'static [bool] {
        match self.model {
            StudyModel::Rnn => &[true, false],
            StudyModel::Transformer => &[true],
        }
    }

    /// The name a model goes by in tables and JSON: its attention.
    fn model_name(&self, attention: bool) -> &'static str {
        match (self.model, attention) {
            (StudyModel::Transformer, _) => "transformer",
            (StudyModel::Rnn, true) => "additive",
            (StudyModel::Rnn, false) => "none",
        }
    }

    /// The training settings of every run: Adam at `lr`, constant rate (the
    /// Transformer: its own rate and schedule), no label smoothing.
    fn train_config(&self) -> TrainConfig {
        let mut config = TrainConfig::new(self.epochs, self.lr);
        config.batching.batch_size = self.batch_size;
        config.shards = self.shards;
        config.seed = self.seed;
        config.progress = Progress::Silent;
        if self.model == StudyModel::Transformer {
            transformer_schedule(&mut config);
        }
        config
    }
}

/// What the case study measured.
#[derive(Debug, Clone, Serialize)]
pub struct SortStudyResults {
    /// Every model, in the order trained: each length's models, then the rare-value run.
    pub runs: Vec<SortRun>,
    /// The rare-value comparison: the uniform model and the one trained
    /// with the rare digit, on sequences with and without it.
    pub rare: Vec<RareRow>,
    /// With `probe`: each length and its models under every probe.
    pub probes: Vec<(usize, Vec<ProbeRow>)>,
    /// With `time_epochs`: the timing, and nothing else.
    pub timing: Option<EpochTimes>,
}

/// One trained model and its measurements.
#[derive(Debug, Clone, Serialize)]
pub struct SortRun {
    /// The sequence length trained at.
    pub len: usize,
    /// Its attention as tables name it: `additive`, `none` or `transformer`.
    pub model: &'static str,
    /// Its training data: `uniform`, or the rare digit's share.
    pub variant: String,
    /// Sequence accuracy (greedy, exact) on fresh test sequences.
    pub accuracy: f64,
    /// ... on test sequences with a repeated digit.
    pub duplicates: f64,
    /// ... on sequences of distinct digits; `None` unless the length is
    /// below the number of digits (at equal numbers the output is constant).
    pub distinct: Option<f64>,
    /// `(length, accuracy)` on inputs longer than trained.
    pub longer: Vec<(usize, f64)>,
    /// Alignment accuracy on the test set; `None` without attention.
    pub alignment: Option<f64>,
    /// Every head's alignment and entropy on the test set.
    pub heads: Option<HeadScores>,
    /// Gradient × input saliency on the test set, beside the attention.
    pub saliency: SaliencyComparison,
    /// Mean attention entropy before training and after each epoch (attention models only).
    pub entropy: Vec<f32>,
    /// Validation loss after each epoch.
    pub val_losses: Vec<f32>,
    /// The epoch (from 1) whose weights were measured: the lowest validation loss.
    pub measured_epoch: usize,
    /// Seconds of training.
    pub seconds: f64,
    /// The case study's sequence through the model, for attention models of uniform data.
    pub example: Option<SortExample>,
}

/// One sequence's attention: the case study's `7 2 5 2 9` at length 5,
/// the digits of π otherwise.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SortExample {
    /// The source tokens, `<sos>` and `<eos>` included: the columns.
    pub source: Vec<String>,
    /// The decoder's inputs: the rows (row `n` predicts output token `n + 1`).
    pub target: Vec<String>,
    /// `(tgt_len, src_len)`: the model's attention (a Transformer's last layer).
    pub weights: Array2<f32>,
    /// `(layers, heads, tgt_len, src_len)`, with more than one head.
    pub heads: Option<Array4<f32>>,
}

/// Accuracy on sequences with the rare digit and without it, for one model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RareRow {
    /// Its training data.
    pub training: String,
    /// Sequence accuracy on sequences holding the rare digit.
    pub with_rare: f64,
    /// ... on sequences without it.
    pub without_rare: f64,
    /// Alignment accuracy on the sequences with the rare digit.
    pub alignment: Option<f64>,
}

/// `time_epochs`: the seconds of each training epoch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpochTimes {
    /// The length timed.
    pub seq_len: usize,
    /// Training sequences.
    pub train_size: usize,
    /// Sequences per batch.
    pub batch_size: usize,
    /// Wall-clock seconds of each epoch.
    pub epoch_seconds: Vec<f64>,
    /// Their median.
    pub median_epoch_seconds: f64,
    /// Mean training loss of each epoch (to check that another implementation learns alike).
    pub train_losses: Vec<f32>,
}

/// A model's line of `lingo sort-study --json`: its summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SortSummary {
    /// The length trained at.
    pub seq_len: usize,
    /// Whether the model attends.
    pub attention: bool,
    /// `additive`, `none` or `transformer`.
    pub model: &'static str,
    /// Sequence accuracy.
    pub sequence_accuracy: f64,
    /// `uniform`, or the rare digit's share.
    pub training_data: String,
    /// Accuracy with repeated digits.
    pub with_duplicates: f64,
    /// Accuracy with distinct digits.
    pub without_duplicates: Option<f64>,
    /// Accuracy by longer length.
    pub longer: BTreeMap<String, f64>,
    /// Alignment accuracy.
    pub alignment_accuracy: Option<f64>,
    /// Its heads and its saliency.
    #[serde(flatten)]
    pub measures: AttentionSummary,
    /// The entropy after the last epoch.
    pub final_entropy: Option<f32>,
    /// Validation loss after each epoch.
    pub val_losses: Vec<f32>,
    /// The epoch measured.
    pub measured_epoch: usize,
    /// Seconds of training.
    pub train_seconds: f64,
}

impl SortRun {
    /// The run's summary, as `lingo sort-study --json` prints it.
    ///
    /// ```
    /// # let settings = lingo_lessons::SortStudySettings { lengths: vec![3], digits: 5, train_size: 64, val_size: 8, test_size: 8, epochs: 1, emb: 8, hidden: 8, longer: vec![1], rare_share: 0.0, ..Default::default() };
    /// let results = lingo_lessons::sort_study(&settings.check()?, &mut ())?;
    /// let summary = results.runs[0].summary();
    /// assert_eq!((summary.seq_len, summary.model, summary.attention), (3, "additive", true));
    /// assert_eq!(summary.longer.keys().collect::<Vec<_>>(), ["4"]);
    /// # Ok::<(), lingo_lessons::Error>(())
    /// ```
    pub fn summary(&self) -> SortSummary {
        SortSummary {
            seq_len: self.len,
            attention: self.model != "none",
            model: self.model,
            sequence_accuracy: self.accuracy,
            training_data: self.variant.clone(),
            with_duplicates: self.duplicates,
            without_duplicates: self.distinct,
            longer: self.longer.iter().map(|&(len, accuracy)| (len.to_string(), accuracy)).collect(),
            alignment_accuracy: self.alignment,
            measures: AttentionSummary::new(self.heads.as_ref(), &self.saliency),
            final_entropy: self.entropy.last().copied(),
            val_losses: self.val_losses.clone(),
            measured_epoch: self.measured_epoch,
            train_seconds: self.seconds,
        }
    }
}

/// Runs the case study (or, with `time_epochs`, only times training).
pub fn sort_study(settings: &Checked<SortStudySettings>, observer: &mut dyn Observer) -> Result<SortStudyResults> {
    let observer = Shared::new(observer);
    let results = if settings.time_epochs { time_epochs(settings, &observer)? } else { study(settings, &observer)? };
    observer.check_stopped()?;
    let value = serde_json::to_value(&results).expect("results serialize");
    observer.send(Event::Finished(Finished { lesson: "sort_study".into(), results: value }));
    Ok(results)
}

/// A model to train: its length, its attention and its name.
struct Planned {
    len: usize,
    attention: bool,
    run: String,
    model: AnyModel,
}

/// Every model of every length, and the rare-value run's, as the study
/// trains them; the observer hears of them all first.
fn plan(settings: &SortStudySettings, observer: &Shared<'_>) -> Result<Vec<Planned>> {
    let mut planned = Vec::new();
    for &len in &settings.lengths {
        for &attention in settings.attentions() {
            let name = if attention { "attention" } else { "no attention" };
            let run = format!("len {len}, {name} (uniform)");
            planned.push(Planned { len, attention, run, model: settings.model(&settings.task(len)?, attention)? });
        }
    }
    if settings.rare_share > 0.0 {
        let len = settings.lengths[0];
        let run = format!("len {len}, attention ({})", rare_variant(settings));
        planned.push(Planned { len, attention: true, run, model: settings.model(&settings.task(len)?, true)? });
    }
    let (train, valid, test) = (settings.train_size, settings.val_size, settings.test_size);
    observer.send(Event::Started(Started {
        lesson: "sort_study".into(),
        settings: crate::settings::to_json(settings),
        data: BTreeMap::from([("train".into(), train), ("valid".into(), valid), ("test".into(), test)]),
        runs: planned
            .iter()
            .map(|p| RunInfo { run: p.run.clone(), label: p.run.clone(), params: p.model.num_params() })
            .collect(),
    }));
    Ok(planned)
}

/// The study: each length with and without attention, then the rare-value run.
fn study(settings: &SortStudySettings, observer: &Shared<'_>) -> Result<SortStudyResults> {
    let mut planned = plan(settings, observer)?.into_iter();
    let mut results = SortStudyResults { runs: Vec::new(), rare: Vec::new(), probes: Vec::new(), timing: None };
    let mut first_attention_model = None;
    for &len in &settings.lengths {
        let task = settings.task(len)?;
        let mut rng = StdRng::seed_from_u64(settings.seed ^ len as u64);
        let train = task.generate(settings.train_size, &mut rng);
        let val = task.generate(settings.val_size, &mut rng);
        let mut trained = Vec::new();
        for plan in planned.by_ref().take(settings.attentions().len()) {
            let attention = plan.attention;
            let (mut run, model) = train_and_measure(settings, &task, (&train, &val), plan, "uniform", observer)?;
            if attention {
                run.example = example(settings, &task, &model)?;
            }
            trained.push((settings.model_name(attention), attention, model));
            results.runs.push(run);
        }
        observer.check_stopped()?;
        if settings.probe {
            results.probes.push((len, probe_length(settings, &task, &trained)?));
        }
        if first_attention_model.is_none()
            && let Some(i) = trained.iter().position(|(_, attention, _)| *attention)
        {
            first_attention_model = Some((task.clone(), trained.swap_remove(i).2));
        }
    }
    if let (Some(plan), Some((task, uniform))) = (planned.next(), &first_attention_model) {
        let (run, rows) = rare_value_run(settings, task, (uniform, plan), observer)?;
        results.runs.push(run);
        results.rare = rows;
    }
    Ok(results)
}

/// The rare-value run's training data, as tables name it.
fn rare_variant(settings: &SortStudySettings) -> String {
    format!("digit {} at {}%", settings.rare_digit, 100.0 * settings.rare_share)
}

/// `time_epochs`: the attention model at the first length, trained on the
/// same data as the full study's, with an empty validation set so that an
/// epoch is the training pass alone (batching, forward, backward, Adam
/// step).
fn time_epochs(settings: &SortStudySettings, observer: &Shared<'_>) -> Result<SortStudyResults> {
    let len = settings.lengths[0];
    let task = settings.task(len)?;
    let train = task.generate(settings.train_size, &mut StdRng::seed_from_u64(settings.seed ^ len as u64));
    let mut model = settings.model(&task, true)?;
    let run = format!("len {len}, attention");
    observer.send(Event::Started(Started {
        lesson: "sort_study".into(),
        settings: crate::settings::to_json(settings),
        data: BTreeMap::from([("train".into(), train.len())]),
        runs: vec![RunInfo { run: run.clone(), label: run.clone(), params: model.num_params() }],
    }));
    let mut config = settings.train_config();
    config.control = observer.control();
    let mut watch = observer.watch(&run, &[], &[]);
    // No validation pairs: this run measures its epochs' time alone.
    let trained = train_model_hooked(&mut model, &train, &train[..0], &config, None, &mut watch)?;
    let ends = watch.epoch_ends();
    let seconds: Vec<f64> = std::iter::once(&0.0).chain(ends).zip(ends).map(|(start, end)| end - start).collect();
    let mut sorted = seconds.clone();
    sorted.sort_by(f64::total_cmp);
    let median = (sorted[(sorted.len() - 1) / 2] + sorted[sorted.len() / 2]) / 2.0;
    let timing = EpochTimes {
        seq_len: len,
        train_size: settings.train_size,
        batch_size: settings.batch_size,
        epoch_seconds: seconds,
        median_epoch_seconds: median,
        train_losses: trained.train_losses,
    };
    Ok(SortStudyResults { runs: Vec::new(), rare: Vec::new(), probes: Vec::new(), timing: Some(timing) })
}

/// The study's hooks for one run: the observer's events, the attention
/// entropy on the validation set after every epoch, and the weights of the
/// epoch with the lowest validation loss.
struct StudyHooks<'w, 'a> {
    watch: Watch<'w, 'a>,
    val: &'w [AlignedExample],
    /// Entropy before training (epoch 0), then after each epoch.
    entropy: Vec<f32>,
    /// The best epoch so far and its weights.
    best: Option<(usize, StateDict)>,
}

impl<M: EncoderDecoder + Clone + Into<AnyModel>> TrainHooks<M> for StudyHooks<'_, '_> {
    type Error = Error;

    fn step_every(&self) -> u64 {
        TrainHooks::<M>::step_every(&self.watch)
    }

    fn after_step(&mut self, step: &StepReport, model: &M) -> Result<()> {
        self.watch.after_step(step, model)
    }

    fn after_epoch(&mut self, report: &EpochReport, model: &M) -> Result<Next> {
        let h = mean_entropy(model, self.val)?;
        self.entropy.extend(h);
        // With a constant learning rate the last epoch can land on a spike
        // (a validation loss of 0.017 one epoch, 0.072 the next, seen):
        // the best epoch's weights are the ones measured.
        if report.improved {
            self.best = Some((report.epoch, StateDict::from_module(model)?));
        }
        self.watch.epoch(report, model, Known { entropy: h, ..Known::default() })
    }
}

/// Trains one model, telling the observer (each epoch with its attention
/// entropy), then measures it on fresh test sets.
fn train_and_measure(
    settings: &SortStudySettings,
    task: &DigitTask,
    (train, val): (&[AlignedExample], &[AlignedExample]),
    plan: Planned,
    variant: &str,
    observer: &Shared<'_>,
) -> Result<(SortRun, AnyModel)> {
    let Planned { len, attention, run, mut model } = plan;
    let mut config = settings.train_config();
    config.control = observer.control();
    // Entropy before training (epoch 0) starts the curve: near ln(len + 2), uniform.
    let entropy = mean_entropy(&model, val)?.into_iter().collect();
    let pinned = [Pinned::new(&case_sequence(settings, task)?, task.src_vocab(), task.tgt_vocab())?];
    let watch = observer.watch(&run, val, &pinned).with_model(task.src_vocab(), task.tgt_vocab());
    let mut hooks = StudyHooks { watch, val, entropy, best: None };
    let trained = train_model_hooked(&mut model, train, val, &config, None, &mut hooks)?;
    let measured_epoch = match hooks.best {
        Some((epoch, weights)) => {
            weights.load_into(&mut model)?;
            epoch
        }
        None => trained.val_losses.len(),
    };
    let (src_vocab, tgt_vocab) = (task.src_vocab(), task.tgt_vocab());
    observer.trained(&Trained { run: &run, model: &model, src_vocab, tgt_vocab, examples: val });
    // Test sets from their own seed, the same for every model of this length.
    let mut rng = StdRng::seed_from_u64(settings.seed.wrapping_add(1000 + len as u64));
    let test = task.generate(settings.test_size, &mut rng);
    let duplicates: Vec<AlignedExample> =
        std::iter::repeat_with(|| task.sample(&mut rng)).filter(has_duplicates).take(settings.test_size).collect();
    let distinct = (len < settings.digits)
        .then(|| distinct_examples(task, settings.digits, len, settings.test_size, &mut rng))
        .transpose()?;
    let mut longer = Vec::new();
    for &extra in &settings.longer {
        let longer_task = settings.task(len + extra)?;
        longer.push((len + extra, sequence_accuracy(&model, &longer_task.generate(settings.test_size, &mut rng))?));
    }
    let result = SortRun {
        len,
        model: settings.model_name(attention),
        variant: variant.to_string(),
        accuracy: sequence_accuracy(&model, &test)?,
        duplicates: sequence_accuracy(&model, &duplicates)?,
        distinct: distinct.map(|d| sequence_accuracy(&model, &d)).transpose()?,
        longer,
        alignment: alignment_accuracy(&model, &test)?.map(|s| s.accuracy),
        heads: head_scores(&model, &test)?,
        saliency: compare_saliency(&model, &test)?,
        entropy: hooks.entropy,
        val_losses: trained.val_losses,
        measured_epoch,
        seconds: trained.seconds,
        example: None,
    };
    Ok((result, model))
}

/// Every model trained at one length under every probe, on fresh test
/// sequences; the gain lost is measured against the model without
/// attention, when the study trained one.
fn probe_length(
    settings: &SortStudySettings,
    task: &DigitTask,
    trained: &[(&'static str, bool, AnyModel)],
) -> Result<Vec<ProbeRow>> {
    let len = task_len(task);
    let seed = settings.seed.wrapping_add(3000 + len as u64);
    let examples = task.generate(settings.test_size, &mut StdRng::seed_from_u64(seed));
    let baseline = trained
        .iter()
        .find(|(_, attention, _)| !attention)
        .map(|(_, _, model)| baseline_loss(model, &examples))
        .transpose()?;
    let mut rows = Vec::new();
    for (name, attention, model) in trained {
        rows.extend(probe_model((name, name), model, *attention, &examples, baseline)?);
    }
    Ok(rows)
}

/// The number of digits of the task's sequences (all of one length).
fn task_len(task: &DigitTask) -> usize {
    task.generate(1, &mut StdRng::seed_from_u64(0)).first().map_or(0, |e| e.src.len() - 2)
}

/// Whether some digit occurs twice in the source.
fn has_duplicates(example: &AlignedExample) -> bool {
    let digits = &example.src[1..example.src.len() - 1];
    digits.iter().enumerate().any(|(i, d)| digits[..i].contains(d))
}

/// `n` examples of `len` different digits each (a random selection, in random order).
fn distinct_examples(
    task: &DigitTask,
    digits: usize,
    len: usize,
    n: usize,
    rng: &mut StdRng,
) -> Result<Vec<AlignedExample>> {
    let mut pool: Vec<usize> = (0..digits).collect();
    (0..n)
        .map(|_| {
            pool.shuffle(rng);
            Ok(task.example(&pool[..len])?)
        })
        .collect()
}

/// Trains the attention model again on data where one digit is rare, then
/// compares it with the uniformly trained `uniform` model on test sequences
/// that contain the rare digit and on sequences that do not.
fn rare_value_run(
    settings: &SortStudySettings,
    task: &DigitTask,
    (uniform, fresh): (&AnyModel, Planned),
    observer: &Shared<'_>,
) -> Result<(SortRun, Vec<RareRow>)> {
    let (len, rare, digits) = (settings.lengths[0], settings.rare_digit, settings.digits);
    let others = (1.0 - f64::from(settings.rare_share)) / (digits - 1).max(1) as f64;
    let weights: Vec<f64> =
        (0..digits).map(|d| if d == rare { f64::from(settings.rare_share) } else { others }).collect();
    let skewed = WeightedIndex::new(&weights).map_err(|e| Error::setting("rare_share", e.to_string()))?;
    let mut rng = StdRng::seed_from_u64(settings.seed ^ 0x5EED ^ len as u64);
    let mut draw = |n: usize| -> Result<Vec<AlignedExample>> {
        (0..n).map(|_| Ok(task.example(&(0..len).map(|_| skewed.sample(&mut rng)).collect::<Vec<_>>())?)).collect()
    };
    let (train, val) = (draw(settings.train_size)?, draw(settings.val_size)?);
    let variant = rare_variant(settings);
    let (result, model) = train_and_measure(settings, task, (&train, &val), fresh, &variant, observer)?;
    // Uniform test sequences with the rare digit forced into a random position, and uniform ones without it.
    let mut rng = StdRng::seed_from_u64(settings.seed.wrapping_add(2000));
    let with_rare = (0..settings.test_size)
        .map(|_| {
            let mut sequence: Vec<usize> = (0..len).map(|_| rng.random_range(0..digits)).collect();
            sequence[rng.random_range(0..len)] = rare;
            Ok(task.example(&sequence)?)
        })
        .collect::<Result<Vec<_>>>()?;
    let rare_id = task.src_vocab().id(&rare.to_string());
    let without: Vec<AlignedExample> = std::iter::repeat_with(|| task.sample(&mut rng))
        .filter(|e| !e.src.contains(&rare_id))
        .take(settings.test_size)
        .collect();
    let row = |training: String, model: &AnyModel| -> Result<RareRow> {
        Ok(RareRow {
            training,
            with_rare: sequence_accuracy(model, &with_rare)?,
            without_rare: sequence_accuracy(model, &without)?,
            alignment: alignment_accuracy(model, &with_rare)?.map(|s| s.accuracy),
        })
    };
    Ok((result, vec![row("uniform".into(), uniform)?, row(variant, &model)?]))
}

/// The case study's sequence: `7 2 5 2 9` at length 5, the digits of π
/// otherwise. Its attention is shown after training and snapshotted while
/// training goes.
fn case_sequence(settings: &SortStudySettings, task: &DigitTask) -> Result<AlignedExample> {
    let len = task_len(task);
    let digits: Vec<usize> = if len == 5 {
        vec![7, 2, 5, 2, 9]
    } else {
        [3, 1, 4, 1, 5, 9, 2, 6, 5, 3].iter().cycle().take(len).map(|d| d % settings.digits).collect()
    };
    Ok(task.example(&digits)?)
}

/// The attention of the case study's sequence.
fn example(settings: &SortStudySettings, task: &DigitTask, model: &AnyModel) -> Result<Option<SortExample>> {
    let pinned = Pinned::new(&case_sequence(settings, task)?, task.src_vocab(), task.tgt_vocab())?;
    let Some((weights, heads)) = pinned.attention(model)? else { return Ok(None) };
    Ok(Some(SortExample { source: pinned.source().to_vec(), target: pinned.target().to_vec(), weights, heads }))
}
