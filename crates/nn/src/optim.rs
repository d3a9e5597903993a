//! Optimizers (SGD with momentum, Adam, AdamW) and gradient clipping by
//! global norm, with PyTorch's exact update equations.
//!
//! An [`Optimizer`] updates the parameters a [`Module`] lists, reading their
//! gradients from the [`Gradients`] of a backward pass. Its per-parameter
//! state is kept by parameter *name* (not by position or tensor identity), so
//! it survives a checkpoint round trip and fails loudly, naming the
//! parameter, when it does not fit the model it is applied to.
//!
//! The arithmetic follows PyTorch's single-tensor (`foreach=False`) kernels
//! operation by operation in `f32`, with hyperparameters kept as `f64` like
//! Python floats; `tests/nn/pytorch_parity.rs` checks three steps of each
//! algorithm against `torch.optim` to within `f32` rounding (PyTorch's
//! vectorized loops may fuse a multiply and an add where this code rounds twice).
//!
//! Clipping by global norm is a setting of the optimizer
//! ([`Optimizer::with_max_grad_norm`]) rather than a pass that rewrites the
//! gradients, because [`Gradients`] is read-only: the step multiplies each
//! gradient by [`clip_scale`] as it reads it, which is the same `f32`
//! product PyTorch's in-place `clip_grad_norm_` computes. The norm before
//! clipping comes back in [`StepStats`], and [`grad_norm`] computes it alone.
//!
//! One training step:
//!
//! ```
//! use lingo_nn::{Algorithm, Init, Linear, Optimizer};
//! use lingo_tensor::Tensor;
//! use rand::SeedableRng;
//! let mut rng = rand::rngs::StdRng::seed_from_u64(0);
//! let mut model = Linear::new("out", 3, 1, true, Init::default(), &mut rng).unwrap();
//! let mut opt = Optimizer::new(Algorithm::adam(), 1e-2).unwrap().with_max_grad_norm(1.0).unwrap();
//! let x = Tensor::randn(&[8, 3], 1.0, &mut rng).unwrap();
//! let mut losses = Vec::new();
//! for _ in 0..20 {
//!     let loss = model.forward(&x).unwrap().mul(&model.forward(&x).unwrap()).unwrap().mean_all(); // E[y²]
//!     losses.push(loss.item().unwrap());
//!     let grads = loss.backward().unwrap();
//!     drop(loss);                                  // free the graph: the update is then in place
//!     let stats = opt.step(&mut model, &grads).unwrap();
//!     assert!(stats.grad_norm.is_finite());
//! }
//! assert!(losses[19] < losses[0]);
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;

use lingo_kernels::cpu;
use lingo_kernels::optim::{self, Adam, Sgd};
use lingo_tensor::{Gradients, Module, Param};
use ndarray::ArrayD;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ParamProblem, Result, config, param};
use crate::state_dict::check_unique;

/// The update rule and its hyperparameters (Python-float precision, `f64`,
/// as PyTorch keeps them).
///
/// ```
/// use lingo_nn::Algorithm;
/// assert_eq!(Algorithm::adam(), Algorithm::Adam { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.0 });
/// assert_eq!(Algorithm::adamw(0.01).name(), "AdamW");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Algorithm {
    /// Stochastic gradient descent, PyTorch's `torch.optim.SGD`:
    ///
    /// ```text
    /// d = g + λ·θ
    /// b = d                            (first step)
    /// b = μ·b + (1 - τ)·d              (later steps)
    /// d = d + μ·b  if nesterov,  else  d = b          (only when μ ≠ 0)
    /// θ = θ - η·d
    /// ```
    Sgd {
        /// `μ`, 0 for plain SGD.
        momentum: f64,
        /// `τ`, usually 0.
        dampening: f64,
        /// Nesterov momentum (needs `μ > 0` and `τ = 0`).
        nesterov: bool,
        /// `λ`, L2 penalty added to the gradient.
        weight_decay: f64,
    },
    /// Adam (Kingma & Ba, 2015) with bias correction, PyTorch's `torch.optim.Adam`:
    ///
    /// ```text
    /// d = g + λ·θ
    /// m = β₁·m + (1 - β₁)·d            v = β₂·v + (1 - β₂)·d²
    /// θ = θ - (η / (1 - β₁ᵗ)) · m / (√v / √(1 - β₂ᵗ) + ε)
    /// ```
    Adam {
        /// `β₁`, decay of the first moment.
        beta1: f64,
        /// `β₂`, decay of the second moment.
        beta2: f64,
        /// `ε`, added to the denominator.
        eps: f64,
        /// `λ`, L2 penalty added to the gradient (coupled).
        weight_decay: f64,
    },
    /// AdamW (Loshchilov & Hutter, 2019), PyTorch's `torch.optim.AdamW`:
    /// Adam without the L2 term, and the weight decay applied to the
    /// parameter directly first, `θ = θ·(1 - η·λ)`.
    AdamW {
        /// `β₁`, decay of the first moment.
        beta1: f64,
        /// `β₂`, decay of the second moment.
        beta2: f64,
        /// `ε`, added to the denominator.
        eps: f64,
        /// `λ`, decoupled weight decay.
        weight_decay: f64,
    },
}

impl Algorithm {
    /// SGD with momentum `μ` (0 for plain SGD), no dampening, no weight decay.
    ///
    /// ```
    /// assert!(matches!(lingo_nn::Algorithm::sgd(0.9), lingo_nn::Algorithm::Sgd { momentum: 0.9, .. }));
    /// ```
    pub fn sgd(momentum: f64) -> Algorithm {
        Algorithm::Sgd { momentum, dampening: 0.0, nesterov: false, weight_decay: 0.0 }
    }

    /// Adam with PyTorch's defaults `β = (0.9, 0.999)`, `ε = 1e-8`, no weight decay.
    ///
    /// ```
    /// assert_eq!(lingo_nn::Algorithm::adam().name(), "Adam");
    /// ```
    pub fn adam() -> Algorithm {
        Algorithm::Adam { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.0 }
    }

    /// AdamW with PyTorch's default betas and `ε` and the given decay (PyTorch's default is 0.01).
    ///
    /// ```
    /// assert!(matches!(lingo_nn::Algorithm::adamw(0.01), lingo_nn::Algorithm::AdamW { weight_decay: 0.01, .. }));
    /// ```
    pub fn adamw(weight_decay: f64) -> Algorithm {
        Algorithm::AdamW { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay }
    }

    /// `"SGD"`, `"Adam"` or `"AdamW"`.
    ///
    /// ```
    /// assert_eq!(lingo_nn::Algorithm::sgd(0.0).name(), "SGD");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Algorithm::Sgd { .. } => "SGD",
            Algorithm::Adam { .. } => "Adam",
            Algorithm::AdamW { .. } => "AdamW",
        }
    }

    /// Rejects hyperparameters PyTorch would reject.
    fn validate(&self) -> Result<()> {
        let nonneg = |what: &'static str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(config(what, format!("must be finite and ≥ 0, got {v}")))
            }
        };
        let unit = |what: &'static str, v: f64| {
            if (0.0..1.0).contains(&v) { Ok(()) } else { Err(config(what, format!("must be in [0, 1), got {v}"))) }
        };
        match *self {
            Algorithm::Sgd { momentum, dampening, nesterov, weight_decay } => {
                nonneg("SGD momentum", momentum)?;
                nonneg("SGD dampening", dampening)?;
                nonneg("SGD weight_decay", weight_decay)?;
                if nesterov && (momentum <= 0.0 || dampening != 0.0) {
                    return Err(config("SGD nesterov", "needs momentum > 0 and zero dampening"));
                }
                Ok(())
            }
            Algorithm::Adam { beta1, beta2, eps, weight_decay }
            | Algorithm::AdamW { beta1, beta2, eps, weight_decay } => {
                unit("Adam beta1", beta1)?;
                unit("Adam beta2", beta2)?;
                nonneg("Adam eps", eps)?;
                nonneg("Adam weight_decay", weight_decay)
            }
        }
    }
}

/// What an optimizer remembers about one parameter (PyTorch's `optimizer.state[p]`).
///
/// ```
/// let s = lingo_nn::ParamState::Adam { step: 1, exp_avg: vec![0.1], exp_avg_sq: vec![0.001] };
/// assert!(matches!(s, lingo_nn::ParamState::Adam { step: 1, .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ParamState {
    /// SGD: the momentum buffer `b`, once momentum is used.
    Sgd {
        /// `b`, row-major, `None` without momentum.
        momentum_buffer: Option<Vec<f32>>,
    },
    /// Adam and AdamW: the step count and both moment estimates.
    Adam {
        /// `t`, the number of updates this parameter has had.
        step: u64,
        /// `m`, row-major.
        exp_avg: Vec<f32>,
        /// `v`, row-major.
        exp_avg_sq: Vec<f32>,
    },
}

/// What one [`Optimizer::step`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepStats {
    /// The global L2 norm of all gradients before clipping, `√(Σ_p ‖g_p‖²)`.
    pub grad_norm: f32,
    /// The factor the gradients were multiplied by (1 without clipping).
    pub clip_scale: f32,
    /// How many parameters had a gradient and were updated.
    pub updated: usize,
}

/// An optimizer: an [`Algorithm`], the current learning rate, optional
/// clipping by global norm, and per-parameter state by name. Serializable
/// as a whole for checkpoints.
///
/// ```
/// use lingo_nn::{Algorithm, Optimizer};
/// let mut opt = Optimizer::new(Algorithm::sgd(0.9), 0.1).unwrap();
/// opt.set_lr(0.05);                       // what a schedule does before each step
/// assert_eq!(opt.lr(), 0.05);
/// assert!(Optimizer::new(Algorithm::adam(), -1.0).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Optimizer {
    algorithm: Algorithm,
    lr: f64,
    max_grad_norm: Option<f64>,
    state: BTreeMap<String, ParamState>,
}

impl Optimizer {
    /// An optimizer with learning rate `lr ≥ 0` and no state yet.
    ///
    /// ```
    /// let opt = lingo_nn::Optimizer::new(lingo_nn::Algorithm::adamw(0.01), 1e-3).unwrap();
    /// assert_eq!(opt.algorithm().name(), "AdamW");
    /// ```
    pub fn new(algorithm: Algorithm, lr: f64) -> Result<Optimizer> {
        algorithm.validate()?;
        check_lr(lr)?;
        Ok(Optimizer { algorithm, lr, max_grad_norm: None, state: BTreeMap::new() })
    }

    /// Clips every step's gradients to a global L2 norm of at most
    /// `max_norm > 0` (PyTorch's `clip_grad_norm_` before `step`; see [`clip_scale`]).
    ///
    /// ```
    /// let opt = lingo_nn::Optimizer::new(lingo_nn::Algorithm::adam(), 1e-3).unwrap();
    /// assert_eq!(opt.clone().with_max_grad_norm(5.0).unwrap().max_grad_norm(), Some(5.0));
    /// assert!(opt.with_max_grad_norm(0.0).is_err());
    /// ```
    pub fn with_max_grad_norm(mut self, max_norm: f64) -> Result<Optimizer> {
        if !(max_norm.is_finite() && max_norm > 0.0) {
            return Err(config("max_grad_norm", format!("must be finite and > 0, got {max_norm}")));
        }
        self.max_grad_norm = Some(max_norm);
        Ok(self)
    }

    /// The clipping threshold, if any.
    ///
    /// ```
    /// assert_eq!(lingo_nn::Optimizer::new(lingo_nn::Algorithm::adam(), 1e-3).unwrap().max_grad_norm(), None);
    /// ```
    pub fn max_grad_norm(&self) -> Option<f64> {
        self.max_grad_norm
    }

    /// The update rule.
    ///
    /// ```
    /// let opt = lingo_nn::Optimizer::new(lingo_nn::Algorithm::sgd(0.0), 0.1).unwrap();
    /// assert_eq!(opt.algorithm(), &lingo_nn::Algorithm::sgd(0.0));
    /// ```
    pub fn algorithm(&self) -> &Algorithm {
        &self.algorithm
    }

    /// The learning rate the next step uses.
    ///
    /// ```
    /// assert_eq!(lingo_nn::Optimizer::new(lingo_nn::Algorithm::adam(), 2e-3).unwrap().lr(), 2e-3);
    /// ```
    pub fn lr(&self) -> f64 {
        self.lr
    }

    /// Sets the learning rate for the next steps (a schedule's job); a
    /// negative or non-finite rate makes the next [`Optimizer::step`] fail.
    ///
    /// ```
    /// let mut opt = lingo_nn::Optimizer::new(lingo_nn::Algorithm::adam(), 1e-3).unwrap();
    /// opt.set_lr(5e-4);
    /// assert_eq!(opt.lr(), 5e-4);
    /// ```
    pub fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }

    /// The state kept for the parameter called `name` (after its first update).
    ///
    /// ```
    /// let opt = lingo_nn::Optimizer::new(lingo_nn::Algorithm::adam(), 1e-3).unwrap();
    /// assert!(opt.param_state("out.weight").is_none());
    /// ```
    pub fn param_state(&self, name: &str) -> Option<&ParamState> {
        self.state.get(name)
    }

    /// Updates every parameter of `model` that has a gradient in `grads`
    /// (parameters without one are skipped and keep their state, as in
    /// PyTorch), after clipping the gradients if configured.
    ///
    /// Fails, changing nothing, when a gradient's shape or the saved state
    /// does not fit its parameter (naming it), when two parameters share a
    /// name, when the learning rate is invalid, or when a gradient holds NaN
    /// or infinity ([`Error::NonFiniteGradient`]).
    ///
    /// ```
    /// use lingo_nn::{Algorithm, Optimizer};
    /// use lingo_tensor::Param;
    /// struct W { w: Param }
    /// lingo_tensor::module!(W { w });
    /// let mut w = W { w: Param::new("w", ndarray::arr1(&[1.0_f32, -2.0]).into_dyn()) };
    /// let grads = w.w.tensor().sum_all().backward().unwrap();      // g = [1, 1]
    /// let mut sgd = Optimizer::new(Algorithm::sgd(0.0), 0.5).unwrap();
    /// let stats = sgd.step(&mut w, &grads).unwrap();
    /// assert_eq!(w.w.tensor().to_vec(), vec![0.5, -2.5]);         // θ - η·g
    /// assert!((stats.grad_norm - 2.0_f32.sqrt()).abs() < 1e-6);
    /// ```
    pub fn step(&mut self, model: &mut dyn Module, grads: &Gradients) -> Result<StepStats> {
        check_lr(self.lr)?;
        let params = model.params_mut();
        check_unique(params.iter().map(|p| p.name()))?;

        // 1. Gather gradients, check shapes, and find the global norm
        //    ‖g‖ = √(Σ_p Σ_i g_pi²), summed in f64.
        let mut found = Vec::with_capacity(params.len());
        let (mut sum_sq, mut first_bad) = (0.0_f64, None);
        for (i, p) in params.iter().enumerate() {
            let Some(g) = grads.get(p.tensor()) else { continue };
            if g.shape() != p.shape() {
                return Err(param(
                    p.name(),
                    ParamProblem::Shape { expected: p.shape().to_vec(), found: g.shape().to_vec() },
                ));
            }
            let s = sum_of_squares(g);
            if !s.is_finite() && first_bad.is_none() {
                first_bad = Some(i);
            }
            sum_sq += s;
            found.push((i, g));
        }
        let grad_norm = sum_sq.sqrt() as f32;
        if let Some(i) = first_bad {
            return Err(Error::NonFiniteGradient { name: params[i].name().to_owned(), norm: grad_norm });
        }
        let clip_scale = self.max_grad_norm.map_or(1.0, |max| clip_scale(grad_norm, max as f32));

        // 2. Check the saved state of every parameter before changing any.
        for &(i, g) in &found {
            self.check_state(params[i].name(), g.len())?;
        }

        // 3. Update. Each parameter's update reads and writes only its own
        // values and state, so they can run side by side (same bits): on
        // rayon's pool, unless this step is itself running on it.
        let (algorithm, lr) = (self.algorithm, self.lr);
        let mut wanted = found.iter().peekable();
        let mut work = Vec::with_capacity(found.len());
        for (i, p) in params.into_iter().enumerate() {
            if let Some(&(_, g)) = wanted.next_if(|(j, _)| *j == i) {
                let state = self.state.remove(p.name()).unwrap_or_else(|| initial_state(&algorithm, g.len()));
                work.push((p, g, state));
            }
        }
        let apply = |(p, g, state): &mut (&mut Param, &ArrayD<f32>, ParamState)| {
            // The gradient in row-major order, scaled as clip_grad_norm_ scales it in place.
            let g: Cow<'_, [f32]> = match g.as_slice() {
                Some(s) if clip_scale == 1.0 => Cow::Borrowed(s),
                _ => Cow::Owned(g.iter().map(|&v| v * clip_scale).collect()),
            };
            p.update(|theta| match theta.as_slice_mut() {
                Some(theta) => update(&algorithm, lr, state, theta, &g),
                None => {
                    // A parameter stored in a non-standard layout: update a row-major copy.
                    let mut flat: Vec<f32> = theta.iter().copied().collect();
                    update(&algorithm, lr, state, &mut flat, &g);
                    theta.iter_mut().zip(flat).for_each(|(t, v)| *t = v);
                }
            });
        };
        if cpu::share(work.len(), cpu::OPTIMIZER_PARAMS) {
            work.par_iter_mut().for_each(apply);
        } else {
            work.iter_mut().for_each(apply);
        }
        for (p, _, state) in work {
            self.state.insert(p.name().to_owned(), state);
        }
        Ok(StepStats { grad_norm, clip_scale, updated: found.len() })
    }

    /// Errors (naming the parameter) when saved state does not fit it.
    fn check_state(&self, name: &str, len: usize) -> Result<()> {
        let Some(state) = self.state.get(name) else { return Ok(()) };
        let (kind, stored) = match state {
            ParamState::Sgd { momentum_buffer } => ("SGD", momentum_buffer.as_ref().map_or(len, Vec::len)),
            ParamState::Adam { exp_avg, exp_avg_sq, .. } => {
                ("Adam", if exp_avg.len() == exp_avg_sq.len() { exp_avg.len() } else { usize::MAX })
            }
        };
        let expected_kind = if matches!(self.algorithm, Algorithm::Sgd { .. }) { "SGD" } else { "Adam" };
        if kind != expected_kind {
            return Err(param(name, ParamProblem::Algorithm { expected: self.algorithm.name(), found: kind }));
        }
        if stored != len {
            return Err(param(name, ParamProblem::Length { expected: len, found: stored }));
        }
        Ok(())
    }
}

/// Rejects a learning rate that is negative or not finite.
fn check_lr(lr: f64) -> Result<()> {
    if lr.is_finite() && lr >= 0.0 {
        Ok(())
    } else {
        Err(config("learning rate", format!("must be finite and ≥ 0, got {lr}")))
    }
}

/// The state a parameter starts with.
fn initial_state(algorithm: &Algorithm, len: usize) -> ParamState {
    match algorithm {
        Algorithm::Sgd { .. } => ParamState::Sgd { momentum_buffer: None },
        Algorithm::Adam { .. } | Algorithm::AdamW { .. } => {
            ParamState::Adam { step: 0, exp_avg: vec![0.0; len], exp_avg_sq: vec![0.0; len] }
        }
    }
}

/// One parameter's update, element by element in `f32` with `f64` scalars
/// rounded to `f32`, in the order PyTorch's single-tensor kernels compute it.
/// `state` was checked to fit by [`Optimizer::check_state`].
/// The loops are `lingo_kernels::optim`'s.
fn update(algorithm: &Algorithm, lr: f64, state: &mut ParamState, theta: &mut [f32], g: &[f32]) {
    match (*algorithm, state) {
        (Algorithm::Sgd { momentum, dampening, nesterov, weight_decay }, ParamState::Sgd { momentum_buffer }) => {
            optim::sgd(&Sgd { lr, momentum, dampening, nesterov, weight_decay }, momentum_buffer, theta, g);
        }
        (
            Algorithm::Adam { beta1, beta2, eps, weight_decay } | Algorithm::AdamW { beta1, beta2, eps, weight_decay },
            ParamState::Adam { step, exp_avg, exp_avg_sq },
        ) => {
            let decoupled = matches!(algorithm, Algorithm::AdamW { .. });
            *step += 1;
            let t = *step as f64;
            let bias_correction1 = 1.0 - beta1.powf(t); // 1 - β₁ᵗ
            let bias_correction2_sqrt = (1.0 - beta2.powf(t)).sqrt(); // √(1 - β₂ᵗ)
            let adam = Adam {
                decoupled,
                shrink: (decoupled && weight_decay != 0.0).then_some((1.0 - lr * weight_decay) as f32), // θ = θ(1 - ηλ)
                step_size: (lr / bias_correction1) as f32,
                w1: (1.0 - beta1) as f32,
                b2: beta2 as f32,
                w2: (1.0 - beta2) as f32,
                bc2: bias_correction2_sqrt as f32,
                eps: eps as f32,
                wd: weight_decay as f32,
            };
            optim::adam(&adam, theta, g, exp_avg, exp_avg_sq);
        }
        _ => unreachable!("check_state ran before update"),
    }
}

/// `Σ_i g_i²` in `f64`, in eight lanes.
fn sum_of_squares(g: &ArrayD<f32>) -> f64 {
    let flat: Cow<'_, [f32]> = g.as_slice().map_or_else(|| Cow::Owned(g.iter().copied().collect()), Cow::Borrowed);
    optim::sum_of_squares(&flat)
}

/// The global L2 norm of the gradients of `model`'s parameters,
/// `√(Σ_p Σ_i g_pi²)` (parameters without a gradient count as zero).
///
/// ```
/// use lingo_tensor::Param;
/// struct W { w: Param }
/// lingo_tensor::module!(W { w });
/// let w = W { w: Param::new("w", ndarray::ArrayD::zeros(vec![2])) };
/// let grads = w.w.tensor().mul_scalar(3.0).sum_all().backward().unwrap();  // g = [3, 3]
/// assert!((lingo_nn::grad_norm(&w, &grads) - 18.0_f32.sqrt()).abs() < 1e-6);
/// ```
pub fn grad_norm(model: &dyn Module, grads: &Gradients) -> f32 {
    let sum_sq: f64 = model.params().iter().filter_map(|p| grads.get(p.tensor())).map(sum_of_squares).sum();
    sum_sq.sqrt() as f32
}

/// The factor PyTorch's `clip_grad_norm_(max_norm)` multiplies every
/// gradient by: `min(1, max_norm / (‖g‖ + 10⁻⁶))`.
///
/// ```
/// assert_eq!(lingo_nn::clip_scale(0.5, 1.0), 1.0);                       // below the limit: unchanged
/// assert!((lingo_nn::clip_scale(10.0, 1.0) - 0.1).abs() < 1e-7);         // scaled to norm 1
/// ```
pub fn clip_scale(norm: f32, max_norm: f32) -> f32 {
    (max_norm / (norm + 1e-6)).min(1.0)
}
