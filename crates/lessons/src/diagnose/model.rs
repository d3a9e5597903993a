//! The checks that run the model: its loss at initialisation against
//! `ln V`, its gradients parameter by parameter, and whether evaluating it
//! twice gives the same numbers.

use std::collections::HashMap;

use lingo_data::{Batch, Example};
use lingo_nn::{EncoderDecoder, ModelConfig, TrainConfig, batch_gradients, evaluate, greedy_decode};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::Serialize;

use super::Verdict;
use crate::error::Result;

/// The loss at initialisation within this factor of `ln V` passes; within
/// the square of it, a warning.
const INIT_FACTOR: f64 = 1.25;
/// A parameter's gradient norm above this explodes.
const EXPLODING: f64 = 1e3;
/// A parameter's gradient norm below this fraction of the median
/// parameter's (and not zero) vanishes.
const VANISHING: f64 = 1e-6;
/// A log-probability that moves more than this when a sentence's batch
/// changes depends on its batchmates.
const BATCH_TOLERANCE: f32 = 1e-3;

/// A model's loss before training, against the loss of a uniform guess.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InitialLoss {
    /// Mean cross-entropy per target token (no label smoothing), nats.
    pub loss: f64,
    /// `ln V`: the cross-entropy of a uniform distribution over the target
    /// vocabulary of `V` tokens.
    pub ln_v: f64,
    /// Pass within 1.25× of `ln V` either way, a warning within 1.56×, else
    /// fail: a model that starts far above it is sure of wrong tokens
    /// (weights initialised too large), far below it it sees what it
    /// should predict (a mask that lets the answer in).
    pub verdict: Verdict,
}

/// The loss of `model`, as initialised, on `batches`.
///
/// A freshly initialised model should be unsure of every token: logits
/// near zero give `p ≈ 1/V` and a cross-entropy of `-ln(1/V) = ln V`.
///
/// ```
/// use lingo_data::{Batch, Example};
/// use lingo_nn::{Seq2Seq, Seq2SeqConfig};
/// use rand::SeedableRng;
/// let model = Seq2Seq::new(Seq2SeqConfig::new(40, 40), &mut rand::rngs::StdRng::seed_from_u64(0))?;
/// let batch = Batch::from_examples(&[Example { src: vec![2, 5, 6, 3], tgt: vec![2, 7, 8, 3] }])?;
/// let init = lingo_lessons::diagnose::initial_loss(&model, &[batch])?;
/// assert_eq!(init.verdict, lingo_lessons::diagnose::Verdict::Pass);
/// assert!((init.loss - 40f64.ln()).abs() < 0.5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn initial_loss<M: EncoderDecoder>(model: &M, batches: &[Batch]) -> Result<InitialLoss> {
    let loss = f64::from(evaluate(model, batches, 0.0)?);
    let ln_v = (model.config().vocab_sizes().1 as f64).ln();
    let ratio = (loss / ln_v).max(ln_v / loss);
    let verdict = match ratio {
        r if r <= INIT_FACTOR => Verdict::Pass,
        r if r <= INIT_FACTOR * INIT_FACTOR => Verdict::Warn,
        _ => Verdict::Fail,
    };
    Ok(InitialLoss { loss, ln_v, verdict })
}

impl InitialLoss {
    /// The check's line.
    ///
    /// ```
    /// let init = lingo_lessons::diagnose::InitialLoss { loss: 4.7, ln_v: 4.6, verdict: lingo_lessons::diagnose::Verdict::Pass };
    /// assert_eq!(init.line(), "loss 4.700 at initialisation against ln V = 4.600 (1.02×)");
    /// ```
    pub fn line(&self) -> String {
        format!(
            "loss {:.3} at initialisation against ln V = {:.3} ({:.2}×)",
            self.loss,
            self.ln_v,
            self.loss / self.ln_v
        )
    }
}

/// What is wrong with one parameter's gradient.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GradientFlag {
    /// NaN or infinite somewhere.
    NotFinite,
    /// A norm above 1,000.
    Exploding,
    /// A norm below a millionth of the median parameter's.
    Vanishing,
    /// No gradient at all: frozen, or not on the loss's path.
    NoGradient,
    /// Trained, yet every value is still its initial one.
    NeverUpdated,
}

impl std::fmt::Display for GradientFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self {
            GradientFlag::NotFinite => "not finite",
            GradientFlag::Exploding => "exploding",
            GradientFlag::Vanishing => "vanishing",
            GradientFlag::NoGradient => "no gradient",
            GradientFlag::NeverUpdated => "never updated",
        };
        f.pad(text)
    }
}

/// One parameter's gradient over the batches.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamGradient {
    /// The parameter's name (`decoder.rnn.weight_hh_l0`).
    pub name: String,
    /// Its number of values.
    pub numel: usize,
    /// The mean over batches of the gradient's norm `‖∂L/∂w‖₂`.
    pub grad_norm: f64,
    /// The weights' norm `‖w‖₂`.
    pub weight_norm: f64,
    /// The share of values still equal to their initial ones, when the
    /// initial model is known.
    pub unchanged: Option<f64>,
    /// What is wrong, if anything.
    pub flag: Option<GradientFlag>,
}

/// Every parameter's gradient, as training computes it (dropout on, no
/// label smoothing), over a few batches.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GradientReport {
    /// Batches the norms are the mean over.
    pub batches: usize,
    /// The mean over batches of the whole gradient's norm.
    pub total_norm: f64,
    /// Each parameter, in the model's order.
    pub params: Vec<ParamGradient>,
    /// Fail when any parameter is flagged.
    pub verdict: Verdict,
}

/// The gradients of `model` on `batches`, each parameter's norm against
/// the others', and, with `initial` (the same model as initialised), which
/// parameters training never moved. Dropout draws from `seed`.
///
/// ```
/// use lingo_data::{Batch, Example};
/// use lingo_nn::{Seq2Seq, Seq2SeqConfig};
/// use rand::SeedableRng;
/// let model = Seq2Seq::new(Seq2SeqConfig::new(12, 12), &mut rand::rngs::StdRng::seed_from_u64(0))?;
/// let batch = Batch::from_examples(&[Example { src: vec![2, 5, 6, 3], tgt: vec![2, 7, 8, 3] }])?;
/// let report = lingo_lessons::diagnose::gradient_report(&model, None, &[batch], 0)?;
/// assert!(report.params.iter().all(|p| p.flag.is_none() && p.grad_norm > 0.0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn gradient_report<M: EncoderDecoder>(
    model: &M,
    initial: Option<&M>,
    batches: &[Batch],
    seed: u64,
) -> Result<GradientReport> {
    let config = TrainConfig { label_smoothing: 0.0, shards: 1, ..TrainConfig::new(1, 1e-3) };
    let mut rng = StdRng::seed_from_u64(seed);
    let params = model.params();
    let (mut sums, mut seen, mut total) = (vec![0.0_f64; params.len()], vec![false; params.len()], 0.0);
    for batch in batches {
        let (_, grads) = batch_gradients(model, batch, &config, &mut rng)?;
        let mut squares = 0.0;
        for (i, param) in params.iter().enumerate() {
            if let Some(g) = grads.get(param.tensor()) {
                let norm = norm(g.iter());
                sums[i] += norm;
                squares += norm * norm;
                seen[i] = true;
            }
        }
        total += squares.sqrt();
    }
    let count = batches.len().max(1) as f64;
    let initial: HashMap<&str, Vec<f32>> =
        initial.map(|m| m.params().into_iter().map(|p| (p.name(), p.tensor().to_vec())).collect()).unwrap_or_default();
    let mut norms: Vec<f64> = sums.iter().map(|s| s / count).filter(|n| *n > 0.0).collect();
    norms.sort_by(f64::total_cmp);
    let median = norms.get(norms.len() / 2).copied().unwrap_or(0.0);
    let params: Vec<ParamGradient> = params
        .iter()
        .enumerate()
        .map(|(i, param)| {
            let values = param.tensor().to_vec();
            let unchanged = initial.get(param.name()).map(|init| {
                let same = init.iter().zip(&values).filter(|(a, b)| a.to_bits() == b.to_bits()).count();
                same as f64 / values.len().max(1) as f64
            });
            let grad_norm = sums[i] / count;
            let flag = match () {
                _ if !grad_norm.is_finite() => Some(GradientFlag::NotFinite),
                _ if grad_norm > EXPLODING => Some(GradientFlag::Exploding),
                _ if !seen[i] || grad_norm == 0.0 => Some(GradientFlag::NoGradient),
                _ if unchanged == Some(1.0) => Some(GradientFlag::NeverUpdated),
                _ if grad_norm < VANISHING * median => Some(GradientFlag::Vanishing),
                _ => None,
            };
            let weight_norm = norm(values.iter());
            ParamGradient {
                name: param.name().to_string(),
                numel: values.len(),
                grad_norm,
                weight_norm,
                unchanged,
                flag,
            }
        })
        .collect();
    let verdict = if params.iter().any(|p| p.flag.is_some()) { Verdict::Fail } else { Verdict::Pass };
    Ok(GradientReport { batches: batches.len(), total_norm: total / count, params, verdict })
}

/// `‖x‖₂`, summed in f64.
fn norm<'a>(values: impl Iterator<Item = &'a f32>) -> f64 {
    values.map(|&v| f64::from(v) * f64::from(v)).sum::<f64>().sqrt()
}

impl GradientReport {
    /// The check's line: what is flagged, or the range of the norms.
    ///
    /// ```
    /// let report = lingo_lessons::diagnose::GradientReport { batches: 4, total_norm: 1.5, params: vec![], verdict: lingo_lessons::diagnose::Verdict::Pass };
    /// assert_eq!(report.line(), "0 parameters over 4 batches, total norm 1.500: none flagged");
    /// ```
    pub fn line(&self) -> String {
        let head = format!(
            "{} parameters over {} batches, total norm {:.3}",
            self.params.len(),
            self.batches,
            self.total_norm
        );
        let flagged: Vec<String> =
            self.params.iter().filter_map(|p| p.flag.map(|flag| format!("{} {flag}", p.name))).collect();
        match flagged.len() {
            0 => format!("{head}: none flagged"),
            n if n <= 3 => format!("{head}: {}", flagged.join(", ")),
            n => format!("{head}: {n} flagged, {} and more", flagged[..3].join(", ")),
        }
    }
}

/// Whether evaluating the model is a function of its input alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalMode {
    /// Batches evaluated twice.
    pub batches: usize,
    /// Of them, those whose two losses differ in any bit.
    pub repeats_differing: usize,
    /// The largest difference between a batch's two losses.
    pub max_repeat_difference: f64,
    /// Sentences translated greedily alone and within their batch.
    pub sentences: usize,
    /// Of them, those whose tokens differ between the two.
    pub batched_tokens_differing: usize,
    /// The largest difference in a translation's log-probability between
    /// the two (where the tokens agree).
    pub max_batched_difference: f32,
    /// Fail when a repeat differs (dropout, or anything random, left on
    /// at evaluation) or when a sentence's translation depends on its
    /// batchmates beyond rounding (padding that is read).
    pub verdict: Verdict,
}

/// Evaluates each of `batches` twice with `loss` (the evaluation under
/// test: for a lingo model `model.loss(batch, 0.0, Mode::Eval)`), and
/// translates the first batch's sentences alone and together.
///
/// ```
/// use lingo_data::{Batch, Example};
/// use lingo_nn::{EncoderDecoder, Mode, Seq2Seq, Seq2SeqConfig};
/// use rand::SeedableRng;
/// let config = Seq2SeqConfig { dropout: 0.3, ..Seq2SeqConfig::new(12, 12) };
/// let model = Seq2Seq::new(config, &mut rand::rngs::StdRng::seed_from_u64(0))?;
/// let examples = vec![Example { src: vec![2, 5, 6, 3], tgt: vec![2, 7, 8, 3] }, Example { src: vec![2, 9, 3], tgt: vec![2, 4, 3] }];
/// let batches = [Batch::from_examples(&examples)?];
/// let eval = |b: &Batch| Ok(model.loss(b, 0.0, Mode::Eval)?.item()?);
/// assert_eq!(lingo_lessons::diagnose::eval_mode(&model, &batches, eval)?.verdict, lingo_lessons::diagnose::Verdict::Pass);
/// let mut rng = rand::rngs::StdRng::seed_from_u64(1);
/// let left_training = |b: &Batch| Ok(model.loss(b, 0.0, Mode::Train(&mut rng))?.item()?);
/// assert_eq!(lingo_lessons::diagnose::eval_mode(&model, &batches, left_training)?.repeats_differing, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn eval_mode<M: EncoderDecoder>(
    model: &M,
    batches: &[Batch],
    mut loss: impl FnMut(&Batch) -> lingo_nn::Result<f32>,
) -> Result<EvalMode> {
    let (mut repeats_differing, mut max_repeat_difference) = (0, 0.0_f64);
    for batch in batches {
        let (first, second) = (loss(batch)?, loss(batch)?);
        repeats_differing += usize::from(first.to_bits() != second.to_bits());
        max_repeat_difference = max_repeat_difference.max(f64::from((first - second).abs()));
    }
    let (sentences, batched_tokens_differing, max_batched_difference) = match batches.first() {
        Some(batch) => batch_invariance(model, batch)?,
        None => (0, 0, 0.0),
    };
    let verdict = if repeats_differing > 0 || batched_tokens_differing > 0 || max_batched_difference > BATCH_TOLERANCE {
        Verdict::Fail
    } else {
        Verdict::Pass
    };
    Ok(EvalMode {
        batches: batches.len(),
        repeats_differing,
        max_repeat_difference,
        sentences,
        batched_tokens_differing,
        max_batched_difference,
        verdict,
    })
}

/// Greedy translations of `batch`'s sentences together and one by one:
/// how many differ in tokens, and the largest log-probability difference
/// among those that agree.
fn batch_invariance<M: EncoderDecoder>(model: &M, batch: &Batch) -> Result<(usize, usize, f32)> {
    let max_len = 2 * batch.src.ncols() + 10;
    let together = greedy_decode(model, &batch.src, &batch.src_lens, max_len, false)?;
    let (mut differing, mut largest) = (0, 0.0_f32);
    for (row, hyp) in together.iter().enumerate() {
        let len = batch.src_lens[row];
        let src = batch.src.slice(ndarray::s![row..row + 1, ..len]).to_owned();
        let alone = greedy_decode(model, &src, &[len], max_len, false)?.remove(0);
        if alone.tokens != hyp.tokens {
            differing += 1;
        } else {
            largest = largest.max((alone.log_prob - hyp.log_prob).abs());
        }
    }
    Ok((together.len(), differing, largest))
}

impl EvalMode {
    /// The check's line.
    ///
    /// ```
    /// let check = lingo_lessons::diagnose::EvalMode { batches: 4, repeats_differing: 0, max_repeat_difference: 0.0, sentences: 32, batched_tokens_differing: 0, max_batched_difference: 2e-6, verdict: lingo_lessons::diagnose::Verdict::Pass };
    /// assert_eq!(check.line(), "4 batches evaluated twice: 0 differ (largest difference 0.0e0); 32 sentences alone and batched: 0 translate differently, log-probabilities within 2.0e-6");
    /// ```
    pub fn line(&self) -> String {
        format!(
            "{} batches evaluated twice: {} differ (largest difference {:.1e}); {} sentences alone and batched: {} translate differently, log-probabilities within {:.1e}",
            self.batches,
            self.repeats_differing,
            self.max_repeat_difference,
            self.sentences,
            self.batched_tokens_differing,
            self.max_batched_difference
        )
    }
}

/// The first `count` examples in batches of `batch_size`, as given.
pub(super) fn batches_of(examples: &[Example], count: usize, batch_size: usize) -> Result<Vec<Batch>> {
    let examples = &examples[..count.min(examples.len())];
    Ok(examples.chunks(batch_size.max(1)).map(Batch::from_examples).collect::<lingo_data::Result<Vec<_>>>()?)
}
