//! The product as a plain loop: what every other path computes, faster.

use ndarray::{ArrayView2, ArrayViewMut2};

/// `C ← α·A·B + β·C`, one row of `C` at a time:
///
/// ```text
/// C[i, ·] = β·C[i, ·] + Σ_p (α·A[i, p])·B[p, ·]      (p = 0, 1, …, k-1 in order)
/// ```
///
/// `β = 0` overwrites `C`, NaN too, as BLAS does. One thread, any strides,
/// no packing; what [`gemm`](super::gemm) runs under
/// `LINGO_KERNELS=reference`, and what the tests hold every fast path to.
///
/// ```
/// use ndarray::{arr2, Array2};
/// let a = arr2(&[[1.0_f32, 2.0], [3.0, 4.0]]);
/// let mut c = Array2::<f32>::ones((2, 2));
/// lingo_kernels::gemm::reference::gemm(1.0, a.view(), a.t(), 1.0, c.view_mut());   // c = a·aᵀ + c
/// assert_eq!(c, arr2(&[[6.0, 12.0], [12.0, 26.0]]));
/// ```
pub fn gemm(alpha: f32, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, beta: f32, mut c: ArrayViewMut2<'_, f32>) {
    super::checked_dims(a, b, c.dim());
    for (a_i, mut c_i) in a.rows().into_iter().zip(c.rows_mut()) {
        c_i.mapv_inplace(|v| if beta == 0.0 { 0.0 } else { beta * v });
        for (&a_ip, b_p) in a_i.iter().zip(b.rows()) {
            c_i.scaled_add(alpha * a_ip, &b_p);
        }
    }
}
