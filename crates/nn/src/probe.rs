//! Probes: how much a trained model loses when its attention is taken away
//! or replaced after training (`lingo probe`).
//!
//! [`probe`] evaluates a model as it is ([`Probe::Unchanged`]) or with its
//! attention weights replaced at every decoder step by one of
//! [`lingo_attention::intervene`]'s interventions, and reports the same four
//! numbers for each, so that the rows of a table compare:
//!
//! | measure | how |
//! |---|---|
//! | `loss` | mean teacher-forced cross-entropy over batches, as training's validation loss ([`evaluate`]) |
//! | `token_accuracy` | share of target positions (`<eos>` included) the greedy output gets right, position by position |
//! | `sequence_accuracy` | share of examples whose greedy output equals the target exactly |
//! | `bleu` | corpus BLEU of the greedy outputs against the targets, over target tokens |
//!
//! The gold intervention needs each example's gold alignment (a task's
//! [`lingo_data::AlignedExample::gold`]); without it that probe is not run.

use std::fmt;

use lingo_attention::{GoldLinks, Intervention};
use lingo_data::{Batch, PAD, SeqPair, corpus_bleu};
use ndarray::Array2;
use rayon::prelude::*;

use crate::decode::{ROWS_PER_GROUP, greedy_decode};
use crate::error::Result;
use crate::model::EncoderDecoder;
use crate::train::evaluate;

/// How a probe runs the model: as trained, or with its attention replaced.
///
/// ```
/// use lingo_nn::Probe;
/// assert_eq!(Probe::ALL.len(), 6);
/// assert_eq!("one_hot".parse::<Probe>().unwrap(), Probe::OneHot);
/// assert_eq!(Probe::Gold.to_string(), "gold");
/// assert!("sideways".parse::<Probe>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Probe {
    /// The model as trained.
    Unchanged,
    /// Uniform weights over the real source positions.
    Uniform,
    /// The model's weights shuffled among the real positions (seed 0).
    Shuffled,
    /// All weight on each row's peak.
    OneHot,
    /// Uniform weights over the gold positions.
    Gold,
    /// A context of zeros.
    ZeroContext,
}

impl Probe {
    /// Every probe, in the order tables list them.
    pub const ALL: [Probe; 6] =
        [Probe::Unchanged, Probe::Uniform, Probe::Shuffled, Probe::OneHot, Probe::Gold, Probe::ZeroContext];

    /// The intervention this probe applies (`None`: the model as trained),
    /// for examples whose gold links `gold` gives (called for
    /// [`Probe::Gold`] only).
    ///
    /// ```
    /// use lingo_attention::{GoldLinks, Intervention};
    /// use lingo_nn::Probe;
    /// assert_eq!(Probe::Uniform.intervention(|| unreachable!()), Some(Intervention::Uniform));
    /// assert!(Probe::Unchanged.intervention(|| unreachable!()).is_none());
    /// let gold = Probe::Gold.intervention(|| GoldLinks::new(vec![vec![vec![1]]]));
    /// assert!(matches!(gold, Some(Intervention::Gold(_))));
    /// ```
    pub fn intervention(self, gold: impl FnOnce() -> GoldLinks) -> Option<Intervention> {
        match self {
            Probe::Unchanged => None,
            Probe::Uniform => Some(Intervention::Uniform),
            Probe::Shuffled => Some(Intervention::Shuffled { seed: 0 }),
            Probe::OneHot => Some(Intervention::OneHot),
            Probe::Gold => Some(Intervention::Gold(gold())),
            Probe::ZeroContext => Some(Intervention::ZeroContext),
        }
    }
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Probe::Unchanged => "unchanged",
            Probe::Uniform => "uniform",
            Probe::Shuffled => "shuffled",
            Probe::OneHot => "one_hot",
            Probe::Gold => "gold",
            Probe::ZeroContext => "zero_context",
        })
    }
}

/// A probe is written as its name (`one_hot`).
impl serde::Serialize for Probe {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::str::FromStr for Probe {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Probe, String> {
        Probe::ALL.into_iter().find(|p| p.to_string() == s).ok_or_else(|| {
            let names: Vec<String> = Probe::ALL.iter().map(Probe::to_string).collect();
            format!("unknown probe {s:?}: the probes are {}", names.join(", "))
        })
    }
}

/// What one probe measured; see the [module docs](self).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ProbeScore {
    /// Mean teacher-forced cross-entropy (nats per token, averaged over batches).
    pub loss: f64,
    /// Share of target positions the greedy output gets right.
    pub token_accuracy: f64,
    /// Share of examples decoded exactly.
    pub sequence_accuracy: f64,
    /// Corpus BLEU (0–100) of the greedy outputs against the targets.
    pub bleu: f64,
}

/// Evaluates `model` on `examples` under probe `which` (see the [module
/// docs](self)); greedy outputs run to the target's length plus one. Chunks
/// of [`ROWS_PER_GROUP`] examples run in parallel and are summed in order,
/// so the result does not depend on the thread count.
///
/// ```
/// use lingo_data::{DigitOp, DigitTask, Task};
/// use lingo_nn::{Probe, Seq2Seq, Seq2SeqConfig, probe};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let task = DigitTask::new(DigitOp::Reverse, 5, 3, 3).unwrap();
/// let examples = task.generate(8, &mut rng);
/// let config = Seq2SeqConfig { attention: Some("dot".parse().unwrap()), ..Seq2SeqConfig::new(9, 9) };
/// let model = Seq2Seq::new(config, &mut rng).unwrap();
/// let own = probe(&model, &examples, Probe::Unchanged).unwrap();
/// let gold = probe(&model, &examples, Probe::Gold).unwrap();
/// assert!(own.loss > 0.0 && gold.loss > 0.0 && own.loss != gold.loss);
/// ```
pub fn probe<M: EncoderDecoder, E: SeqPair + Sync>(model: &M, examples: &[E], which: Probe) -> Result<ProbeScore> {
    let chunks: Vec<&[E]> = examples.chunks(ROWS_PER_GROUP).collect();
    let parts = chunks
        .par_iter()
        .map(|chunk| {
            let gold = || GoldLinks::new(chunk.iter().map(|ex| ex.gold().unwrap_or_default().to_vec()).collect());
            let model = model.intervene(which.intervention(gold));
            let batch = Batch::from_examples(chunk)?;
            let loss = f64::from(evaluate(&model, std::slice::from_ref(&batch), 0.0)?);
            let (rows, width) = batch.tgt_out.dim();
            let hyps = greedy_decode(&model, &batch.src, &batch.src_lens, width, false)?;
            // Predictions padded to the target's width: a short output misses
            // the positions it lacks, a long one the gold `<eos>`.
            let predictions =
                Array2::from_shape_fn((rows, width), |(b, t)| hyps[b].tokens.get(t).copied().unwrap_or(PAD));
            let (pred, gold, pad) = (predictions.view(), batch.tgt_out.view(), batch.tgt_pad_mask.view());
            let words = |ids: &[usize]| {
                ids.iter().take_while(|&&id| id != lingo_data::EOS).map(usize::to_string).collect::<Vec<_>>().join(" ")
            };
            let hyps: Vec<String> = hyps.iter().map(|h| words(&h.tokens)).collect();
            let refs: Vec<String> = chunk.iter().map(|ex| words(&ex.tgt()[1..])).collect();
            Ok((
                loss,
                lingo_data::token_accuracy(pred, gold, pad)?,
                lingo_data::sequence_accuracy(pred, gold, pad)?,
                hyps,
                refs,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let (mut loss, mut tokens, mut sequences) = (0.0, lingo_data::Accuracy::default(), lingo_data::Accuracy::default());
    let (mut hyps, mut refs) = (Vec::new(), Vec::new());
    for (l, t, s, h, r) in parts {
        loss += l;
        tokens.merge(t);
        sequences.merge(s);
        hyps.extend(h);
        refs.extend(r);
    }
    Ok(ProbeScore {
        loss: loss / chunks.len().max(1) as f64,
        token_accuracy: tokens.value(),
        sequence_accuracy: sequences.value(),
        bleu: corpus_bleu(&hyps, &refs)?.score,
    })
}
