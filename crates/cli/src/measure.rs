//! Measurements of a trained model that several commands share: alignment
//! accuracy and attention entropy under teacher forcing, sequence accuracy
//! under greedy decoding.

use lingo::data::{AlignedExample, AlignmentAccuracy, AlignmentScore, Batch, PAD, SeqPair, mean_attention_entropy};
use lingo::nn::{EncoderDecoder, Mode, Transformer, greedy_decode};
use lingo::tensor::no_grad;
use ndarray::{Array2, ArrayView3, Axis, s};

use crate::error::Result;

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

/// Alignment accuracy of every cross-attention head of a Transformer,
/// `(layers, heads)`: each head's teacher-forced weights scored as
/// [`alignment_accuracy`] scores a model's.
pub(crate) fn head_alignment(model: &Transformer, probe: &[AlignedExample]) -> Result<Array2<f64>> {
    let config = model.config();
    let (layers, heads) = (config.decoder_layers, config.heads);
    let mut acc: Vec<AlignmentAccuracy> = (0..layers * heads).map(|_| AlignmentAccuracy::new()).collect();
    for chunk in probe.chunks(CHUNK) {
        let batch = Batch::from_examples(chunk)?;
        let out = no_grad(|| model.forward(&batch.src, &batch.src_lens, &batch.tgt_in, &batch.tgt_lens, Mode::Eval))?;
        for (i, acc) in acc.iter_mut().enumerate() {
            let head = out.cross_weights.slice(s![i / heads, i % heads, .., .., ..]); // (batch, tgt_len, src_len)
            score_batch(acc, head, chunk, &batch)?;
        }
    }
    Ok(Array2::from_shape_vec((layers, heads), acc.iter().map(|a| a.score().accuracy).collect())
        .expect("one score per head"))
}

/// Mean entropy (nats) of the attention rows over the valid part of every
/// example: `ln(src_len)` for uniform attention, 0 for one-hot. `None`
/// without attention.
pub(crate) fn mean_entropy<M: EncoderDecoder, E: SeqPair>(model: &M, probe: &[E]) -> Result<Option<f32>> {
    let (mut sum, mut rows) = (0.0_f64, 0_usize);
    for chunk in probe.chunks(CHUNK) {
        let batch = Batch::from_examples(chunk)?;
        let Some(weights) = model.attention(&batch)? else { return Ok(None) };
        for b in 0..chunk.len() {
            let (t, s_len) = (batch.tgt_lens[b], batch.src_lens[b]);
            sum += f64::from(mean_attention_entropy(weights.slice(s![b, ..t, ..s_len]))) * t as f64;
            rows += t;
        }
    }
    Ok(Some((sum / rows.max(1) as f64) as f32))
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
