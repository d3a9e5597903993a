//! Helpers shared by the integration tests: seeded inputs, padding masks,
//! layers for every scorer, and one tensor holding all of an output.

use lingo_attention::{Attention, AttentionConfig, AttentionOutput, Prepared, Scorer};
use lingo_tensor::{Result, RnnWeights, Tensor, fused::gru_cell};
use ndarray::{Array2, ArrayD, IxDyn};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Values uniform in `[-1, 1)`.
pub fn values(shape: &[usize], seed: u64) -> ArrayD<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    ArrayD::from_shape_simple_fn(IxDyn(shape), || rng.random_range(-1.0..1.0))
}

/// A constant tensor of [`values`].
pub fn tensor(shape: &[usize], seed: u64) -> Tensor {
    Tensor::new(values(shape, seed))
}

/// A padding mask with row `b` padded after `lengths[b]` positions.
pub fn pad_mask(lengths: &[usize], src_len: usize) -> Array2<bool> {
    Array2::from_shape_fn((lengths.len(), src_len), |(b, s)| s >= lengths[b])
}

/// Every scorer, for sizes where all of them apply (`d_q = d_k`, heads dividing `A`).
pub fn all_scorers(heads: usize) -> [Scorer; 5] {
    [Scorer::Dot, Scorer::General, Scorer::Additive, Scorer::ScaledDot, Scorer::MultiHead { heads }]
}

/// A seeded layer.
pub fn layer(scorer: Scorer, query_dim: usize, key_dim: usize, attn_dim: usize, seed: u64) -> Attention {
    let config = AttentionConfig { scorer, query_dim, key_dim, attn_dim };
    Attention::new("attn", &config, &mut StdRng::seed_from_u64(seed)).unwrap()
}

/// Context, weights and head weights flattened into one vector, so a
/// gradient check or a comparison covers all of them.
pub fn flat(out: &AttentionOutput) -> Result<Tensor> {
    let mut parts = vec![out.context.reshape(&[out.context.len()])?, out.weights.reshape(&[out.weights.len()])?];
    if let Some(h) = &out.head_weights {
        parts.push(h.reshape(&[h.len()])?);
    }
    Tensor::cat(&parts, 0)
}

/// An attention error as the tensor core's error it wraps (the gradient
/// checker's closures return those); any other error fails the test.
pub fn to_tensor(e: lingo_attention::Error) -> lingo_tensor::Error {
    match e {
        lingo_attention::Error::Tensor(e) => e,
        other => panic!("unexpected error: {other}"),
    }
}

/// Bahdanau's recurrence built from the graph's pieces, one step at a time:
/// attend with the previous state, then a GRU cell on `[x_t; context_t]`.
/// What [`Prepared::gru_recurrence`] fuses; returns the states
/// `(batch, tgt_len, H)` and the weights `(batch, tgt_len, src_len)`.
pub fn stepped_recurrence(
    prepared: &Prepared,
    x: &Tensor,
    h0: &Tensor,
    gru: RnnWeights<'_>,
) -> Result<(Tensor, Tensor)> {
    let (b, t, e, h) = (x.shape()[0], x.shape()[1], x.shape()[2], h0.shape()[1]);
    let (mut state, mut states, mut weights) = (h0.clone(), vec![], vec![]);
    for step in 0..t {
        let attended = prepared.attend(&state.reshape(&[b, 1, h])?, false).map_err(to_tensor)?; // query: s_{t-1}
        let x_t = x.narrow(1, step, 1)?.reshape(&[b, e])?;
        let context = attended.context.reshape(&[b, attended.context.shape()[2]])?;
        state = gru_cell(&Tensor::cat(&[x_t, context], 1)?, &state, gru)?;
        states.push(state.reshape(&[b, 1, h])?);
        weights.push(attended.weights);
    }
    Ok((Tensor::cat(&states, 1)?, Tensor::cat(&weights, 1)?))
}
