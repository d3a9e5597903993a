//! Small products, and products of one or two rows, by two plain loops
//! that walk memory in order (see the [`gemm`](super) module docs).

use ndarray::{ArrayView2, ArrayViewMut2};

use crate::lanes;

/// The direct loops for small products (`Path::Direct`, which checked that
/// one of the two memory layouts they need is present).
pub(super) fn gemm(
    alpha: f32,
    a: ArrayView2<'_, f32>,
    b: ArrayView2<'_, f32>,
    beta: f32,
    mut c: ArrayViewMut2<'_, f32>,
) {
    let scale = |c: &mut [f32]| {
        if beta == 0.0 {
            c.fill(0.0); // β = 0 overwrites, even NaN, as BLAS does
        } else if beta != 1.0 {
            c.iter_mut().for_each(|v| *v *= beta);
        }
    };
    if b.strides()[1] == 1 && c.strides()[1] == 1 {
        // C[i, ·] = β·C[i, ·] + Σ_p (α·A[i, p])·B[p, ·]
        for (a_i, mut c_i) in a.rows().into_iter().zip(c.rows_mut()) {
            let c_i = c_i.as_slice_mut().expect("unit column stride");
            scale(c_i);
            for (&a_ip, b_p) in a_i.iter().zip(b.rows()) {
                let (s, b_p) = (alpha * a_ip, b_p.to_slice().expect("unit column stride"));
                c_i.iter_mut().zip(b_p).for_each(|(c, &b)| *c += s * b);
            }
        }
    } else {
        debug_assert!(a.strides()[1] == 1 && b.strides()[0] == 1, "Path::Direct checked one of the two layouts");
        // C[i, j] = β·C[i, j] + α·(A[i, ·] · B[·, j]): both operands read as contiguous slices
        for (a_i, mut c_i) in a.rows().into_iter().zip(c.rows_mut()) {
            let a_i = a_i.to_slice().expect("unit column stride");
            for (b_j, c_ij) in b.columns().into_iter().zip(c_i.iter_mut()) {
                let b_j = b_j.to_slice().expect("unit row stride");
                let dot = alpha * lanes::dot(a_i, b_j);
                *c_ij = if beta == 0.0 { dot } else { beta * *c_ij + dot };
            }
        }
    }
}
