//! The alignment suite: every configuration trained on each phenomenon of
//! known alignment ([`Phenomenon`]), its attention scored against the gold
//! sure and possible links of fresh test sentences by alignment accuracy
//! and by AER (Och and Ney, 2003), and the sentences where its peaks miss
//! the gold kept. `docs/alignment-suite.md` describes the tasks, the
//! measures and a run.
//!
//! ```
//! use lingo_lessons::{SuiteSettings, TaskTraining, alignment_suite};
//! let settings = SuiteSettings {
//!     phenomena: vec!["copy".parse()?, "swap".parse()?],
//!     configs: vec!["none".parse().unwrap(), "dot".parse().unwrap()],
//!     train_size: 64, val_size: 16, test_size: 16,
//!     training: TaskTraining { epochs: 1, hidden: 16, emb: 16, ..Default::default() },
//!     ..Default::default()
//! };
//! let results = alignment_suite(&settings.check()?, &mut ())?;
//! for run in &results.runs {
//!     println!("{:<8} {:<14} AER {:?}", run.phenomenon, run.label, run.alignment.as_ref().map(|a| a.aer.aer));
//! }
//! assert_eq!(results.runs.len(), 4); // phenomena × configurations
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::time::Instant;

use lingo_data::{
    AerScore, AlignedExample, AlignmentAccuracy, AlignmentErrorRate, AlignmentScore, Batch, Phenomenon, SuiteConfig,
    SuiteTask, Task, Vocab, format_pharaoh, hard_alignment, pharaoh_links, threshold_alignment,
};
use lingo_nn::{
    AnyConfig, AnyModel, EncoderDecoder, Progress, Schedule, TrainConfig, TransformerConfig, train_model_hooked,
};
use lingo_tensor::Module;
use ndarray::{Array2, Axis, s};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::budget;
use crate::error::{Error, Result};
use crate::measure::{CHUNK, HeadScores, head_scores, sequence_accuracy};
use crate::models::{ModelChoice, TaskTraining, transformer_schedule};
use crate::observe::{Event, Finished, Observer, Pinned, RunInfo, Shared, Started, Trained};
use crate::settings::{Checked, MAX_EXAMPLES, MAX_LENGTH, at_most, check_fields, check_range, defaults, dimension};

/// The recurrent models' label smoothing and linear warm-up: the attention
/// tutorial's (the ablation's defaults), under which dot attention still
/// learns to align.
const LABEL_SMOOTHING: f32 = 0.1;
const WARMUP: u64 = 4000;
/// The share of its row's weight a link holds in [`SuiteAlignment::aer_split`]:
/// above a third, so a row has at most three such links, and an even split
/// between two source words gives both.
pub const SPLIT_LINK: f32 = 0.3;

/// Settings of the alignment suite; the defaults are those of
/// `docs/alignment-suite.md`.
///
/// ```
/// let settings = lingo_lessons::SuiteSettings::default();
/// assert_eq!(settings.phenomena.len(), 7);
/// assert_eq!(settings.configs.iter().map(|c| c.to_string()).collect::<Vec<_>>(), ["none", "dot", "additive", "transformer"]);
/// ```
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SuiteSettings {
    /// The phenomena to train on, in order (`docs/alignment-suite.md` describes each)
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "copy,reverse,swap,many-to-one,one-to-many,filler,sort-duplicates"
    )]
    pub phenomena: Vec<Phenomenon>,
    /// The configurations to train on each: none, dot, general, additive, scaled_dot, multi_head:H (the LSTM
    /// model with that attention), transformer (d = --hidden, 2+2 layers, 4 heads)
    #[arg(long, value_delimiter = ',', default_value = "none,dot,additive,transformer")]
    pub configs: Vec<ModelChoice>,
    /// Training sentences per phenomenon
    #[arg(long, default_value = "4000", value_parser = at_most::<MAX_EXAMPLES>)]
    pub train_size: usize,
    /// Validation sentences per phenomenon
    #[arg(long, default_value = "200", value_parser = at_most::<MAX_EXAMPLES>)]
    pub val_size: usize,
    /// Fresh test sentences per phenomenon, whose attention is scored against the gold links
    #[arg(long, default_value = "500", value_parser = at_most::<MAX_EXAMPLES>)]
    pub test_size: usize,
    /// Epochs, batch size, learning rate and sizes of every model.
    #[command(flatten)]
    pub training: TaskTraining,
    /// Fewest source words (digits for the sort) per sentence
    #[arg(long, default_value = "3", value_parser = at_most::<MAX_LENGTH>)]
    pub min_words: usize,
    /// Most source words (digits for the sort) per sentence, at least 2
    #[arg(long, default_value = "8", value_parser = at_most::<MAX_LENGTH>)]
    pub max_words: usize,
    /// Distinct digits of sort-duplicates (few make repeated digits common), at most 2048
    #[arg(long, default_value = "5", value_parser = dimension)]
    pub digits: usize,
    /// Misaligned test sentences to show per phenomenon and attention configuration
    #[arg(long, default_value = "1")]
    pub show: usize,
    /// Seed of every random choice (data, initialisation, batch order)
    #[arg(long, default_value = "0")]
    pub seed: u64,
}

impl Default for SuiteSettings {
    fn default() -> SuiteSettings {
        defaults()
    }
}

impl SuiteSettings {
    /// Checks every setting's bound, the settings against each other and
    /// the whole against the machine's memory, before any work. The runs
    /// train side by side, one per thread of rayon's current pool, so the
    /// memory needed depends on its size: set the pool up first.
    ///
    /// ```
    /// let settings = lingo_lessons::SuiteSettings { min_words: 1, max_words: 1, ..Default::default() };
    /// let err = settings.check().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid `max_words`: must be at least 2 (a swap, a pair or a filler needs two words), got 1");
    /// ```
    pub fn check(self) -> Result<Checked<SuiteSettings>> {
        check_fields(&self)?;
        check_range(("min_words", self.min_words), ("max_words", self.max_words))?;
        if self.max_words < 2 {
            return Err(Error::setting(
                "max_words",
                format!("must be at least 2 (a swap, a pair or a filler needs two words), got {}", self.max_words),
            ));
        }
        self.training.check(&self.configs)?;
        // Every phenomenon's data is held at once; up to one run per
        // thread trains at a time, each with its model.
        let tasks = self.tasks()?;
        let runs = tasks.len() * self.configs.len();
        let at_once = runs.min(rayon::current_num_threads()) as u64;
        let len = self.longest();
        let [mut model, mut batch] = [0, 0];
        for task in &tasks {
            for &choice in &self.configs {
                let [m, b] = budget::training_bytes(&self.model_config(choice, task), self.training.batch_size, len);
                (model, batch) = (model.max(m), batch.max(b));
            }
        }
        let phenomena = tasks.len() as u64;
        budget::fits(&[
            ("train_size", budget::example_bytes(self.train_size, len).saturating_mul(phenomena)),
            ("val_size", budget::example_bytes(self.val_size, len).saturating_mul(phenomena)),
            ("test_size", budget::example_bytes(self.test_size, len).saturating_mul(phenomena)),
            ("hidden", model.saturating_mul(at_once)),
            ("batch_size", batch.saturating_mul(at_once)),
        ])?;
        Ok(Checked::new(self))
    }

    /// The task of every phenomenon asked for, in order.
    fn tasks(&self) -> Result<Vec<SuiteTask>> {
        let config = SuiteConfig { min_words: self.min_words, max_words: self.max_words, num_digits: self.digits };
        Ok(self.phenomena.iter().map(|p| p.task(&config)).collect::<lingo_data::Result<_>>()?)
    }

    /// The most tokens in a sentence besides `<sos>` and `<eos>`: one-to-many
    /// turns each source word into up to two target words.
    fn longest(&self) -> usize {
        2 * self.max_words
    }

    /// The model `choice` names for `task`'s vocabularies.
    fn model_config(&self, choice: ModelChoice, task: &SuiteTask) -> AnyConfig {
        let (src, tgt) = (task.src_vocab().len(), task.tgt_vocab().len());
        match choice {
            ModelChoice::Recurrent(attention) => self.training.recurrent(attention, src, tgt).into(),
            ModelChoice::Transformer => {
                let config = self.training.transformer(src, tgt, Default::default());
                // Positions for the longest sentence, `<sos>` and `<eos>` included.
                TransformerConfig { max_len: config.max_len.max(self.longest() + 2), ..config }.into()
            }
        }
    }

    /// The model `choice` names for `task`, from the same seed for every
    /// phenomenon so that only the task differs.
    fn model(&self, choice: ModelChoice, task: &SuiteTask) -> Result<AnyModel> {
        Ok(AnyModel::new(self.model_config(choice, task), &mut StdRng::seed_from_u64(self.seed))?)
    }

    /// How `choice` trains: the recurrent models with `lr` warmed up
    /// linearly, the Transformer with its own schedule.
    fn train_config(&self, choice: ModelChoice) -> TrainConfig {
        let mut config = TrainConfig::new(self.training.epochs, self.training.lr);
        config.batching.batch_size = self.training.batch_size;
        config.label_smoothing = LABEL_SMOOTHING;
        config.seed = self.seed;
        config.progress = Progress::Silent;
        config.guided_alignment = self.training.guide(choice);
        match choice {
            ModelChoice::Recurrent(_) => config.schedule = Schedule::LinearWarmup { warmup_steps: WARMUP },
            ModelChoice::Transformer => transformer_schedule(&mut config),
        }
        config
    }

    /// One phenomenon's sentences.
    fn data(&self, task: SuiteTask) -> Result<Data> {
        // Training then validation from one stream, as in the ablation; the test sentences from another.
        let mut rng = StdRng::seed_from_u64(self.seed);
        let (train, val) = (task.generate(self.train_size, &mut rng), task.generate(self.val_size, &mut rng));
        let test = task.generate(self.test_size, &mut StdRng::seed_from_u64(self.seed.wrapping_add(99)));
        let pinned = Pinned::new(&test[0], task.src_vocab(), task.tgt_vocab())?;
        Ok(Data { task, train, val, test, pinned })
    }
}

/// What the alignment suite measured.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteResults {
    /// Every configuration trained on every phenomenon: the phenomena in
    /// order, each with the configurations in order.
    pub runs: Vec<SuiteRun>,
    /// Seconds of the whole lesson, scoring included.
    pub seconds: f64,
}

/// One configuration trained on one phenomenon, and what it measured on
/// the phenomenon's test sentences.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteRun {
    /// The phenomenon.
    pub phenomenon: Phenomenon,
    /// The configuration.
    pub config: ModelChoice,
    /// Its name in tables (`dot (Luong)`).
    #[serde(skip)]
    pub label: String,
    /// Mean training loss of each epoch.
    pub train_losses: Vec<f32>,
    /// Validation loss after each epoch.
    pub val_losses: Vec<f32>,
    /// Share of test sentences decoded greedily without a mistake.
    pub sequence_accuracy: f64,
    /// How the attention peaks meet the gold links; `None` without attention.
    pub alignment: Option<SuiteAlignment>,
    /// Every head's alignment and entropy; `None` without attention.
    pub heads: Option<HeadScores>,
    /// Test sentences scored.
    pub tested: usize,
    /// Seconds of training.
    pub seconds: f64,
}

/// How one model's attention peaks meet the gold links of the test
/// sentences, under teacher forcing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuiteAlignment {
    /// Share of scored rows whose peak is a possible link, with chance.
    pub accuracy: AlignmentScore,
    /// The alignment error rate of the peaks against the sure and possible links.
    pub aer: AerScore,
    /// The alignment error rate of the links holding at least
    /// [`SPLIT_LINK`] of their row's weight ([`threshold_alignment`]):
    /// a word from two source words can find both, which one peak cannot.
    pub aer_split: AerScore,
    /// Test sentences with a target word whose peak is not on a possible link.
    pub misaligned: usize,
    /// The first [`SuiteSettings::show`] of them.
    pub cases: Vec<MisalignedCase>,
}

/// A test sentence whose attention misses the gold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MisalignedCase {
    /// The source tokens, `<sos>` and `<eos>` included: the heatmap's columns.
    pub source: Vec<String>,
    /// The tokens each output row predicts, `<eos>` last: the heatmap's rows.
    pub output: Vec<String>,
    /// Word links `(i, j)` of the attention peaks, in target order, as
    /// [`pharaoh_links`] writes them.
    pub predicted: Vec<(usize, usize)>,
    /// The possible gold links, likewise.
    pub gold: Vec<(usize, usize)>,
    /// The sure gold links, likewise.
    pub sure: Vec<(usize, usize)>,
    /// The attention, `(output.len(), source.len())`.
    pub weights: Array2<f32>,
}

/// A run's line of `lingo alignment-suite --json`: its summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuiteSummary {
    /// The phenomenon's name.
    pub phenomenon: String,
    /// The configuration's name.
    pub config: String,
    /// The last validation loss.
    pub val_loss: f32,
    /// Share of test sentences decoded greedily without a mistake.
    pub sequence_accuracy: f64,
    /// Alignment accuracy; `None` without attention (as for every alignment field).
    pub alignment_accuracy: Option<f64>,
    /// Alignment accuracy of a random peak.
    pub chance: Option<f64>,
    /// Alignment error rate.
    pub aer: Option<f64>,
    /// Alignment error rate of the links holding at least 0.3 of their row's weight.
    pub aer_split: Option<f64>,
    /// Share of predicted links that are possible. One peak per scored row
    /// makes it the alignment accuracy; both are kept.
    pub precision: Option<f64>,
    /// Share of sure links predicted.
    pub recall: Option<f64>,
    /// Predicted links.
    pub links: Option<usize>,
    /// Sure gold links.
    pub sure_links: Option<usize>,
    /// Predicted links that are sure.
    pub sure_hits: Option<usize>,
    /// Predicted links that are possible.
    pub possible_hits: Option<usize>,
    /// The best-aligned head's name, for a model with several heads.
    pub best_head: Option<String>,
    /// Its alignment accuracy.
    pub best_head_alignment: Option<f64>,
    /// Misaligned test sentences.
    pub misaligned: Option<usize>,
    /// The misaligned sentences kept.
    pub misaligned_examples: Option<Vec<CaseSummary>>,
    /// Seconds of training.
    pub train_seconds: f64,
}

/// A misaligned sentence in a [`SuiteSummary`]: words and Pharaoh links.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseSummary {
    /// The source words.
    pub source: String,
    /// The target words.
    pub target: String,
    /// The links of the attention peaks (`0-0 1-2`).
    pub predicted: String,
    /// The possible gold links.
    pub gold: String,
    /// The sure gold links.
    pub sure: String,
}

impl SuiteRun {
    /// The last validation loss (NaN before any epoch).
    ///
    /// ```
    /// # let settings = lingo_lessons::SuiteSettings { phenomena: vec!["copy".parse().unwrap()], configs: vec!["none".parse().unwrap()], train_size: 32, val_size: 8, test_size: 8, training: lingo_lessons::TaskTraining { epochs: 1, hidden: 16, emb: 16, ..Default::default() }, ..Default::default() };
    /// let results = lingo_lessons::alignment_suite(&settings.check()?, &mut ())?;
    /// assert_eq!(results.runs[0].val_loss(), results.runs[0].val_losses[0]);
    /// # Ok::<(), lingo_lessons::Error>(())
    /// ```
    pub fn val_loss(&self) -> f32 {
        self.val_losses.last().copied().unwrap_or(f32::NAN)
    }

    /// The best-aligned head and its accuracy, for a model with several heads.
    ///
    /// ```
    /// # let settings = lingo_lessons::SuiteSettings { phenomena: vec!["copy".parse().unwrap()], configs: vec!["dot".parse().unwrap(), "multi_head:2".parse().unwrap()], train_size: 32, val_size: 8, test_size: 8, training: lingo_lessons::TaskTraining { epochs: 1, hidden: 16, emb: 16, ..Default::default() }, ..Default::default() };
    /// let results = lingo_lessons::alignment_suite(&settings.check()?, &mut ())?;
    /// assert!(results.runs[0].best_head().is_none()); // one head: nothing to compare
    /// assert!(results.runs[1].best_head().is_some());
    /// # Ok::<(), lingo_lessons::Error>(())
    /// ```
    pub fn best_head(&self) -> Option<(String, f64)> {
        self.heads.as_ref().filter(|h| h.several()).map(HeadScores::best)
    }

    /// The run's summary, as `lingo alignment-suite --json` prints it.
    ///
    /// ```
    /// # let settings = lingo_lessons::SuiteSettings { phenomena: vec!["reverse".parse().unwrap()], configs: vec!["dot".parse().unwrap()], train_size: 32, val_size: 8, test_size: 8, training: lingo_lessons::TaskTraining { epochs: 1, hidden: 16, emb: 16, ..Default::default() }, ..Default::default() };
    /// let results = lingo_lessons::alignment_suite(&settings.check()?, &mut ())?;
    /// let summary = results.runs[0].summary();
    /// assert_eq!((summary.phenomenon.as_str(), summary.config.as_str()), ("reverse", "dot"));
    /// assert_eq!(summary.precision, summary.alignment_accuracy); // one peak per scored row
    /// # Ok::<(), lingo_lessons::Error>(())
    /// ```
    pub fn summary(&self) -> SuiteSummary {
        let alignment = self.alignment.as_ref();
        let aer = alignment.map(|a| a.aer);
        let best_head = self.best_head();
        SuiteSummary {
            phenomenon: self.phenomenon.name().into(),
            config: self.config.to_string(),
            val_loss: self.val_loss(),
            sequence_accuracy: self.sequence_accuracy,
            alignment_accuracy: alignment.map(|a| a.accuracy.accuracy),
            chance: alignment.map(|a| a.accuracy.chance),
            aer: aer.map(|s| s.aer),
            aer_split: alignment.map(|a| a.aer_split.aer),
            precision: aer.and_then(|s| ratio(s.possible_hits, s.links)),
            recall: aer.and_then(|s| ratio(s.sure_hits, s.sure)),
            links: aer.map(|s| s.links),
            sure_links: aer.map(|s| s.sure),
            sure_hits: aer.map(|s| s.sure_hits),
            possible_hits: aer.map(|s| s.possible_hits),
            best_head_alignment: best_head.as_ref().map(|h| h.1),
            best_head: best_head.map(|h| h.0),
            misaligned: alignment.map(|a| a.misaligned),
            misaligned_examples: alignment.map(|a| a.cases.iter().map(MisalignedCase::summary).collect()),
            train_seconds: self.seconds,
        }
    }
}

impl MisalignedCase {
    /// The source and target words, without `<sos>` and `<eos>`.
    ///
    /// ```
    /// let case = lingo_lessons::suite::MisalignedCase {
    ///     source: ["<sos>", "the", "cat", "<eos>"].map(String::from).to_vec(),
    ///     output: ["el", "gato", "<eos>"].map(String::from).to_vec(),
    ///     predicted: vec![(1, 0), (1, 1)], gold: vec![(0, 0), (1, 1)], sure: vec![(0, 0), (1, 1)],
    ///     weights: ndarray::Array2::zeros((3, 4)),
    /// };
    /// assert_eq!(case.words(), ("the cat".to_string(), "el gato".to_string()));
    /// ```
    pub fn words(&self) -> (String, String) {
        (self.source[1..self.source.len() - 1].join(" "), self.output[..self.output.len() - 1].join(" "))
    }

    /// The case in a [`SuiteSummary`]: its words and links as text.
    ///
    /// ```
    /// let case = lingo_lessons::suite::MisalignedCase {
    ///     source: ["<sos>", "the", "cat", "<eos>"].map(String::from).to_vec(),
    ///     output: ["el", "gato", "<eos>"].map(String::from).to_vec(),
    ///     predicted: vec![(1, 0), (1, 1)], gold: vec![(0, 0), (1, 1)], sure: vec![(0, 0), (1, 1)],
    ///     weights: ndarray::Array2::zeros((3, 4)),
    /// };
    /// assert_eq!((case.summary().predicted, case.summary().gold), ("1-0 1-1".to_string(), "0-0 1-1".to_string()));
    /// ```
    pub fn summary(&self) -> CaseSummary {
        let (source, target) = self.words();
        CaseSummary {
            source,
            target,
            predicted: format_pharaoh(&self.predicted),
            gold: format_pharaoh(&self.gold),
            sure: format_pharaoh(&self.sure),
        }
    }
}

/// `part / whole`, `None` for an empty whole.
fn ratio(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// One phenomenon's sentences: training, validation and test, and the
/// test sentence snapshots show.
struct Data {
    task: SuiteTask,
    train: Vec<AlignedExample>,
    val: Vec<AlignedExample>,
    test: Vec<AlignedExample>,
    pinned: Pinned,
}

/// A run's name in events (`copy/dot`).
fn run_name(phenomenon: Phenomenon, choice: ModelChoice) -> String {
    format!("{phenomenon}/{choice}")
}

/// Runs the suite: trains every configuration on every phenomenon, side
/// by side, and measures each on the phenomenon's test sentences.
pub fn alignment_suite(settings: &Checked<SuiteSettings>, observer: &mut dyn Observer) -> Result<SuiteResults> {
    let total = Instant::now();
    let data: Vec<Data> = settings.tasks()?.into_iter().map(|task| settings.data(task)).collect::<Result<_>>()?;
    let jobs: Vec<(&Data, ModelChoice)> =
        data.iter().flat_map(|d| settings.configs.iter().map(move |&choice| (d, choice))).collect();
    // Each run builds its model when it starts, so that only the models
    // training hold weights (as the memory check counts them); the counts
    // the observer hears come from models built here and dropped.
    let params: Vec<usize> =
        jobs.par_iter().map(|&(d, choice)| Ok(settings.model(choice, &d.task)?.num_params())).collect::<Result<_>>()?;
    let observer = Shared::new(observer);
    let count = |part: fn(&Data) -> usize| data.iter().map(part).sum::<usize>();
    observer.send(Event::Started(Started {
        lesson: "alignment_suite".into(),
        settings: crate::settings::to_json(&**settings),
        data: BTreeMap::from([
            ("train".into(), count(|d| d.train.len())),
            ("valid".into(), count(|d| d.val.len())),
            ("scored".into(), count(|d| d.test.len())),
        ]),
        runs: jobs
            .iter()
            .zip(params)
            .map(|(&(d, choice), params)| RunInfo {
                run: run_name(d.task.phenomenon(), choice),
                label: format!("{} on {}", settings.training.label(choice), d.task.phenomenon()),
                params,
            })
            .collect(),
    }));
    // The runs are independent, so they train side by side, one per rayon
    // thread; each gives the same bits either way, and comes back in order.
    let runs: Vec<SuiteRun> =
        jobs.par_iter().map(|&(data, choice)| fit(settings, data, choice, &observer)).collect::<Result<_>>()?;
    observer.check_stopped()?;
    let results = SuiteResults { runs, seconds: total.elapsed().as_secs_f64() };
    let value = serde_json::to_value(&results).expect("results serialize");
    observer.send(Event::Finished(Finished { lesson: "alignment_suite".into(), results: value }));
    Ok(results)
}

/// Trains `choice` on one phenomenon, telling the observer, and measures
/// it on the test sentences.
fn fit(settings: &SuiteSettings, data: &Data, choice: ModelChoice, observer: &Shared<'_>) -> Result<SuiteRun> {
    let mut model = settings.model(choice, &data.task)?;
    let mut config = settings.train_config(choice);
    config.control = observer.control();
    let phenomenon = data.task.phenomenon();
    let run = run_name(phenomenon, choice);
    let (src_vocab, tgt_vocab) = (data.task.src_vocab(), data.task.tgt_vocab());
    let mut watch =
        observer.watch(&run, &data.test, std::slice::from_ref(&data.pinned)).with_model(src_vocab, tgt_vocab);
    let trained = train_model_hooked(&mut model, &data.train, &data.val, &config, None, &mut watch)?;
    observer.trained(&Trained { run: &run, model: &model, src_vocab, tgt_vocab, examples: &data.test });
    Ok(SuiteRun {
        phenomenon,
        config: choice,
        label: settings.training.label(choice),
        train_losses: trained.train_losses,
        val_losses: trained.val_losses,
        sequence_accuracy: sequence_accuracy(&model, &data.test)?,
        alignment: score_alignment(&model, &data.task, &data.test, settings.show)?,
        heads: head_scores(&model, &data.test)?,
        tested: data.test.len(),
        seconds: trained.seconds,
    })
}

/// Alignment accuracy, AER and the misaligned sentences (the first `show`
/// of them kept) of `model`'s attention under teacher forcing; `None`
/// without attention.
fn score_alignment<M: EncoderDecoder>(
    model: &M,
    task: &SuiteTask,
    test: &[AlignedExample],
    show: usize,
) -> Result<Option<SuiteAlignment>> {
    let (mut accuracy, mut aer, mut aer_split) =
        (AlignmentAccuracy::new(), AlignmentErrorRate::new(), AlignmentErrorRate::new());
    let (mut misaligned, mut cases) = (0, Vec::new());
    for chunk in test.chunks(CHUNK) {
        let batch = Batch::from_examples(chunk)?;
        // (batch, tgt_len, src_len)
        let Some(weights) = model.attention(&batch)? else { return Ok(None) };
        for (b, ex) in chunk.iter().enumerate() {
            let (weights, src_len) = (weights.index_axis(Axis(0), b), batch.src_lens[b]);
            accuracy.add(weights, &ex.gold, src_len)?;
            aer.add(weights, &ex.sure, &ex.gold, src_len)?;
            let split = threshold_alignment(weights, src_len, SPLIT_LINK)?;
            aer_split.add_links(&split, &ex.sure, &ex.gold, src_len)?;
            let peaks = hard_alignment(weights, src_len)?;
            if peaks.iter().zip(&ex.gold).all(|(peak, gold)| gold.is_empty() || gold.contains(peak)) {
                continue;
            }
            misaligned += 1;
            if cases.len() < show {
                let tgt_words = ex.tgt.len() - 2;
                let words = |vocab: &Vocab, ids: &[usize]| -> Vec<String> {
                    vocab.decode(ids, false).into_iter().map(str::to_owned).collect()
                };
                cases.push(MisalignedCase {
                    source: words(task.src_vocab(), &ex.src),
                    output: words(task.tgt_vocab(), &ex.tgt[1..]),
                    predicted: pharaoh_links(weights, src_len, tgt_words)?,
                    gold: gold_links(&ex.gold, tgt_words),
                    sure: gold_links(&ex.sure, tgt_words),
                    weights: weights.slice(s![..=tgt_words, ..src_len]).to_owned(),
                });
            }
        }
    }
    let (aer, aer_split) = (aer.score(), aer_split.score());
    Ok(Some(SuiteAlignment { accuracy: accuracy.score(), aer, aer_split, misaligned, cases }))
}

/// Gold link sets as Pharaoh word links `(i, j)` in target order, as
/// [`pharaoh_links`] writes the predicted ones: `<sos>` (position 0) is not
/// a word, and the `<eos>` row is not read.
fn gold_links(rows: &[Vec<usize>], tgt_words: usize) -> Vec<(usize, usize)> {
    let mut links: Vec<(usize, usize)> = rows
        .iter()
        .take(tgt_words)
        .enumerate()
        .flat_map(|(j, row)| row.iter().filter_map(move |&i| Some((i.checked_sub(1)?, j))))
        .collect();
    links.sort_by_key(|&(i, j)| (j, i));
    links
}
