//! Matrix products through [`gemm`](lingo_kernels::gemm()): plain, batched, and the
//! fused affine map of a linear layer.
//!
//! For `C = A·B` the backward rules are `dA = dC·Bᵀ` and `dB = Aᵀ·dC`; the
//! transposes are stride swaps, never copies.

use ndarray::{Array2, Array3, ArrayD, ArrayView3, ArrayViewD, Axis, CowArray, Ix2, Ix3};

use crate::error::{Result, bad_shape, mismatch};
use crate::tensor::Tensor;
use lingo_kernels::gemm::{Panels, gemm, gemm_bias_new, gemm_new, gemm_with_panels};

/// Views a 2-D or 3-D array as `(batch, rows, cols)`; a 2-D one has batch 1.
fn as_batched(a: &ArrayD<f32>) -> ArrayView3<'_, f32> {
    match a.ndim() {
        2 => a.view().into_dimensionality::<Ix2>().map(|m| m.insert_axis(Axis(0))),
        _ => a.view().into_dimensionality::<Ix3>(),
    }
    .expect("matmul checked the rank before viewing")
}

/// Each matrix of a batch transposed (a stride swap, no copy).
fn transposed(v: ArrayView3<'_, f32>) -> ArrayView3<'_, f32> {
    v.permuted_axes([0, 2, 1])
}

/// `out[i] (+)= op(a[i]) · op(b[i])` for every batch entry, where a batch of 1
/// is broadcast against the other operand; with `accumulate`, results are
/// summed into a single `out` matrix (used for the gradient of a shared `B`).
fn batched_gemm(a: ArrayView3<'_, f32>, b: ArrayView3<'_, f32>, out: &mut Array3<f32>, accumulate: bool) {
    let batch = a.len_of(Axis(0)).max(b.len_of(Axis(0)));
    for i in 0..batch {
        let ai = a.index_axis(Axis(0), i.min(a.len_of(Axis(0)) - 1));
        let bi = b.index_axis(Axis(0), i.min(b.len_of(Axis(0)) - 1));
        let (oi, beta) = if accumulate { (0, if i == 0 { 0.0 } else { 1.0 }) } else { (i, 0.0) };
        gemm(1.0, ai, bi, beta, out.index_axis_mut(Axis(0), oi));
    }
}

impl Tensor {
    /// Matrix product. Accepted shapes:
    /// `(m, k)·(k, n) → (m, n)`, `(b, m, k)·(b, k, n) → (b, m, n)` (batched)
    /// and `(b, m, k)·(k, n) → (b, m, n)` (one matrix applied to every entry).
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    /// let b = Tensor::from_vec(vec![1.0, 0.0, 0.0, 1.0], &[2, 2]).unwrap();
    /// assert_eq!(a.matmul(&b).unwrap().to_vec(), a.to_vec());
    /// let err = a.matmul(&Tensor::zeros(&[3, 1])).unwrap_err();
    /// assert!(err.to_string().contains("[2, 2] and [3, 1]"));
    /// ```
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        let (sa, sb) = (self.shape(), other.shape());
        let fail = |why: &str| mismatch("matmul", sa, sb, why);
        let (ra, rb) = (sa.len(), sb.len());
        if !matches!((ra, rb), (2, 2) | (3, 3) | (3, 2)) {
            return Err(fail("expected (m, k)·(k, n), (b, m, k)·(b, k, n) or (b, m, k)·(k, n)"));
        }
        if sa[ra - 1] != sb[rb - 2] {
            return Err(fail(&format!("inner sizes {} and {} differ", sa[ra - 1], sb[rb - 2])));
        }
        if ra == 3 && rb == 3 && sa[0] != sb[0] {
            return Err(fail(&format!("batch sizes {} and {} differ", sa[0], sb[0])));
        }
        let (a, b) = (as_batched(self.data()), as_batched(other.data()));
        let (batch, m, n) = (a.len_of(Axis(0)), a.len_of(Axis(1)), b.len_of(Axis(2)));
        let mut out = Array3::zeros((batch, m, n));
        batched_gemm(a, b, &mut out, false);
        let out = if ra == 2 { out.index_axis_move(Axis(0), 0).into_dyn() } else { out.into_dyn() };
        Ok(Tensor::from_op("matmul", out, vec![self.clone(), other.clone()], |bw| {
            let (a, b, g) = (as_batched(bw.input(0)), as_batched(bw.input(1)), as_batched(bw.grad));
            // dA = dC · Bᵀ  (one per batch entry)
            let da = bw.needs(0).then(|| {
                let mut da = Array3::zeros(a.raw_dim());
                batched_gemm(g, transposed(b), &mut da, false);
                da.into_shape_with_order(bw.input(0).shape()).expect("same element count").into_dyn()
            });
            // dB = Aᵀ · dC, summed over the batch when B was shared by all entries
            let db = bw.needs(1).then(|| {
                let shared = b.len_of(Axis(0)) == 1 && a.len_of(Axis(0)) > 1;
                let mut db = Array3::zeros(b.raw_dim());
                batched_gemm(transposed(a), g, &mut db, shared);
                db.into_shape_with_order(bw.input(1).shape()).expect("same element count").into_dyn()
            });
            vec![da, db]
        }))
    }

    /// The affine map of a linear layer, fused: `y = x·Wᵀ + b` with
    /// `x: (..., in)`, `weight: (out, in)` (PyTorch's layout) and
    /// `bias: (out)`; `y: (..., out)`. All leading axes of `x` are treated
    /// as one batch, so the whole thing is a single GEMM.
    ///
    /// Backward: `dx = dy·W`, `dW = dyᵀ·x`, `db = Σ_rows dy`.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let x = Tensor::from_vec(vec![1.0, 2.0], &[1, 2]).unwrap();
    /// let w = Tensor::from_vec(vec![1.0, 1.0, 0.0, -1.0, 2.0, 0.0], &[3, 2]).unwrap();
    /// let b = Tensor::from_vec(vec![0.5, 0.0, 0.0], &[3]).unwrap();
    /// assert_eq!(x.linear(&w, Some(&b)).unwrap().to_vec(), vec![3.5, -2.0, 2.0]);
    /// assert!(x.linear(&Tensor::zeros(&[3, 5]), None).is_err());
    /// ```
    pub fn linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        let out = affine(self, weight.data().view(), bias, None)?;
        let (rows, n_in, n_out) = (self.len() / weight.shape()[1].max(1), weight.shape()[1], weight.shape()[0]);
        let mut inputs = vec![self.clone(), weight.clone()];
        inputs.extend(bias.cloned());
        Ok(Tensor::from_op("linear", out, inputs, move |bw| {
            let x = flat_rows(bw.input(0), rows, n_in);
            let w = bw.input(1).view().into_dimensionality::<Ix2>().expect("rank checked before");
            let dy = flat_rows(bw.grad, rows, n_out);
            let dx = bw.needs(0).then(|| {
                let dx = gemm_new(1.0, dy.view(), w); // dx = dy·W
                dx.into_shape_with_order(bw.input(0).shape()).expect("same element count").into_dyn()
            });
            let dw = bw.needs(1).then(|| {
                gemm_new(1.0, dy.t(), x.view()).into_dyn() // dW = dyᵀ·x
            });
            let mut grads = vec![dx, dw];
            if bw.inputs.len() == 3 {
                grads.push(bw.needs(2).then(|| dy.sum_axis(Axis(0)).into_dyn())); // db = Σ dy
            }
            grads
        }))
    }
}

/// `y = x·Wᵀ + b`, the value of [`Tensor::linear`], checked. With `panels`,
/// asked for `Wᵀ` packed only when the product takes the panel path (a
/// parameter keeps its own for inference,
/// [`Param::linear`](crate::Param::linear)): the same bits.
pub(crate) fn affine<'p>(
    x: &Tensor,
    weight: ArrayViewD<'_, f32>,
    bias: Option<&Tensor>,
    panels: Option<&dyn Fn() -> Option<&'p Panels>>,
) -> Result<ArrayD<f32>> {
    let (sx, sw) = (x.shape(), weight.shape());
    if sw.len() != 2 || sx.is_empty() || sx[sx.len() - 1] != sw[1] {
        return Err(mismatch("linear", sx, sw, "expected x (..., in) and weight (out, in)"));
    }
    let (n_out, n_in) = (sw[0], sw[1]);
    if let Some(b) = bias.filter(|b| b.shape() != [n_out]) {
        return Err(mismatch("linear", sw, b.shape(), format!("bias must have shape [{n_out}]")));
    }
    let rows = x.len() / n_in.max(1);
    let x2 = flat_rows(x.data(), rows, n_in);
    let w = weight.into_dimensionality::<Ix2>().expect("rank checked before");
    let y = match (bias, panels) {
        // y = x·Wᵀ + b, each row
        (Some(b), panels) => {
            let b = b.data().as_standard_layout(); // a slice, not a walk over a dynamic-rank array
            gemm_bias_new(x2.view(), w.t(), || panels.and_then(|p| p()), b.as_slice().expect("standard layout"))
        }
        (None, None) => gemm_new(1.0, x2.view(), w.t()),
        (None, Some(panels)) => {
            let mut y = Array2::zeros((rows, n_out));
            gemm_with_panels(1.0, x2.view(), w.t(), panels, 0.0, y.view_mut());
            y
        }
    };
    let mut out_shape = sx.to_vec();
    *out_shape.last_mut().expect("a shape of rank at least 1") = n_out;
    y.into_shape_with_order(out_shape).map_err(|e| bad_shape("linear", sx, e.to_string()))
}

/// `a` seen as a `(rows, cols)` matrix, copied only if it is not contiguous.
fn flat_rows(a: &ArrayD<f32>, rows: usize, cols: usize) -> CowArray<'_, f32, Ix2> {
    a.as_standard_layout().into_shape_with_order((rows, cols)).expect("callers pass rows * cols == a.len()")
}
