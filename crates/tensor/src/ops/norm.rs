//! Layer normalization over the last axis (Ba et al., 2016). (Fused with
//! the residual add before it, `add_layer_norm`, it is in `fused.rs`.)
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
//! `dx` has no component along either direction. The row loops are
//! [`lingo_kernels::norm`]'s.

use ndarray::{ArrayD, IxDyn};

use crate::error::{Result, bad_arg, bad_shape, mismatch};
use crate::tensor::Tensor;
use lingo_kernels::norm;

/// Checks `γ`, `β` and `ε` against input `shape` and returns `d`, the size of the last axis.
pub(super) fn check(op: &'static str, shape: &[usize], gamma: &Tensor, beta: &Tensor, eps: f32) -> Result<usize> {
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

/// The op `layer_norm` and `add_layer_norm` both record: normalizes `x`
/// (the data of `inputs[0]`, or of the sum of the first two inputs when
/// `residual`) and hands `dx` to each of them.
pub(super) fn record(op: &'static str, x: &ArrayD<f32>, inputs: Vec<Tensor>, residual: bool, eps: f32) -> Tensor {
    let n = inputs.len();
    let gamma: Vec<f32> = inputs[n - 2].data().iter().copied().collect();
    let beta: Vec<f32> = inputs[n - 1].data().iter().copied().collect();
    let x = x.as_standard_layout();
    let (mut out, mut x_hat) = (ArrayD::zeros(x.raw_dim()), vec![0.0; x.len()]);
    let (x_rows, y) = (x.as_slice().expect("standard layout"), out.as_slice_mut().expect("a fresh array"));
    let rstd = norm::forward(x_rows, (&gamma, &beta), eps, (y, &mut x_hat)); // kept: x̂ and r of every row
    let shape = x.raw_dim();
    Tensor::from_op(op, out, inputs, move |b| {
        let dy = b.grad.as_standard_layout();
        let (mut dx, mut dgamma, mut dbeta) =
            (ArrayD::zeros(shape.clone()), vec![0.0; gamma.len()], vec![0.0; gamma.len()]);
        let dx_rows = dx.as_slice_mut().expect("a fresh array");
        let dy = dy.as_slice().expect("standard layout");
        norm::backward(dy, &gamma, (&x_hat, &rstd), (dx_rows, &mut dgamma, &mut dbeta));
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
}
