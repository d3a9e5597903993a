//! Measurements of a trained model that several commands share: alignment
//! accuracy and attention entropy under teacher forcing, sequence accuracy
//! under greedy decoding.

use lingo::data::{AlignedExample, AlignmentAccuracy, AlignmentScore, Batch, PAD, SeqPair, mean_attention_entropy};
use lingo::nn::{EncoderDecoder, greedy_decode};
use ndarray::{Array2, ArrayView3, Axis, s};

use crate::error::Result;
use crate::report::Table;

/// Examples decoded or scored per batch: large enough to keep the kernels
/// busy, small enough that padding to the longest example costs little.
const CHUNK: usize = 512;

/// Share of output tokens whose attention peak sits on a gold source
/// position, with its chance level; `None` without attention.
pub(crate) fn alignment_accuracy<M: EncoderDecoder>(
    model: &M,
    probe: &[AlignedExample],
) -> Result<Option<AlignmentScore>> {
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

/// Alignment accuracy and mean attention entropy of every head, `(layers,
/// heads)`: the Transformer's cross-attention heads, a `multi_head`
/// scorer's heads, or a single-head model's one.
pub(crate) struct HeadScores {
    /// Share of output tokens whose head's peak is on a gold source position.
    pub accuracy: Array2<f64>,
    /// Mean entropy (nats) of the head's rows over the valid part of every example.
    pub entropy: Array2<f64>,
}

impl HeadScores {
    /// Whether there is more than one head to compare.
    pub fn several(&self) -> bool {
        self.accuracy.len() > 1
    }

    /// The best-aligned head, named `layer L head H` (1-based), and its
    /// accuracy; ties go to the earlier head.
    pub fn best(&self) -> (String, f64) {
        let ((l, h), &accuracy) = self
            .accuracy
            .indexed_iter()
            .fold(None, |best: Option<((usize, usize), &f64)>, (at, a)| match best {
                Some((_, b)) if b >= a => best,
                _ => Some((at, a)),
            })
            .expect("a model with attention has at least one head");
        (format!("layer {} head {}", l + 1, h + 1), accuracy)
    }

    /// Both measures, `accuracy / entropy` in each cell: one row per layer,
    /// one column per head.
    pub fn table(&self) -> Table {
        let mut header = vec![String::new()];
        header.extend((0..self.accuracy.ncols()).map(|h| format!("head {}", h + 1)));
        let mut table = Table::new(&header);
        for (l, (acc, ent)) in self.accuracy.outer_iter().zip(self.entropy.outer_iter()).enumerate() {
            let mut row = vec![format!("layer {}", l + 1)];
            row.extend(acc.iter().zip(&ent).map(|(a, h)| format!("{:.1}% / {h:.2}", 100.0 * a)));
            table.push(row);
        }
        table
    }

    /// The table as text, titled `title`, with the best head named under it.
    pub fn lines(&self, title: &str) -> Vec<String> {
        let (name, accuracy) = self.best();
        vec![
            format!("\n{title}: alignment accuracy / mean entropy (nats) of each head"),
            self.table().text(),
            format!("best: {name} ({:.1}%)", 100.0 * accuracy),
        ]
    }

    /// The JSON fields: `head_alignment` and `head_entropy` as `[layer][head]`, `best_head`.
    pub fn json(&self) -> serde_json::Value {
        let rows = |a: &Array2<f64>| a.outer_iter().map(|l| l.to_vec()).collect::<Vec<_>>();
        serde_json::json!({
            "head_alignment": rows(&self.accuracy),
            "head_entropy": rows(&self.entropy),
            "best_head": self.best().0,
        })
    }
}

/// [`HeadScores`] of `model` on `probe` under teacher forcing, each head
/// scored as [`alignment_accuracy`] scores a model; `None` without attention.
pub(crate) fn head_scores<M: EncoderDecoder>(model: &M, probe: &[AlignedExample]) -> Result<Option<HeadScores>> {
    // One accuracy per head, and the entropy summed over rows, `(layers, heads)`.
    let (mut acc, mut entropy): (Vec<AlignmentAccuracy>, Array2<f64>) = (Vec::new(), Array2::zeros((0, 0)));
    let mut rows = 0_usize;
    for chunk in probe.chunks(CHUNK) {
        let batch = Batch::from_examples(chunk)?;
        let Some(weights) = model.head_attention(&batch)? else { return Ok(None) };
        let (layers, heads) = (weights.shape()[0], weights.shape()[1]);
        if acc.is_empty() {
            acc = (0..layers * heads).map(|_| AlignmentAccuracy::new()).collect();
            entropy = Array2::zeros((layers, heads));
        }
        for (i, acc) in acc.iter_mut().enumerate() {
            let head = weights.slice(s![i / heads, i % heads, .., .., ..]); // (batch, tgt_len, src_len)
            score_batch(acc, head, chunk, &batch)?;
            entropy[[i / heads, i % heads]] += entropy_sum(head, &batch);
        }
        rows += batch.tgt_lens.iter().sum::<usize>();
    }
    if acc.is_empty() {
        return Ok(None); // no examples
    }
    Ok(Some(HeadScores {
        accuracy: Array2::from_shape_vec(entropy.dim(), acc.iter().map(|a| a.score().accuracy).collect())
            .expect("one per head"),
        entropy: entropy / rows.max(1) as f64,
    }))
}

/// Mean entropy (nats) of the attention rows over the valid part of every
/// example: `ln(src_len)` for uniform attention, 0 for one-hot. `None`
/// without attention.
pub(crate) fn mean_entropy<M: EncoderDecoder, E: SeqPair>(model: &M, probe: &[E]) -> Result<Option<f32>> {
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
pub(crate) fn sequence_accuracy<M: EncoderDecoder, E: SeqPair>(model: &M, examples: &[E]) -> Result<f64> {
    let mut total = lingo::data::Accuracy::default();
    for chunk in examples.chunks(CHUNK) {
        let batch = Batch::from_examples(chunk)?;
        let (rows, width) = batch.tgt_out.dim();
        let hyps = greedy_decode(model, &batch.src, &batch.src_lens, width, false)?;
        // Predictions padded to the target's width; a short output fails at
        // the first gold position it lacks, a long one at the gold `<eos>`.
        let predictions = Array2::from_shape_fn((rows, width), |(b, t)| hyps[b].tokens.get(t).copied().unwrap_or(PAD));
        total.merge(lingo::data::sequence_accuracy(
            predictions.view(),
            batch.tgt_out.view(),
            batch.tgt_pad_mask.view(),
        )?);
    }
    Ok(total.value())
}
