//! Attention composed from `lingo-tensor` ops: the version to read first.
//!
//! Each function here is a line or two of ordinary autograd ops (`matmul`,
//! `masked_fill`, `softmax`, ...), so its backward pass is the tape's: no
//! derivation to trust, nothing fused. The kernels behind
//! [`crate::dot_product_attention`] and [`crate::additive_attention`]
//! (and [`crate::bahdanau_recurrence`], Bahdanau's decoder) compute the same
//! numbers as one op each with a hand-written backward (faster, and harder
//! to read); `tests/attention/plain.rs` holds them to these functions, forward and
//! every gradient.
//!
//! ```text
//! scores  X = α · Q·Kᵀ                            (batch, tgt_len, src_len)
//!         X = tanh(Q' ⊕ K')·v                     (additive: every pair t, s)
//! weights W = softmax(X with hidden → f32::MIN)   row by row
//! context C = W·V                                 (batch, tgt_len, d_v)
//! ```

use lingo_tensor::gru_cell;
use lingo_tensor::{RnnWeights, Tensor};
use ndarray::Array2;
use rand::RngCore;

use crate::error::{Result, mismatch};
use crate::kernel::{additive, bahdanau, dot};
use crate::mask::Masking;
use crate::output::{AttentionOutput, Recurrence};

/// `X = α · Q·Kᵀ`: every query against every key, `queries (B, T, d)` and
/// `keys (B, S, d)` to scores `(B, T, S)`.
///
/// ```
/// use lingo_attention::plain;
/// use lingo_tensor::Tensor;
/// let q = Tensor::from_vec(vec![1.0, 2.0], &[1, 1, 2]).unwrap();
/// let k = Tensor::from_vec(vec![1.0, 0.0, 0.0, 1.0], &[1, 2, 2]).unwrap();
/// assert_eq!(plain::dot_scores(&q, &k, 0.5).unwrap().to_vec(), vec![0.5, 1.0]);
/// ```
pub fn dot_scores(queries: &Tensor, keys: &Tensor, scale: f32) -> Result<Tensor> {
    Ok(queries.matmul(&keys.transpose(1, 2)?)?.mul_scalar(scale))
}

/// `X[b, t, s] = Σ_a v_a · tanh(q'[b, t, a] + k'[b, s, a])` (Bahdanau's
/// score): projected queries `q_proj (B, T, A)` and keys `k_proj (B, S, A)`
/// broadcast against each other to `(B, T, S, A)`, then `v (A)` sums out `A`.
///
/// ```
/// use lingo_attention::plain;
/// use lingo_tensor::Tensor;
/// let (qp, kp) = (Tensor::zeros(&[1, 2, 3]), Tensor::zeros(&[1, 4, 3]));
/// let x = plain::additive_scores(&qp, &kp, &Tensor::ones(&[3])).unwrap();
/// assert_eq!(x.shape(), &[1, 2, 4]);                       // tanh(0) = 0: every score 0
/// assert!(x.to_vec().iter().all(|&s| s == 0.0));
/// ```
pub fn additive_scores(q_proj: &Tensor, k_proj: &Tensor, v: &Tensor) -> Result<Tensor> {
    let (b, t, s, a) = (q_proj.shape()[0], q_proj.shape()[1], k_proj.shape()[1], v.len());
    let hidden = q_proj.unsqueeze(2)?.add(&k_proj.unsqueeze(1)?)?.tanh(); // (B, T, S, A)
    let scores = hidden.reshape(&[b, t * s, a])?.matmul(&v.reshape(&[a, 1])?)?; // (B, T·S, 1)
    Ok(scores.reshape(&[b, t, s])?)
}

/// `W = softmax(X)` over the source axis, with the positions `src_pad_mask
/// (B, S)` marks and, with `causal`, the later ones hidden: a hidden score
/// becomes `f32::MIN`, whose weight is then 0, and a row with nothing
/// visible becomes uniform (see the crate's Masks section).
///
/// ```
/// use lingo_attention::plain;
/// use lingo_tensor::Tensor;
/// let scores = Tensor::from_vec(vec![0.0, 0.0, 5.0], &[1, 1, 3]).unwrap();
/// let pad = ndarray::arr2(&[[false, false, true]]);
/// let w = plain::masked_softmax(&scores, Some(&pad), false).unwrap();
/// assert_eq!(w.to_vec(), vec![0.5, 0.5, 0.0]);
/// ```
pub fn masked_softmax(scores: &Tensor, src_pad_mask: Option<&Array2<bool>>, causal: bool) -> Result<Tensor> {
    let shape = scores.shape();
    if shape.len() != 3 {
        return Err(mismatch("plain::masked_softmax", shape, &[3], "scores must be (batch, tgt_len, src_len)"));
    }
    let mask = Masking::new(src_pad_mask, causal);
    mask.check("plain::masked_softmax", &[shape[0], shape[2]])?;
    softmax_hiding(scores, &mask)
}

/// [`masked_softmax`] with the mask already checked.
fn softmax_hiding(scores: &Tensor, mask: &Masking) -> Result<Tensor> {
    let shape = scores.shape();
    let hidden = mask.hidden((shape[0], shape[1], shape[2]));
    Ok(scores.masked_fill(&hidden.into_dyn(), f32::MIN)?.softmax(2)?)
}

/// `C = W·V`: each query's weighted sum of the values, `weights (B, T, S)`
/// and `values (B, S, d_v)` to `(B, T, d_v)`.
///
/// ```
/// use lingo_attention::plain;
/// use lingo_tensor::Tensor;
/// let w = Tensor::from_vec(vec![0.25, 0.75], &[1, 1, 2]).unwrap();
/// let v = Tensor::from_vec(vec![4.0, 8.0], &[1, 2, 1]).unwrap();
/// assert_eq!(plain::weighted_sum(&w, &v).unwrap().to_vec(), vec![7.0]);
/// ```
pub fn weighted_sum(weights: &Tensor, values: &Tensor) -> Result<Tensor> {
    Ok(weights.matmul(values)?)
}

/// The plain form of [`crate::dot_product_attention`] (same arguments, same
/// results): each head `h` takes its column block of the queries, keys and
/// values, scores, masks, and sums; the contexts are concatenated head after
/// head and the weights are the mean over heads.
///
/// ```
/// use lingo_attention::{dot_product_attention, plain};
/// use lingo_tensor::Tensor;
/// let q = Tensor::from_vec((0..8).map(|i| i as f32 / 8.0).collect(), &[1, 2, 4]).unwrap();
/// let k = Tensor::from_vec((0..12).map(|i| (i % 5) as f32 / 5.0).collect(), &[1, 3, 4]).unwrap();
/// let plain = plain::dot_product_attention(&q, &k, &k, 2, 0.5, None, true).unwrap();
/// let fused = dot_product_attention(&q, &k, &k, 2, 0.5, None, true).unwrap();
/// for (p, f) in plain.context.to_vec().iter().zip(fused.context.to_vec()) {
///     assert!((p - f).abs() < 1e-6);
/// }
/// ```
pub fn dot_product_attention(
    queries: &Tensor,
    keys: &Tensor,
    values: &Tensor,
    heads: usize,
    scale: f32,
    src_pad_mask: Option<&Array2<bool>>,
    causal: bool,
) -> Result<AttentionOutput> {
    let mask = Masking::new(src_pad_mask, causal);
    by_heads("plain::dot_product_attention", [queries, keys, values], heads, scale, &mask, |w| Ok(w.clone()))
}

/// [`dot_product_attention`] with dropout on the attention weights, as
/// PyTorch's `nn.MultiheadAttention` trains: each head's weights are dropped
/// out (probability `p`, survivors scaled by `1/(1 - p)`, the mask drawn
/// from `rng`) before the weighted sum. The returned `weights` and
/// `head_weights` are those before dropout, where the model attends.
///
/// ```
/// use lingo_attention::plain;
/// use lingo_tensor::Tensor;
/// use rand::SeedableRng;
/// let q = Tensor::ones(&[1, 2, 4]);
/// let v = Tensor::from_vec((0..12).map(|i| i as f32).collect(), &[1, 3, 4]).unwrap();
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let dropped = plain::dot_product_attention_dropout(&q, &v, &v, 2, 0.5, None, false, 0.5, &mut rng).unwrap();
/// let kept = plain::dot_product_attention(&q, &v, &v, 2, 0.5, None, false).unwrap();
/// assert_eq!(dropped.weights.to_vec(), kept.weights.to_vec());     // the weights themselves are kept
/// assert_ne!(dropped.context.to_vec(), kept.context.to_vec());     // what they sum is not
/// ```
#[allow(clippy::too_many_arguments)]
pub fn dot_product_attention_dropout(
    queries: &Tensor,
    keys: &Tensor,
    values: &Tensor,
    heads: usize,
    scale: f32,
    src_pad_mask: Option<&Array2<bool>>,
    causal: bool,
    p: f32,
    rng: &mut dyn RngCore,
) -> Result<AttentionOutput> {
    let mask = Masking::new(src_pad_mask, causal);
    let op = "plain::dot_product_attention_dropout";
    by_heads(op, [queries, keys, values], heads, scale, &mask, |w| Ok(w.dropout(p, &mut &mut *rng)?))
}

/// The heads of dot-product attention, each `h` on its column block of the
/// queries, keys and values: scores, masked softmax, then the sum of the
/// values with `summed(weights)` (the weights themselves, or dropped out).
fn by_heads(
    op: &'static str,
    [queries, keys, values]: [&Tensor; 3],
    heads: usize,
    scale: f32,
    mask: &Masking,
    mut summed: impl FnMut(&Tensor) -> Result<Tensor>,
) -> Result<AttentionOutput> {
    dot::check(op, queries.shape(), keys.shape(), values.shape(), heads, mask)?;
    let (d, d_v) = (queries.shape()[2] / heads, values.shape()[2] / heads);
    let mut contexts = Vec::with_capacity(heads);
    let mut head_weights = Vec::with_capacity(heads);
    for h in 0..heads {
        let (q, k, v) = (queries.narrow(2, h * d, d)?, keys.narrow(2, h * d, d)?, values.narrow(2, h * d_v, d_v)?);
        let weights = softmax_hiding(&dot_scores(&q, &k, scale)?, mask)?;
        contexts.push(weighted_sum(&summed(&weights)?, &v)?);
        head_weights.push(weights);
    }
    let context = Tensor::cat(&contexts, 2)?;
    if heads == 1 {
        return Ok(AttentionOutput { context, weights: head_weights.remove(0), head_weights: None });
    }
    let head_weights = Tensor::stack(&head_weights, 1)?; // (B, H, T, S)
    Ok(AttentionOutput { context, weights: head_weights.mean(&[1], false)?, head_weights: Some(head_weights) })
}

/// The plain form of [`crate::additive_attention`] (same arguments, same
/// results): Bahdanau's score, then the same masked softmax and weighted sum.
///
/// ```
/// use lingo_attention::plain;
/// use lingo_tensor::Tensor;
/// let (qp, kp) = (Tensor::zeros(&[1, 1, 3]), Tensor::zeros(&[1, 4, 3]));
/// let values = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[1, 4, 1]).unwrap();
/// let out = plain::additive_attention(&qp, &kp, &Tensor::ones(&[3]), &values, None, false).unwrap();
/// assert_eq!(out.context.to_vec(), vec![2.5]);              // equal scores: the mean
/// ```
pub fn additive_attention(
    q_proj: &Tensor,
    k_proj: &Tensor,
    v: &Tensor,
    values: &Tensor,
    src_pad_mask: Option<&Array2<bool>>,
    causal: bool,
) -> Result<AttentionOutput> {
    let mask = Masking::new(src_pad_mask, causal);
    additive::check("plain::additive_attention", q_proj.shape(), k_proj.shape(), v.shape(), values.shape(), &mask)?;
    let weights = softmax_hiding(&additive_scores(q_proj, k_proj, v)?, &mask)?;
    Ok(AttentionOutput { context: weighted_sum(&weights, values)?, weights, head_weights: None })
}

/// The plain form of [`crate::bahdanau_recurrence`] (same arguments, same
/// results): Bahdanau's decoder stepped one target position at a time. At
/// step `t` the previous state is the query, `q' = s_{t-1}·W_qᵀ`; the
/// context is [`additive_attention`]'s; the GRU cell
/// ([`lingo_tensor::gru_cell`]) reads `[x_t; context_t]`.
///
/// ```
/// use lingo_attention::{bahdanau_recurrence, plain};
/// use lingo_tensor::{RnnWeights, Tensor};
/// let (b, t, s, a, e, h, dv) = (1, 2, 3, 4, 2, 5, 6);
/// let ramp = |shape: &[usize], k: f32| {
///     let n: usize = shape.iter().product();
///     Tensor::from_vec((0..n).map(|i| ((i as f32 * k).sin()) / 2.0).collect(), shape).unwrap()
/// };
/// let (w_ih, w_hh, bias) = (ramp(&[3 * h, e + dv], 0.7), ramp(&[3 * h, h], 1.3), ramp(&[3 * h], 0.4));
/// let gru = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &bias, bias_hh: &bias };
/// let (x, h0, k_proj, values) = (ramp(&[b, t, e], 0.9), ramp(&[b, h], 1.1), ramp(&[b, s, a], 0.3), ramp(&[b, s, dv], 0.5));
/// let score = (&ramp(&[a, h], 0.8), &ramp(&[a], 1.7));
/// let fused = bahdanau_recurrence(&x, &h0, &k_proj, &values, score, gru, None).unwrap();
/// let plain = plain::bahdanau_recurrence(&x, &h0, &k_proj, &values, score, gru, None).unwrap();
/// for (f, p) in fused.output.to_vec().iter().zip(plain.output.to_vec()) {
///     assert!((f - p).abs() < 1e-5);
/// }
/// ```
pub fn bahdanau_recurrence(
    x: &Tensor,
    h0: &Tensor,
    k_proj: &Tensor,
    values: &Tensor,
    (w_q, v): (&Tensor, &Tensor),
    gru: RnnWeights<'_>,
    src_pad_mask: Option<&Array2<bool>>,
) -> Result<Recurrence> {
    let d = bahdanau::Dims::check(x, h0, k_proj, values, (w_q, v), &gru, &Masking::new(src_pad_mask, false))?;
    let (mut state, mut states, mut weights) = (h0.clone(), vec![], vec![]);
    for t in 0..d.steps {
        let query = state.linear(w_q, None)?.unsqueeze(1)?; // q' = s_{t-1}·W_qᵀ   (B, 1, A)
        let attended = additive_attention(&query, k_proj, v, values, src_pad_mask, false)?;
        let context = attended.context.reshape(&[d.batch, d.value])?;
        let x_t = x.narrow(1, t, 1)?.reshape(&[d.batch, d.input])?;
        state = gru_cell(&Tensor::cat(&[x_t, context], 1)?, &state, gru)?; // s_t = GRU([x_t; context_t], s_{t-1})
        states.push(state.unsqueeze(1)?);
        weights.push(attended.weights);
    }
    if states.is_empty() {
        let (output, weights) = (Tensor::zeros(&[d.batch, 0, d.hidden]), Tensor::zeros(&[d.batch, 0, d.src_len]));
        return Ok(Recurrence { output, weights });
    }
    Ok(Recurrence { output: Tensor::cat(&states, 1)?, weights: Tensor::cat(&weights, 1)? })
}
