//! TorchLingo's tutorial 6 in lingo's terms: one healthy model and seven
//! broken on purpose, each put through all five checks, so a learner sees
//! which check catches which failure (and that the others stay quiet).
//!
//! Every model is a small LSTM with dot attention on
//! lexicon-translate-then-reverse; [`Breakage`] says what is done to it.
//! `cargo run --release --example broken_models` prints the table.

use lingo_data::{Example, LexiconReverse, Pair, Task, Vocab};
use lingo_nn::{Mode, Progress, Seq2Seq, Seq2SeqConfig, TrainConfig, TrainResult, evaluate, train_model};
use lingo_tensor::Module;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::Serialize;

use super::model::batches_of;
use super::{Diagnosis, eval_mode, gap, gradient_report, initial_loss, leakage};
use crate::error::Result;
use crate::metrics::RoundMetrics;

/// What is done to a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Breakage {
    /// Nothing: trained on 1,500 pairs for 4 epochs.
    Healthy,
    /// Every weight initialised ten times too large.
    InitTooLarge,
    /// The decoder's embedding frozen before training.
    FrozenLayer,
    /// The trained model's output layer blown up ×10⁴ (what one step at a
    /// far too high learning rate does).
    BlownUpOutput,
    /// The trained encoder's embedding scaled by 10⁻⁹: its LSTM is fed
    /// almost nothing.
    StarvedEncoder,
    /// A model four times wider trained 60 epochs on 32 pairs.
    Overfitting,
    /// A tenth of the held-out pairs copied from the training pairs.
    LeakedPairs,
    /// Dropout 0.3, evaluated in training mode.
    LeftInTraining,
}

impl Breakage {
    /// The healthy model, then each breakage in the order of the checks
    /// that should catch it.
    pub const ALL: [Breakage; 8] = [
        Breakage::Healthy,
        Breakage::InitTooLarge,
        Breakage::FrozenLayer,
        Breakage::BlownUpOutput,
        Breakage::StarvedEncoder,
        Breakage::Overfitting,
        Breakage::LeakedPairs,
        Breakage::LeftInTraining,
    ];

    /// The check (its name in [`Diagnosis::checks`]) that should catch it;
    /// `None` for the healthy model.
    ///
    /// ```
    /// use lingo_lessons::diagnose::Breakage;
    /// assert_eq!(Breakage::LeakedPairs.caught_by(), Some("leakage"));
    /// ```
    pub fn caught_by(self) -> Option<&'static str> {
        match self {
            Breakage::Healthy => None,
            Breakage::InitTooLarge => Some("initial loss"),
            Breakage::FrozenLayer | Breakage::BlownUpOutput | Breakage::StarvedEncoder => Some("gradients"),
            Breakage::Overfitting => Some("train/valid gap"),
            Breakage::LeakedPairs => Some("leakage"),
            Breakage::LeftInTraining => Some("eval mode"),
        }
    }
}

impl std::fmt::Display for Breakage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            Breakage::Healthy => "healthy",
            Breakage::InitTooLarge => "init ×10",
            Breakage::FrozenLayer => "frozen layer",
            Breakage::BlownUpOutput => "blown-up output",
            Breakage::StarvedEncoder => "starved encoder",
            Breakage::Overfitting => "overfitting",
            Breakage::LeakedPairs => "leaked pairs",
            Breakage::LeftInTraining => "left in training",
        })
    }
}

/// One model of the lesson and its diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrokenModel {
    /// What was done to it.
    pub breakage: Breakage,
    /// All five checks.
    pub diagnosis: Diagnosis,
}

/// Everything the checks read of one model.
struct Case {
    initial: Seq2Seq,
    model: Seq2Seq,
    train: Vec<Example>,
    valid: Vec<Example>,
    rounds: Vec<RoundMetrics>,
    dropout_at_eval: bool,
}

/// Builds `breakage`'s model and diagnoses it (4 batches of 32 for the
/// loss at initialisation and the gradients).
///
/// ```
/// use lingo_lessons::diagnose::{Breakage, Verdict, broken_model};
/// let broken = broken_model(Breakage::InitTooLarge)?;
/// assert_eq!(broken.diagnosis.init.verdict, Verdict::Fail);
/// # Ok::<(), lingo_lessons::Error>(())
/// ```
pub fn broken_model(breakage: Breakage) -> Result<BrokenModel> {
    let case = case(breakage)?;
    let (train, valid) = (batches_of(&case.train, 4 * 32, 32)?, batches_of(&case.valid, 4 * 32, 32)?);
    let model = &case.model;
    let losses = (f64::from(evaluate(model, &train, 0.0)?), f64::from(evaluate(model, &valid, 0.0)?));
    let mut rng = StdRng::seed_from_u64(1);
    let eval = eval_mode(model, &valid, |b| {
        let mode = if case.dropout_at_eval { Mode::Train(&mut rng) } else { Mode::Eval };
        Ok(model.loss(b, 0.0, mode)?.item()?)
    })?;
    let task = LexiconReverse::default();
    let text = |examples: &[Example]| as_text(examples, task.src_vocab(), task.tgt_vocab());
    let diagnosis = Diagnosis {
        init: initial_loss(&case.initial, &train)?,
        gradients: gradient_report(model, Some(&case.initial), &train, 0)?,
        gap: gap(losses.0, losses.1, &case.rounds),
        leakage: vec![leakage("valid", &text(&case.train), &text(&case.valid))],
        eval_mode: eval,
    };
    Ok(BrokenModel { breakage, diagnosis })
}

/// The healthy model and every breakage, diagnosed.
///
/// ```
/// for broken in lingo_lessons::diagnose::broken_models()? {
///     let verdicts: Vec<String> = broken.diagnosis.checks().iter().map(|c| c.verdict.to_string()).collect();
///     println!("{:<18} {}", broken.breakage, verdicts.join(" "));
/// }
/// # Ok::<(), lingo_lessons::Error>(())
/// ```
pub fn broken_models() -> Result<Vec<BrokenModel>> {
    Breakage::ALL.into_iter().map(broken_model).collect()
}

/// The model, data and history `breakage` gives.
fn case(breakage: Breakage) -> Result<Case> {
    let (hidden, dropout, pairs, epochs) = match breakage {
        Breakage::Overfitting => (128, 0.0, 32, 60),
        Breakage::LeftInTraining => (32, 0.3, 1500, 4),
        _ => (32, 0.2, 1500, 4),
    };
    let task = LexiconReverse::default();
    let mut rng = StdRng::seed_from_u64(7);
    let mut generate = |n| task.generate(n, &mut rng).into_iter().map(|a| Example { src: a.src, tgt: a.tgt });
    let train: Vec<Example> = generate(pairs).collect();
    // Held-out pairs are new pairs, as a split of a deduplicated corpus gives.
    let mut valid: Vec<Example> = generate(200).filter(|e| !train.contains(e)).take(64).collect();
    if breakage == Breakage::LeakedPairs {
        valid.truncate(58);
        valid.extend(train[..6].iter().cloned());
    }
    let config = Seq2SeqConfig {
        emb_dim: hidden,
        hidden_dim: hidden,
        attn_dim: hidden,
        dropout,
        attention: Some("dot".parse().expect("a scorer")),
        ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len())
    };
    let mut initial = Seq2Seq::new(config, &mut StdRng::seed_from_u64(0))?;
    if breakage == Breakage::InitTooLarge {
        scale(&mut initial, "", 10.0);
    }
    let mut model = initial.clone();
    if breakage == Breakage::FrozenLayer {
        for param in model.params_mut().into_iter().filter(|p| p.name().starts_with("decoder.embedding")) {
            *param = param.frozen();
        }
    }
    let config = TrainConfig { progress: Progress::Silent, ..TrainConfig::new(epochs, 5e-3) };
    let result = train_model(&mut model, &train, &valid, &config, None)?;
    match breakage {
        Breakage::BlownUpOutput => scale(&mut model, "out.", 1e4),
        Breakage::StarvedEncoder => scale(&mut model, "encoder.embedding", 1e-9),
        _ => {}
    }
    let rounds = rounds(&result);
    Ok(Case { initial, model, train, valid, rounds, dropout_at_eval: breakage == Breakage::LeftInTraining })
}

/// Multiplies every value of the parameters whose name starts with `prefix`.
fn scale(model: &mut Seq2Seq, prefix: &str, factor: f32) {
    for param in model.params_mut().into_iter().filter(|p| p.name().starts_with(prefix)) {
        param.update(|w| w.mapv_inplace(|v| v * factor));
    }
}

/// A training run's epochs as `metrics.jsonl`'s rounds.
fn rounds(result: &TrainResult) -> Vec<RoundMetrics> {
    let epochs = result.train_losses.iter().zip(&result.val_losses).enumerate();
    epochs.map(|(i, (&train, &val))| RoundMetrics::of_losses(i + 1, train, val)).collect()
}

/// Examples as text pairs, for the leakage check.
fn as_text(examples: &[Example], src: &Vocab, tgt: &Vocab) -> Vec<Pair> {
    let words = |vocab: &Vocab, ids: &[usize]| vocab.decode(ids, true).join(" ");
    examples.iter().map(|e| Pair { src: words(src, &e.src), tgt: words(tgt, &e.tgt) }).collect()
}
