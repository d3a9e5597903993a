//! Optimizer updates over one parameter's elements, in the order PyTorch's
//! single-tensor kernels compute them: `f32` elements, `f64` scalars
//! rounded to `f32` once per step.
//!
//! The loops are plain element-wise arithmetic. The fast versions are the
//! same loops compiled for AVX2 when the CPU has it (8 lanes instead of 4):
//! the same IEEE operations (no fused multiply-adds), so the reference
//! versions give the same bits.

use crate::lanes;

/// SGD's settings for one step (PyTorch's names).
///
/// ```
/// let sgd = lingo_kernels::optim::Sgd { lr: 0.1, momentum: 0.0, dampening: 0.0, nesterov: false, weight_decay: 0.0 };
/// assert_eq!(sgd.lr, 0.1);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Sgd {
    /// The learning rate `η`.
    pub lr: f64,
    /// The momentum `μ`.
    pub momentum: f64,
    /// The dampening `τ`.
    pub dampening: f64,
    /// Nesterov's momentum.
    pub nesterov: bool,
    /// The weight decay `λ`.
    pub weight_decay: f64,
}

/// One SGD step over a parameter's elements `theta` with gradient `g`:
///
/// ```text
/// d = g + λθ;   b = d (first step) or μb + (1-τ)d;   d = d + μb (Nesterov) or b;   θ = θ - ηd
/// ```
///
/// (`b` only with momentum.) `momentum_buffer` is `b`, made on the first step.
///
/// ```
/// use lingo_kernels::optim::{Sgd, sgd};
/// let (mut theta, mut buffer) = (vec![1.0_f32, 2.0], None);
/// sgd(&Sgd { lr: 0.5, momentum: 0.0, dampening: 0.0, nesterov: false, weight_decay: 0.0 }, &mut buffer, &mut theta, &[1.0, -2.0]);
/// assert_eq!(theta, [0.5, 3.0]);
/// ```
pub fn sgd(c: &Sgd, momentum_buffer: &mut Option<Vec<f32>>, theta: &mut [f32], g: &[f32]) {
    let each = || {
        let (wd, mu) = (c.weight_decay as f32, c.momentum as f32);
        // d = g + λθ
        let mut d: Vec<f32> =
            g.iter().zip(theta.iter()).map(|(&g, &t)| if c.weight_decay != 0.0 { g + wd * t } else { g }).collect();
        if c.momentum != 0.0 {
            let buf = match momentum_buffer {
                None => momentum_buffer.insert(d.clone()), // b = d on the first step
                Some(b) => {
                    let keep = (1.0 - c.dampening) as f32;
                    b.iter_mut().zip(&d).for_each(|(b, &d)| *b = *b * mu + keep * d); // b = μb + (1-τ)d
                    b
                }
            };
            if c.nesterov {
                d.iter_mut().zip(buf.iter()).for_each(|(d, &b)| *d += mu * b); // d = d + μb
            } else {
                d.copy_from_slice(buf); // d = b
            }
        }
        let neg_lr = -c.lr as f32;
        theta.iter_mut().zip(&d).for_each(|(t, &d)| *t += neg_lr * d); // θ = θ - ηd
    };
    crate::math::vectorized(each);
}

/// Adam's (or AdamW's) scalars for one step, already rounded to `f32`.
///
/// ```
/// let adam = lingo_kernels::optim::Adam { decoupled: false, shrink: None, step_size: 1e-3, w1: 0.1, b2: 0.999, w2: 0.001, bc2: 0.0316, eps: 1e-8, wd: 0.0 };
/// assert!(adam.shrink.is_none());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Adam {
    /// AdamW's decoupled weight decay (`θ ← θ(1 - ηλ)` first) rather than Adam's `d = g + λθ`.
    pub decoupled: bool,
    /// AdamW's decay `1 - ηλ`, when there is one.
    pub shrink: Option<f32>,
    /// `η / (1 - β₁ᵗ)`.
    pub step_size: f32,
    /// `1 - β₁`.
    pub w1: f32,
    /// `β₂`.
    pub b2: f32,
    /// `1 - β₂`.
    pub w2: f32,
    /// `√(1 - β₂ᵗ)`.
    pub bc2: f32,
    /// `ε`.
    pub eps: f32,
    /// The weight decay `λ`.
    pub wd: f32,
}

/// One Adam step over a parameter's elements `theta`, with gradient `g`
/// and moments `exp_avg` (`m`) and `exp_avg_sq` (`v`):
///
/// ```text
/// d = g + λθ (Adam only);   m = β₁m + (1-β₁)d;   v = β₂v + (1-β₂)d²
/// θ = θ - η/(1-β₁ᵗ) · m / (√v / √(1-β₂ᵗ) + ε)
/// ```
///
/// The fast version is this loop compiled for AVX2, as a function of its
/// own: run through [`vectorized`](crate::math::vectorized), the closure
/// holding it was too large to be inlined into the AVX2 copy.
///
/// ```
/// use lingo_kernels::optim::{Adam, adam};
/// // η = 0.1, β₁ = 0.9, β₂ = 0.999, first step: η / (1 - β₁) = 1
/// let c = Adam { decoupled: false, shrink: None, step_size: 1.0, w1: 0.1, b2: 0.999, w2: 0.001, bc2: 0.001_f32.sqrt(), eps: 1e-8, wd: 0.0 };
/// let (mut theta, mut m, mut v) = (vec![1.0_f32], vec![0.0], vec![0.0]);
/// adam(&c, &mut theta, &[0.5], &mut m, &mut v);
/// assert!((theta[0] - 0.9).abs() < 1e-6); // the first step moves by η·sign(g)
/// ```
pub fn adam(c: &Adam, theta: &mut [f32], g: &[f32], exp_avg: &mut [f32], exp_avg_sq: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::avx2() && !crate::reference() {
        // SAFETY: the CPU has AVX2, checked on the line above.
        return unsafe { adam_avx2(c, theta, g, exp_avg, exp_avg_sq) };
    }
    adam_elements(c, theta, g, exp_avg, exp_avg_sq);
}

/// [`adam_elements`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn adam_avx2(c: &Adam, theta: &mut [f32], g: &[f32], exp_avg: &mut [f32], exp_avg_sq: &mut [f32]) {
    adam_elements(c, theta, g, exp_avg, exp_avg_sq);
}

#[inline(always)]
fn adam_elements(c: &Adam, theta: &mut [f32], g: &[f32], exp_avg: &mut [f32], exp_avg_sq: &mut [f32]) {
    if let Some(shrink) = c.shrink {
        theta.iter_mut().for_each(|t| *t *= shrink);
    }
    // Locals, so the loop-invariant tests leave the loop and it vectorizes.
    let (coupled_decay, Adam { step_size, w1, b2, w2, bc2, eps, wd, .. }) = (!c.decoupled && c.wd != 0.0, *c);
    for (((theta, &g), m), v) in theta.iter_mut().zip(g).zip(exp_avg.iter_mut()).zip(exp_avg_sq.iter_mut()) {
        let d = if coupled_decay { g + wd * *theta } else { g }; // d = g + λθ (Adam only)
        *m = lerp(*m, d, w1); // m = β₁m + (1-β₁)d
        *v = *v * b2 + w2 * d * d; // v = β₂v + (1-β₂)d²
        let denom = v.sqrt() / bc2 + eps; // √v / √(1-β₂ᵗ) + ε
        *theta += -step_size * *m / denom; // θ = θ - η/(1-β₁ᵗ) · m / denom
    }
}

/// PyTorch's `torch.lerp` on the CPU: `a + w·(b - a)`, computed from the
/// nearer end for accuracy. Adam's `m = β₁·m + (1-β₁)·g` is `lerp(m, g, 1-β₁)`.
#[inline(always)]
fn lerp(a: f32, b: f32, w: f32) -> f32 {
    if w.abs() < 0.5 { a + w * (b - a) } else { b - (b - a) * (1.0 - w) }
}

/// `Σ_i g_i²` in `f64`, in eight lanes ([`lanes`]): a gradient's squared norm.
///
/// ```
/// assert_eq!(lingo_kernels::optim::sum_of_squares(&[3.0, 4.0]), 25.0);
/// ```
pub fn sum_of_squares(g: &[f32]) -> f64 {
    crate::math::vectorized(|| lanes::fold(g, 0.0, |s, v| s + f64::from(v) * f64::from(v), |s, t| s + t))
}
