//! # lingo
//!
//! Attention in neural machine translation, taught and measured. This crate
//! is a facade: it adds no logic, it only re-exports the workspace crates as
//! modules so one dependency brings everything.
//!
//! ```
//! use lingo::tensor::Tensor;
//! let x = Tensor::from_vec(vec![1.0, 2.0], &[2]).unwrap();
//! assert_eq!(x.shape(), &[2]);
//! ```

/// The tensor and reverse-mode autograd core ([`lingo_tensor`]).
pub use lingo_tensor as tensor;

/// Attention scorers as fused kernels ([`lingo_attention`]).
pub use lingo_attention as attention;

/// Layers, the seq2seq model, optimizers, schedules, training, checkpoints, decoding ([`lingo_nn`]).
pub use lingo_nn as nn;

/// Vocabularies, corpora, batching, tasks with gold alignments, metrics ([`lingo_data`]).
pub use lingo_data as data;

/// Text and PNG attention heatmaps and line charts ([`lingo_viz`]).
pub use lingo_viz as viz;
