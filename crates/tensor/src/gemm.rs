//! The one place that calls `matrixmultiply`.
//!
//! `C ← α·A·B + β·C` for 2-D views of any strides. Because the kernel reads
//! strides, a transposed operand (`Aᵀ` is just `A` with its two strides
//! swapped) costs nothing: backward passes such as `dA = dC·Bᵀ` never copy.

use ndarray::{ArrayView2, ArrayViewMut2};

/// `c ← alpha · a · b + beta · c`, with `a: (m, k)`, `b: (k, n)`, `c: (m, n)`,
/// any strides (pass `b.t()` for `Bᵀ`: no copy is made).
///
/// This is the low-level kernel that ops and fused kernels call; it panics
/// if the shapes disagree, so public ops check shapes first and return an
/// error naming both.
///
/// ```
/// use ndarray::{arr2, Array2};
/// let a = arr2(&[[1.0_f32, 2.0], [3.0, 4.0]]);
/// let mut c = Array2::<f32>::ones((2, 2));
/// lingo_tensor::gemm(1.0, a.view(), a.t(), 1.0, c.view_mut());   // c = a·aᵀ + c
/// assert_eq!(c, arr2(&[[6.0, 12.0], [12.0, 26.0]]));
/// ```
pub fn gemm(alpha: f32, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, beta: f32, mut c: ArrayViewMut2<'_, f32>) {
    let (m, k) = a.dim();
    let (k2, n) = b.dim();
    assert!(k == k2 && c.dim() == (m, n), "gemm: (m, k) x (k, n) -> (m, n) violated: {:?} x {:?} -> {:?}", a.dim(), b.dim(), c.dim());
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        // A·B is the zero matrix; only the β·C part is left.
        c.mapv_inplace(|v| beta * v);
        return;
    }
    let [rsa, csa] = [a.strides()[0], a.strides()[1]];
    let [rsb, csb] = [b.strides()[0], b.strides()[1]];
    let [rsc, csc] = [c.strides()[0], c.strides()[1]];
    // SAFETY: the three pointers address the first element of views whose
    // extents (m, k), (k, n), (m, n) and strides come from ndarray itself, so
    // every element the kernel touches lies inside its view; `c` is a unique
    // mutable view, so it cannot alias `a` or `b`.
    unsafe {
        matrixmultiply::sgemm(m, k, n, alpha, a.as_ptr(), rsa, csa, b.as_ptr(), rsb, csb, beta, c.as_mut_ptr(), rsc, csc);
    }
}
