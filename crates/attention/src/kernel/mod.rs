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
//! names the results. [`Results`] and [`Grads`] hold them, unwritten, while
//! the threads write their entries (`lingo_kernels::fresh`: each block
//! written once, whole, and counted; nothing zeroed first).
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

use lingo_kernels::cpu;
use lingo_kernels::fresh::{Block, Fresh, Split};
use lingo_tensor::Tensor;

use ndarray::{
    Array3, ArrayBase, ArrayD, ArrayView1, ArrayView2, ArrayView3, ArrayViewMut1, ArrayViewMut2, Data, Ix2, Ix3, IxDyn,
};
use rayon::prelude::*;

use crate::output::AttentionOutput;

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
    a.view().into_dimensionality::<Ix3>().expect("shapes are checked before")
}

/// An array already checked to be 2-D, as a matrix.
pub(crate) fn checked2<S: Data<Elem = f32>>(a: &ArrayBase<S, IxDyn>) -> ArrayView2<'_, f32> {
    a.view().into_dimensionality::<Ix2>().expect("shapes are checked before")
}

/// A row of a standard-layout array as a slice.
pub(crate) fn slice(row: ArrayView1<'_, f32>) -> &[f32] {
    row.to_slice().expect("rows of standard-layout arrays are contiguous")
}

/// A row of a standard-layout array as a mutable slice.
pub(crate) fn slice_mut(row: ArrayViewMut1<'_, f32>) -> &mut [f32] {
    row.into_slice().expect("rows of standard-layout arrays are contiguous")
}

/// A standard-layout array's elements as one slice.
pub(crate) fn flat<S: Data<Elem = f32>>(a: &ArrayBase<S, IxDyn>) -> &[f32] {
    a.as_slice().expect("standard layout")
}

/// `len` floats of `scratch` as a `(rows, cols)` matrix.
pub(crate) fn scratch_matrix(scratch: &mut [f32], (rows, cols): (usize, usize)) -> ArrayViewMut2<'_, f32> {
    ArrayViewMut2::from_shape((rows, cols), &mut scratch[..rows * cols]).expect("sized above")
}

/// One item per batch entry from an optional per-entry buffer (the blocks
/// of a fresh result or gradient, the rows of what forward keeps for
/// backward), or `None` for each of `batch` entries when there is none.
pub(crate) fn per_entry<I: IntoIterator>(items: Option<I>, batch: usize) -> Vec<Option<I::Item>> {
    match items {
        Some(items) => items.into_iter().map(Some).collect(),
        None => (0..batch).map(|_| None).collect(),
    }
}

/// A kernel's results while their batch entries are written (see the
/// [module docs](self)): the context `(B, T, d_context)`, the weights
/// `(B, T, S)`, with several heads each head's weights `(B, H·T, S)` (a
/// batch entry's heads one after another) and, when a backward pass will
/// run, the copy of them it reads. Each is [`Fresh`]: written once, by the
/// thread that computes the entry, never zeroed first on this one.
pub(crate) struct Results {
    context: Fresh,
    weights: Fresh,
    heads: Option<Fresh>,
    saved: Option<Fresh>,
    n_heads: usize,
}

impl Results {
    /// Unwritten results for `heads` heads; `keep`: a backward pass will run.
    pub(crate) fn new((n_b, n_t, n_s): (usize, usize, usize), d_context: usize, heads: usize, keep: bool) -> Results {
        Results {
            context: Fresh::new((n_b, n_t, d_context)),
            weights: Fresh::new((n_b, n_t, n_s)),
            heads: (heads > 1).then(|| Fresh::new((n_b, heads * n_t, n_s))),
            // Backward reads every head's weights, and the outputs own theirs,
            // so it keeps a copy, made entry by entry by the thread that computed
            // the entry while it is in cache.
            saved: keep.then(|| Fresh::new((n_b, heads * n_t, n_s))),
            n_heads: heads,
        }
    }

    /// One [`Entry`] per batch entry, in order.
    pub(crate) fn entries(&mut self) -> Vec<Entry<'_>> {
        let n_b = self.context.dim().0;
        let n_heads = self.n_heads;
        self.context
            .blocks()
            .into_iter()
            .zip(self.weights.blocks())
            .zip(per_entry(self.heads.as_mut().map(Fresh::blocks), n_b))
            .zip(per_entry(self.saved.as_mut().map(Fresh::blocks), n_b))
            .map(|(((context, weights), heads), saved)| Entry { context, weights, heads, saved, n_heads })
            .collect()
    }

    /// The outputs (context, weights and, with several heads, the heads'
    /// weights `(B, H, T, S)`) and the copy kept for backward, once every
    /// entry is written.
    pub(crate) fn finish(self) -> (Vec<ArrayD<f32>>, Option<Array3<f32>>) {
        let mut outputs = vec![self.context.finish().into_dyn(), self.weights.finish().into_dyn()];
        if let Some(heads) = self.heads.map(Fresh::finish) {
            let (n_b, rows, n_s) = heads.dim();
            let heads = heads.into_shape_with_order((n_b, self.n_heads, rows / self.n_heads, n_s));
            outputs.push(heads.expect("a fresh array").into_dyn());
        }
        (outputs, self.saved.map(Fresh::finish))
    }
}

/// One batch entry of [`Results`], written by the thread that computes it.
pub(crate) struct Entry<'a> {
    context: Block<'a>,
    weights: Block<'a>,
    heads: Option<Block<'a>>,
    saved: Option<Block<'a>>,
    n_heads: usize,
}

/// Where head `h` of an entry writes: its scores, then weights, `(T, S)`
/// (its block of the heads' weights, or with one head the weights
/// themselves), and its columns of the context `(T, d_v)`.
pub(crate) struct Head<'a> {
    pub(crate) scores: Block<'a>,
    pub(crate) context: Block<'a>,
}

/// What an entry's heads feed as they finish, in order: the copy of
/// their weights for backward and, with several heads, the weights'
/// mean `W̄ = (1/H) Σ_h W_h`, summed head after head (so the bits are fixed).
pub(crate) struct Rest<'a> {
    mean: Mean<'a>,
    saved: Option<Split<'a>>,
    heads: usize,
}

/// The mean's state in [`Rest`]: none (one head), not begun, or the sum so far.
enum Mean<'a> {
    None,
    Unwritten(Block<'a>),
    Sum(ArrayViewMut2<'a, f32>),
}

impl<'a> Entry<'a> {
    /// The entry whole: every head's scores `(H·T, S)` (with one head, the
    /// weights themselves), the context `(T, H·d_v)`, and what the heads feed.
    pub(crate) fn whole(self) -> (Block<'a>, Block<'a>, Rest<'a>) {
        let (scores, mean) = match self.heads {
            Some(all) => (all, Mean::Unwritten(self.weights)),
            None => (self.weights, Mean::None),
        };
        let saved = self.saved.map(|s| s.split_rows(self.n_heads));
        (scores, self.context, Rest { mean, saved, heads: self.n_heads })
    }

    /// The entry cut into its heads, in order, and what they feed.
    pub(crate) fn split(self) -> (impl Iterator<Item = Head<'a>>, Rest<'a>) {
        let n_heads = self.n_heads;
        let (scores, context, rest) = self.whole();
        let heads = scores.split_rows(n_heads).zip(context.split_cols(n_heads));
        (heads.map(|(scores, context)| Head { scores, context }), rest)
    }
}

impl Rest<'_> {
    /// Takes the next head's weights `(T, S)`.
    pub(crate) fn head(&mut self, w: ArrayView2<'_, f32>) {
        if let Some(copy) = self.saved.as_mut().and_then(Iterator::next) {
            copy.copy(w);
        }
        self.mean = match std::mem::replace(&mut self.mean, Mean::None) {
            Mean::None => Mean::None,
            Mean::Unwritten(block) => Mean::Sum(block.copy(w)),
            Mean::Sum(mut sum) => {
                sum += &w;
                Mean::Sum(sum)
            }
        };
    }

    /// Scales the sum of the heads' weights to their mean.
    pub(crate) fn finish(self) {
        if let Mean::Sum(mut mean) = self.mean {
            let inv = 1.0 / self.heads as f32;
            mean.mapv_inplace(|m| m * inv);
        }
    }
}

/// The gradients of a kernel's inputs while their batch entries are
/// written: a [`Fresh`] array for each input that needs one.
pub(crate) struct Grads(Vec<Option<Fresh>>);

impl Grads {
    /// For each input, its shape if it needs a gradient.
    pub(crate) fn new(shapes: impl IntoIterator<Item = Option<(usize, usize, usize)>>) -> Grads {
        Grads(shapes.into_iter().map(|dim| dim.map(Fresh::new)).collect())
    }

    /// Per batch entry, one optional block per input, in input order.
    pub(crate) fn entries(&mut self, batch: usize) -> Vec<Vec<Option<Block<'_>>>> {
        let mut per_input: Vec<_> =
            self.0.iter_mut().map(|g| per_entry(g.as_mut().map(Fresh::blocks), batch).into_iter()).collect();
        (0..batch).map(|_| per_input.iter_mut().map(|it| it.next().flatten()).collect()).collect()
    }

    /// The finished gradients, `None` for the inputs that needed none.
    pub(crate) fn finish(self) -> Vec<Option<ArrayD<f32>>> {
        self.0.into_iter().map(|g| g.map(|g| g.finish().into_dyn())).collect()
    }
}

/// Runs `f(b, item, scratch)` for every batch entry `b`, with a scratch
/// buffer of `scratch_len` floats allocated once per thread (not per entry):
/// on rayon's pool when [`cpu::share`] says the batch is worth sharing
/// (at least [`cpu::ATTENTION_FLOPS`]), in order on this thread otherwise.
pub(crate) fn for_each_entry<I: Send>(
    items: Vec<I>,
    flops_per_entry: usize,
    scratch_len: usize,
    f: impl Fn(usize, I, &mut [f32]) + Send + Sync,
) {
    if items.len() > 1 && cpu::share(items.len() * flops_per_entry, cpu::ATTENTION_FLOPS) {
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
