//! The one place that calls `matrixmultiply`: every product no other path takes.

use ndarray::ArrayView2;

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
