//! The Transformer's recipe in the experiments (`lingo ablation`, `lingo
//! sort-study`): its size from the recurrent model's hidden size, and its
//! own learning-rate schedule.

use lingo::nn::{Init, Schedule, TrainConfig, TransformerConfig};

use crate::error::{Error, Result};

/// Attention heads per layer.
pub(crate) const HEADS: usize = 4;

/// Peak learning rate, reached after [`WARMUP`] steps and then decaying as
/// `1/√step` (Vaswani et al.'s schedule).
const LR: f64 = 2e-3;
const WARMUP: u64 = 200;

/// Dropout on embeddings, sublayer outputs and the feed-forward hidden
/// layer; none on the attention weights, so training runs the fused kernel.
const DROPOUT: f32 = 0.1;

/// 2 + 2 layers of width `d` (the recurrent model's hidden size), 4 heads,
/// feed-forward `4d`.
pub(crate) fn transformer(src_vocab: usize, tgt_vocab: usize, d: usize, init: Init) -> TransformerConfig {
    TransformerConfig {
        d_model: d,
        heads: HEADS,
        ff_dim: 4 * d,
        dropout: DROPOUT,
        attention_dropout: 0.0,
        init,
        ..TransformerConfig::new(src_vocab, tgt_vocab)
    }
}

/// `config` with the Transformer's learning rate and schedule.
pub(crate) fn schedule(config: &mut TrainConfig) {
    (config.lr, config.schedule) = (LR, Schedule::InverseSqrt { warmup_steps: WARMUP });
}

/// Checks that [`HEADS`] divides `--hidden`.
pub(crate) fn check_width(hidden: usize) -> Result<()> {
    if hidden.is_multiple_of(HEADS) {
        Ok(())
    } else {
        Err(Error::usage("--hidden", format!("must be a multiple of {HEADS} for the Transformer, got {hidden}")))
    }
}
