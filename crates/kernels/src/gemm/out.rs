//! The result of a product as the blocked kernels see it.

/// The result `C` as the kernels see it: its first element, shape and
/// strides. They write through the pointer and, with `β = 0`, never read
/// an element before writing it, so it may address memory not yet written
/// ([`gemm_uninit`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Out {
    pub(crate) ptr: *mut f32,
    pub(crate) dim: (usize, usize),
    pub(crate) strides: [isize; 2],
    /// A row every row of `C` starts as, read in place of `C` by the first
    /// block along `k` (a linear layer's bias, `gemm_bias_new`); `None`:
    /// `C` itself. Only the panel tiles are given one.
    pub(crate) init: Option<*const f32>,
}

// SAFETY: an `Out` is only handed to other threads as disjoint blocks of
// one result (see `product`), each written by one thread; `init` is only read.
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

impl Out {
    pub(super) fn new(ptr: *mut f32, dim: (usize, usize), strides: &[isize]) -> Out {
        Out { ptr, dim, strides: [strides[0], strides[1]], init: None }
    }

    /// The same result, every row starting as `row` (`dim.1` floats).
    pub(super) fn starting_as(self, row: &[f32]) -> Out {
        debug_assert_eq!(row.len(), self.dim.1);
        Out { init: Some(row.as_ptr()), ..self }
    }

    /// Rows (`axis` 0) or columns (1) `range` of the result.
    pub(super) fn block(self, axis: usize, range: std::ops::Range<usize>) -> Out {
        let mut dim = self.dim;
        *(if axis == 0 { &mut dim.0 } else { &mut dim.1 }) = range.len();
        let ptr = self.ptr.wrapping_offset(range.start as isize * self.strides[axis]);
        let init = if axis == 1 { self.init.map(|row| row.wrapping_add(range.start)) } else { self.init };
        Out { ptr, dim, strides: self.strides, init }
    }
}
