//! The training loop: batches, steps, validation, checkpoints, early stopping.
//!
//! One epoch is: reshuffle the training examples into batches (seeded),
//! then for each batch `lr ← schedule`, `loss = CE(model(batch))`,
//! `∇ = backward(loss)`, `optimizer.step(∇)` (with clipping if asked); then the
//! validation loss under `no_grad`, a checkpoint, and the early-stopping test.
//!
//! # Determinism and resuming
//!
//! All randomness of epoch `e` (batch order and dropout masks) comes from one
//! RNG seeded with `(seed, e)`, not from a stream carried across epochs. So
//! the same seed and thread count give bit-identical losses, and a run
//! resumed from the checkpoint of epoch `e` replays epochs `e+1, ...` exactly
//! as the uninterrupted run did, with no RNG state to save.

use std::io::IsTerminal;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use lingo_data::{Batch, BatchConfig, SeqPair, Vocab};
use lingo_tensor::{Gradients, Tensor, enable_grad, no_grad};
use ndarray::ArrayD;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use crate::checkpoint::{Checkpoint, problem as checkpoint_problem, remove_stale_temp_files};
use crate::control::RunControl;
use crate::error::{CheckpointProblem, Error, Result, config as config_error};
use crate::guided::{GuidedAlignment, alignment_loss};
use crate::layers::Mode;
use crate::model::{EncoderDecoder, ModelConfig};
use crate::optim::{Algorithm, Optimizer};
use crate::schedule::{Schedule, Scheduler};
use crate::seq2seq::Seq2SeqConfig;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// What training shows while an epoch runs. Training prints nothing else,
/// and nothing on standard output: a program sees each finished epoch
/// through [`train_model_with`]'s call, an [`EpochReport`] (whose `Display`
/// is the line `Epoch 3/16 | Train: 2.9817 | Val: 2.9359`), and prints
/// what it wants.
///
/// ```
/// assert_eq!(lingo_nn::Progress::default(), lingo_nn::Progress::Bar);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Progress {
    /// A progress bar over each epoch's steps on standard error when it is
    /// a terminal, cleared when the epoch ends; nothing otherwise (logs, CI).
    #[default]
    Bar,
    /// Nothing.
    Silent,
}

impl Progress {
    /// A bar over one epoch's `steps`, when this mode shows one.
    fn bar(self, epoch: u64, epochs: usize, steps: usize) -> Option<ProgressBar> {
        (self == Progress::Bar && std::io::stderr().is_terminal()).then(|| {
            let style = ProgressStyle::with_template("Epoch {prefix} [{bar:30}] {pos}/{len} | loss {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            ProgressBar::new(steps as u64).with_style(style).with_prefix(format!("{epoch}/{epochs}"))
        })
    }
}

/// Where checkpoints go, and the vocabularies they carry.
#[derive(Debug, Clone)]
pub struct CheckpointSpec {
    /// Directory for `best.ckpt` (lowest validation loss) and `last.ckpt` (end of the latest epoch).
    pub dir: PathBuf,
    /// Stored in every checkpoint so a translation run needs nothing else.
    pub src_vocab: Vocab,
    /// Stored in every checkpoint.
    pub tgt_vocab: Vocab,
    /// Also keep the weights of each of the last this-many epochs in
    /// [`CheckpointSpec::epoch_path`] (0: none), for
    /// [`StateDict::average`](crate::StateDict::average).
    pub keep_epochs: usize,
}

impl CheckpointSpec {
    /// Where the weights of `epoch` are kept: `dir/epoch-{epoch}.ckpt`.
    ///
    /// ```
    /// let spec = lingo_nn::CheckpointSpec { dir: "run".into(), src_vocab: Default::default(), tgt_vocab: Default::default(), keep_epochs: 5 };
    /// assert_eq!(spec.epoch_path(7), std::path::Path::new("run/epoch-7.ckpt"));
    /// ```
    pub fn epoch_path(&self, epoch: u64) -> PathBuf {
        self.dir.join(format!("epoch-{epoch}.ckpt"))
    }

    /// Removes what killed runs left half-written of `last.ckpt` and
    /// `best.ckpt`: a run owns its directory.
    fn remove_half_written(&self) -> Result<()> {
        for name in ["last.ckpt", "best.ckpt"] {
            remove_stale_temp_files(&self.dir.join(name))?;
        }
        Ok(())
    }

    /// Once `epoch` is saved, the kept epoch that leaves the window goes.
    fn forget_epoch_before(&self, epoch: u64) -> Result<()> {
        let keep = self.keep_epochs as u64;
        if keep == 0 || epoch <= keep {
            return Ok(());
        }
        let old = self.epoch_path(epoch - keep);
        match std::fs::remove_file(&old) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(checkpoint_problem(&old, CheckpointProblem::Io(e)))
            }
            _ => Ok(()),
        }
    }
}

/// Everything [`train_model`] needs to know besides the model and data.
///
/// Serializable, so a run's settings can be written to a file and read
/// back (`lingo train` writes its own as `config.toml`). What is not a
/// setting of the run is left out: [`TrainConfig::checkpoints`] (paths and
/// vocabularies, which the run makes), [`TrainConfig::progress`] (how it is
/// shown) and [`TrainConfig::control`] (a live handle); they read back as
/// `None`, [`Progress::Bar`] and `None`.
///
/// ```
/// let mut c = lingo_nn::TrainConfig::new(4, 1e-3);
/// c.max_grad_norm = Some(5.0);
/// c.patience = Some(3);
/// let text = serde_json::to_string(&c).unwrap();
/// let back: lingo_nn::TrainConfig = serde_json::from_str(&text).unwrap();
/// assert_eq!(back.settings(), c.settings());
/// assert_eq!((back.epochs, back.time_budget), (c.epochs, c.time_budget));
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrainConfig {
    /// Maximum number of epochs.
    pub epochs: usize,
    /// Batch size, length bucketing and shuffling.
    pub batching: BatchConfig,
    /// SGD, Adam or AdamW, with their hyper-parameters.
    pub algorithm: Algorithm,
    /// The base learning rate `η`.
    pub lr: f64,
    /// How `η` moves over steps (and epochs, for reduce-on-plateau).
    pub schedule: Schedule,
    /// Clip the global gradient norm to this, if set.
    pub max_grad_norm: Option<f64>,
    /// Label smoothing `ε` of the loss (training and validation).
    pub label_smoothing: f32,
    /// Guided alignment ([`crate::guided`]): a term pulling attention
    /// towards the batches' gold links, in training only (validation loss
    /// stays the cross-entropy). Batches without gold links train without it.
    #[serde(default)]
    pub guided_alignment: Option<GuidedAlignment>,
    /// Stop after this many epochs without a better validation loss.
    pub patience: Option<usize>,
    /// Stop after the epoch during which this much time has passed.
    pub time_budget: Option<Duration>,
    /// Write checkpoints here.
    #[serde(skip)]
    pub checkpoints: Option<CheckpointSpec>,
    /// Seeds batching and dropout (initialisation is seeded where the model is built).
    pub seed: u64,
    /// Whether to show a progress bar in a terminal.
    #[serde(skip)]
    pub progress: Progress,
    /// Training examples per epoch; `None`: the whole training set. With a
    /// size, the examples are cut into `k` consecutive slices of it and epoch
    /// `e` trains on slice `(e - 1) mod k`, so a large corpus gets validation,
    /// checkpoints and budget checks often (the optimizer state carries on).
    pub epoch_size: Option<usize>,
    /// Data parallelism: each batch is cut into this many groups of rows
    /// ("shards") that go forward and backward on their own threads, and
    /// their gradients are summed (see [`batch_gradients`]). 1: no cutting.
    /// Results depend on this number (the sums are grouped differently), not
    /// on how many threads run the shards.
    pub shards: usize,
    /// Settings of the caller that shape the result besides these (the
    /// data's, say, or the flags of a command line, by the names its user
    /// knows), as `(name, value)`. Stored in every checkpoint with
    /// [`TrainConfig::settings`]; a resume must bring the same.
    pub extra_settings: Vec<(String, String)>,
    /// Pauses, resumes or stops training from outside it: asked before
    /// every step. Once stopped, training returns before the next step with
    /// [`TrainResult::interrupted`] set. The epoch in progress is dropped
    /// (no checkpoint of it), so the checkpoints are those of the epochs
    /// completed, and a resume redoes the dropped one exactly. (A Ctrl-C
    /// handler stops it; a live view pauses it.)
    #[serde(skip)]
    pub control: Option<RunControl>,
}

impl TrainConfig {
    /// Adam at `lr`, constant schedule, batches of 64, no smoothing, no
    /// clipping, no early stopping, no checkpoints, seed 0, a progress bar
    /// in a terminal ([`Progress::Bar`]; training prints nothing else).
    ///
    /// ```
    /// let c = lingo_nn::TrainConfig::new(16, 5e-3);
    /// assert_eq!((c.epochs, c.batching.batch_size), (16, 64));
    /// ```
    pub fn new(epochs: usize, lr: f64) -> TrainConfig {
        TrainConfig {
            epochs,
            batching: BatchConfig { batch_size: 64, bucket: false, shuffle: true, max_tokens: None },
            algorithm: Algorithm::adam(),
            lr,
            schedule: Schedule::Constant,
            max_grad_norm: None,
            label_smoothing: 0.0,
            guided_alignment: None,
            patience: None,
            time_budget: None,
            checkpoints: None,
            seed: 0,
            progress: Progress::Bar,
            shards: 1,
            epoch_size: None,
            extra_settings: Vec::new(),
            control: None,
        }
    }

    /// The settings that change what training computes, by field name, as
    /// text: what a resume must repeat. `epochs`, `time_budget`,
    /// `checkpoints` and `progress` say where to stop or what to show, and
    /// may change (a cosine schedule's end is part of `schedule`).
    ///
    /// ```
    /// let c = lingo_nn::TrainConfig::new(16, 5e-3);
    /// assert!(c.settings().contains(&("lr".to_string(), "0.005".to_string())));
    /// ```
    pub fn settings(&self) -> Vec<(String, String)> {
        let fields: [(&str, String); 10] = [
            ("batching", format!("{:?}", self.batching)),
            ("algorithm", format!("{:?}", self.algorithm)),
            ("lr", self.lr.to_string()),
            ("schedule", format!("{:?}", self.schedule)),
            ("max_grad_norm", format!("{:?}", self.max_grad_norm)),
            ("label_smoothing", self.label_smoothing.to_string()),
            ("patience", format!("{:?}", self.patience)),
            ("seed", self.seed.to_string()),
            ("epoch_size", format!("{:?}", self.epoch_size)),
            ("shards", self.shards.to_string()),
        ];
        let mut settings: Vec<(String, String)> =
            fields.into_iter().map(|(name, value)| (name.to_string(), value)).collect();
        // Only when set, so checkpoints written before guided alignment existed still resume.
        if let Some(guide) = self.guided_alignment {
            settings.push(("guided_alignment".into(), format!("{guide:?}")));
        }
        settings
    }

    /// Optimizer steps from the start to the end of `epoch` on `train`:
    /// each epoch's batches, planned as the epoch plans them (of its slice
    /// when [`TrainConfig::epoch_size`] cuts the examples).
    ///
    /// ```
    /// use lingo_data::Example;
    /// let train = vec![Example { src: vec![2, 5, 3], tgt: vec![2, 6, 3] }; 10];
    /// let mut c = lingo_nn::TrainConfig::new(4, 1e-3);
    /// c.batching.batch_size = 3;
    /// c.epoch_size = Some(4);                       // slices of 4, 4, 2
    /// assert_eq!(c.steps_through(&train, 4).unwrap(), 2 + 2 + 1 + 2);
    /// ```
    pub fn steps_through<E: SeqPair>(&self, train: &[E], epoch: usize) -> Result<u64> {
        let slices = epoch_slices(train, self.epoch_size);
        (1..=epoch as u64).map(|e| self.epoch_steps(&slices, e)).sum()
    }

    /// Whether training may take its next step: waits while
    /// [`TrainConfig::control`] pauses it, and says no once it is stopped.
    fn proceed(&self) -> bool {
        self.control.as_ref().is_none_or(RunControl::proceed)
    }

    /// The learning-rate factor [`TrainConfig::control`] sets, 1 without one.
    fn lr_scale(&self) -> f64 {
        self.control.as_ref().map_or(1.0, RunControl::lr_scale)
    }

    /// Whether [`TrainConfig::control`] has stopped training.
    fn stopped(&self) -> bool {
        self.control.as_ref().is_some_and(RunControl::is_stopped)
    }

    /// The steps of epoch `e`: its batch plan, drawn as the epoch draws it.
    fn epoch_steps<E: SeqPair>(&self, slices: &[&[E]], epoch: u64) -> Result<u64> {
        Ok(self.batching.plan(epoch_slice(slices, epoch), &mut epoch_rng(self.seed, epoch))?.len() as u64)
    }

    /// The validation batches every epoch is scored on: `val` in its order,
    /// batched as training batches are, so the loss is comparable across
    /// epochs and with [`evaluate`] of another model (an average of
    /// checkpoints, say).
    ///
    /// ```
    /// use lingo_data::Example;
    /// let val = vec![Example { src: vec![2, 5, 3], tgt: vec![2, 6, 3] }; 3];
    /// let batches = lingo_nn::TrainConfig::new(1, 1e-3).validation_batches(&val).unwrap();
    /// assert_eq!(batches.len(), 1);
    /// ```
    pub fn validation_batches<E: SeqPair>(&self, val: &[E]) -> Result<Vec<Batch>> {
        Ok(BatchConfig { shuffle: false, ..self.batching }.batches(val, &mut StdRng::seed_from_u64(self.seed))?)
    }
}

/// What training checkpoints store as their configuration: the model's
/// configuration, to rebuild it, and the run's loss history, to resume it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainedModel<C = Seq2SeqConfig> {
    /// How to build the model before restoring its weights.
    pub model: C,
    /// Training loss of each completed epoch.
    pub train_losses: Vec<f32>,
    /// Validation loss of each completed epoch.
    pub val_losses: Vec<f32>,
    /// The epoch (1-based) with the lowest validation loss so far.
    pub best_epoch: usize,
    /// The run that wrote it: drawn when a run starts, kept through resumes,
    /// so a run never mistakes another's checkpoint for its own ([`load_own`]).
    pub run_id: u64,
    /// [`TrainConfig::extra_settings`] of the run.
    pub extra_settings: Vec<(String, String)>,
    /// [`TrainConfig::settings`] of the run.
    pub settings: Vec<(String, String)>,
}

impl<C> TrainedModel<C> {
    /// A run's record before its first epoch: the model configuration, no
    /// losses, and the run's identity and settings.
    ///
    /// ```
    /// let config = lingo_nn::Seq2SeqConfig::new(9, 9);
    /// let run = lingo_nn::TrainedModel::start(config, &lingo_nn::TrainConfig::new(1, 1e-3), 7);
    /// assert_eq!((run.run_id, run.best_epoch), (7, 0));
    /// ```
    pub fn start(model: C, config: &TrainConfig, run_id: u64) -> TrainedModel<C> {
        TrainedModel {
            model,
            train_losses: Vec::new(),
            val_losses: Vec::new(),
            best_epoch: 0,
            run_id,
            extra_settings: config.extra_settings.clone(),
            settings: config.settings(),
        }
    }
}

/// What [`train_model`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainResult {
    /// Mean training loss of each epoch (mean over its batches).
    pub train_losses: Vec<f32>,
    /// Validation loss after each epoch.
    pub val_losses: Vec<f32>,
    /// The epoch (1-based) with the lowest validation loss.
    pub best_epoch: usize,
    /// Where that epoch's weights were saved, when checkpointing.
    pub best_checkpoint: Option<PathBuf>,
    /// Optimizer steps taken in total (including epochs before a resume).
    pub steps: u64,
    /// Wall-clock seconds of this call.
    pub seconds: f64,
    /// The run's identity in its checkpoints ([`TrainedModel::run_id`]).
    pub run_id: u64,
    /// Whether [`TrainConfig::control`] stopped training in an epoch, which
    /// was then dropped.
    pub interrupted: bool,
}

/// Loads the checkpoint at `path` (a `last.ckpt` written by [`train_model`])
/// to resume a run whose model is `model`, whose training settings are
/// `config` and whose vocabularies are `src_vocab` and `tgt_vocab`. Besides
/// [`Checkpoint::load`]'s checks, the checkpoint must be consistent
/// ([`EncoderDecoder::from_checkpoint`]), hold the optimizer's state, and have been
/// written by a run with the same settings, model and vocabularies;
/// otherwise the error names `path` and, with
/// [`CheckpointProblem::OtherRun`], every difference: the caller's
/// [`TrainConfig::extra_settings`] first (when any of them differ, only
/// those, as they name what the caller's user typed), then
/// [`TrainConfig::settings`], then the model's configuration.
///
/// ```
/// use lingo_data::{DigitOp, DigitTask, Task};
/// use lingo_nn::{CheckpointSpec, Progress, Seq2Seq, Seq2SeqConfig, TrainConfig, load_resumable, train_model};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let task = DigitTask::new(DigitOp::Copy, 5, 2, 3).unwrap();
/// let (train, val) = (task.generate(32, &mut rng), task.generate(8, &mut rng));
/// let dir = std::env::temp_dir().join(format!("lingo-nn-resumable-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let (src, tgt) = (task.src_vocab().clone(), task.tgt_vocab().clone());
/// let config = Seq2SeqConfig { emb_dim: 8, hidden_dim: 8, ..Seq2SeqConfig::new(src.len(), tgt.len()) };
/// let mut model = Seq2Seq::new(config.clone(), &mut rng).unwrap();
/// let spec = CheckpointSpec { dir: dir.clone(), src_vocab: src.clone(), tgt_vocab: tgt.clone(), keep_epochs: 0 };
/// let settings = TrainConfig { progress: Progress::Silent, checkpoints: Some(spec), ..TrainConfig::new(1, 1e-2) };
/// train_model(&mut model, &train, &val, &settings, None).unwrap();
///
/// let path = dir.join("last.ckpt");
/// assert_eq!(load_resumable(&path, &config, &settings, &src, &tgt).unwrap().epoch, 1);
/// let bigger = Seq2SeqConfig { hidden_dim: 16, ..config.clone() };
/// let err = load_resumable(&path, &bigger, &settings, &src, &tgt).unwrap_err().to_string();
/// assert!(err.contains("last.ckpt: not from this run: hidden_dim 8 (saved) vs 16 (this run)"), "{err}");
/// let faster = TrainConfig { lr: 0.1, ..settings.clone() };
/// let err = load_resumable(&path, &config, &faster, &src, &tgt).unwrap_err().to_string();
/// assert!(err.contains("not from this run: lr 0.01 (saved) vs 0.1 (this run)"), "{err}");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn load_resumable<C: ModelConfig>(
    path: &Path,
    model: &C,
    config: &TrainConfig,
    src_vocab: &Vocab,
    tgt_vocab: &Vocab,
) -> Result<Checkpoint<TrainedModel<C>>> {
    let ckpt: Checkpoint<TrainedModel<C>> = Checkpoint::load(path)?;
    C::Model::from_checkpoint(&ckpt.config.model, &ckpt, path)?;
    let other_run = |reason: String| Err(checkpoint_problem(path, CheckpointProblem::OtherRun(reason)));
    let mut differences = setting_differences(&ckpt.config.extra_settings, &config.extra_settings);
    if differences.is_empty() {
        differences = setting_differences(&ckpt.config.settings, &config.settings());
    }
    if differences.is_empty() {
        differences = ckpt.config.model.differences(model);
    }
    if !differences.is_empty() {
        return other_run(differences.join(", "));
    }
    for (side, saved, ours) in [("source", &ckpt.src_vocab, src_vocab), ("target", &ckpt.tgt_vocab, tgt_vocab)] {
        if saved != ours {
            return other_run(format!(
                "the {side} vocabulary differs from this run's ({} tokens saved, {} in this run)",
                saved.len(),
                ours.len()
            ));
        }
    }
    if ckpt.optimizer.is_none() {
        return other_run("it holds no optimizer state (not written by a training run)".into());
    }
    Ok(ckpt)
}

/// Loads a checkpoint the run `run_id` wrote ([`TrainResult::run_id`]),
/// for a model configured by a `C`:
/// one written by another run (two runs sharing a directory, or a run left
/// over from before) is a [`CheckpointProblem::OtherRun`] naming both runs.
///
/// ```
/// use lingo_nn::{Checkpoint, Seq2SeqConfig, TrainedModel, load_own};
/// let path = std::env::temp_dir().join(format!("lingo-nn-own-{}.ckpt", std::process::id()));
/// let run = TrainedModel::start(Seq2SeqConfig::new(4, 4), &lingo_nn::TrainConfig::new(1, 1e-3), 0xabc);
/// Checkpoint { config: run, params: Default::default(), optimizer: None, scheduler: None, epoch: 1, step: 1,
///              src_vocab: Default::default(), tgt_vocab: Default::default() }.save(&path).unwrap();
/// assert!(load_own::<Seq2SeqConfig>(&path, 0xabc).is_ok());
/// let err = load_own::<Seq2SeqConfig>(&path, 0xdef).unwrap_err().to_string();
/// assert!(err.ends_with("not from this run: written by run 0000000000000abc, this is run 0000000000000def"), "{err}");
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn load_own<C: DeserializeOwned>(path: &Path, run_id: u64) -> Result<Checkpoint<TrainedModel<C>>> {
    let ckpt: Checkpoint<TrainedModel<C>> = Checkpoint::load(path)?;
    if ckpt.config.run_id != run_id {
        let reason = format!("written by run {:016x}, this is run {run_id:016x}", ckpt.config.run_id);
        return Err(checkpoint_problem(path, CheckpointProblem::OtherRun(reason)));
    }
    Ok(ckpt)
}

/// A fresh run's identity: different for every process and call (it labels
/// checkpoints and is never part of what training computes).
fn fresh_run_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    hasher.finish()
}

/// `name saved (saved) vs ours (this run)` for every setting that differs
/// (or that only one side has).
fn setting_differences(saved: &[(String, String)], ours: &[(String, String)]) -> Vec<String> {
    let find = |list: &[(String, String)], name: &str| {
        list.iter().find(|(n, _)| n == name).map_or("(none)".to_string(), |(_, v)| v.clone())
    };
    let mut names: Vec<&str> = saved.iter().chain(ours).map(|(n, _)| n.as_str()).collect();
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(*n));
    names
        .into_iter()
        .filter_map(|name| {
            let (a, b) = (find(saved, name), find(ours, name));
            (a != b).then(|| format!("{name} {a} (saved) vs {b} (this run)"))
        })
        .collect()
}

/// The examples cut into epochs: slices of `epoch_size`, or all of them.
fn epoch_slices<E>(train: &[E], epoch_size: Option<usize>) -> Vec<&[E]> {
    match epoch_size {
        Some(size) => train.chunks(size.max(1)).collect(),
        None => vec![train],
    }
}

/// The slice epoch `e` (1-based) trains on: `(e - 1) mod k`.
fn epoch_slice<'a, E>(slices: &[&'a [E]], epoch: u64) -> &'a [E] {
    slices.get((epoch as usize - 1) % slices.len().max(1)).copied().unwrap_or_default()
}

/// The RNG of epoch `e` (1-based): batch order and dropout.
fn epoch_rng(seed: u64, epoch: u64) -> StdRng {
    // SplitMix64's mixing constant keeps nearby (seed, epoch) pairs apart.
    StdRng::seed_from_u64(seed ^ epoch.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// One batch's training loss and the gradients of every parameter.
///
/// With [`TrainConfig::shards`] above 1 the batch is cut into row groups
/// (shards), each run forward and backward on its own thread, and the
/// gradients added up in shard order. The batch's loss is the mean over its
/// `N` target tokens, and shard `s` holds `n_s` of them, so
///
/// ```text
/// L = Σ_s (n_s / N) · L_s      ⇒      ∇L = Σ_s (n_s / N) · ∇L_s
/// ```
///
/// and each shard's backward pass is seeded with `n_s / N` instead of 1: the
/// sum is the whole batch's gradient (up to rounding). Dropout in shard `s`
/// draws from its own generator, seeded from the epoch's in shard order.
///
/// ```
/// use lingo_data::{Batch, Example};
/// use lingo_nn::{Seq2Seq, Seq2SeqConfig, TrainConfig, batch_gradients};
/// use lingo_tensor::Module;
/// use rand::SeedableRng;
/// let model = Seq2Seq::new(Seq2SeqConfig::new(9, 9), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
/// let ex: Vec<Example> = (4..9).map(|i| Example { src: vec![2, i, 3], tgt: vec![2, i, i, 3] }).collect();
/// let batch = Batch::from_examples(&ex).unwrap();
/// let mut config = TrainConfig::new(1, 1e-3);
/// let rng = &mut rand::rngs::StdRng::seed_from_u64(1);
/// let (whole, g1) = batch_gradients(&model, &batch, &config, rng).unwrap();
/// config.shards = 2;
/// let (sharded, g2) = batch_gradients(&model, &batch, &config, rng).unwrap();
/// assert!((whole - sharded).abs() < 1e-5);
/// let w = model.params()[0].tensor();
/// let diff = (g1.get(w).unwrap() - g2.get(w).unwrap()).mapv(f32::abs).sum();
/// assert!(diff < 1e-5);
/// ```
pub fn batch_gradients<M: EncoderDecoder>(
    model: &M,
    batch: &Batch,
    config: &TrainConfig,
    rng: &mut StdRng,
) -> Result<(f32, Gradients)> {
    if config.shards <= 1 {
        // Recorded wherever this runs: a rayon thread waiting inside someone's
        // no_grad may be the one running it.
        return enable_grad(|| {
            let loss = training_loss(model, batch, config, Mode::Train(rng))?;
            Ok((loss.item()?, loss.backward()?))
        });
    }
    let shards = batch.shards(config.shards);
    let seeds: Vec<u64> = shards.iter().map(|_| rng.random()).collect();
    let total = batch.num_tgt_tokens().max(1) as f32;
    let parts = shards
        .par_iter()
        .zip(seeds)
        .map(|(shard, seed)| {
            let share = shard.num_tgt_tokens() as f32 / total; // n_s / N
            enable_grad(|| {
                let loss = training_loss(model, shard, config, Mode::Train(&mut StdRng::seed_from_u64(seed)))?;
                let grads = loss.backward_with(ArrayD::from_elem(loss.shape(), share))?;
                Ok((share * loss.item()?, grads))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let (mut value, mut grads) = (0.0, Gradients::default());
    for (v, g) in parts {
        value += v;
        grads.merge(g);
    }
    Ok((value, grads))
}

/// The loss training minimizes on `batch`: the cross-entropy, plus guided
/// alignment's term `λ · A` when the configuration asks for it and the
/// batch has gold links (see [`crate::guided`]).
///
/// ```
/// use lingo_data::{AlignedExample, Batch};
/// use lingo_nn::{EncoderDecoder, GuidedAlignment, Mode, Seq2Seq, Seq2SeqConfig, TrainConfig, alignment_loss, training_loss};
/// use rand::SeedableRng;
/// let config = Seq2SeqConfig { attention: Some("dot".parse()?), ..Seq2SeqConfig::new(9, 9) };
/// let model = Seq2Seq::new(config, &mut rand::rngs::StdRng::seed_from_u64(0))?;
/// let ex = AlignedExample { src: vec![2, 5, 6, 3], tgt: vec![2, 6, 5, 3], gold: vec![vec![2], vec![1], vec![3]], sure: vec![vec![2], vec![1], vec![3]] };
/// let batch = Batch::from_examples(&[ex])?;
/// let guided = TrainConfig { guided_alignment: Some(GuidedAlignment::new(0.5)), ..TrainConfig::new(1, 1e-3) };
/// let total = training_loss(&model, &batch, &guided, Mode::Eval)?.item()?;
/// let ce = model.loss(&batch, 0.0, Mode::Eval)?.item()?;
/// let attention = lingo_tensor::Tensor::new(model.attention(&batch)?.unwrap().into_dyn());
/// let a = alignment_loss(&attention, &batch.gold_weights().unwrap())?.item()?;
/// assert!((total - (ce + 0.5 * a)).abs() < 1e-5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn training_loss<M: EncoderDecoder>(
    model: &M,
    batch: &Batch,
    config: &TrainConfig,
    mode: Mode<'_>,
) -> Result<Tensor> {
    // The gold matrix is built only when guidance asks for it: this runs every step.
    let Some((guide, gold)) = config.guided_alignment.and_then(|guide| Some((guide, batch.gold_weights()?))) else {
        return model.loss(batch, config.label_smoothing, mode);
    };
    let (loss, attention) = model.loss_and_attention(batch, config.label_smoothing, guide.head, mode)?;
    let attention = attention.ok_or_else(|| config_error("guided alignment", "the model has no attention to guide"))?;
    Ok(loss.add(&alignment_loss(&attention, &gold)?.mul_scalar(guide.weight))?)
}

/// Mean loss over `batches` in evaluation mode, without a graph.
///
/// ```
/// use lingo_data::{Batch, Example};
/// use lingo_nn::{Seq2Seq, Seq2SeqConfig, evaluate};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let model = Seq2Seq::new(Seq2SeqConfig::new(10, 10), &mut rng).unwrap();
/// let batch = Batch::from_examples(&[Example { src: vec![2, 5, 3], tgt: vec![2, 6, 3] }]).unwrap();
/// assert!(evaluate(&model, &[batch], 0.0).unwrap() > 0.0);
/// ```
pub fn evaluate<M: EncoderDecoder>(model: &M, batches: &[Batch], label_smoothing: f32) -> Result<f32> {
    no_grad(|| {
        let mut sum = 0.0_f64;
        for batch in batches {
            sum += f64::from(model.loss(batch, label_smoothing, Mode::Eval)?.item()?);
        }
        Ok((sum / batches.len().max(1) as f64) as f32)
    })
}

/// The numbers of one finished epoch, as [`train_model_with`] reports them:
/// how a program follows training (the library prints no line of its own).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpochReport {
    /// The epoch, 1-based.
    pub epoch: usize,
    /// The most epochs training runs, [`TrainConfig::epochs`].
    pub epochs: usize,
    /// Mean training loss over the epoch's batches.
    pub train_loss: f32,
    /// Validation loss after the epoch.
    pub val_loss: f32,
    /// Optimizer steps so far.
    pub steps: u64,
    /// Seconds since the call started.
    pub seconds: f64,
    /// Whether the validation loss is the lowest so far: the epoch is the
    /// run's best (its `best.ckpt` written, when checkpointing).
    pub improved: bool,
}

impl std::fmt::Display for EpochReport {
    /// The epoch's line: `Epoch 3/16 | Train: 2.9817 | Val: 2.9359`.
    ///
    /// ```
    /// let report = lingo_nn::EpochReport { epoch: 3, epochs: 16, train_loss: 2.98172, val_loss: 2.93591, steps: 141, seconds: 2.5, improved: true };
    /// assert_eq!(report.to_string(), "Epoch 3/16 | Train: 2.9817 | Val: 2.9359");
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Epoch {}/{} | Train: {:.4} | Val: {:.4}", self.epoch, self.epochs, self.train_loss, self.val_loss)
    }
}

/// Whether training goes on after an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Train the next epoch.
    Continue,
    /// Stop here (the epoch's checkpoint is already written).
    Stop,
    /// Make this epoch the last (at most [`TrainConfig::epochs`]; the
    /// current one or earlier: stop here), until a later `EndAt` moves it
    /// again. A schedule with an end, [`Schedule::WarmupCosine`], now ends
    /// with that epoch's last step ([`Scheduler::end_at`]): how a caller
    /// fits the decay to a time budget as it learns the pace.
    EndAt(usize),
}

/// The numbers of one optimizer step, as [`TrainHooks::after_step`] hears
/// of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepReport {
    /// The epoch the step belongs to, 1-based.
    pub epoch: usize,
    /// Optimizer steps so far in the run, this one included.
    pub step: u64,
    /// This batch's training loss.
    pub loss: f32,
    /// The learning rate the step was taken with.
    pub lr: f64,
    /// Training pairs (batch rows) stepped on since the call started.
    pub pairs: u64,
    /// Seconds since the call started.
    pub seconds: f64,
}

/// What a caller of [`train_model_hooked`] hears while training runs: a
/// call every [`step_every`](TrainHooks::step_every) steps and one after
/// every epoch, each seeing the model. Either may fail, which ends
/// training with that error; the epoch call also says whether to go on.
///
/// ```
/// use lingo_data::{DigitOp, DigitTask, Task};
/// use lingo_nn::{EpochReport, Next, Progress, Seq2Seq, Seq2SeqConfig, StepReport, TrainConfig, TrainHooks, train_model_hooked};
/// use rand::SeedableRng;
///
/// /// Keeps every second step's loss, and stops after two epochs.
/// struct Log(Vec<(u64, f32)>);
/// impl TrainHooks<Seq2Seq> for Log {
///     type Error = lingo_nn::Error;
///     fn step_every(&self) -> u64 { 2 }
///     fn after_step(&mut self, step: &StepReport, _: &Seq2Seq) -> lingo_nn::Result<()> {
///         Ok(self.0.push((step.step, step.loss)))
///     }
///     fn after_epoch(&mut self, epoch: &EpochReport, _: &Seq2Seq) -> lingo_nn::Result<Next> {
///         Ok(if epoch.epoch == 2 { Next::Stop } else { Next::Continue })
///     }
/// }
///
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let task = DigitTask::new(DigitOp::Copy, 5, 2, 3).unwrap();
/// let (train, val) = (task.generate(160, &mut rng), task.generate(16, &mut rng));
/// let config = Seq2SeqConfig { emb_dim: 8, hidden_dim: 8, ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len()) };
/// let mut model = Seq2Seq::new(config, &mut rng).unwrap();
/// let settings = TrainConfig { progress: Progress::Silent, ..TrainConfig::new(9, 1e-2) };
/// let mut log = Log(Vec::new());
/// let result = train_model_hooked(&mut model, &train, &val, &settings, None, &mut log).unwrap();
/// assert_eq!(result.val_losses.len(), 2);
/// assert_eq!(log.0.iter().map(|s| s.0).collect::<Vec<_>>(), [2, 4, 6]); // 3 batches an epoch
/// ```
pub trait TrainHooks<M> {
    /// The error the calls may return; training's own errors become one.
    type Error: From<Error>;

    /// Steps between two calls of [`after_step`](TrainHooks::after_step);
    /// 0 (the default) never calls it.
    fn step_every(&self) -> u64 {
        0
    }

    /// Called after every [`step_every`](TrainHooks::step_every)-th step
    /// of the run (counted from its first, through resumes).
    fn after_step(&mut self, _step: &StepReport, _model: &M) -> std::result::Result<(), Self::Error> {
        Ok(())
    }

    /// Called after every epoch, once its checkpoint is written.
    fn after_epoch(&mut self, epoch: &EpochReport, model: &M) -> std::result::Result<Next, Self::Error>;
}

/// [`train_model_with`]'s closure as hooks: a call after each epoch only.
struct AfterEpoch<F, Er>(F, PhantomData<fn() -> Er>);

impl<M, Er: From<Error>, F: FnMut(&EpochReport, &M) -> std::result::Result<Next, Er>> TrainHooks<M>
    for AfterEpoch<F, Er>
{
    type Error = Er;

    fn after_epoch(&mut self, epoch: &EpochReport, model: &M) -> std::result::Result<Next, Er> {
        (self.0)(epoch, model)
    }
}

/// Trains `model` on `train`, validating on `val` after every epoch; see the
/// [module docs](self). With `resume`, continues from a `last.ckpt` written
/// by an earlier run with the same configuration: weights, optimizer and
/// schedule state, epoch and step come from it. `train` and `val` may be
/// of two kinds of pairs: validation scores the cross-entropy alone, so
/// training pairs with gold links ([`lingo_data::Linked`]) validate on plain ones.
///
/// A NaN or infinite training loss stops training with
/// [`Error::NonFiniteLoss`], naming the epoch and step; the checkpoints of
/// earlier epochs are left as they were.
///
/// ```
/// use lingo_data::{DigitOp, DigitTask, Task};
/// use lingo_nn::{Progress, Seq2Seq, Seq2SeqConfig, TrainConfig, train_model};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let task = DigitTask::new(DigitOp::Copy, 5, 2, 3).unwrap();
/// let train = task.generate(64, &mut rng);
/// let val = task.generate(16, &mut rng);
/// let config = Seq2SeqConfig { emb_dim: 16, hidden_dim: 16, ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len()) };
/// let mut model = Seq2Seq::new(config, &mut rng).unwrap();
/// let result = train_model(&mut model, &train, &val, &TrainConfig { progress: Progress::Silent, ..TrainConfig::new(3, 1e-2) }, None).unwrap();
/// assert_eq!(result.val_losses.len(), 3);
/// assert!(result.train_losses[2] < result.train_losses[0]);
/// ```
pub fn train_model<M: EncoderDecoder, E: SeqPair, V: SeqPair>(
    model: &mut M,
    train: &[E],
    val: &[V],
    config: &TrainConfig,
    resume: Option<&Checkpoint<TrainedModel<M::Config>>>,
) -> Result<TrainResult> {
    train_model_with(model, train, val, config, resume, |_, _| Ok::<Next, Error>(Next::Continue))
}

/// [`train_model`] with a call after every epoch (once its checkpoint is
/// written), which sees the numbers and the model and says whether to go on:
/// the place to show progress (`println!("{report}")` prints the epoch's
/// line), to measure something per epoch, or to stop on a condition of
/// your own. Its errors pass through, so its error type `F` only needs to
/// take this crate's errors. [`train_model_hooked`] also calls between steps.
///
/// ```
/// use lingo_data::{DigitOp, DigitTask, Task};
/// use lingo_nn::{Next, Progress, Seq2Seq, Seq2SeqConfig, TrainConfig, train_model_with};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let task = DigitTask::new(DigitOp::Copy, 5, 2, 3).unwrap();
/// let (train, val) = (task.generate(64, &mut rng), task.generate(16, &mut rng));
/// let config = Seq2SeqConfig { emb_dim: 16, hidden_dim: 16, ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len()) };
/// let mut model = Seq2Seq::new(config, &mut rng).unwrap();
/// let settings = TrainConfig { progress: Progress::Silent, ..TrainConfig::new(10, 1e-2) };
/// let mut seen = Vec::new();
/// let result = train_model_with(&mut model, &train, &val, &settings, None, |report, _model| {
///     seen.push(report.val_loss);
///     Ok::<_, lingo_nn::Error>(if report.epoch == 4 { Next::Stop } else { Next::Continue })
/// }).unwrap();
/// assert_eq!(seen, result.val_losses);
/// assert_eq!(seen.len(), 4);
/// ```
pub fn train_model_with<M: EncoderDecoder, E: SeqPair, V: SeqPair, F: From<Error>>(
    model: &mut M,
    train: &[E],
    val: &[V],
    config: &TrainConfig,
    resume: Option<&Checkpoint<TrainedModel<M::Config>>>,
    after_epoch: impl FnMut(&EpochReport, &M) -> std::result::Result<Next, F>,
) -> std::result::Result<TrainResult, F> {
    train_model_hooked(model, train, val, config, resume, &mut AfterEpoch(after_epoch, PhantomData))
}

/// [`train_model`] with [`TrainHooks`]: per epoch, train (calling
/// `hooks` between steps as they ask), validate, keep the best,
/// checkpoint, then ask `hooks` whether to go on. The hooks' own errors
/// stop training and are handed back unchanged.
pub fn train_model_hooked<M: EncoderDecoder, E: SeqPair, V: SeqPair, H: TrainHooks<M>>(
    model: &mut M,
    train: &[E],
    val: &[V],
    config: &TrainConfig,
    resume: Option<&Checkpoint<TrainedModel<M::Config>>>,
    hooks: &mut H,
) -> std::result::Result<TrainResult, H::Error> {
    let (mut training, first_epoch) = Training::start(model, train, val, config, resume)?;
    let mut interrupted = false;
    for epoch in first_epoch.. {
        if epoch > training.last_epoch {
            break;
        }
        let Some(train_loss) = training.train_epoch(model, epoch, hooks)? else {
            interrupted = true;
            break;
        };
        let val_loss = training.validate(model, epoch, train_loss)?;
        let improved = training.record_best(epoch, val_loss);
        training.save_checkpoints(model, epoch, improved)?;
        let report = training.report(epoch, train_loss, val_loss, improved);
        let next = hooks.after_epoch(&report, model)?;
        if training.stops_after(epoch, next)? {
            break;
        }
    }
    Ok(training.finish(interrupted))
}

/// A run in progress: what carries from one epoch to the next, and what
/// every epoch reads, so each phase of [`train_loop`] is a method.
struct Training<'a, E, M: EncoderDecoder> {
    config: &'a TrainConfig,
    /// The training examples cut into epochs ([`TrainConfig::epoch_size`]).
    slices: Vec<&'a [E]>,
    val_batches: Vec<Batch>,
    start: Instant,
    optimizer: Optimizer,
    scheduler: Scheduler,
    /// What the checkpoints store: the losses so far and the best epoch.
    run: TrainedModel<M::Config>,
    best_checkpoint: Option<PathBuf>,
    /// Optimizer steps so far, counted from the run's first epoch.
    step: u64,
    /// Training pairs stepped on in this call, for [`StepReport::pairs`].
    pairs: u64,
    /// The lowest validation loss so far, and the epochs since it (for patience).
    best: f32,
    since_best: usize,
    /// The last epoch to train: [`TrainConfig::epochs`] until [`Next::EndAt`] moves it.
    last_epoch: u64,
}

impl<'a, E: SeqPair, M: EncoderDecoder> Training<'a, E, M> {
    /// The state before the first epoch to train, which it returns: a fresh
    /// run's, or the one `resume` saved, with its weights restored to `model`.
    fn start<V: SeqPair>(
        model: &mut M,
        train: &'a [E],
        val: &[V],
        config: &'a TrainConfig,
        resume: Option<&Checkpoint<TrainedModel<M::Config>>>,
    ) -> Result<(Self, u64)> {
        let start = Instant::now();
        let mut optimizer = Optimizer::new(config.algorithm, config.lr)?;
        if let Some(norm) = config.max_grad_norm {
            optimizer = optimizer.with_max_grad_norm(norm)?;
        }
        let mut scheduler = Scheduler::new(config.schedule, config.lr)?;
        if let Some(spec) = &config.checkpoints {
            spec.remove_half_written()?;
        }
        let (mut first_epoch, mut step) = (1_u64, 0_u64);
        let mut run = TrainedModel::start(EncoderDecoder::config(model), config, fresh_run_id());
        if let Some(ckpt) = resume {
            ckpt.restore(model)?;
            optimizer = ckpt.optimizer.clone().unwrap_or(optimizer);
            scheduler = ckpt.scheduler.clone().unwrap_or(scheduler);
            (first_epoch, step) = (ckpt.epoch + 1, ckpt.step);
            run = TrainedModel {
                train_losses: ckpt.config.train_losses.clone(),
                val_losses: ckpt.config.val_losses.clone(),
                best_epoch: ckpt.config.best_epoch,
                run_id: ckpt.config.run_id,
                ..run
            };
        }
        if let Some(spec) = &config.checkpoints {
            // A run killed after its last save kept one epoch too many.
            spec.forget_epoch_before(first_epoch - 1)?;
        }
        let training = Training {
            config,
            slices: epoch_slices(train, config.epoch_size),
            val_batches: config.validation_batches(val)?,
            start,
            optimizer,
            scheduler,
            best: run.val_losses.iter().copied().fold(f32::INFINITY, f32::min),
            run,
            best_checkpoint: None,
            step,
            pairs: 0,
            since_best: 0,
            last_epoch: config.epochs as u64,
        };
        Ok((training, first_epoch))
    }

    /// Trains `epoch` on its slice in its seeded batch order, calling
    /// `hooks` every [`TrainHooks::step_every`] steps: the mean training
    /// loss, or `None` when [`TrainConfig::control`] stopped the epoch.
    fn train_epoch<H: TrainHooks<M>>(
        &mut self,
        model: &mut M,
        epoch: u64,
        hooks: &mut H,
    ) -> std::result::Result<Option<f32>, H::Error> {
        let config = self.config;
        let mut rng = epoch_rng(config.seed, epoch);
        let batches = config.batching.batches(epoch_slice(&self.slices, epoch), &mut rng).map_err(Error::from)?;
        let bar = config.progress.bar(epoch, config.epochs, batches.len());
        let every = hooks.step_every();
        let mut sum = 0.0_f64;
        for batch in &batches {
            if !config.proceed() {
                break;
            }
            let value = self.train_step(model, batch, epoch, &mut rng)?;
            sum += f64::from(value);
            self.pairs += batch.src_lens.len() as u64;
            if let Some(bar) = &bar {
                bar.set_message(format!("{value:.4}"));
                bar.inc(1);
            }
            if every > 0 && self.step.is_multiple_of(every) {
                hooks.after_step(&self.step_report(epoch, value), model)?;
            }
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        // Asked during the last step, a stop still drops the epoch.
        if config.stopped() {
            return Ok(None);
        }
        Ok(Some((sum / batches.len().max(1) as f64) as f32))
    }

    /// The numbers of the step just taken, as the hooks see them.
    fn step_report(&self, epoch: u64, loss: f32) -> StepReport {
        StepReport {
            epoch: epoch as usize,
            step: self.step,
            loss,
            lr: self.optimizer.lr(),
            pairs: self.pairs,
            seconds: self.start.elapsed().as_secs_f64(),
        }
    }

    /// One optimizer step on `batch`, `lr ← schedule × control's factor`
    /// first: the batch's training loss, which must be finite.
    fn train_step(&mut self, model: &mut M, batch: &Batch, epoch: u64, rng: &mut StdRng) -> Result<f32> {
        self.step += 1;
        let step = self.step;
        // `x * 1.0 == x` exactly, so an unscaled run keeps its bits.
        self.optimizer.set_lr(self.scheduler.step() * self.config.lr_scale());
        // The graphs are gone once this returns, so parameters update in place.
        let (value, grads) = batch_gradients(model, batch, self.config, rng)?;
        if !value.is_finite() {
            return Err(Error::NonFiniteLoss { what: "training", epoch, step, value });
        }
        self.optimizer.step(model, &grads).map_err(|e| Error::Training { epoch, step, source: Box::new(e) })?;
        Ok(value)
    }

    /// Scores the model on the validation batches after `epoch`, and records
    /// both losses (the schedule sees the validation one, for reduce-on-plateau).
    fn validate(&mut self, model: &M, epoch: u64, train_loss: f32) -> Result<f32> {
        let val_loss = evaluate(model, &self.val_batches, self.config.label_smoothing)?;
        if !val_loss.is_finite() {
            // The last step's update broke the weights: no checkpoint of them.
            return Err(Error::NonFiniteLoss { what: "validation", epoch, step: self.step, value: val_loss });
        }
        self.scheduler.observe(f64::from(val_loss));
        self.run.train_losses.push(train_loss);
        self.run.val_losses.push(val_loss);
        Ok(val_loss)
    }

    /// Whether `val_loss` is the lowest so far, which makes `epoch` the best
    /// one and restarts the patience count.
    fn record_best(&mut self, epoch: u64, val_loss: f32) -> bool {
        let improved = val_loss < self.best;
        if improved {
            (self.best, self.since_best) = (val_loss, 0);
            self.run.best_epoch = epoch as usize;
        } else {
            self.since_best += 1;
        }
        improved
    }

    /// Writes the checkpoints of `epoch`, when asked for: its own weights
    /// (kept for averaging), `best.ckpt` if it `improved`, and `last.ckpt`.
    fn save_checkpoints(&mut self, model: &M, epoch: u64, improved: bool) -> Result<()> {
        let Some(spec) = &self.config.checkpoints else {
            return Ok(());
        };
        let mut ckpt = Checkpoint::new(self.run.clone(), model, spec.src_vocab.clone(), spec.tgt_vocab.clone())?;
        (ckpt.epoch, ckpt.step) = (epoch, self.step);
        if spec.keep_epochs > 0 {
            // Weights only: averaging needs no optimizer state.
            let path = spec.epoch_path(epoch);
            remove_stale_temp_files(&path)?;
            ckpt.save(path)?;
        }
        (ckpt.optimizer, ckpt.scheduler) = (Some(self.optimizer.clone()), Some(self.scheduler.clone()));
        // best.ckpt first: a run killed between the two saves resumes
        // from the previous last.ckpt and redoes this epoch, so best.ckpt
        // is never behind the best_epoch that last.ckpt records.
        if improved {
            let path = spec.dir.join("best.ckpt");
            ckpt.save(&path)?;
            self.best_checkpoint = Some(path);
        }
        ckpt.save(spec.dir.join("last.ckpt"))?;
        // Only once last.ckpt is past it: a resume from the previous
        // last.ckpt still finds every epoch it may average.
        spec.forget_epoch_before(epoch)
    }

    /// The numbers of the finished `epoch`, as the hook sees them.
    fn report(&self, epoch: u64, train_loss: f32, val_loss: f32, improved: bool) -> EpochReport {
        EpochReport {
            epoch: epoch as usize,
            epochs: self.config.epochs,
            train_loss,
            val_loss,
            steps: self.step,
            seconds: self.start.elapsed().as_secs_f64(),
            improved,
        }
    }

    /// Whether training ends after `epoch`: the hook's `next` says so, or
    /// patience or the time budget ran out.
    fn stops_after(&mut self, epoch: u64, next: Next) -> Result<bool> {
        let stop = match next {
            Next::Continue => false,
            Next::Stop => true,
            Next::EndAt(end) => {
                self.end_at(epoch, end)?;
                false
            }
        };
        let out_of_patience = self.config.patience.is_some_and(|p| self.since_best >= p);
        let out_of_time = self.config.time_budget.is_some_and(|t| self.start.elapsed() >= t);
        Ok(stop || out_of_patience || out_of_time)
    }

    /// Makes `end` the last epoch ([`Next::EndAt`], seen after `epoch`), and
    /// ends a schedule that has an end with that epoch's last step.
    fn end_at(&mut self, epoch: u64, end: usize) -> Result<()> {
        self.last_epoch = (self.config.epochs as u64).min(end as u64);
        if self.scheduler.has_end() {
            // The steps so far, then the plans of the epochs to come.
            let to_come =
                (epoch + 1..=self.last_epoch).map(|e| self.config.epoch_steps(&self.slices, e)).sum::<Result<u64>>()?;
            self.scheduler.end_at(self.step + to_come);
        }
        Ok(())
    }

    /// What the run hands back once its loop is over.
    fn finish(self, interrupted: bool) -> TrainResult {
        TrainResult {
            train_losses: self.run.train_losses,
            val_losses: self.run.val_losses,
            best_epoch: self.run.best_epoch,
            best_checkpoint: self.best_checkpoint,
            steps: self.step,
            seconds: self.start.elapsed().as_secs_f64(),
            run_id: self.run.run_id,
            interrupted,
        }
    }
}
