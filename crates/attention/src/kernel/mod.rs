//! The fused kernels: each scorer's score, masked softmax and weighted sum as
//! one autograd op with a hand-written backward ([`dot`] for the dot-product
//! family, [`additive`] for Bahdanau's score).
//!
//! # Results
//!
//! A kernel records its results with `Tensor::from_op_multi`: the context
//! `(batch, tgt_len, H·d_v)`, the weights `(batch, tgt_len, src_len)` and,
//! with several heads, every head's weights `(batch, heads, tgt_len,
//! src_len)`, whose mean the weights are. A head's `(T, S)` block of one
//! batch entry is contiguous, so the GEMM writes the scores straight into
//! it and the softmax runs over its rows as plain slices; [`unpack`] only
//! names the results. (Earlier the weights and the heads' weights were one
//! packed block per row, cut apart afterwards: two copies of the heads'
//! part on the calling thread, 20 MB at the benchmark's largest size.)
//!
//! # Threads
//!
//! Batch entries are independent: each is computed start to finish by one
//! thread (rayon, when the batch has enough work to share), into its own slice
//! of the output, so results are the same bits for any number of threads.
//! The only sum across entries (a shared parameter's gradient) is done after
//! the parallel part, in batch order.

pub(crate) mod additive;
pub(crate) mod bahdanau;
pub(crate) mod dot;

use lingo_tensor::Tensor;
use std::mem::MaybeUninit;

use ndarray::{Array3, ArrayBase, ArrayView3, ArrayViewMut2, Data, Ix3, IxDyn};
use rayon::prelude::*;

use crate::output::AttentionOutput;

/// Below this many FLOPs per batch (≈ 0.1 ms of work), handing entries to
/// other threads costs more than it saves.
const PARALLEL_MIN_FLOPS: usize = 1 << 20;

/// Names a kernel's results (see the [module docs](self)): the context,
/// the weights and, with several heads, the heads' weights.
pub(crate) fn unpack(results: Vec<Tensor>) -> AttentionOutput {
    let mut results = results.into_iter();
    let (Some(context), Some(weights)) = (results.next(), results.next()) else {
        unreachable!("kernels record the context and the weights")
    };
    AttentionOutput { context, weights, head_weights: results.next() }
}

/// A 3-D gradient of an output, or zeros of `dim` when no loss depends on it.
pub(crate) fn grad_or_zeros(
    grad: Option<&ndarray::ArrayD<f32>>,
    dim: (usize, usize, usize),
) -> std::borrow::Cow<'_, ndarray::ArrayD<f32>> {
    match grad {
        Some(g) => std::borrow::Cow::Borrowed(g),
        None => std::borrow::Cow::Owned(ndarray::ArrayD::zeros(IxDyn(&[dim.0, dim.1, dim.2]))),
    }
}

/// An array already checked to be 3-D (by a kernel's `check`; backward rules see the forward's shapes).
pub(crate) fn checked3<S: Data<Elem = f32>>(a: &ArrayBase<S, IxDyn>) -> ArrayView3<'_, f32> {
    a.view().into_dimensionality::<Ix3>().unwrap_or_else(|_| unreachable!("shapes are checked before"))
}

/// A `(batch, len, width)` result left unwritten here: each batch entry is
/// written by the thread that computes it, by products that do not read it
/// (`gemm_uninit`), or zeroed through [`zeroed`] just before it is built up
/// there. Zeroing a whole result up front ran on the calling thread while
/// the others waited (the four 1.6 MB results of `dot` at the middle
/// benchmark size, about a tenth of its time); zeroing entry by entry in the
/// workers still cost 5 % of `dot` at the largest size, and a product into
/// unwritten memory needs none.
pub(crate) fn unzeroed(dim: (usize, usize, usize)) -> Array3<MaybeUninit<f32>> {
    Array3::uninit(dim)
}

/// Zeroes one entry of an [`unzeroed`] result and hands it out as floats.
pub(crate) fn zeroed(mut entry: ArrayViewMut2<'_, MaybeUninit<f32>>) -> ArrayViewMut2<'_, f32> {
    match entry.as_slice_mut() {
        Some(all) => all.fill(MaybeUninit::new(0.0)), // one memset (ndarray's `fill` goes element by element)
        None => entry.fill(MaybeUninit::new(0.0)),
    }
    // SAFETY: every element was written on the line above.
    unsafe { entry.assume_init() }
}

/// An [`unzeroed`] result whose elements have all been written.
///
/// # Safety
///
/// Every element must have been written: the kernels write every element
/// of each entry (products through `gemm_uninit`, a copy) or pass it to
/// [`zeroed`] first, for each item of [`for_each_entry`], which visits them
/// all.
pub(crate) unsafe fn finished(result: Array3<MaybeUninit<f32>>) -> Array3<f32> {
    // SAFETY: the caller promises every element was written (see above).
    unsafe { result.assume_init() }
}

/// One view per batch entry of an optional per-entry buffer (an
/// [`unzeroed`] result or gradient, or what forward keeps for backward).
pub(crate) fn entries<T>(buf: &mut Option<Array3<T>>, batch: usize) -> Vec<Option<ArrayViewMut2<'_, T>>> {
    match buf {
        Some(a) => a.outer_iter_mut().map(Some).collect(),
        None => (0..batch).map(|_| None).collect(),
    }
}

/// Runs `f(b, item, scratch)` for every batch entry `b`, with a scratch
/// buffer of `scratch_len` floats allocated once per thread (not per entry):
/// on rayon's pool when the whole batch has at least [`PARALLEL_MIN_FLOPS`]
/// of work, in order on this thread otherwise.
///
/// Work already running on one of rayon's threads (several models trained
/// side by side, say) stays on it: the cores are busy, and splitting small
/// batches further only adds hand-offs (it made the side-by-side ablation
/// about 10 % slower).
pub(crate) fn for_each_entry<I: Send>(
    items: Vec<I>,
    flops_per_entry: usize,
    scratch_len: usize,
    f: impl Fn(usize, I, &mut [f32]) + Send + Sync,
) {
    let outermost = rayon::current_thread_index().is_none();
    if outermost && items.len() > 1 && items.len() * flops_per_entry >= PARALLEL_MIN_FLOPS {
        items
            .into_par_iter()
            .enumerate()
            .for_each_init(|| vec![0.0_f32; scratch_len], |scratch, (b, item)| f(b, item, scratch));
    } else {
        let mut scratch = vec![0.0_f32; scratch_len];
        for (b, item) in items.into_iter().enumerate() {
            f(b, item, &mut scratch);
        }
    }
}
