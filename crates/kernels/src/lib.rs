//! # lingo-kernels
//!
//! The fast inner loops under lingo, kept apart from the engine a student
//! reads (`lingo-tensor`): matrix products, vectorized activations, lane
//! reductions, and the few process-wide settings they need. The engine's
//! ops call them by name; everything here works on slices and 2-D views of
//! `f32`, and knows nothing of tensors or graphs.
//!
//! | module | what |
//! |---|---|
//! | [`gemm`](mod@gemm) | `C ← α·A·B + β·C` for views of any strides: direct loops, tiles and packed panels, threads for large products |
//! | [`math`] | `exp`, `σ`, `tanh` and `erf` as straight-line polynomials that vectorize |
//! | [`lanes`] | sums, maxima and dot products in eight lanes, in a fixed order |
//! | [`softmax`] | a row's softmax, and the masked one of the attention kernels, with its backward |
//! | [`cpu`] | which instructions this CPU has, and when work is worth sharing between threads |
//! | [`dropout`] | dropout masks from a counter-based hash |
//! | [`fresh`] | new results written block by block, once each, without zeroing them first |
//! | [`norm`] | layer normalization's rows, forward and backward |
//! | [`optim`] | SGD and Adam updates over a parameter's elements |
//! | [`memory`] | the allocator setting that keeps freed buffers for reuse |
//!
//! ## Fast and reference
//!
//! Every kernel has a plain reference version beside the fast one: a loop
//! written to be read, with the math in its doc comment
//! ([`gemm::reference::gemm`], [`math::Reference`], the running fold of
//! [`lanes`]). The fast versions run by default; `LINGO_KERNELS=reference`
//! runs every reference instead, for the whole process ([`Kernels`]), so
//! any lingo program can be run on the code a reader reads, and timed both
//! ways. The tests hold each fast kernel to its reference: bit for bit
//! where the operations are the same by construction (the dropout mask,
//! the optimizer updates, a slice kernel against its scalar function), to
//! a stated tolerance where the order of a sum or a polynomial differs.

//! ## Determinism
//!
//! Every kernel sums each result in one order that depends only on the
//! sizes, never on the thread count: a product split between threads is cut
//! by blocks of its result, never along the summed axis. The bits can
//! differ between CPUs (kernels are chosen at run time by the CPU's
//! features), between builds with and without the `avx512` feature, and
//! between the fast kernels and the references (their own fixed order,
//! on one thread).
//!
//! ## Features
//!
//! - `avx512` (default): `matrixmultiply` uses its AVX-512 kernel (16×16
//!   tiles) on CPUs that have it, its AVX2 one (8×8) otherwise. (On those
//!   CPUs lingo's own panel tiles take most products; `matrixmultiply` is
//!   left with results whose rows are not contiguous.) Turn it off
//!   (`default-features = false`) to use the AVX2 kernel everywhere; both
//!   were measured on these models' sizes (`docs/performance.md`, "Products
//!   and which GEMM kernel").

#![warn(missing_docs)]

pub mod cpu;
pub mod dropout;
pub mod fresh;
pub mod gemm;
pub mod lanes;
pub mod math;
pub mod memory;
pub mod norm;
pub mod optim;
pub mod softmax;
mod switch;

pub use gemm::{SMALL_MACS, gemm, gemm_new, gemm_uninit};
pub use switch::{Kernels, active, reference};
