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
//! the threads write their entries.
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
use lingo_tensor::Tensor;
use std::mem::MaybeUninit;

use ndarray::{
    Array3, ArrayBase, ArrayD, ArrayView1, ArrayView2, ArrayView3, ArrayViewMut1, ArrayViewMut2, Data, Ix2, Ix3, IxDyn,
    Zip, s,
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

/// A `(batch, len, width)` result left unwritten here: each batch entry is
/// written by the thread that computes it, by products that do not read it
/// (`gemm_uninit`), or zeroed through [`zeroed`] just before it is built up
/// there. Zeroing a whole result up front would run on the calling thread
/// while the others wait.
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

/// One view per batch entry of an optional per-entry buffer (an
/// [`unzeroed`] result or gradient, or what forward keeps for backward).
pub(crate) fn entries<T>(buf: &mut Option<Array3<T>>, batch: usize) -> Vec<Option<ArrayViewMut2<'_, T>>> {
    match buf {
        Some(a) => a.outer_iter_mut().map(Some).collect(),
        None => (0..batch).map(|_| None).collect(),
    }
}

/// A kernel's results while their batch entries are written (see the
/// [module docs](self)): the context `(B, T, d_context)`, the weights
/// `(B, T, S)`, with several heads each head's weights `(B, H·T, S)` (a
/// batch entry's heads one after another) and, when a backward pass will
/// run, the copy of them it reads.
pub(crate) struct Results {
    context: Array3<MaybeUninit<f32>>,
    weights: Array3<MaybeUninit<f32>>,
    heads: Option<Array3<MaybeUninit<f32>>>,
    saved: Option<Array3<MaybeUninit<f32>>>,
    n_heads: usize,
}

impl Results {
    /// Unwritten results for `heads` heads; `keep`: a backward pass will run.
    pub(crate) fn new((n_b, n_t, n_s): (usize, usize, usize), d_context: usize, heads: usize, keep: bool) -> Results {
        Results {
            context: unzeroed((n_b, n_t, d_context)),
            weights: unzeroed((n_b, n_t, n_s)),
            heads: (heads > 1).then(|| unzeroed((n_b, heads * n_t, n_s))),
            // Backward reads every head's weights, and the outputs own theirs,
            // so it keeps a copy, made entry by entry by the thread that computed
            // the entry while it is in cache.
            saved: keep.then(|| unzeroed((n_b, heads * n_t, n_s))),
            n_heads: heads,
        }
    }

    /// One [`Entry`] per batch entry, in order.
    pub(crate) fn entries(&mut self) -> Vec<Entry<'_>> {
        let n_b = self.context.dim().0;
        let n_heads = self.n_heads;
        self.context
            .outer_iter_mut()
            .zip(self.weights.outer_iter_mut())
            .zip(entries(&mut self.heads, n_b))
            .zip(entries(&mut self.saved, n_b))
            .map(|(((context, weights), heads), saved)| Entry { context, weights, heads, saved, n_heads })
            .collect()
    }

    /// The outputs (context, weights and, with several heads, the heads'
    /// weights `(B, H, T, S)`) and the copy kept for backward.
    ///
    /// # Safety
    ///
    /// [`Entry::finish`] must have run on every entry.
    pub(crate) unsafe fn finish(self) -> (Vec<ArrayD<f32>>, Option<Array3<f32>>) {
        // SAFETY: each entry's `finish` ran, and its contract is that every
        // element of the entry's context, weights, heads and copy is written.
        let (context, weights, heads, saved) = unsafe {
            let heads = self.heads.map(|h| h.assume_init());
            (self.context.assume_init(), self.weights.assume_init(), heads, self.saved.map(|s| s.assume_init()))
        };
        let mut outputs = vec![context.into_dyn(), weights.into_dyn()];
        if let Some(heads) = heads {
            let (n_b, rows, n_s) = heads.dim();
            let heads = heads.into_shape_with_order((n_b, self.n_heads, rows / self.n_heads, n_s));
            outputs.push(heads.expect("a fresh array").into_dyn());
        }
        (outputs, saved)
    }
}

/// One batch entry of [`Results`], written by the thread that computes it.
pub(crate) struct Entry<'a> {
    context: ArrayViewMut2<'a, MaybeUninit<f32>>,
    weights: ArrayViewMut2<'a, MaybeUninit<f32>>,
    heads: Option<ArrayViewMut2<'a, MaybeUninit<f32>>>,
    saved: Option<ArrayViewMut2<'a, MaybeUninit<f32>>>,
    n_heads: usize,
}

impl Entry<'_> {
    /// Where head `h` writes: its scores, then weights, `(T, S)` (its block
    /// of the heads' weights, or with one head the weights themselves), and
    /// its columns `cols` of the context `(T, ·)`.
    pub(crate) fn head(
        &mut self,
        h: usize,
        cols: std::ops::Range<usize>,
    ) -> (ArrayViewMut2<'_, MaybeUninit<f32>>, ArrayViewMut2<'_, MaybeUninit<f32>>) {
        let n_t = self.weights.nrows();
        let scores = match self.heads.as_mut() {
            Some(all) => all.slice_mut(s![h * n_t..(h + 1) * n_t, ..]),
            None => self.weights.view_mut(),
        };
        (scores, self.context.slice_mut(s![.., cols]))
    }

    /// With several heads the weights become their mean; the copy for
    /// backward is made.
    ///
    /// # Safety
    ///
    /// Every head's scores and every column of the context (see
    /// [`head`](Self::head)) must have been written.
    pub(crate) unsafe fn finish(self) {
        let Entry { weights, heads, saved, n_heads, .. } = self;
        let (heads, weights) = match heads {
            // SAFETY: the caller wrote every head's block (see above).
            Some(all) => {
                let all = unsafe { all.assume_init() };
                let mean = mean_over_heads(all.view(), weights, n_heads);
                (Some(all), mean)
            }
            // SAFETY: with one head, the caller wrote the weights themselves.
            None => (None, unsafe { weights.assume_init() }),
        };
        if let Some(mut saved) = saved {
            saved.zip_mut_with(heads.as_ref().unwrap_or(&weights), |s, &w| {
                s.write(w);
            });
        }
    }
}

/// `W̄ = (1/H) Σ_h W_h` into `mean (T, S)`, from `heads (H·T, S)`, head
/// after head; heads are added in order, so the bits are fixed.
fn mean_over_heads<'m>(
    all: ArrayView2<'_, f32>,
    mut mean: ArrayViewMut2<'m, MaybeUninit<f32>>,
    heads: usize,
) -> ArrayViewMut2<'m, f32> {
    let n_t = mean.nrows();
    Zip::from(&mut mean).and(all.slice(s![..n_t, ..])).for_each(|m, &w| {
        m.write(w);
    });
    // SAFETY: every element was written just above.
    let mut mean = unsafe { mean.assume_init() };
    for h in 1..heads {
        mean += &all.slice(s![h * n_t..(h + 1) * n_t, ..]);
    }
    let inv = 1.0 / heads as f32;
    mean.mapv_inplace(|m| m * inv);
    mean
}

/// The gradients of a kernel's inputs while their batch entries are
/// written: an [`unzeroed`] array for each input that needs one.
pub(crate) struct Grads(Vec<Option<Array3<MaybeUninit<f32>>>>);

impl Grads {
    /// For each input, its shape if it needs a gradient.
    pub(crate) fn new(shapes: impl IntoIterator<Item = Option<(usize, usize, usize)>>) -> Grads {
        Grads(shapes.into_iter().map(|dim| dim.map(unzeroed)).collect())
    }

    /// Per batch entry, one optional view per input, in input order.
    pub(crate) fn entries(&mut self, batch: usize) -> Vec<Vec<Option<ArrayViewMut2<'_, MaybeUninit<f32>>>>> {
        let mut per_input: Vec<_> = self.0.iter_mut().map(|g| entries(g, batch).into_iter()).collect();
        (0..batch).map(|_| per_input.iter_mut().map(|it| it.next().flatten()).collect()).collect()
    }

    /// The finished gradients, `None` for the inputs that needed none.
    ///
    /// # Safety
    ///
    /// Every element of every entry must have been written.
    pub(crate) unsafe fn finish(self) -> Vec<Option<ArrayD<f32>>> {
        // SAFETY: the caller wrote every entry whole (see above).
        self.0.into_iter().map(|g| g.map(|g| unsafe { g.assume_init() }.into_dyn())).collect()
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
