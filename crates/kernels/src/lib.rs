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
//! | [`cpu`] | which instructions this CPU has, and when work is worth sharing between threads |
//! | [`memory`] | the allocator setting that keeps freed buffers for reuse |
//!
//! ## Determinism
//!
//! Every kernel sums each result in one order that depends only on the
//! sizes, never on the thread count: a product split between threads is cut
//! by blocks of its result, never along the summed axis. The bits can
//! differ between CPUs (kernels are chosen at run time by the CPU's
//! features) and between builds with and without the `avx512` feature.
//!
//! ## Features
//!
//! - `avx512` (default): `matrixmultiply` uses its AVX-512 kernel (16×16
//!   tiles) on CPUs that have it, its AVX2 one (8×8) otherwise. (On those
//!   CPUs lingo's own panel tiles take most products; `matrixmultiply` is
//!   left with results whose rows are not contiguous.) Turn it off
//!   (`default-features = false`) to use the AVX2 kernel everywhere; both
//!   were measured on these models' sizes (`docs/performance.md`, "Which
//!   GEMM kernel").

#![warn(missing_docs)]

pub mod cpu;
pub mod gemm;
pub mod lanes;
pub mod math;
pub mod memory;

pub use gemm::{SMALL_MACS, gemm, gemm_new, gemm_uninit};
