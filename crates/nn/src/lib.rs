//! # lingo-nn
//!
//! The building blocks of a neural translation model on top of
//! [`lingo_tensor`]: layers with PyTorch-compatible parameter names,
//! optimizers with PyTorch's exact update equations, learning-rate
//! schedules, and checkpoints that are checksummed and written atomically.
//!
//! Everything is re-exported at the root; the modules hold the longer
//! explanations (the math of each update rule and schedule, the RNN stack,
//! the file format).
//!
//! | module | items |
//! |---|---|
//! | [`layers`] ([`Module`](lingo_tensor::Module)s) | [`Embedding`], [`Linear`], [`Dropout`], [`Rnn`] (LSTM or GRU: multi-layer, bidirectional, padded batches); the Transformer's [`MultiheadAttention`] (`nn.MultiheadAttention`'s parameters), [`LayerNorm`], [`Positions`] (sinusoidal or learned) |
//! | [`init`] | [`Init`]: Xavier-uniform + orthogonal + zero (default), or PyTorch's defaults |
//! | [`layers`] | [`Mode`]: `Train(&mut rng)` (dropout drawn from a seeded RNG) or `Eval` |
//! | [`optim`] | [`Optimizer`] with an [`Algorithm`]: SGD (momentum, Nesterov, weight decay), Adam, AdamW; clipping by global norm ([`grad_norm`], [`clip_scale`]) |
//! | [`schedule`] | [`Scheduler`] with a [`Schedule`]: constant, linear warm-up, warm-up + cosine, inverse square root, reduce-on-plateau |
//! | [`state_dict`], [`checkpoint`] | [`StateDict`] (weights by name, [`StateDict::average`] of several), [`Checkpoint`] (config, weights, optimizer, schedule, epoch, vocabularies), [`write_atomic`] |
//! | [`seq2seq`] | [`Seq2Seq`] and [`Seq2SeqConfig`]: the encoder–decoder with attention off (the bottleneck baseline, the default) or any `lingo-attention` scorer, in Luong's or Bahdanau's [`Placement`] |
//! | [`model`] | [`EncoderDecoder`]: what training, checkpoints and decoding need of a model (loss, `start`, `step`), implemented by [`Seq2Seq`] and [`Transformer`]; [`ModelConfig`], [`SelectRows`], [`Step`] |
//! | [`train`] | [`train_model`] (any [`EncoderDecoder`]) with a [`TrainConfig`]: epochs, validation, checkpoints (the last epochs' weights kept for averaging), early stopping, a NaN stop; [`train_model_with`] adds a call after each epoch, with its [`EpochReport`], that may stop training or end it at a later epoch ([`Next`]); training prints nothing (a progress bar on standard error in a terminal, [`Progress`]), the call is how a program shows progress; [`train_model_hooked`] with [`TrainHooks`] also hears every few steps ([`StepReport`]) |
//! | [`guided`] | guided alignment: [`alignment_loss`], the cross-entropy from gold links to attention, added to training's loss with weight `λ` by [`TrainConfig::guided_alignment`] ([`GuidedAlignment`]; [`training_loss`]) |
//! | [`control`] | [`RunControl`]: pause, resume or stop a run between its steps, from another thread |
//! | [`transformer`] | [`Transformer`] and [`TransformerConfig`]: the encoder–decoder of Vaswani et al. with `nn.Transformer`'s parameter names, post- or pre-norm, ReLU or GELU, tied embeddings, every layer's and head's attention out, and decoding with a key/value cache ([`Transformer::decode_step`]) |
//! | [`decode`] | [`greedy_decode`] and [`beam_search`] (batched; GNMT length and coverage penalties, a word reward, two stopping rules; n-best; any [`EncoderDecoder`]), both with attention; [`beam_search_traced`] with every candidate's fate ([`BeamTrace`]) |
//! | [`any`] | [`AnyModel`] and [`AnyConfig`]: a model of either kind chosen at run time, itself an [`EncoderDecoder`] |
//! | [`saliency`](mod@saliency) | [`saliency()`]: gradient × input of each output token on the source embeddings, rows normalized like attention's; [`gradient_times_input`] before normalizing; [`compare_saliency`] with the model's attention and gold alignments ([`SaliencyComparison`]) |
//! | [`translator`] | [`Translator`]: a model with its tokenizer and vocabularies, loaded from `model.ckpt`; sentences to [`Translation`]s (text, tokens, log-probabilities, n-best, attention); [`Translator::inspect`]: one sentence's translations, beam trace, unknown words and every attention map ([`Inspection`]) |
//! | [`inspect`] | [`SentenceAttention`]: one example's maps of each [`AttentionKind`], every layer and head ([`AnyModel::sentence_attention`]); [`AnyModel::explain`]: one [`Cell`]'s score worked through |
//! | [`export`] | [`Translator::export`] and [`Translator::import`]: a directory of `model.safetensors` (PyTorch's names and layouts) and `config.json` ([`ExportedConfig`]), which PyTorch reads and writes (`tools/lingo_torch.py`, `docs/interop.md`) |
//!
//! ## The translation model in five lines
//!
//! ```
//! use lingo_data::{LexiconReverse, Task};
//! use lingo_nn::{Progress, Seq2Seq, Seq2SeqConfig, TrainConfig, greedy_decode, train_model};
//! use rand::{SeedableRng, rngs::StdRng};
//!
//! let task = LexiconReverse::default();                       // translate word by word, then reverse
//! let mut rng = StdRng::seed_from_u64(0);
//! let (train, val) = (task.generate(256, &mut rng), task.generate(32, &mut rng));
//! let config = Seq2SeqConfig { attention: Some("dot".parse()?), ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len()) };
//! let mut model = Seq2Seq::new(config, &mut rng)?;
//! let result = train_model(&mut model, &train, &val, &TrainConfig { progress: Progress::Silent, ..TrainConfig::new(2, 5e-3) }, None)?;
//! assert!(result.val_losses[1] < result.val_losses[0]);
//! let batch = lingo_data::Batch::from_examples(&val[..2])?;
//! let outputs = greedy_decode(&model, &batch.src, &batch.src_lens, 10, true)?;
//! assert_eq!(outputs.len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Train, save, load, translate
//!
//! A [`Translator`] is a model with its tokenizer and vocabularies, all a
//! program needs to turn sentences into translations; `lingo train` writes
//! one as `model.ckpt`, and [`Translator::load`] reads it back.
//!
//! ```
//! use lingo_data::{LexiconReverse, Task, TextTokenizer, WordTokenizer};
//! use lingo_nn::{Progress, Transformer, TransformerConfig, TrainConfig, TranslateOptions, Translator, train_model};
//! use rand::{SeedableRng, rngs::StdRng};
//!
//! let task = LexiconReverse::default();                       // English words to Spanish, reversed
//! let (mut rng, (src_vocab, tgt_vocab)) = (StdRng::seed_from_u64(0), (task.src_vocab(), task.tgt_vocab()));
//! let (train, val) = (task.generate(2000, &mut rng), task.generate(32, &mut rng));
//! let config = TransformerConfig { d_model: 32, ff_dim: 64, ..TransformerConfig::new(src_vocab.len(), tgt_vocab.len()) };
//! let mut model = Transformer::new(config, &mut rng)?;
//! train_model(&mut model, &train, &val, &TrainConfig { progress: Progress::Silent, ..TrainConfig::new(8, 3e-3) }, None)?;
//!
//! let words = TextTokenizer::Word(WordTokenizer::lowercased());
//! let path = std::env::temp_dir().join(format!("lingo-nn-guide-{}.ckpt", std::process::id()));
//! Translator::new(model, words, src_vocab.clone(), tgt_vocab.clone())?.save(&path)?;
//! let translator = Translator::load(&path)?;
//! let out = translator.translate(&["The small dog sees a cat"], &TranslateOptions::default())?;
//! assert_eq!(out[0].text, "gato un ve perro pequeno el");  // word by word, reversed
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## A model is a tree of layers with one naming scheme
//!
//! Each layer is built with the *prefix* of its place in the model and
//! names its parameters as PyTorch's `state_dict()` does, so a lingo model
//! and the equivalent PyTorch model map one to one:
//!
//! ```
//! use lingo_nn::{Embedding, Init, Linear, Mode, Rnn, RnnConfig, RnnKind};
//! use lingo_tensor::Module;
//! use rand::{SeedableRng, rngs::StdRng};
//!
//! struct Tagger { embedding: Embedding, rnn: Rnn, out: Linear }
//! // Its parameters, in the stable order optimizers and checkpoints rely on.
//! lingo_tensor::module!(Tagger { embedding, rnn, out });
//!
//! let mut rng = StdRng::seed_from_u64(0);          // the seed fixes every weight
//! let init = Init::default();
//! let rnn = RnnConfig { bidirectional: true, ..RnnConfig::new(RnnKind::Lstm, 8, 16) };
//! let model = Tagger {
//!     embedding: Embedding::new("encoder.embedding", 20, 8, Some(0), init, &mut rng)?,
//!     rnn: Rnn::new("encoder.rnn", rnn, init, &mut rng)?,
//!     out: Linear::new("out", rnn.output_size(), 5, true, init, &mut rng)?,
//! };
//! let names: Vec<&str> = model.params().iter().map(|p| p.name()).collect();
//! assert_eq!(names[..3], ["encoder.embedding.weight", "encoder.rnn.weight_ih_l0", "encoder.rnn.weight_hh_l0"]);
//! assert_eq!(names[5], "encoder.rnn.weight_ih_l0_reverse");
//! assert_eq!(names[9..], ["out.weight", "out.bias"]);
//!
//! // src (batch, src_len) with <pad> = 0 -> logits (batch, src_len, 5)
//! let src = ndarray::arr2(&[[4_usize, 9, 7], [5, 6, 0]]);
//! let x = model.embedding.forward(src.view())?;                       // (2, 3, 8)
//! let enc = model.rnn.forward(&x, &[3, 2], None, Mode::Train(&mut rng))?;
//! let logits = model.out.forward(&enc.output)?;                       // (2, 3, 5)
//! assert_eq!(logits.shape(), &[2, 3, 5]);
//! # Ok::<(), lingo_nn::Error>(())
//! ```
//!
//! ## Training: loss, backward, clip, schedule, step
//!
//! ```
//! use lingo_nn::{Algorithm, Init, Linear, Optimizer, Schedule, Scheduler};
//! use lingo_tensor::{CrossEntropy, Tensor};
//! use rand::{SeedableRng, rngs::StdRng};
//!
//! let mut rng = StdRng::seed_from_u64(1);
//! let mut model = Linear::new("out", 4, 3, true, Init::default(), &mut rng)?;
//! let x = Tensor::randn(&[6, 4], 1.0, &mut rng)?;
//! let targets = [0, 1, 2, 0, 1, 2];
//! let mut opt = Optimizer::new(Algorithm::adamw(0.01), 0.1)?.with_max_grad_norm(1.0)?;
//! let mut sched = Scheduler::new(Schedule::LinearWarmup { warmup_steps: 5 }, 0.1)?;
//! let mut losses = Vec::new();
//! for _ in 0..50 {
//!     let loss = model.forward(&x)?.cross_entropy(&targets, CrossEntropy::default())?;
//!     losses.push(loss.item()?);
//!     let grads = loss.backward()?;
//!     drop(loss);                      // the graph is gone, so the update is in place
//!     opt.set_lr(sched.step());
//!     let stats = opt.step(&mut model, &grads)?;
//!     assert!(stats.clip_scale <= 1.0);
//! }
//! assert!(losses[49] < 0.5 * losses[0]);
//! # Ok::<(), lingo_nn::Error>(())
//! ```
//!
//! ## Saving and resuming
//!
//! A [`Checkpoint`] holds the weights, the optimizer and schedule state, the
//! position in training and both vocabularies, under any serde model
//! configuration type; [`Checkpoint::save`] writes it atomically behind a
//! magic header, a format version and a checksum, and [`Checkpoint::load`]
//! rejects truncated, corrupt, foreign and version-mismatched files with an
//! error naming the path (the [`checkpoint`] module documents the format).
//! [`Translator::export`] writes a trained model for other frameworks
//! instead: safetensors weights under PyTorch's names, and a JSON
//! configuration; [`Translator::import`] reads such a directory back,
//! whoever wrote it.
//!
//! ## Errors
//!
//! One enum, [`Error`]: tensor and data errors pass through, settings out of
//! range are [`Error::Config`], disagreements between a model and saved state
//! name the parameter ([`Error::Param`]), checkpoint problems name the file
//! ([`Error::Checkpoint`]), and so do problems of an exported directory
//! ([`Error::Export`]).
//!
//! ## Determinism
//!
//! Every random draw (initialisation, dropout) comes from an RNG the caller
//! passes; the same seed gives the same weights and the same masks.

#![warn(missing_docs)]

pub mod any;
pub mod checkpoint;
pub mod control;
pub mod decode;
mod error;
pub mod export;
pub mod guided;
pub mod init;
pub mod inspect;
pub mod layers;
pub mod model;
pub mod optim;
pub mod probe;
pub mod saliency;
pub mod schedule;
pub mod seq2seq;
pub mod state_dict;
pub mod train;
pub mod transformer;
pub mod translator;

pub use any::{AnyConfig, AnyContext, AnyModel, AnyState};
pub use checkpoint::{
    Checkpoint, FORMAT_VERSION, MAGIC, decode_bounded, fnv1a64, remove_stale_temp_files, write_atomic,
};
pub use control::RunControl;
pub use decode::{
    BeamConfig, BeamTrace, Candidate, Fate, Hypothesis, ROWS_PER_GROUP, Stopping, beam_search, beam_search_traced,
    greedy_decode,
};
pub use error::{CheckpointProblem, Error, ExportProblem, ParamProblem, Result};
pub use export::{ExportedConfig, Reference, ReferencePair};
pub use guided::{GuidedAlignment, alignment_loss};
pub use init::Init;
pub use inspect::{AttentionKind, Cell, SentenceAttention};
pub use layers::{
    Dropout, Embedding, HeadsOutput, LayerNorm, Linear, Mode, MultiheadAttention, PositionKind, Positions, Projected,
    Rnn, RnnConfig, RnnKind, RnnOutput, RnnState, sinusoidal_positions,
};
pub use model::{EncoderDecoder, ModelConfig, SelectRows, Step};
pub use optim::{Algorithm, Optimizer, ParamState, StepStats, clip_scale, grad_norm};
pub use probe::{Probe, ProbeScore, probe};
pub use saliency::{SaliencyComparison, compare_saliency, gradient_times_input, saliency};
pub use schedule::{Schedule, Scheduler};
pub use seq2seq::{DecoderContext, Encoded, Forward, Placement, Seq2Seq, Seq2SeqConfig, Seq2SeqState};
pub use state_dict::{NamedTensor, StateDict};
pub use train::{
    CheckpointSpec, EpochReport, Next, Progress, StepReport, TrainConfig, TrainHooks, TrainResult, TrainedModel,
    batch_gradients, evaluate, load_own, load_resumable, train_model, train_model_hooked, train_model_with,
    training_loss,
};
pub use transformer::{
    Activation, DecoderState, NormPosition, Transformer, TransformerConfig, TransformerContext, TransformerEncoded,
    TransformerForward, TransformerStep,
};
pub use translator::{Inspection, TranslateOptions, Translation, Translator, TranslatorConfig};
