//! # lingo-tensor
//!
//! A small `f32` tensor with reverse-mode automatic differentiation, written
//! to be read. It is the engine under every lingo model, and the place to see
//! how backpropagation, and LSTM and GRU backpropagation through time, work.
//!
//! ## The whole idea in one example
//!
//! ```
//! use lingo_tensor::Tensor;
//! use ndarray::arr2;
//!
//! // y = tanh(x·W), loss = mean(y)
//! let x = Tensor::new(arr2(&[[1.0_f32, 2.0]]).into_dyn());             // (1, 2), a constant
//! let w = Tensor::variable(arr2(&[[0.1_f32], [-0.2]]).into_dyn());     // (2, 1), wants a gradient
//! let loss = x.matmul(&w).unwrap().tanh().mean_all();
//!
//! let grads = loss.backward().unwrap();
//! // dL/dW = xᵀ · (1 - tanh²(x·W)):  x·W = -0.3
//! let d = 1.0 - (-0.3_f32).tanh().powi(2);
//! let g = grads.get(&w).unwrap();
//! assert!((g[[0, 0]] - 1.0 * d).abs() < 1e-6);
//! assert!((g[[1, 0]] - 2.0 * d).abs() < 1e-6);
//! ```
//!
//! ## How it works
//!
//! * [`Tensor`] is a cheap handle to immutable data plus, for results of ops,
//!   the op's inputs and a *backward rule*: a closure mapping the gradient of
//!   the output to gradients of the inputs. Each op is written as its forward
//!   computation immediately followed by that rule (see `src/ops/`).
//! * [`Tensor::backward`] sorts the graph topologically once and walks it in
//!   reverse, summing gradients per [`TensorId`] in a [`Gradients`] store
//!   (see `src/backprop.rs`): a tensor read twice gets both contributions.
//! * [`no_grad`] switches recording off: ops then build no graph and keep no
//!   saved values, which is what decoding wants; [`enable_grad`] switches it
//!   back on for work that needs gradients, whatever its thread's scope.
//! * [`Param`] and [`Module`] give weights stable names and a stable order.
//! * Other crates add fused ops the same way, through [`Tensor::from_op`];
//!   the fast inner loops (products, vectorized activations, lane
//!   reductions) are [`lingo_kernels`]', called by name.
//!
//! ## Reading path
//!
//! The engine, the ops and the recurrent math, in the order to read them
//! (lines, with their docs; the tests keep these sizes within ten lines of
//! the files'):
//!
//! | # | file | lines | what |
//! |---|---|---|---|
//! | 1 | `src/tensor.rs` | 435 | the handle: data, identity, how it was made; recording on and off |
//! | 2 | `src/backprop.rs` | 243 | one topological sort, one walk backwards, the gradient store |
//! | 3 | `src/ops/mod.rs` | 63 | broadcasting, and summing a gradient back down its copies |
//! | 4 | `src/ops/elementwise.rs` | 279 | arithmetic and activations, each beside its derivative |
//! | 5 | `src/ops/reduce.rs` | 91 | sums and means |
//! | 6 | `src/ops/shape.rs` | 261 | reshape, permute, cat, narrow, split: gradients routed back |
//! | 7 | `src/ops/index.rs` | 117 | index_select, embedding, masked_fill: gradients scattered back |
//! | 8 | `src/ops/matmul.rs` | 172 | matmul and linear through `lingo_kernels::gemm` |
//! | 9 | `src/ops/softmax.rs` | 65 | softmax and log-softmax |
//! | 10 | `src/ops/norm.rs` | 98 | layer norm, its rows through `lingo_kernels::norm` (the plain one, composed from these ops, is lingo-nn's) |
//! | 11 | `src/ops/loss.rs` | 117 | cross-entropy over logits |
//! | 12 | `src/cells.rs` | 150 | the LSTM and GRU cells composed from ops |
//! | 13 | `src/fused/lstm.rs` | 313 | the LSTM sequence with its backward derived by hand |
//! | 14 | `src/fused/gru.rs` | 345 | the GRU sequence, likewise |
//! | 15 | `src/fused/mod.rs` | 217 | what both fused sequences share: padding, the input projection, the weight gradients |
//!
//! The fast inner loops these call by name (products, vectorized
//! activations, softmax rows, dropout masks) are [`lingo_kernels`]', each
//! beside its plain reference; `LINGO_KERNELS=reference` runs the references.
//!
//! Beside the path, each tested against what it stands for:
//!
//! | file | lines | what |
//! |---|---|---|
//! | `src/values.rs` | 195 | constructors (`zeros`, `from_vec`, `randn`, ...) and readers (`shape`, `to_vec`, `item`, ...) |
//! | `src/param.rs` | 399 | named parameters (with their weights packed for inference), [`Module`], [`module!`] |
//! | `src/ops/fused.rs` | 248 | compositions fused for speed: `linear_cross_entropy`, `add_layer_norm`, `select_cat` |
//! | `src/fused/layout.rs` | 272 | the fused sequences' argument checks, buffer layout and per-step products |
//! | `src/fused/tokens.rs` | 148 | token input to a first recurrent layer through a product table |
//! | `src/gradcheck.rs` | 276 | [`check_gradients`] and [`check_fused`] |
//! | `src/init.rs` | 195 | weight initialisers (Xavier, orthogonal), each from a seeded RNG |
//! | `src/error.rs` | 91 | [`Error`]: what an op reports when its arguments disagree |
//!
//! ## The ops
//!
//! | kind | ops |
//! |---|---|
//! | arithmetic (broadcasting) | [`add`](Tensor::add), [`sub`](Tensor::sub), [`mul`](Tensor::mul), [`div`](Tensor::div), [`neg`](Tensor::neg), [`add_scalar`](Tensor::add_scalar), [`mul_scalar`](Tensor::mul_scalar) |
//! | activations | [`exp`](Tensor::exp), [`log`](Tensor::log), [`tanh`](Tensor::tanh), [`sigmoid`](Tensor::sigmoid), [`relu`](Tensor::relu), [`gelu`](Tensor::gelu), [`gelu_tanh`](Tensor::gelu_tanh), [`softmax`](Tensor::softmax), [`log_softmax`](Tensor::log_softmax) |
//! | normalization | [`layer_norm`](Tensor::layer_norm) over the last axis, [`add_layer_norm`](Tensor::add_layer_norm) (the residual add and the norm as one op) |
//! | products | [`matmul`](Tensor::matmul) (plain and batched), [`linear`](Tensor::linear); all through [`lingo_kernels::gemm()`] |
//! | reductions | [`sum`](Tensor::sum), [`mean`](Tensor::mean), [`sum_all`](Tensor::sum_all), [`mean_all`](Tensor::mean_all) |
//! | shapes | [`reshape`](Tensor::reshape), [`unsqueeze`](Tensor::unsqueeze), [`permute`](Tensor::permute), [`transpose`](Tensor::transpose), [`cat`](Tensor::cat), [`stack`](Tensor::stack), [`narrow`](Tensor::narrow), [`split`](Tensor::split) |
//! | indexing | [`index_select`](Tensor::index_select), [`embedding`](Tensor::embedding), [`masked_fill`](Tensor::masked_fill) |
//! | training | [`dropout`](Tensor::dropout), [`cross_entropy`](Tensor::cross_entropy) (fused, `ignore_index`, label smoothing), [`linear_cross_entropy`](Tensor::linear_cross_entropy) (the output layer and the loss as one op: no logits for ignored rows, logits and their gradient one buffer) |
//! | recurrent (composed, read first) | [`lstm_cell`], [`gru_cell`] |
//! | recurrent (fused, hand-written backward) | [`fused::lstm_cell`], [`fused::lstm_sequence`], [`fused::gru_cell`], [`fused::gru_sequence`] |
//!
//! Every op's backward is checked against finite differences with
//! [`check_gradients`], and every fused op against its composed form with
//! [`check_fused`]; the recurrent ops are also checked against PyTorch.
//!
//! ## Errors
//!
//! Ops whose arguments can disagree return [`Result`]; a shape error names
//! both shapes ([`Error::ShapeMismatch`]). Ops that cannot fail (`exp`,
//! `tanh`, ...) return a [`Tensor`] directly.
//!
//! ## Determinism
//!
//! Every random choice takes an explicit RNG. Given the same inputs, the ops
//! compute the same bits on every run and for any number of threads: each
//! kernel sums every result in one order fixed by the sizes
//! ([`lingo_kernels`], "Determinism"), and no op reduces across threads.
//! The bits can differ between CPUs (kernels are chosen at run time by the
//! CPU's features).

#![warn(missing_docs)]

mod backprop;
mod cells;
mod error;
pub mod fused;
mod gradcheck;
pub mod init;
mod ops;
mod param;
mod tensor;
mod values;

pub use backprop::Gradients;
pub use cells::{RnnWeights, gru_cell, lstm_cell};
pub use error::{Error, Result};
pub use gradcheck::{FusedCheck, GradCheck, GradReport, check_fused, check_gradients};
pub use ops::CrossEntropy;
pub use param::{HasParams, Module, Param};
pub use tensor::{Backward, BackwardMulti, Tensor, TensorId, enable_grad, is_grad_enabled, no_grad, will_record};
