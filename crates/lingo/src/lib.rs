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

#![warn(missing_docs)]

/// The fast kernels under the core, each beside its plain reference ([`lingo_kernels`]).
pub use lingo_kernels as kernels;
/// The tensor and reverse-mode autograd core ([`lingo_tensor`]).
pub use lingo_tensor as tensor;

/// Attention scorers as fused kernels ([`lingo_attention`]).
pub use lingo_attention as attention;

/// Layers, the seq2seq model and the Transformer, optimizers, schedules, training, checkpoints, decoding, the translator ([`lingo_nn`]).
pub use lingo_nn as nn;

/// Vocabularies, corpora, batching, tasks with gold alignments, metrics ([`lingo_data`]).
pub use lingo_data as data;

/// Text and PNG attention heatmaps and line charts ([`lingo_viz`]).
pub use lingo_viz as viz;

/// The lessons as functions: each takes its settings and an observer and returns serializable results ([`lingo_lessons`]).
pub use lingo_lessons as lessons;

/// The names most programs use, in one import.
///
/// ```
/// use lingo::prelude::*;
/// use rand::SeedableRng;
/// let task = LexiconReverse::default();
/// let config = Seq2SeqConfig { attention: Some(Scorer::Dot), ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len()) };
/// let model = Seq2Seq::new(config, &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
/// assert!(model.num_params() > 0);
/// ```
pub mod prelude {
    pub use lingo_attention::Scorer;
    pub use lingo_data::{Batch, DigitOp, DigitTask, LexiconReverse, Task, TextTokenizer, Vocab, WordTokenizer};
    pub use lingo_nn::{
        AnyModel, BeamConfig, EncoderDecoder, Mode, Placement, RnnKind, Seq2Seq, Seq2SeqConfig, TrainConfig,
        Transformer, TransformerConfig, TranslateOptions, Translator, beam_search, greedy_decode, train_model,
    };
    pub use lingo_tensor::{Module, Param, Tensor, no_grad};
    pub use lingo_viz::{format_attention, plot_attention, plot_lines};
}
