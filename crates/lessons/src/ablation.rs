//! The attention tutorial's ablation: one LSTM encoder–decoder trained on
//! lexicon-translate-then-reverse without attention, with Luong's dot
//! score and with Bahdanau's additive score (or any list of scorers, and
//! the Transformer), one setting changed between otherwise identical runs;
//! each measured by validation loss and by how often its attention peaks
//! on the known anti-diagonal.
//!
//! ```
//! use lingo_lessons::{AblationSettings, TaskTraining, ablation};
//! let settings = AblationSettings {
//!     train_size: 256, val_size: 32, align_samples: 32,
//!     training: TaskTraining { epochs: 2, ..Default::default() },
//!     ..Default::default()
//! };
//! let results = ablation(&settings.check()?, &mut ())?;
//! for run in &results.runs {
//!     println!("{:<22} {:.3}  {:?}", run.label, run.val_loss(), run.alignment.map(|a| a.accuracy));
//! }
//! assert_eq!(results.runs.len(), 3); // none, dot, additive
//! # Ok::<(), lingo_lessons::Error>(())
//! ```

use std::collections::BTreeMap;
use std::time::Instant;

use lingo_data::{AlignedExample, AlignmentScore, DEFAULT_LEXICON, LexiconReverse, Task};
use lingo_nn::{
    AnyModel, Init, Progress, SaliencyComparison, Schedule, Seq2SeqConfig, TrainConfig, compare_saliency, saliency,
    train_model_hooked,
};
use lingo_tensor::Module;
use ndarray::{Array2, Array4, Axis};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::budget;
use crate::error::Result;
use crate::measure::{AttentionSummary, HeadScores, alignment_accuracy, head_scores};
use crate::models::{AttentionChoice, ModelChoice, TaskTraining, transformer_schedule};
use crate::observe::{Event, Finished, Observer, Pinned, RunInfo, Shared, Started, Trained};
use crate::probes::{ProbeRow, baseline_loss, probe_model};
use crate::settings::{
    Checked, MAX_EXAMPLES, MAX_LENGTH, at_most, check_fields, check_range, choice, defaults, unit_fraction,
};

/// Settings of the ablation; the defaults are the tutorial's.
///
/// ```
/// let settings = lingo_lessons::AblationSettings::default();
/// assert_eq!(settings.configs.iter().map(|c| c.to_string()).collect::<Vec<_>>(), ["none", "dot", "additive"]);
/// ```
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AblationSettings {
    /// The configurations to train, in order: none, dot, general, additive, scaled_dot, multi_head:H (the LSTM
    /// model with that attention), transformer (d = --hidden, 2+2 layers, 4 heads)
    #[arg(long, value_delimiter = ',', default_value = "none,dot,additive")]
    pub configs: Vec<ModelChoice>,
    /// Training pairs
    #[arg(long, default_value = "3000", value_parser = at_most::<MAX_EXAMPLES>)]
    pub train_size: usize,
    /// Validation pairs
    #[arg(long, default_value = "300", value_parser = at_most::<MAX_EXAMPLES>)]
    pub val_size: usize,
    /// Fewest words per sentence
    #[arg(long, default_value = "3", value_parser = at_most::<MAX_LENGTH>)]
    pub min_words: usize,
    /// Most words per sentence
    #[arg(long, default_value = "6", value_parser = at_most::<MAX_LENGTH>)]
    pub max_words: usize,
    /// Epochs, batch size, learning rate and sizes of every model.
    #[command(flatten)]
    pub training: TaskTraining,
    /// Label smoothing of the loss
    #[arg(long, default_value = "0.1", value_parser = unit_fraction, allow_hyphen_values = true)]
    pub label_smoothing: f32,
    /// Linear learning-rate warm-up over this many steps (0: constant rate)
    #[arg(long, default_value = "4000")]
    pub warmup: u64,
    /// Weight initialisation
    #[arg(long, value_enum, default_value = "xavier-orthogonal")]
    #[serde(with = "choice")]
    pub init: Init,
    /// Sentences whose attention is scored against the known alignment
    #[arg(long, default_value = "200", value_parser = at_most::<MAX_EXAMPLES>)]
    pub align_samples: usize,
    /// After training, probe each model: its attention replaced by uniform, shuffled, one-hot and gold
    /// weights and by a zero context, on the alignment sentences
    #[arg(long)]
    pub probe: bool,
    /// Seed of every random choice (data, initialisation, batch order)
    #[arg(long, default_value = "0")]
    pub seed: u64,
}

impl Default for AblationSettings {
    fn default() -> AblationSettings {
        defaults()
    }
}

impl AblationSettings {
    /// Checks every setting's bound, the settings against each other and
    /// the whole against the machine's memory, before any work.
    ///
    /// ```
    /// let settings = lingo_lessons::AblationSettings { min_words: 4, max_words: 3, ..Default::default() };
    /// let err = settings.check().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid `max_words`: must be at least `min_words` (4), got 3");
    /// ```
    pub fn check(self) -> Result<Checked<AblationSettings>> {
        check_fields(&self)?;
        check_range(("min_words", self.min_words), ("max_words", self.max_words))?;
        self.training.check(&self.configs)?;
        // Every configuration trains at once, each with its model and batches.
        let task = self.task()?;
        let config = self.training.recurrent(AttentionChoice(None), task.src_vocab().len(), task.tgt_vocab().len());
        let [model, batch] = budget::training_bytes(&config.into(), self.training.batch_size, self.max_words)
            .map(|b| b.saturating_mul(self.configs.len() as u64));
        budget::fits(&[
            ("train_size", budget::example_bytes(self.train_size, self.max_words)),
            ("val_size", budget::example_bytes(self.val_size, self.max_words)),
            ("align_samples", budget::example_bytes(self.align_samples, self.max_words)),
            ("hidden", model),
            ("batch_size", batch),
        ])?;
        Ok(Checked::new(self))
    }

    fn task(&self) -> Result<LexiconReverse> {
        Ok(LexiconReverse::new(&DEFAULT_LEXICON, self.min_words, self.max_words)?)
    }

    /// The model `choice` names, from the same seed as every other.
    fn model(&self, choice: ModelChoice, task: &LexiconReverse) -> Result<AnyModel> {
        let (src_vocab, tgt_vocab) = (task.src_vocab().len(), task.tgt_vocab().len());
        let config = match choice {
            ModelChoice::Recurrent(attention) => {
                Seq2SeqConfig { init: self.init, ..self.training.recurrent(attention, src_vocab, tgt_vocab) }.into()
            }
            ModelChoice::Transformer => self.training.transformer(src_vocab, tgt_vocab, self.init).into(),
        };
        // Every configuration starts from the same seed, so only the one setting differs.
        Ok(AnyModel::new(config, &mut StdRng::seed_from_u64(self.seed))?)
    }

    /// The tutorial's recipe for `choice`: the recurrent models warm up
    /// linearly (or not at all), the Transformer keeps its own schedule.
    fn train_config(&self, choice: ModelChoice) -> TrainConfig {
        let mut config = TrainConfig::new(self.training.epochs, self.training.lr);
        config.batching.batch_size = self.training.batch_size;
        config.label_smoothing = self.label_smoothing;
        config.seed = self.seed;
        config.progress = Progress::Silent;
        config.guided_alignment = self.training.guide(choice);
        match choice {
            ModelChoice::Recurrent(_) if self.warmup == 0 => config.schedule = Schedule::Constant,
            ModelChoice::Recurrent(_) => config.schedule = Schedule::LinearWarmup { warmup_steps: self.warmup },
            ModelChoice::Transformer => transformer_schedule(&mut config),
        }
        config
    }
}

/// What the ablation measured.
#[derive(Debug, Clone, Serialize)]
pub struct AblationResults {
    /// Every configuration, in the order asked for.
    pub runs: Vec<AblationRun>,
    /// The fresh sentence every run's [`AblationRun::example`] shows.
    pub example: ExampleTokens,
    /// With [`AblationSettings::probe`]: every model under every probe.
    pub probes: Option<Vec<ProbeRow>>,
    /// Sentences the alignment (and the probes) were scored on.
    pub scored: usize,
    /// Seconds of the whole lesson, scoring included.
    pub seconds: f64,
}

/// One configuration, trained and measured.
#[derive(Debug, Clone, Serialize)]
pub struct AblationRun {
    /// Which model.
    pub config: ModelChoice,
    /// Its name in tables (`dot (Luong)`).
    #[serde(skip)]
    pub label: String,
    /// Mean training loss of each epoch.
    pub train_losses: Vec<f32>,
    /// Validation loss after each epoch.
    pub val_losses: Vec<f32>,
    /// How often its attention peaks on the gold anti-diagonal, with chance;
    /// `None` without attention.
    pub alignment: Option<AlignmentScore>,
    /// Every head's alignment and entropy; `None` without attention.
    pub heads: Option<HeadScores>,
    /// Gradient × input saliency beside the attention, on the scored sentences.
    pub saliency: SaliencyComparison,
    /// The shown sentence through this model.
    pub example: ExampleMaps,
    /// Seconds of training.
    pub seconds: f64,
    /// The trained model.
    #[serde(skip)]
    pub model: AnyModel,
}

/// The sentence the heatmaps show: its tokens as the model reads them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExampleTokens {
    /// The source tokens, `<sos>` and `<eos>` included: the columns.
    pub source: Vec<String>,
    /// The decoder's inputs, `<sos>` first: the rows.
    pub target: Vec<String>,
}

/// One model's maps of the shown sentence, `(tgt_len, src_len)` each.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExampleMaps {
    /// Where each output word looked; `None` without attention.
    pub attention: Option<Array2<f32>>,
    /// Every head, `(layers, heads, tgt_len, src_len)`, for a model with several.
    pub heads: Option<Array4<f32>>,
    /// What each output word depended on: gradient × input saliency.
    pub saliency: Array2<f32>,
}

/// A configuration's line of `lingo ablation --json`: its summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AblationSummary {
    /// The configuration's name.
    pub config: String,
    /// The last validation loss.
    pub val_loss: Option<f32>,
    /// Alignment accuracy; `None` without attention.
    pub alignment_accuracy: Option<f64>,
    /// Its heads and its saliency.
    #[serde(flatten)]
    pub measures: AttentionSummary,
    /// Seconds of training.
    pub train_seconds: f64,
}

impl AblationRun {
    /// The last validation loss (NaN before any epoch).
    ///
    /// ```
    /// # let settings = lingo_lessons::AblationSettings { configs: vec!["none".parse().unwrap()], train_size: 32, val_size: 8, align_samples: 4, training: lingo_lessons::TaskTraining { epochs: 1, ..Default::default() }, ..Default::default() };
    /// let results = lingo_lessons::ablation(&settings.check()?, &mut ())?;
    /// assert_eq!(results.runs[0].val_loss(), results.runs[0].val_losses[0]);
    /// # Ok::<(), lingo_lessons::Error>(())
    /// ```
    pub fn val_loss(&self) -> f32 {
        self.val_losses.last().copied().unwrap_or(f32::NAN)
    }

    /// The run's summary, as `lingo ablation --json` prints it.
    ///
    /// ```
    /// # let settings = lingo_lessons::AblationSettings { configs: vec!["dot".parse().unwrap()], train_size: 32, val_size: 8, align_samples: 4, training: lingo_lessons::TaskTraining { epochs: 1, ..Default::default() }, ..Default::default() };
    /// let results = lingo_lessons::ablation(&settings.check()?, &mut ())?;
    /// let summary = results.runs[0].summary();
    /// assert_eq!(summary.config, "dot");
    /// assert_eq!(summary.alignment_accuracy, results.runs[0].alignment.map(|a| a.accuracy));
    /// # Ok::<(), lingo_lessons::Error>(())
    /// ```
    pub fn summary(&self) -> AblationSummary {
        AblationSummary {
            config: self.config.to_string(),
            val_loss: self.val_losses.last().copied(),
            alignment_accuracy: self.alignment.map(|a| a.accuracy),
            measures: AttentionSummary::new(self.heads.as_ref(), &self.saliency),
            train_seconds: self.seconds,
        }
    }
}

/// Runs the ablation: trains every configuration side by side, measures
/// each, and probes them when asked.
pub fn ablation(settings: &Checked<AblationSettings>, observer: &mut dyn Observer) -> Result<AblationResults> {
    let total = Instant::now();
    let task = settings.task()?;
    // One stream draws training then validation data, as the tutorial does.
    let mut data_rng = StdRng::seed_from_u64(settings.seed);
    let train = task.generate(settings.train_size, &mut data_rng);
    let val = task.generate(settings.val_size, &mut data_rng);
    // Alignment is scored on fresh sentences, the same for every configuration.
    let scored = task.generate(settings.align_samples, &mut StdRng::seed_from_u64(settings.seed.wrapping_add(99)));
    let shown = task.sample(&mut StdRng::seed_from_u64(settings.seed.wrapping_add(7)));
    let pinned = [Pinned::new(&shown, task.src_vocab(), task.tgt_vocab())?];
    let models = settings.configs.iter().map(|&c| settings.model(c, &task)).collect::<Result<Vec<_>>>()?;
    let observer = Shared::new(observer);
    observer.send(Event::Started(Started {
        lesson: "ablation".into(),
        settings: crate::settings::to_json(&**settings),
        data: BTreeMap::from([
            ("train".into(), train.len()),
            ("valid".into(), val.len()),
            ("scored".into(), scored.len()),
        ]),
        runs: settings
            .configs
            .iter()
            .zip(&models)
            .map(|(c, m)| RunInfo { run: c.to_string(), label: settings.training.label(*c), params: m.num_params() })
            .collect(),
    }));
    // The configurations are independent, so they train side by side, one
    // per rayon thread (each one's products stay on its thread: `gemm` only
    // splits products called from outside the pool). Each result is the
    // same bits either way. Longest first (the additive scorer costs most,
    // no attention least): on two threads the shortest then fills the gap
    // after the middle one.
    let mut order: Vec<usize> = (0..settings.configs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cost(settings.configs[i])));
    let mut slots: Vec<Option<AnyModel>> = models.into_iter().map(Some).collect();
    let jobs: Vec<(usize, AnyModel)> = order.iter().map(|&i| (i, slots[i].take().expect("each model once"))).collect();
    let train_one = |(i, model): (usize, AnyModel)| {
        let config = settings.configs[i];
        let data = Data { train: &train, val: &val, scored: &scored, shown: &pinned[0], task: &task };
        fit(settings, config, model, data, &observer).map(|run| (i, run))
    };
    let mut runs: Vec<(usize, AblationRun)> = jobs.into_par_iter().map(train_one).collect::<Result<_>>()?;
    observer.check_stopped()?;
    runs.sort_by_key(|(i, _)| *i); // back in the order asked for
    let runs: Vec<AblationRun> = runs.into_iter().map(|(_, run)| run).collect();
    let probes = settings.probe.then(|| probe_runs(&runs, &scored)).transpose()?;
    let results = AblationResults {
        runs,
        example: ExampleTokens { source: pinned[0].source().to_vec(), target: pinned[0].target().to_vec() },
        probes,
        scored: scored.len(),
        seconds: total.elapsed().as_secs_f64(),
    };
    let value = serde_json::to_value(&results).expect("results serialize");
    observer.send(Event::Finished(Finished { lesson: "ablation".into(), results: value }));
    Ok(results)
}

/// The relative cost of training `choice`, for the order of the runs.
fn cost(choice: ModelChoice) -> u8 {
    match choice {
        ModelChoice::Recurrent(AttentionChoice(None)) => 0,
        ModelChoice::Recurrent(AttentionChoice(Some(
            lingo_attention::Scorer::Additive | lingo_attention::Scorer::MultiHead { .. },
        )))
        | ModelChoice::Transformer => 2,
        ModelChoice::Recurrent(_) => 1,
    }
}

/// The sentences one run reads.
#[derive(Clone, Copy)]
struct Data<'a> {
    train: &'a [AlignedExample],
    val: &'a [AlignedExample],
    scored: &'a [AlignedExample],
    shown: &'a Pinned,
    task: &'a LexiconReverse,
}

/// Trains `model` as `choice` with the tutorial's recipe, telling the
/// observer, and measures it.
fn fit(
    settings: &AblationSettings,
    choice: ModelChoice,
    mut model: AnyModel,
    data: Data<'_>,
    observer: &Shared<'_>,
) -> Result<AblationRun> {
    let mut config = settings.train_config(choice);
    config.control = observer.control();
    let run = choice.to_string();
    let (src_vocab, tgt_vocab) = (data.task.src_vocab(), data.task.tgt_vocab());
    let mut watch =
        observer.watch(&run, data.scored, std::slice::from_ref(data.shown)).with_model(src_vocab, tgt_vocab);
    let trained = train_model_hooked(&mut model, data.train, data.val, &config, None, &mut watch)?;
    observer.trained(&Trained { run: &run, model: &model, src_vocab, tgt_vocab, examples: data.scored });
    let example = maps(&model, data.shown)?;
    Ok(AblationRun {
        config: choice,
        label: settings.training.label(choice),
        train_losses: trained.train_losses,
        val_losses: trained.val_losses,
        alignment: alignment_accuracy(&model, data.scored)?,
        heads: head_scores(&model, data.scored)?,
        saliency: compare_saliency(&model, data.scored)?,
        example,
        seconds: trained.seconds,
        model,
    })
}

/// `model`'s attention, heads and saliency on the one sentence of `batch`.
fn maps(model: &AnyModel, shown: &Pinned) -> Result<ExampleMaps> {
    let (attention, heads) = shown.attention(model)?.unzip();
    Ok(ExampleMaps {
        attention,
        heads: heads.flatten(),
        saliency: saliency(model, shown.batch())?.index_axis_move(Axis(0), 0),
    })
}

/// Every model under every probe: how much each loses when its attention
/// is replaced after training, against the model without attention when
/// the lesson trained one.
fn probe_runs(runs: &[AblationRun], examples: &[AlignedExample]) -> Result<Vec<ProbeRow>> {
    let baseline = runs.iter().find(|r| !r.config.attends()).map(|r| baseline_loss(&r.model, examples)).transpose()?;
    let mut probes = Vec::new();
    for run in runs {
        let (name, label) = (run.config.to_string(), run.label.clone());
        probes.extend(probe_model((&name, &label), &run.model, run.alignment.is_some(), examples, baseline)?);
    }
    Ok(probes)
}
