//! Layer normalization over the last axis (Ba et al., 2016), alone and
//! fused with the residual add that precedes it in a post-norm Transformer.
//!
//! For each row `x` of `d` features:
//!
//! ```text
//! μ = Σ x / d      σ² = Σ (x - μ)² / d      r = 1 / √(σ² + ε)
//! x̂ = (x - μ) · r                           y = γ ⊙ x̂ + β
//! ```
//!
//! Backward, with `g = dy ⊙ γ` (the gradient reaching `x̂`):
//!
//! ```text
//! dβ = Σ_rows dy      dγ = Σ_rows dy ⊙ x̂      dx = r · (g - mean(g) - x̂ · mean(g ⊙ x̂))
//! ```
//!
//! The last line is the chain rule through `μ` and `r`: shifting every `x`
//! by the same amount, or scaling it about `μ`, leaves `x̂` unchanged, so
//! `dx` has no component along either direction.

use ndarray::{ArrayD, IxDyn};

use crate::error::{Result, bad_arg, bad_shape, mismatch};
use crate::tensor::Tensor;

/// `x̂` and `r` of every row, kept from the forward pass for the backward.
struct Saved {
    /// `x̂`, row after row.
    x_hat: Vec<f32>,
    /// `r = 1 / √(σ² + ε)`, one per row.
    rstd: Vec<f32>,
}

/// Checks `γ`, `β` and `ε` against input `shape` and returns `d`, the size of the last axis.
fn check(op: &'static str, shape: &[usize], gamma: &Tensor, beta: &Tensor, eps: f32) -> Result<usize> {
    let Some(&d) = shape.last().filter(|&&d| d > 0) else {
        return Err(bad_shape(op, shape, "the last axis must exist and hold at least one feature"));
    };
    for (name, p) in [("gamma", gamma), ("beta", beta)] {
        if p.shape() != [d] {
            return Err(mismatch(op, p.shape(), &[d], format!("{name} must have one value per feature")));
        }
    }
    if !(eps > 0.0 && eps.is_finite()) {
        return Err(bad_arg(op, format!("eps must be positive and finite, got {eps}")));
    }
    Ok(d)
}

/// The forward pass over rows of `d` features: `y` row after row, and what
/// the backward needs. Mean and variance are summed in f64, so a row's
/// offset does not cost it precision.
fn normalize(x: &ArrayD<f32>, gamma: &[f32], beta: &[f32], eps: f32) -> (Vec<f32>, Saved) {
    let d = gamma.len();
    let x = x.as_standard_layout();
    let x = x.as_slice().expect("standard layout is contiguous");
    let (mut out, mut x_hat) = (vec![0.0; x.len()], vec![0.0; x.len()]);
    let mut rstd = Vec::with_capacity(x.len() / d);
    let block = ROWS_AT_ONCE * d;
    let whole = x.len() - x.len() % block;
    let ((x, rest), (y, y_rest), (xh, xh_rest)) =
        (x.split_at(whole), out.split_at_mut(whole), x_hat.split_at_mut(whole));
    for ((x, y), xh) in x.chunks_exact(block).zip(y.chunks_exact_mut(block)).zip(xh.chunks_exact_mut(block)) {
        normalize_rows::<ROWS_AT_ONCE>(x, (gamma, beta), eps, (y, xh), &mut rstd);
    }
    for ((x, y), xh) in rest.chunks_exact(d).zip(y_rest.chunks_exact_mut(d)).zip(xh_rest.chunks_exact_mut(d)) {
        normalize_rows::<1>(x, (gamma, beta), eps, (y, xh), &mut rstd);
    }
    (out, Saved { x_hat, rstd })
}

/// `R` rows of `x` into `y` and `x̂`, their `r` appended to `rstd`.
fn normalize_rows<const R: usize>(
    x: &[f32],
    (gamma, beta): (&[f32], &[f32]),
    eps: f32,
    (y, xh): (&mut [f32], &mut [f32]),
    rstd: &mut Vec<f32>,
) {
    let d = gamma.len();
    let rows: [&[f32]; R] = std::array::from_fn(|k| &x[k * d..(k + 1) * d]);
    let rows_out = y.chunks_exact_mut(d).zip(xh.chunks_exact_mut(d));
    for ((row, (mean, r)), (y, xh)) in rows.iter().zip(mean_rstd(rows, eps)).zip(rows_out) {
        for j in 0..d {
            xh[j] = ((f64::from(row[j]) - mean) * r) as f32;
            y[j] = gamma[j] * xh[j] + beta[j];
        }
        rstd.push(r as f32);
    }
}

/// Rows whose sums run side by side: each row is summed in its own order
/// (so its bits are those of a row alone), but one row's adds no longer
/// wait on another's.
const ROWS_AT_ONCE: usize = 4;

/// `μ` and `r = 1/√(σ² + ε)` of each of `R` rows, summed in f64 feature by feature.
fn mean_rstd<const R: usize>(rows: [&[f32]; R], eps: f32) -> [(f64, f64); R] {
    let d = rows[0].len();
    let mut sum = [0.0_f64; R];
    for j in 0..d {
        for (sum, row) in sum.iter_mut().zip(&rows) {
            *sum += f64::from(row[j]);
        }
    }
    let mean = sum.map(|s| s / d as f64);
    let mut squares = [0.0_f64; R];
    for j in 0..d {
        for ((square, row), mean) in squares.iter_mut().zip(&rows).zip(&mean) {
            *square += (f64::from(row[j]) - mean).powi(2);
        }
    }
    std::array::from_fn(|k| (mean[k], 1.0 / (squares[k] / d as f64 + f64::from(eps)).sqrt()))
}

/// The gradients `(dx, dγ, dβ)` of the rows, from `dy` and what the forward kept.
fn backward(grad: &ArrayD<f32>, gamma: &[f32], saved: &Saved) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let d = gamma.len();
    let grad = grad.as_standard_layout();
    let dy = grad.as_slice().expect("standard layout is contiguous");
    let (mut dx, mut dgamma, mut dbeta) = (vec![0.0; dy.len()], vec![0.0; d], vec![0.0; d]);
    let rows = dy.chunks_exact(d).zip(saved.x_hat.chunks_exact(d)).zip(dx.chunks_exact_mut(d));
    for (((dy, xh), dx), &r) in rows.zip(&saved.rstd) {
        let (mut mean_g, mut mean_gx) = (0.0, 0.0);
        for j in 0..d {
            dgamma[j] += dy[j] * xh[j];
            dbeta[j] += dy[j];
            let g = dy[j] * gamma[j];
            mean_g += g;
            mean_gx += g * xh[j];
        }
        let (mean_g, mean_gx) = (mean_g / d as f32, mean_gx / d as f32);
        for j in 0..d {
            dx[j] = r * (dy[j] * gamma[j] - mean_g - xh[j] * mean_gx);
        }
    }
    (dx, dgamma, dbeta)
}

/// The op both entry points record: normalizes `x` (the data of `inputs[0]`,
/// or of the sum of the first two inputs when `residual`) and hands `dx`
/// to each of them.
fn record(op: &'static str, x: &ArrayD<f32>, inputs: Vec<Tensor>, residual: bool, eps: f32) -> Tensor {
    let n = inputs.len();
    let gamma: Vec<f32> = inputs[n - 2].data().iter().copied().collect();
    let beta: Vec<f32> = inputs[n - 1].data().iter().copied().collect();
    let (out, saved) = normalize(x, &gamma, &beta, eps);
    let shape = x.raw_dim();
    let out = ArrayD::from_shape_vec(shape.clone(), out).expect("the input's element count");
    Tensor::from_op(op, out, inputs, move |b| {
        let (dx, dgamma, dbeta) = backward(b.grad, &gamma, &saved);
        let dx = ArrayD::from_shape_vec(shape.clone(), dx).expect("the input's element count");
        let d = IxDyn(&[gamma.len()]);
        let params = [
            b.needs(n - 2).then(|| ArrayD::from_shape_vec(d.clone(), dgamma).expect("d values")),
            b.needs(n - 1).then(|| ArrayD::from_shape_vec(d, dbeta).expect("d values")),
        ];
        let mut grads = vec![b.needs(0).then(|| dx.clone())];
        if residual {
            grads.push(b.needs(1).then_some(dx));
        }
        grads.extend(params);
        grads
    })
}

impl Tensor {
    /// Layer normalization over the last axis: each row of `d` features
    /// is shifted to mean 0 and scaled to variance 1 (with `ε` added to the
    /// variance), then scaled by `gamma (d)` and shifted by `beta (d)`: PyTorch's
    /// `F.layer_norm(x, (d,), gamma, beta, eps)`. Backward, with `g = dy ⊙ γ`:
    /// `dβ = Σ_rows dy`, `dγ = Σ_rows dy ⊙ x̂`, `dx = r·(g - mean(g) - x̂·mean(g ⊙ x̂))`
    /// with `r = 1/√(σ² + ε)`.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 10.0, 10.0, 40.0], &[2, 3]).unwrap();
    /// let (gamma, beta) = (Tensor::ones(&[3]), Tensor::zeros(&[3]));
    /// let y = x.layer_norm(&gamma, &beta, 1e-5).unwrap().to_vec();
    /// assert!((y[0] + 1.2247).abs() < 1e-3 && y[1].abs() < 1e-6);   // (-√1.5, 0, √1.5)
    /// assert!((y[3..].iter().sum::<f32>()).abs() < 1e-5);           // mean 0 in every row
    /// assert!(x.layer_norm(&Tensor::ones(&[2]), &beta, 1e-5).is_err());
    /// ```
    pub fn layer_norm(&self, gamma: &Tensor, beta: &Tensor, eps: f32) -> Result<Tensor> {
        check("layer_norm", self.shape(), gamma, beta, eps)?;
        Ok(record("layer_norm", self.data(), vec![self.clone(), gamma.clone(), beta.clone()], false, eps))
    }

    /// `(self + residual).layer_norm(gamma, beta, eps)` as one op: a
    /// post-norm Transformer's `LayerNorm(x + sublayer(x))`. The sum is
    /// never stored: the backward needs only `x̂` and `r`, and hands the
    /// same `dx` to both addends.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[1, 3]).unwrap();
    /// let sublayer = Tensor::from_vec(vec![0.5, -1.0, 4.0], &[1, 3]).unwrap();
    /// let (gamma, beta) = (Tensor::full(&[3], 2.0), Tensor::ones(&[3]));
    /// let fused = x.add_layer_norm(&sublayer, &gamma, &beta, 1e-5).unwrap();
    /// let composed = x.add(&sublayer).unwrap().layer_norm(&gamma, &beta, 1e-5).unwrap();
    /// assert_eq!(fused.to_vec(), composed.to_vec());
    /// assert!(x.add_layer_norm(&Tensor::ones(&[3]), &gamma, &beta, 1e-5).is_err());   // no broadcasting
    /// ```
    pub fn add_layer_norm(&self, residual: &Tensor, gamma: &Tensor, beta: &Tensor, eps: f32) -> Result<Tensor> {
        const OP: &str = "add_layer_norm";
        if self.shape() != residual.shape() {
            return Err(mismatch(OP, self.shape(), residual.shape(), "the two addends must have the same shape"));
        }
        check(OP, self.shape(), gamma, beta, eps)?;
        let sum = self.data() + residual.data();
        Ok(record(OP, &sum, vec![self.clone(), residual.clone(), gamma.clone(), beta.clone()], true, eps))
    }
}
