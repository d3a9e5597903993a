//! What the attention ops return: [`AttentionOutput`] from every scorer,
//! [`Recurrence`] from Bahdanau's fused decoder recurrence.

use lingo_tensor::Tensor;

/// What attention returns.
///
/// ```
/// use lingo_attention::{Attention, AttentionConfig, Scorer};
/// use lingo_tensor::Tensor;
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let config = AttentionConfig { scorer: Scorer::MultiHead { heads: 2 }, query_dim: 4, key_dim: 4, attn_dim: 4 };
/// let attn = Attention::new("attn", &config, &mut rng).unwrap();
/// let x = Tensor::randn(&[1, 3, 4], 1.0, &mut rng).unwrap();
/// let out = attn.forward(&x, &x, &x, None, true).unwrap();
/// assert_eq!(out.context.shape(), &[1, 3, 4]);
/// assert_eq!(out.weights.shape(), &[1, 3, 3]);
/// assert_eq!(out.head_weights.unwrap().shape(), &[1, 2, 3, 3]);
/// ```
#[derive(Debug, Clone)]
pub struct AttentionOutput {
    /// The weighted sums of the values, `(batch, tgt_len, d_v)`.
    pub context: Tensor,
    /// The attention weights `(batch, tgt_len, src_len)`; each row sums to 1.
    /// For `multi_head`, the mean over heads. A tensor, so a loss may use it;
    /// `.data()` gives the plain array for plots and metrics.
    pub weights: Tensor,
    /// Each head's weights `(batch, heads, tgt_len, src_len)`; `multi_head` only.
    pub head_weights: Option<Tensor>,
}

/// What [`Prepared::gru_recurrence`](crate::Prepared::gru_recurrence) returns.
#[derive(Debug, Clone)]
pub struct Recurrence {
    /// The decoder state after every step, `(batch, tgt_len, H)`; the last
    /// step's is the final state.
    pub output: Tensor,
    /// Each step's attention over the source, `(batch, tgt_len, src_len)`.
    pub weights: Tensor,
}
