//! A gradient checker: analytic gradients from [`Tensor::backward_with`]
//! against central finite differences.
//!
//! For a function `f` with any output shape, a fixed random projection `w`
//! (seeded) makes a scalar `L(x) = Σ w ⊙ f(x)`, so every output element
//! matters and errors cannot cancel by symmetry. Then for each input element
//!
//! ```text
//! ∂L/∂x_i ≈ (L(x + ε e_i) - L(x - ε e_i)) / 2ε      (error O(ε²))
//! ```
//!
//! `L` is accumulated in `f64` from the `f32` outputs, so rounding in the sum
//! does not swamp the difference.

use ndarray::ArrayD;
use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::error::{Error, Result};
use crate::tensor::{Tensor, no_grad};

/// Step and tolerances of [`check_gradients`]. An analytic value `a` passes
/// against a numeric one `n` when `|a - n| ≤ atol + rtol · max(|a|, |n|)`.
///
/// ```
/// let opts = lingo_tensor::GradCheck { eps: 1e-3, ..Default::default() };
/// assert_eq!(opts.seed, 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradCheck {
    /// The finite-difference step `ε`.
    pub eps: f32,
    /// Absolute tolerance.
    pub atol: f32,
    /// Relative tolerance.
    pub rtol: f32,
    /// Seed of the random output projection.
    pub seed: u64,
}

impl Default for GradCheck {
    /// `ε = 1e-2` (f32 data: a smaller step loses more to rounding than it
    /// gains in truncation), `atol = 1e-3`, `rtol = 1e-2`, seed 0.
    fn default() -> Self {
        GradCheck { eps: 1e-2, atol: 1e-3, rtol: 1e-2, seed: 0 }
    }
}

/// What a passing check measured.
///
/// ```
/// # use lingo_tensor::{check_gradients, GradCheck};
/// let x = ndarray::arr1(&[0.5_f32, -1.0]).into_dyn();
/// let report = check_gradients(|t| Ok(t[0].tanh()), &[x], GradCheck::default()).unwrap();
/// assert_eq!(report.checked, 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradReport {
    /// How many input elements were checked.
    pub checked: usize,
    /// The largest `|analytic - numeric|` seen.
    pub max_abs_error: f32,
}

/// Checks the gradients of `f` with respect to each of `inputs`.
///
/// Returns [`Error::GradientMismatch`] at the first element outside the
/// tolerance, naming the input, the element and both values.
///
/// ```
/// use lingo_tensor::{check_gradients, GradCheck, Tensor};
/// let a = ndarray::arr2(&[[0.5_f32, -1.0], [2.0, 0.3]]).into_dyn();
/// let b = ndarray::arr2(&[[1.5_f32], [-0.7]]).into_dyn();
/// let report = check_gradients(|t| t[0].matmul(&t[1]), &[a, b], GradCheck::default()).unwrap();
/// assert_eq!(report.checked, 6);
/// ```
pub fn check_gradients(
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[ArrayD<f32>],
    opts: GradCheck,
) -> Result<GradReport> {
    let inputs: Vec<ArrayD<f32>> = inputs.iter().map(|a| a.as_standard_layout().into_owned()).collect();
    let vars: Vec<Tensor> = inputs.iter().cloned().map(Tensor::variable).collect();
    let out = f(&vars)?;
    let mut rng = StdRng::seed_from_u64(opts.seed);
    let projection = Tensor::rand_uniform(out.shape(), -1.0, 1.0, &mut rng)?.data().clone();
    let grads = out.backward_with(projection.clone())?;
    let loss = |xs: &[ArrayD<f32>]| -> Result<f64> {
        let consts: Vec<Tensor> = xs.iter().cloned().map(Tensor::new).collect();
        let y = no_grad(|| f(&consts))?;
        Ok(y.data().iter().zip(&projection).map(|(&y, &w)| f64::from(y) * f64::from(w)).sum())
    };
    let mut report = GradReport { checked: 0, max_abs_error: 0.0 };
    let mut probe = inputs.clone();
    for (k, var) in vars.iter().enumerate() {
        let analytic = grads.get(var).cloned().unwrap_or_else(|| ArrayD::zeros(var.data().raw_dim()));
        for (i, &a) in analytic.iter().enumerate() {
            let x = inputs[k].as_slice().expect("made standard above")[i];
            let (up, down) = (x + opts.eps, x - opts.eps);
            let slot = |p: &mut Vec<ArrayD<f32>>, v: f32| p[k].as_slice_mut().expect("standard layout")[i] = v;
            slot(&mut probe, up);
            let l_up = loss(&probe)?;
            slot(&mut probe, down);
            let l_down = loss(&probe)?;
            slot(&mut probe, x);
            // Divide by the step actually taken in f32, not the nominal 2ε.
            let numeric = ((l_up - l_down) / f64::from(up - down)) as f32;
            let err = (a - numeric).abs();
            // A NaN on either side is a failure too.
            if err.is_nan() || err > opts.atol + opts.rtol * a.abs().max(numeric.abs()) {
                return Err(Error::GradientMismatch { input: k, index: i, analytic: a, numeric });
            }
            report.checked += 1;
            report.max_abs_error = report.max_abs_error.max(err);
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checker must be able to fail: an op whose backward is off by a
    /// factor of two is caught, and its correct twin passes.
    #[test]
    fn a_wrong_backward_rule_is_caught() {
        let square = |factor: f32| {
            move |t: &[Tensor]| -> Result<Tensor> {
                let x = &t[0];
                Ok(Tensor::from_op("square", x.data().mapv(|v| v * v), vec![x.clone()], move |b| {
                    vec![Some(b.grad * &b.input(0).mapv(|v| factor * v))]
                }))
            }
        };
        let x = ndarray::arr1(&[0.5_f32, -1.5, 2.0]).into_dyn();
        assert!(check_gradients(square(2.0), std::slice::from_ref(&x), GradCheck::default()).is_ok());
        let err = check_gradients(square(1.0), &[x], GradCheck::default()).unwrap_err();
        assert!(matches!(err, Error::GradientMismatch { input: 0, index: 0, .. }), "{err}");
    }
}
