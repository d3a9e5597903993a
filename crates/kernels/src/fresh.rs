//! Fresh results written once, without being zeroed first.
//!
//! A kernel that fills a new `(batch, rows, cols)` array entry by entry on
//! several threads would zero it first on the calling thread while the
//! others wait, only to overwrite every zero. [`Fresh`] hands the array out
//! as [`Block`]s instead: disjoint, each written whole exactly once by a
//! product ([`Block::gemm`]), a copy ([`Block::copy`]), a function of the
//! position ([`Block::fill_with`]) or zeros ([`Block::zeros`]), and each
//! write counted. [`Fresh::finish`] returns the floats only when the count
//! is the whole array, so no element is ever read unwritten, and the
//! kernels above need no `unsafe`.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

use ndarray::{Array3, ArrayView2, ArrayViewMut2, Axis};

/// A new `(batch, rows, cols)` array of `f32`, written through its
/// [`blocks`](Fresh::blocks) before it is read.
///
/// ```
/// use lingo_kernels::fresh::Fresh;
/// let a = ndarray::arr2(&[[1.0_f32, 2.0], [3.0, 4.0]]);
/// let mut out = Fresh::new((2, 2, 2));
/// for (b, block) in out.blocks().into_iter().enumerate() {
///     block.gemm(b as f32 + 1.0, a.view(), a.t()); // entry b = (b + 1)·a·aᵀ
/// }
/// let out = out.finish();
/// assert_eq!(out[[1, 0, 1]], 22.0);
/// ```
#[derive(Debug)]
pub struct Fresh {
    data: Array3<MaybeUninit<f32>>,
    /// Elements written, one count per batch entry: threads writing
    /// different entries do not contend for one counter.
    written: Vec<AtomicUsize>,
    handed_out: bool,
}

impl Fresh {
    /// An unwritten array of shape `dim`.
    ///
    /// ```
    /// assert_eq!(lingo_kernels::fresh::Fresh::new((2, 3, 4)).dim(), (2, 3, 4));
    /// ```
    pub fn new(dim: (usize, usize, usize)) -> Fresh {
        Fresh {
            data: Array3::uninit(dim),
            written: (0..dim.0).map(|_| AtomicUsize::new(0)).collect(),
            handed_out: false,
        }
    }

    /// The shape `(batch, rows, cols)`.
    ///
    /// ```
    /// assert_eq!(lingo_kernels::fresh::Fresh::new((1, 2, 3)).dim(), (1, 2, 3));
    /// ```
    pub fn dim(&self) -> (usize, usize, usize) {
        self.data.dim()
    }

    /// One block per batch entry, in order. Panics when called a second
    /// time: a second set of blocks could write an entry twice and leave
    /// another unwritten with the count still whole.
    ///
    /// ```
    /// let mut out = lingo_kernels::fresh::Fresh::new((3, 1, 2));
    /// assert_eq!(out.blocks().len(), 3);
    /// ```
    pub fn blocks(&mut self) -> Vec<Block<'_>> {
        assert!(!self.handed_out, "a fresh array's blocks are handed out once");
        self.handed_out = true;
        self.data.outer_iter_mut().zip(&self.written).map(|(view, count)| Block { view, written: count }).collect()
    }

    /// The written array. Panics unless every element was written: an
    /// unwritten element is a bug in the kernel, never a value to read.
    ///
    /// ```
    /// let mut out = lingo_kernels::fresh::Fresh::new((1, 2, 2));
    /// out.blocks().pop().unwrap().zeros();
    /// assert_eq!(out.finish().sum(), 0.0);
    /// ```
    pub fn finish(self) -> Array3<f32> {
        let written: usize = self.written.into_iter().map(AtomicUsize::into_inner).sum();
        assert_eq!(written, self.data.len(), "every element of a fresh array is written before it is read");
        // SAFETY: blocks are disjoint (cut from one `outer_iter_mut`, split by
        // `split_at`, handed out once), each counts its elements only as it
        // writes all of them, and consumes itself doing so; so a whole count
        // means every element was written.
        unsafe { self.data.assume_init() }
    }
}

/// A block of a [`Fresh`] array: written whole exactly once, which turns it
/// into a view of the floats written.
#[derive(Debug)]
pub struct Block<'a> {
    view: ArrayViewMut2<'a, MaybeUninit<f32>>,
    written: &'a AtomicUsize,
}

impl<'a> Block<'a> {
    /// The shape `(rows, cols)`.
    ///
    /// ```
    /// let mut out = lingo_kernels::fresh::Fresh::new((1, 2, 3));
    /// assert_eq!(out.blocks()[0].dim(), (2, 3));
    /// ```
    pub fn dim(&self) -> (usize, usize) {
        self.view.dim()
    }

    /// The block cut into `parts` blocks of equal rows, top to bottom
    /// (the heads of a `(heads·T, S)` entry).
    ///
    /// ```
    /// let mut out = lingo_kernels::fresh::Fresh::new((1, 4, 2));
    /// let parts: Vec<_> = out.blocks().pop().unwrap().split_rows(2).collect();
    /// assert_eq!(parts[1].dim(), (2, 2));
    /// ```
    pub fn split_rows(self, parts: usize) -> Split<'a> {
        Split::new(self, Axis(0), parts)
    }

    /// The block cut into `parts` blocks of equal columns, left to right
    /// (the heads' columns of a `(T, heads·d)` entry).
    ///
    /// ```
    /// let mut out = lingo_kernels::fresh::Fresh::new((1, 2, 6));
    /// let parts: Vec<_> = out.blocks().pop().unwrap().split_cols(3).collect();
    /// assert_eq!(parts[0].dim(), (2, 2));
    /// ```
    pub fn split_cols(self, parts: usize) -> Split<'a> {
        Split::new(self, Axis(1), parts)
    }

    /// `C = alpha · a · b` written into the block, with the bits of
    /// [`gemm`](crate::gemm()) with `β = 0` ([`gemm_uninit`](crate::gemm_uninit)).
    ///
    /// ```
    /// let a = ndarray::arr2(&[[1.0_f32, 2.0]]);
    /// let mut out = lingo_kernels::fresh::Fresh::new((1, 1, 1));
    /// assert_eq!(out.blocks().pop().unwrap().gemm(1.0, a.view(), a.t())[[0, 0]], 5.0);
    /// ```
    pub fn gemm(self, alpha: f32, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>) -> ArrayViewMut2<'a, f32> {
        let n = self.view.len();
        let c = crate::gemm_uninit(alpha, a, b, self.view);
        self.written.fetch_add(n, Ordering::Relaxed);
        c
    }

    /// The block set to zeros (to be built up by sums afterwards).
    ///
    /// ```
    /// let mut out = lingo_kernels::fresh::Fresh::new((1, 2, 2));
    /// assert_eq!(out.blocks().pop().unwrap().zeros().sum(), 0.0);
    /// ```
    pub fn zeros(mut self) -> ArrayViewMut2<'a, f32> {
        match self.view.as_slice_mut() {
            Some(all) => all.fill(MaybeUninit::new(0.0)), // one memset (ndarray's `fill` goes element by element)
            None => self.view.fill(MaybeUninit::new(0.0)),
        }
        self.written_whole()
    }

    /// A copy of `from`, of the block's shape.
    ///
    /// ```
    /// let from = ndarray::arr2(&[[1.0_f32, 2.0]]);
    /// let mut out = lingo_kernels::fresh::Fresh::new((1, 1, 2));
    /// assert_eq!(out.blocks().pop().unwrap().copy(from.view()), from);
    /// ```
    pub fn copy(mut self, from: ArrayView2<'_, f32>) -> ArrayViewMut2<'a, f32> {
        self.view.zip_mut_with(&from, |c, &f| {
            c.write(f);
        });
        self.written_whole()
    }

    /// Element `(row, col)` set to `f((row, col))`, row by row.
    ///
    /// ```
    /// let mut out = lingo_kernels::fresh::Fresh::new((1, 2, 2));
    /// let c = out.blocks().pop().unwrap().fill_with(|(r, c)| (10 * r + c) as f32);
    /// assert_eq!(c, ndarray::arr2(&[[0.0, 1.0], [10.0, 11.0]]));
    /// ```
    pub fn fill_with(mut self, mut f: impl FnMut((usize, usize)) -> f32) -> ArrayViewMut2<'a, f32> {
        for (r, mut row) in self.view.rows_mut().into_iter().enumerate() {
            row.iter_mut().enumerate().for_each(|(c, x)| {
                x.write(f((r, c)));
            });
        }
        self.written_whole()
    }

    /// Counts the block, every element of which the caller just wrote.
    fn written_whole(self) -> ArrayViewMut2<'a, f32> {
        self.written.fetch_add(self.view.len(), Ordering::Relaxed);
        // SAFETY: the caller wrote every element of the block.
        unsafe { self.view.assume_init() }
    }
}

/// The blocks [`Block::split_rows`] and [`Block::split_cols`] cut, in order,
/// each cut off the rest as it is asked for (nothing is allocated).
#[derive(Debug)]
pub struct Split<'a> {
    rest: Option<Block<'a>>,
    axis: Axis,
    step: usize,
    left: usize,
}

impl<'a> Split<'a> {
    fn new(block: Block<'a>, axis: Axis, parts: usize) -> Split<'a> {
        let len = block.view.len_of(axis);
        assert!(parts > 0 && len.is_multiple_of(parts), "{len} rows or columns do not split into {parts} equal blocks");
        Split { rest: Some(block), axis, step: len / parts, left: parts }
    }
}

impl<'a> Iterator for Split<'a> {
    type Item = Block<'a>;

    fn next(&mut self) -> Option<Block<'a>> {
        let Block { view, written } = self.rest.take()?;
        self.left -= 1;
        if self.left == 0 {
            return Some(Block { view, written });
        }
        let (block, rest) = view.split_at(self.axis, self.step);
        self.rest = Some(Block { view: rest, written });
        Some(Block { view: block, written })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "written before it is read")]
    fn an_unwritten_block_is_refused() {
        let mut out = Fresh::new((2, 2, 2));
        let mut blocks = out.blocks();
        blocks.pop().unwrap().zeros();
        drop(blocks);
        out.finish();
    }

    #[test]
    #[should_panic(expected = "handed out once")]
    fn blocks_are_handed_out_once() {
        let mut out = Fresh::new((2, 1, 1));
        out.blocks().pop().unwrap().zeros();
        out.blocks();
    }

    #[test]
    fn split_blocks_cover_the_array_and_products_match_gemm() {
        let a = ndarray::Array2::from_shape_fn((3, 5), |(i, j)| (i * 5 + j) as f32 * 0.25 - 1.0);
        let b = ndarray::Array2::from_shape_fn((5, 4), |(i, j)| (i + 2 * j) as f32 * 0.5 - 2.0);
        let mut out = Fresh::new((1, 3, 8));
        let mut halves = out.blocks().pop().unwrap().split_cols(2);
        halves.next().unwrap().gemm(2.0, a.view(), b.view());
        halves.next().unwrap().fill_with(|(r, c)| (r * 4 + c) as f32);
        let out = out.finish();
        let mut expected = ndarray::Array2::zeros((3, 4));
        crate::gemm(2.0, a.view(), b.view(), 0.0, expected.view_mut());
        assert_eq!(out.slice(ndarray::s![0, .., ..4]), expected);
        assert_eq!(out[[0, 2, 7]], 11.0);
    }
}
