//! Gradient × input saliency: how much each source position matters to
//! each output token by the model's own gradients, to set beside where its
//! attention looks.
//!
//! # What is computed
//!
//! For one example under teacher forcing (the gold previous tokens, evaluation mode):
//!
//! ```text
//! e[s, ·]   the embedding of the source token at position s: E[x_s]
//!           (a Transformer scales it by √d and adds the position PE[s] after)
//! L_t       log p(y_t | y_<t, source)                     y_t: the gold target token at t
//! raw[t, s] | Σ_d e[s, d] · ∂L_t/∂e[s, d] |                (gradient_times_input)
//! S[t, s]   raw[t, s] / Σ_{s' < src_len} raw[t, s']        (saliency; 0 at padding)
//! ```
//!
//! `Σ_d e[s, d] · ∂L_t/∂e[s, d]` is the derivative of `L_t` as row `s` is
//! scaled, `d/dα L_t(…, α·e[s], …)` at `α = 1`: the first-order estimate of
//! what taking the word away would change. The position vector stays out
//! of `e`: with it, the product would also score what knowing the place `s`
//! is worth, which is not what attention to a word is compared with. The
//! `√d` scaling changes nothing (`e` grows as its gradient shrinks).
//!
//! Normalized over the real source positions, a row sums to 1 like a row
//! of attention weights `(batch, tgt_len, src_len)`, so the two compare
//! position by position ([`compare_saliency`], [`SaliencyAgreement`]). A
//! row whose gradient is zero everywhere, and every padded target row,
//! stays 0.
//!
//! The gradient reaches the source through whatever the model reads it by:
//! attention, and the encoder's final state, which is all a recurrent model
//! without attention has.
//!
//! # How
//!
//! One forward pass ([`EncoderDecoder::logits_with_source`]) with `e` a
//! leaf that wants gradients and every parameter a constant
//! ([`Param::frozen`](lingo_tensor::Param::frozen)), so that no backward
//! pass computes a parameter's gradient. Then one backward pass per target
//! position `t`, from the log-softmax seeded with 1 at `(b, t, y_bt)` for
//! every row `b` whose target reaches `t`: the rows of a batch never mix,
//! so `∂L_{b',t}/∂e_b = 0` for `b' ≠ b` and one pass serves the whole
//! batch. A batch costs one forward and `tgt_len` backward passes.

use lingo_data::{AgreementScore, AlignmentAccuracy, AlignmentScore, Batch, SaliencyAgreement, SeqPair};
use lingo_tensor::{Module, Tensor};
use ndarray::{Array3, ArrayD, Axis, Ix3, s};
use rayon::prelude::*;

use crate::decode::ROWS_PER_GROUP;
use crate::error::{Result, config as invalid};
use crate::model::EncoderDecoder;

/// Gradient × input saliency of every output position on every source
/// position, `(batch, tgt_len, src_len)`, each real row normalized to sum
/// to 1 over the real source positions; 0 at padding. See the [module docs](self).
///
/// ```
/// use lingo_data::{Batch, Example};
/// use lingo_nn::{Seq2Seq, Seq2SeqConfig, saliency};
/// use rand::SeedableRng;
/// let model = Seq2Seq::new(Seq2SeqConfig::new(9, 9), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
/// let examples = [Example { src: vec![2, 5, 6, 3], tgt: vec![2, 7, 3] }, Example { src: vec![2, 4, 3], tgt: vec![2, 3] }];
/// let s = saliency(&model, &Batch::from_examples(&examples).unwrap()).unwrap();
/// assert_eq!(s.dim(), (2, 2, 4));                                        // (batch, tgt_len, src_len)
/// assert!((s.slice(ndarray::s![0, 0, ..]).sum() - 1.0).abs() < 1e-5);    // a distribution per real row
/// assert_eq!((s[[1, 0, 3]], s[[1, 1, 0]]), (0.0, 0.0));                    // padding
/// ```
pub fn saliency<M: EncoderDecoder + Clone>(model: &M, batch: &Batch) -> Result<Array3<f32>> {
    Ok(normalized(gradient_times_input(model, batch)?, &batch.src_lens))
}

/// The unnormalized saliency `|Σ_d e[s, d] · ∂ log p(y_t)/∂e[s, d]|`,
/// `(batch, tgt_len, src_len)`, 0 at padding: what [`saliency`] divides
/// by each row's sum. See the [module docs](self).
///
/// ```
/// use lingo_data::{Batch, Example};
/// use lingo_nn::{Transformer, TransformerConfig, gradient_times_input};
/// use rand::SeedableRng;
/// let config = TransformerConfig { d_model: 8, heads: 2, ff_dim: 16, ..TransformerConfig::new(9, 9) };
/// let model = Transformer::new(config, &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
/// let batch = Batch::from_examples(&[Example { src: vec![2, 5, 6, 3], tgt: vec![2, 7, 8, 3] }]).unwrap();
/// let raw = gradient_times_input(&model, &batch).unwrap();
/// assert_eq!(raw.dim(), (1, 3, 4));
/// assert!(raw.iter().all(|&x| x >= 0.0) && raw.sum() > 0.0);
/// ```
pub fn gradient_times_input<M: EncoderDecoder + Clone>(model: &M, batch: &Batch) -> Result<Array3<f32>> {
    frozen_gradient_times_input(&frozen(model), batch)
}

/// `model` with every parameter a constant: its backward passes reach only the inputs.
fn frozen<M: Module + Clone>(model: &M) -> M {
    let mut frozen = model.clone();
    for param in frozen.params_mut() {
        *param = param.frozen();
    }
    frozen
}

/// [`gradient_times_input`] of a model already [`frozen`], its graph
/// recorded whatever scope the calling thread is in.
fn frozen_gradient_times_input<M: EncoderDecoder>(model: &M, batch: &Batch) -> Result<Array3<f32>> {
    lingo_tensor::enable_grad(|| recorded_gradient_times_input(model, batch))
}

/// The body of [`frozen_gradient_times_input`], run with recording on.
fn recorded_gradient_times_input<M: EncoderDecoder>(model: &M, batch: &Batch) -> Result<Array3<f32>> {
    let mut leaf = None;
    let logits = model.logits_with_source(batch, |embedded| {
        let e = Tensor::variable(embedded.data().clone());
        leaf = Some(e.clone());
        Ok(e)
    })?;
    let leaf = leaf.ok_or_else(|| invalid("saliency", "the model never read the source embeddings"))?;
    let log_probs = logits.log_softmax(2)?;
    let (rows, tgt_len) = batch.tgt_out.dim();
    let e = leaf.data().view().into_dimensionality::<Ix3>().expect("the embeddings are 3-D");
    let mut raw = Array3::zeros((rows, tgt_len, batch.src.ncols()));
    for t in 0..tgt_len {
        let reached: Vec<usize> = (0..rows).filter(|&b| t < batch.tgt_lens[b]).collect();
        // d(Σ_b log p(y_bt))/d(log-probabilities): one backward for the whole batch.
        let mut seed = ArrayD::zeros(log_probs.shape());
        for &b in &reached {
            seed[[b, t, batch.tgt_out[[b, t]]]] = 1.0;
        }
        let grads = log_probs.backward_with(seed)?;
        let Some(g) = grads.get(&leaf) else { continue };
        let g = g.view().into_dimensionality::<Ix3>().expect("a gradient has its tensor's shape");
        for &b in &reached {
            for s in 0..batch.src_lens[b] {
                let dot: f32 = e.slice(s![b, s, ..]).iter().zip(g.slice(s![b, s, ..])).map(|(x, y)| x * y).sum();
                raw[[b, t, s]] = dot.abs();
            }
        }
    }
    Ok(raw)
}

/// Each row of `raw` divided by its sum over the real source positions
/// (padding is 0 already); rows summing to 0 stay 0.
fn normalized(mut raw: Array3<f32>, src_lens: &[usize]) -> Array3<f32> {
    for (mut example, &n) in raw.outer_iter_mut().zip(src_lens) {
        for mut row in example.rows_mut() {
            let total: f32 = row.iter().take(n).sum();
            if total > 0.0 {
                row.mapv_inplace(|x| x / total);
            }
        }
    }
    raw
}

/// Attention beside saliency over a set of examples; see [`compare_saliency`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SaliencyComparison {
    /// Saliency's row peaks against the gold alignment, scored as
    /// attention's are (nothing scored without gold links).
    pub saliency_alignment: AlignmentScore,
    /// Attention's row peaks against the gold alignment; `None` for a model without attention.
    pub attention_alignment: Option<AlignmentScore>,
    /// Attention against saliency row by row (same peak, rank correlation);
    /// `None` for a model without attention.
    pub agreement: Option<AgreementScore>,
}

/// The [`saliency()`] of every example, set beside the model's
/// [`attention`](EncoderDecoder::attention): how often the two peak on
/// the same source position and how alike they rank the positions
/// ([`SaliencyAgreement`]), and how often each peaks on a gold position
/// ([`AlignmentAccuracy`]). Chunks of [`ROWS_PER_GROUP`] examples run in
/// parallel and are added up in order, so the result does not depend on
/// the thread count.
///
/// ```
/// use lingo_data::{DigitOp, DigitTask, Task};
/// use lingo_nn::{Seq2Seq, Seq2SeqConfig, compare_saliency};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let task = DigitTask::new(DigitOp::Reverse, 5, 3, 3).unwrap();
/// let examples = task.generate(4, &mut rng);
/// let config = Seq2SeqConfig { emb_dim: 8, hidden_dim: 8, attention: Some("dot".parse().unwrap()), ..Seq2SeqConfig::new(9, 9) };
/// let model = Seq2Seq::new(config, &mut rng).unwrap();
/// let report = compare_saliency(&model, &examples).unwrap();
/// assert_eq!(report.saliency_alignment.scored, 4 * 3);                 // every digit has a gold position
/// assert_eq!(report.agreement.unwrap().rows, 4 * 4);                  // and <eos> a row of its own
/// ```
pub fn compare_saliency<M: EncoderDecoder + Clone, E: SeqPair + Sync>(
    model: &M,
    examples: &[E],
) -> Result<SaliencyComparison> {
    let frozen = frozen(model);
    let chunks: Vec<&[E]> = examples.chunks(ROWS_PER_GROUP).collect();
    let parts = chunks
        .par_iter()
        .map(|chunk| {
            let batch = Batch::from_examples(chunk)?;
            // The model's own attention, as a heatmap of it shows it.
            let attention = model.attention(&batch)?;
            let saliency = normalized(frozen_gradient_times_input(&frozen, &batch)?, &batch.src_lens);
            Ok((batch, attention, saliency))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut saliency_alignment = AlignmentAccuracy::new();
    let mut with_attention: Option<(AlignmentAccuracy, SaliencyAgreement)> = None;
    for (chunk, (batch, attention, saliency)) in chunks.iter().zip(parts) {
        for (b, example) in chunk.iter().enumerate() {
            let (src_len, s) = (batch.src_lens[b], saliency.index_axis(Axis(0), b));
            saliency_alignment.add(s, example.gold().unwrap_or_default(), src_len)?;
            if let Some(attention) = &attention {
                let a = attention.index_axis(Axis(0), b);
                let (alignment, agreement) = with_attention.get_or_insert_with(Default::default);
                alignment.add(a, example.gold().unwrap_or_default(), src_len)?;
                agreement.add(a, s, src_len, batch.tgt_lens[b])?;
            }
        }
    }
    Ok(SaliencyComparison {
        saliency_alignment: saliency_alignment.score(),
        attention_alignment: with_attention.as_ref().map(|(alignment, _)| alignment.score()),
        agreement: with_attention.as_ref().map(|(_, agreement)| agreement.score()),
    })
}
