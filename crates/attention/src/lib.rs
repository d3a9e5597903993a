//! # lingo-attention
//!
//! Every classic attention scorer as one fused autograd op with a
//! hand-written backward: Luong's `dot` and `general`, Bahdanau's
//! `additive`, the Transformer's `scaled_dot` and `multi_head`. They all do
//! the same three things, and differ only in the first:
//!
//! ```text
//! score   X[t, s] = score(q_t, k_s)               (batch, tgt_len, src_len)
//! weights W[t, ·] = softmax(X[t, ·]), padding → 0
//! context C[t]    = Σ_s W[t, s] · v_s             (batch, tgt_len, d_v)
//! ```
//!
//! ## Read [`plain`] first
//!
//! [`plain`] writes those three lines as ordinary `lingo-tensor` ops
//! ([`plain::dot_scores`], [`plain::additive_scores`],
//! [`plain::masked_softmax`], [`plain::weighted_sum`]), and composes them
//! into [`plain::dot_product_attention`] and [`plain::additive_attention`],
//! and Bahdanau's decoder into [`plain::bahdanau_recurrence`]: the tape
//! differentiates them, so there is no backward to read. The
//! layers below run fused kernels instead (one op each, backward written by
//! hand, see [The kernels](#the-kernels)); a test holds every kernel to its
//! plain form, forward and every gradient.
//!
//! ## Quick start
//!
//! ```
//! use lingo_attention::{Attention, AttentionConfig, Scorer};
//! use lingo_tensor::{Module, Tensor};
//! use rand::SeedableRng;
//!
//! let mut rng = rand::rngs::StdRng::seed_from_u64(0);
//! let scorer: Scorer = "additive".parse().unwrap();           // from a config string
//! let config = AttentionConfig { scorer, query_dim: 8, key_dim: 6, attn_dim: 10 };
//! let attn = Attention::new("decoder.attention", &config, &mut rng).unwrap();
//!
//! let dec_out = Tensor::randn(&[2, 3, 8], 1.0, &mut rng).unwrap(); // queries (batch, tgt_len, d_q)
//! let enc_out = Tensor::randn(&[2, 5, 6], 1.0, &mut rng).unwrap(); // keys = values (batch, src_len, d_k)
//! let src_pad_mask = ndarray::Array2::from_shape_fn((2, 5), |(b, s)| b == 0 && s == 4);
//! let out = attn.forward(&dec_out, &enc_out, &enc_out, Some(&src_pad_mask), false).unwrap();
//!
//! let weights = out.weights.data();                               // (batch, tgt_len, src_len)
//! assert!((weights.sum() - 6.0).abs() < 1e-5);                    // 2·3 rows, each sums to 1
//! assert_eq!(weights[[0, 1, 4]], 0.0);                            // padding gets no weight
//!
//! let loss = out.context.sum_all();
//! let grads = loss.backward().unwrap();
//! assert!(attn.params().iter().all(|p| grads.get(p.tensor()).is_some()));
//! ```
//!
//! ## The scorers
//!
//! | name | score | paper | parameters |
//! |---|---|---|---|
//! | `dot` | `q · k` | Luong et al., 2015 | none |
//! | `general` | `q · W k` | Luong et al., 2015 | `d_q·d_k` |
//! | `additive` | `v · tanh(W_q q + W_k k)` | Bahdanau et al., 2015 | `A·(d_q + d_k + 1)` |
//! | `scaled_dot` | `q · k / √d_k` | Vaswani et al., 2017 | none |
//! | `multi_head:h` | `h` scaled heads with projections | Vaswani et al., 2017 | `A·(d_q + 3·d_k)` |
//!
//! [`Scorer`]'s variants give each formula with its cost in FLOPs;
//! [`AttentionConfig::flops`] computes it.
//!
//! ## Masks
//!
//! `src_pad_mask (batch, src_len)` is true at padding; `causal` hides later
//! positions (self-attention in a decoder). Hidden scores count as the most
//! negative finite `f32`, so hidden positions get weight exactly 0 and a row
//! with nothing visible gets uniform weights: finite, never NaN.
//!
//! ## Decoding step by step
//!
//! [`Attention::prepare`] does the work that depends only on the source once
//! (projecting the keys), and [`Prepared::attend`] runs one decoder step;
//! [`Attention::forward`] is the two together, so there is one code path.
//!
//! ## The kernels
//!
//! Each scorer's score, masked softmax and weighted sum is one node in the
//! graph, with its backward written by hand (the derivations sit beside the
//! code, in `src/kernel/dot.rs` and `src/kernel/additive.rs`). The products
//! go through `lingo_kernels::gemm` (`matrixmultiply`, or its own
//! dot-product tiles for `Q·Kᵀ`-shaped ones) on strided views, so heads and transposes are never
//! copied; batch entries are shared between threads by rayon when there is
//! enough work, with the same bits for any number of threads. The projections
//! of `general`, `additive` and `multi_head` are ordinary `linear` ops.
//! [`dot_product_attention`] and [`additive_attention`] expose the kernels
//! without parameters. [`Attention::explain`] works one row through in
//! plain loops, for a learner: the query and key as the score reads them,
//! the terms that add up to a cell's score, the scaling, the mask, the
//! softmax and the context ([`ScoreSteps`]), equal to `forward`'s.
//!
//! ## Bahdanau's recurrence
//!
//! In Bahdanau's placement the context of step `t` is part of the decoder
//! RNN's input, so teacher-forced training cannot attend for all steps at
//! once. [`Prepared::gru_recurrence`] (and [`bahdanau_recurrence`], without
//! parameters) runs the whole recurrence, attention and GRU steps, as one
//! fused op with its own backward (`src/kernel/bahdanau.rs`): the numbers of
//! stepping [`Prepared::attend`] and a GRU cell, without a graph per step.

#![warn(missing_docs)]

mod attention;
mod error;
mod explain;
pub mod intervene;
mod kernel;
mod mask;
mod output;
pub mod plain;
pub mod scorer;

pub use attention::{
    Attention, AttentionConfig, Flops, Prepared, additive_attention, bahdanau_recurrence, dot_product_attention,
};
pub use error::{Error, Result};
pub use explain::{HeadSteps, ScoreSteps};
pub use intervene::{GoldLinks, Intervention};
pub use output::{AttentionOutput, Recurrence};
pub use scorer::Scorer;
