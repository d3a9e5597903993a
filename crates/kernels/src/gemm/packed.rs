//! The one place that calls `matrixmultiply`: every product no other path takes.

use ndarray::{ArrayView2, ArrayViewMut2};

use super::out::Out;

/// One call of `matrixmultiply`'s packed kernel, on this thread.
///
/// # Safety
///
/// As for `gemm::product`: `c` must describe `(m, n)` elements that no
/// operand overlaps and no one else accesses, written ones unless `beta` is 0.
pub(super) unsafe fn gemm(alpha: f32, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, beta: f32, c: Out) {
    let ((m, k), n) = (a.dim(), b.ncols());
    let [rsa, csa] = [a.strides()[0], a.strides()[1]];
    let [rsb, csb] = [b.strides()[0], b.strides()[1]];
    let [rsc, csc] = c.strides;
    // SAFETY: `a` and `b` are views, so every element the kernel reads lies
    // inside them; `c` is as the caller promises, and `matrixmultiply`
    // documents that with β = 0 it does not read C.
    unsafe {
        matrixmultiply::sgemm(m, k, n, alpha, a.as_ptr(), rsa, csa, b.as_ptr(), rsb, csb, beta, c.ptr, rsc, csc);
    }
}

/// `c ← alpha·a·b + beta·c` by one plain call of `matrixmultiply`, on this
/// thread, whatever the sizes: the baseline the benchmarks hold lingo's own
/// paths against (`cargo bench -p lingo-kernels --bench gemm`).
///
/// ```
/// let a = ndarray::arr2(&[[1.0_f32, 2.0], [3.0, 4.0]]);
/// let mut c = ndarray::Array2::zeros((2, 2));
/// lingo_kernels::gemm::matrixmultiply(1.0, a.view(), a.t(), 0.0, c.view_mut());
/// assert_eq!(c, ndarray::arr2(&[[5.0, 11.0], [11.0, 25.0]]));
/// ```
pub fn matrixmultiply(
    alpha: f32,
    a: ArrayView2<'_, f32>,
    b: ArrayView2<'_, f32>,
    beta: f32,
    mut c: ArrayViewMut2<'_, f32>,
) {
    super::checked_dims(a, b, c.dim());
    // SAFETY: `c` is a unique view of written floats, so `Out` describes
    // memory the kernel may read and write and no operand aliases.
    unsafe { gemm(alpha, a, b, beta, Out::new(c.as_mut_ptr(), c.dim(), c.strides())) }
}
