//! Helpers shared by the integration tests: seeded inputs, padding masks,
//! layers for every scorer, and one tensor holding all of an output.

#![allow(dead_code)] // each test file uses its own subset

use lingo_attention::{Attention, AttentionConfig, AttentionOutput, Scorer};
use lingo_tensor::{Result, Tensor};
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
