//! Measurements of a trained model that several lessons share: alignment
//! accuracy and attention entropy under teacher forcing, sequence accuracy
//! under greedy decoding.

use lingo_data::{AlignedExample, AlignmentAccuracy, AlignmentScore, Batch, PAD, SeqPair, mean_attention_entropy};
use lingo_nn::{EncoderDecoder, SaliencyComparison, greedy_decode};
use ndarray::{Array2, ArrayView3, ArrayView5, Axis, s};
use serde::Serialize;

use crate::error::Result;

/// Examples decoded or scored per batch: large enough to keep the kernels
/// busy, small enough that padding to the longest example costs little.
pub(crate) const CHUNK: usize = 512;

/// Share of output tokens whose attention peak sits on a gold source
/// position, with its chance level; `None` without attention.
///
/// ```
/// use lingo_data::{LexiconReverse, Task};
/// use lingo_nn::{Seq2Seq, Seq2SeqConfig};
/// use rand::SeedableRng;
/// let task = LexiconReverse::default();
/// let probe = task.generate(8, &mut rand::rngs::StdRng::seed_from_u64(0));
/// let config = Seq2SeqConfig { attention: Some(lingo_attention::Scorer::Dot), ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len()) };
/// let model = Seq2Seq::new(config, &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
/// let score = lingo_lessons::measure::alignment_accuracy(&model, &probe).unwrap().unwrap();
/// assert!((0.0..=1.0).contains(&score.accuracy));
/// ```
pub fn alignment_accuracy<M: EncoderDecoder>(model: &M, probe: &[AlignedExample]) -> Result<Option<AlignmentScore>> {
    let mut acc = AlignmentAccuracy::new();
    for chunk in probe.chunks(CHUNK) {
        let batch = Batch::from_examples(chunk)?;
        let Some(weights) = model.attention(&batch)? else { return Ok(None) };
        score_batch(&mut acc, weights.view(), chunk, &batch)?;
    }
    Ok(Some(acc.score()))
}

/// Adds every example of `chunk` to `acc`: its rows of `weights (batch,
/// tgt_len, src_len)` against its gold alignment.
fn score_batch(
    acc: &mut AlignmentAccuracy,
    weights: ArrayView3<'_, f32>,
    chunk: &[AlignedExample],
    batch: &Batch,
) -> Result<()> {
    for (b, ex) in chunk.iter().enumerate() {
        acc.add(weights.index_axis(Axis(0), b), &ex.gold, batch.src_lens[b])?;
    }
    Ok(())
}

/// Alignment accuracy and mean attention entropy of every head, `[layer][head]`:
/// the Transformer's cross-attention heads, a `multi_head` scorer's heads,
/// or a single-head model's one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeadScores {
    /// Share of output tokens whose head's peak is on a gold source position.
    pub accuracy: Vec<Vec<f64>>,
    /// Mean entropy (nats) of the head's rows over the valid part of every example.
    pub entropy: Vec<Vec<f64>>,
}

impl HeadScores {
    /// Whether there is more than one head to compare.
    ///
    /// ```
    /// let one = lingo_lessons::measure::HeadScores { accuracy: vec![vec![0.9]], entropy: vec![vec![0.1]] };
    /// assert!(!one.several());
    /// ```
    pub fn several(&self) -> bool {
        self.accuracy.iter().map(Vec::len).sum::<usize>() > 1
    }

    /// The best-aligned head, named `layer L head H` (1-based), and its
    /// accuracy; ties go to the earlier head.
    ///
    /// ```
    /// let heads = lingo_lessons::measure::HeadScores { accuracy: vec![vec![0.2, 0.9], vec![0.9, 0.1]], entropy: vec![vec![0.0; 2]; 2] };
    /// assert_eq!(heads.best(), ("layer 1 head 2".to_string(), 0.9));
    /// ```
    pub fn best(&self) -> (String, f64) {
        let cells = self
            .accuracy
            .iter()
            .enumerate()
            .flat_map(|(l, row)| row.iter().enumerate().map(move |(h, &a)| ((l, h), a)));
        let ((l, h), accuracy) = cells
            .fold(None, |best: Option<((usize, usize), f64)>, (at, a)| match best {
                Some((_, b)) if b >= a => best,
                _ => Some((at, a)),
            })
            .expect("a model with attention has at least one head");
        (format!("layer {} head {}", l + 1, h + 1), accuracy)
    }
}

/// The heads and the saliency comparison of one model, as the lessons'
/// JSON lines spell them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttentionSummary {
    /// Every head's alignment accuracy, `[layer][head]`; `None` without attention.
    pub head_alignment: Option<Vec<Vec<f64>>>,
    /// Every head's mean entropy (nats), `[layer][head]`.
    pub head_entropy: Option<Vec<Vec<f64>>>,
    /// The best-aligned head's name.
    pub best_head: Option<String>,
    /// Saliency's alignment accuracy.
    pub saliency_alignment: f64,
    /// Share of rows where attention and saliency peak alike.
    pub saliency_peak_agreement: Option<f64>,
    /// Mean Spearman correlation of attention and saliency rows.
    pub saliency_rank_correlation: Option<f64>,
}

impl AttentionSummary {
    /// The summary of `heads` and `saliency`.
    ///
    /// ```
    /// use lingo_lessons::measure::{AttentionSummary, HeadScores};
    /// let heads = HeadScores { accuracy: vec![vec![0.5, 0.75]], entropy: vec![vec![1.0, 0.5]] };
    /// let saliency = lingo_nn::SaliencyComparison {
    ///     saliency_alignment: lingo_data::AlignmentScore { accuracy: 0.5, chance: 0.2, hits: 1, scored: 2 },
    ///     attention_alignment: None,
    ///     agreement: None,
    /// };
    /// let summary = AttentionSummary::new(Some(&heads), &saliency);
    /// assert_eq!(summary.best_head.as_deref(), Some("layer 1 head 2"));
    /// ```
    pub fn new(heads: Option<&HeadScores>, saliency: &SaliencyComparison) -> AttentionSummary {
        AttentionSummary {
            head_alignment: heads.map(|h| h.accuracy.clone()),
            head_entropy: heads.map(|h| h.entropy.clone()),
            best_head: heads.map(|h| h.best().0),
            saliency_alignment: saliency.saliency_alignment.accuracy,
            saliency_peak_agreement: saliency.agreement.map(|a| a.peak_agreement),
            saliency_rank_correlation: saliency.agreement.map(|a| a.mean_rank_correlation),
        }
    }
}

/// [`HeadScores`] of `model` on `probe` under teacher forcing, each head
/// scored as [`alignment_accuracy`] scores a model; `None` without attention.
///
/// ```
/// use lingo_data::{LexiconReverse, Task};
/// use lingo_nn::{Seq2Seq, Seq2SeqConfig};
/// use rand::SeedableRng;
/// let task = LexiconReverse::default();
/// let probe = task.generate(8, &mut rand::rngs::StdRng::seed_from_u64(0));
/// let config = Seq2SeqConfig { attention: Some("multi_head:2".parse().unwrap()), ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len()) };
/// let model = Seq2Seq::new(config, &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
/// let heads = lingo_lessons::measure::head_scores(&model, &probe).unwrap().unwrap();
/// assert_eq!(heads.accuracy[0].len(), 2);
/// ```
pub fn head_scores<M: EncoderDecoder>(model: &M, probe: &[AlignedExample]) -> Result<Option<HeadScores>> {
    let mut heads = PerHead::default();
    for chunk in probe.chunks(CHUNK) {
        let batch = Batch::from_examples(chunk)?;
        let Some(weights) = model.head_attention(&batch)? else { return Ok(None) };
        heads.add(weights.view(), chunk, &batch)?;
    }
    Ok(heads.scores())
}

/// Every head's alignment accuracy and entropy, summed over chunks.
#[derive(Default)]
struct PerHead {
    /// One accuracy per head, and the entropy summed over rows, `(layers, heads)`.
    acc: Vec<AlignmentAccuracy>,
    entropy: Array2<f64>,
    rows: usize,
}

impl PerHead {
    /// Adds `chunk`'s heads, `weights (layers, heads, batch, tgt_len, src_len)`.
    fn add(&mut self, weights: ArrayView5<'_, f32>, chunk: &[AlignedExample], batch: &Batch) -> Result<()> {
        let (layers, heads) = (weights.shape()[0], weights.shape()[1]);
        if self.acc.is_empty() {
            self.acc = (0..layers * heads).map(|_| AlignmentAccuracy::new()).collect();
            self.entropy = Array2::zeros((layers, heads));
        }
        for (i, acc) in self.acc.iter_mut().enumerate() {
            let head = weights.slice(s![i / heads, i % heads, .., .., ..]); // (batch, tgt_len, src_len)
            score_batch(acc, head, chunk, batch)?;
            self.entropy[[i / heads, i % heads]] += entropy_sum(head, batch);
        }
        self.rows += batch.tgt_lens.iter().sum::<usize>();
        Ok(())
    }

    /// The scores; `None` without examples.
    fn scores(self) -> Option<HeadScores> {
        if self.acc.is_empty() {
            return None;
        }
        let heads = self.entropy.ncols();
        let accuracy: Vec<f64> = self.acc.iter().map(|a| a.score().accuracy).collect();
        let entropy = self.entropy / self.rows.max(1) as f64;
        Some(HeadScores {
            accuracy: accuracy.chunks(heads).map(<[f64]>::to_vec).collect(),
            entropy: entropy.outer_iter().map(|layer| layer.to_vec()).collect(),
        })
    }
}

/// [`alignment_accuracy`], [`mean_entropy`] and [`head_scores`] at once:
/// what a watched epoch reports. A single-head model's one head is its
/// attention, so its weights are computed once, not three times.
pub(crate) fn attention_measures<M: EncoderDecoder>(
    model: &M,
    probe: &[AlignedExample],
) -> Result<Option<(AlignmentScore, f32, HeadScores)>> {
    let (mut acc, mut heads) = (AlignmentAccuracy::new(), PerHead::default());
    let (mut sum, mut rows) = (0.0_f64, 0_usize);
    for chunk in probe.chunks(CHUNK) {
        let batch = Batch::from_examples(chunk)?;
        let Some(every) = model.head_attention(&batch)? else { return Ok(None) };
        heads.add(every.view(), chunk, &batch)?;
        let weights = match every.shape()[..2] {
            [1, 1] => every.index_axis_move(Axis(0), 0).index_axis_move(Axis(0), 0),
            _ => model.attention(&batch)?.expect("a model with heads attends"),
        };
        score_batch(&mut acc, weights.view(), chunk, &batch)?;
        sum += entropy_sum(weights.view(), &batch);
        rows += batch.tgt_lens.iter().sum::<usize>();
    }
    Ok(heads.scores().map(|h| (acc.score(), (sum / rows.max(1) as f64) as f32, h)))
}

/// Mean entropy (nats) of the attention rows over the valid part of every
/// example: `ln(src_len)` for uniform attention, 0 for one-hot. `None`
/// without attention.
///
/// ```
/// use lingo_data::{LexiconReverse, Task};
/// use lingo_nn::{Seq2Seq, Seq2SeqConfig};
/// use rand::SeedableRng;
/// let task = LexiconReverse::default();
/// let val = task.generate(8, &mut rand::rngs::StdRng::seed_from_u64(0));
/// let plain = Seq2Seq::new(Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len()), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
/// assert_eq!(lingo_lessons::measure::mean_entropy(&plain, &val).unwrap(), None);
/// ```
pub fn mean_entropy<M: EncoderDecoder, E: SeqPair>(model: &M, probe: &[E]) -> Result<Option<f32>> {
    let (mut sum, mut rows) = (0.0_f64, 0_usize);
    for chunk in probe.chunks(CHUNK) {
        let batch = Batch::from_examples(chunk)?;
        let Some(weights) = model.attention(&batch)? else { return Ok(None) };
        sum += entropy_sum(weights.view(), &batch);
        rows += batch.tgt_lens.iter().sum::<usize>();
    }
    Ok(Some((sum / rows.max(1) as f64) as f32))
}

/// The entropy of every valid row of `weights (batch, tgt_len, src_len)`, summed.
fn entropy_sum(weights: ArrayView3<'_, f32>, batch: &Batch) -> f64 {
    (0..batch.src_lens.len())
        .map(|b| {
            let (t, s_len) = (batch.tgt_lens[b], batch.src_lens[b]);
            f64::from(mean_attention_entropy(weights.slice(s![b, ..t, ..s_len]))) * t as f64
        })
        .sum()
}

/// Share of examples whose greedy output (up to and including `<eos>`)
/// equals the target exactly.
///
/// ```
/// use lingo_data::{DigitOp, DigitTask, Task};
/// use lingo_nn::{Seq2Seq, Seq2SeqConfig};
/// use rand::SeedableRng;
/// let task = DigitTask::new(DigitOp::Sort, 10, 3, 3).unwrap();
/// let test = task.generate(8, &mut rand::rngs::StdRng::seed_from_u64(0));
/// let untrained = Seq2Seq::new(Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len()), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
/// assert!(lingo_lessons::measure::sequence_accuracy(&untrained, &test).unwrap() < 0.5);
/// ```
pub fn sequence_accuracy<M: EncoderDecoder, E: SeqPair>(model: &M, examples: &[E]) -> Result<f64> {
    let mut total = lingo_data::Accuracy::default();
    for chunk in examples.chunks(CHUNK) {
        let batch = Batch::from_examples(chunk)?;
        let (rows, width) = batch.tgt_out.dim();
        let hyps = greedy_decode(model, &batch.src, &batch.src_lens, width, false)?;
        // Predictions padded to the target's width; a short output fails at
        // the first gold position it lacks, a long one at the gold `<eos>`.
        let predictions = Array2::from_shape_fn((rows, width), |(b, t)| hyps[b].tokens.get(t).copied().unwrap_or(PAD));
        total.merge(lingo_data::sequence_accuracy(
            predictions.view(),
            batch.tgt_out.view(),
            batch.tgt_pad_mask.view(),
        )?);
    }
    Ok(total.value())
}

#[cfg(test)]
mod tests {
    use lingo_data::{LexiconReverse, Task};
    use lingo_nn::{AnyModel, Seq2SeqConfig};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    #[test]
    fn the_measures_at_once_are_the_three_measures_bit_for_bit() {
        let task = LexiconReverse::default();
        let probe = task.generate(40, &mut StdRng::seed_from_u64(1));
        let (src, tgt) = (task.src_vocab().len(), task.tgt_vocab().len());
        for name in ["dot", "additive", "multi_head:2", "transformer", "none"] {
            let choice: crate::ModelChoice = name.parse().unwrap();
            let config: lingo_nn::AnyConfig = match choice {
                crate::ModelChoice::Recurrent(a) => {
                    Seq2SeqConfig { attention: a.0, ..Seq2SeqConfig::new(src, tgt) }.into()
                }
                crate::ModelChoice::Transformer => crate::models::transformer(src, tgt, 32, Default::default()).into(),
            };
            let model = AnyModel::new(config, &mut StdRng::seed_from_u64(2)).unwrap();
            let together = attention_measures(&model, &probe).unwrap();
            let apart = alignment_accuracy(&model, &probe).unwrap().map(|a| {
                (a, mean_entropy(&model, &probe).unwrap().unwrap(), head_scores(&model, &probe).unwrap().unwrap())
            });
            assert_eq!(together, apart, "{name}");
            assert_eq!(together.is_some(), name != "none");
        }
    }
}
