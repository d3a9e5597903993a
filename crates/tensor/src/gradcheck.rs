//! A gradient checker: analytic gradients from [`Tensor::backward_with`]
//! against central finite differences; and [`check_fused`], a fused kernel
//! against its composed form.
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

/// Tolerances of [`check_fused`]: outputs must agree within `atol`, each
/// input's gradient within `rtol` times its largest entry (at least 1).
///
/// ```
/// assert_eq!(lingo_tensor::FusedCheck::default().atol, 1e-6);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusedCheck {
    /// Absolute tolerance on the outputs.
    pub atol: f32,
    /// Relative tolerance on the gradients.
    pub rtol: f32,
    /// Seed of the random output projections.
    pub seed: u64,
}

impl Default for FusedCheck {
    /// `atol = 1e-6`, `rtol = 1e-5`, seed 0: a fused kernel sums in another
    /// order than its composed form, so the last bits may differ.
    fn default() -> Self {
        FusedCheck { atol: 1e-6, rtol: 1e-5, seed: 0 }
    }
}

/// Checks a fused kernel against its composed form: `run(true, vars)` and
/// `run(false, vars)`, each on fresh variables holding `inputs`, must give
/// as many outputs, equal within `opts.atol`, and the same gradient of
/// `L = Σ_i Σ R_i ⊙ output_i` (fixed random `R_i`, so every output counts)
/// for every input.
///
/// Returns [`Error::FusedMismatch`] naming the first output or gradient
/// outside its tolerance.
///
/// ```
/// use lingo_tensor::{check_fused, FusedCheck, Tensor};
/// let x = ndarray::arr2(&[[0.5_f32, -1.0, 2.0]]).into_dyn();
/// // The fused softmax against the composed exp / sum.
/// let softmax = |fused: bool, v: &[Tensor]| -> lingo_tensor::Result<Vec<Tensor>> {
///     if fused {
///         return Ok(vec![v[0].softmax(1)?]);
///     }
///     let e = v[0].exp();
///     Ok(vec![e.div(&e.sum(&[1], true)?)?])
/// };
/// assert!(check_fused(softmax, &[x], FusedCheck::default()).is_ok());
/// ```
pub fn check_fused(
    run: impl Fn(bool, &[Tensor]) -> Result<Vec<Tensor>>,
    inputs: &[ArrayD<f32>],
    opts: FusedCheck,
) -> Result<()> {
    let vars = || inputs.iter().cloned().map(Tensor::variable).collect::<Vec<_>>();
    let (xf, xp) = (vars(), vars());
    let (fused, plain) = (run(true, &xf)?, run(false, &xp)?);
    let mismatch = |what: String, diff: f32, tolerance: f32| Error::FusedMismatch { what, diff, tolerance };
    if fused.len() != plain.len() {
        let counts = format!("the outputs' count ({} fused, {} composed)", fused.len(), plain.len());
        return Err(mismatch(counts, f32::NAN, 0.0));
    }
    for (i, (f, p)) in fused.iter().zip(&plain).enumerate() {
        if f.shape() != p.shape() {
            let (lhs, rhs) = (f.shape().to_vec(), p.shape().to_vec());
            return Err(Error::ShapeMismatch {
                op: "check_fused",
                lhs,
                rhs,
                why: format!("output {i}, fused and composed"),
            });
        }
        let diff = max_diff(f.data(), p.data());
        if diff.is_nan() || diff > opts.atol {
            return Err(mismatch(format!("output {i}"), diff, opts.atol));
        }
    }
    let mut rng = StdRng::seed_from_u64(opts.seed);
    let mut projections = Vec::with_capacity(plain.len());
    for out in &plain {
        projections.push(Tensor::rand_uniform(out.shape(), -1.0, 1.0, &mut rng)?);
    }
    let loss = |outs: &[Tensor]| -> Result<Tensor> {
        let mut total = Tensor::scalar(0.0);
        for (out, r) in outs.iter().zip(&projections) {
            total = total.add(&out.mul(r)?.sum_all())?;
        }
        Ok(total)
    };
    let (gf, gp) = (loss(&fused)?.backward()?, loss(&plain)?.backward()?);
    for (k, (f, p)) in xf.iter().zip(&xp).enumerate() {
        let zeros = || ArrayD::zeros(p.data().raw_dim());
        let (f, p) = (gf.get(f).cloned().unwrap_or_else(zeros), gp.get(p).cloned().unwrap_or_else(zeros));
        let tolerance = opts.rtol * p.iter().fold(1.0_f32, |m, g| m.max(g.abs()));
        let diff = max_diff(&f, &p);
        if diff.is_nan() || diff > tolerance {
            return Err(mismatch(format!("gradient of input {k}"), diff, tolerance));
        }
    }
    Ok(())
}

/// The largest `|a - b|`, NaN if either holds one.
fn max_diff(a: &ArrayD<f32>, b: &ArrayD<f32>) -> f32 {
    // Once NaN, the maximum stays NaN (`f32::max` would drop it).
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, |m, d| if d > m || d.is_nan() { d } else { m })
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

    /// So must the fused check: a fused square whose output is off by 1e-3,
    /// or whose backward is off by a factor of two, is caught, and so is a
    /// missing output; the correct one passes.
    #[test]
    fn a_fused_kernel_unlike_its_composed_form_is_caught() {
        let square = |factor: f32, shift: f32, outputs: usize| {
            move |fused: bool, t: &[Tensor]| -> Result<Vec<Tensor>> {
                let x = &t[0];
                if !fused {
                    return Ok(vec![x.mul(x)?; 2]);
                }
                let y = Tensor::from_op("square", x.data().mapv(|v| v * v + shift), vec![x.clone()], move |b| {
                    vec![Some(b.grad * &b.input(0).mapv(|v| factor * v))]
                });
                Ok(vec![y; outputs])
            }
        };
        let x = ndarray::arr1(&[0.5_f32, -1.5, 2.0]).into_dyn();
        let what = |run| match check_fused(run, std::slice::from_ref(&x), FusedCheck::default()) {
            Ok(()) => "none".to_owned(),
            Err(Error::FusedMismatch { what, .. }) => what,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(what(square(2.0, 0.0, 2)), "none");
        assert_eq!(what(square(2.0, 1e-3, 2)), "output 0");
        assert_eq!(what(square(1.0, 0.0, 2)), "gradient of input 0");
        assert_eq!(what(square(2.0, 0.0, 1)), "the outputs' count (1 fused, 2 composed)");
    }
}
