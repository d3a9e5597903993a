//! `exp`, `σ`, `tanh`, `erf` and the activations built from them, on slices.
//!
//! Each function here is written once, generic over the [`Scalars`] it is
//! built from: [`Fast`], straight-line polynomials that the compiler
//! vectorizes, or [`Reference`], the standard library's functions. The
//! slice kernels ([`exp_slice`], [`gelu_slice`], ...) run the one the
//! [switch](crate::Kernels) chose.
//!
//! Why fast ones: in a recurrent step the GEMM is fast, and the five
//! transcendental functions per hidden unit (three `σ`, two `tanh` for an
//! LSTM) were most of the remaining time, because the standard library's
//! `expf` is a scalar call the compiler cannot turn into SIMD.
//!
//! The fast `eˣ` (Cephes' `expf`): write `x = n·ln 2 + r` with `n` the
//! nearest integer to `x / ln 2` and `|r| ≤ ln 2 / 2`; then `eˣ = 2ⁿ · eʳ`,
//! with `eʳ` from a degree-7 polynomial and `2ⁿ` built directly in the
//! float's exponent bits. Its relative error is about 2·10⁻⁷ (a couple of
//! ulps); the tests hold every fast function to its reference over the
//! whole range.

use crate::lanes;

/// The scalar functions every kernel of this module is built from.
///
/// ```
/// use lingo_kernels::math::{Fast, Reference, Scalars};
/// assert!((Fast::exp(1.0) - Reference::exp(1.0)).abs() < 1e-6);
/// assert_eq!(Reference::sigmoid(0.0), 0.5);
/// ```
pub trait Scalars {
    /// `eˣ`.
    fn exp(x: f32) -> f32;
    /// `tanh x`.
    fn tanh(x: f32) -> f32;
    /// `erf x = 2/√π ∫₀ˣ e^{-t²} dt`.
    fn erf(x: f32) -> f32;
    /// `σ(x) = 1 / (1 + e⁻ˣ)`.
    #[inline(always)]
    fn sigmoid(x: f32) -> f32 {
        1.0 / (1.0 + Self::exp(-x))
    }
}

/// Straight-line polynomials: no calls, no branches, so loops of them vectorize.
///
/// ```
/// use lingo_kernels::math::{Fast, Scalars};
/// assert_eq!(Fast::tanh(0.0), 0.0);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Fast;

impl Scalars for Fast {
    /// `eˣ` accurate to a couple of ulps; inputs are clamped to `[-87.3, 88.7]`
    /// (results below the smallest normal float are returned as about `1e-38`).
    #[inline(always)]
    fn exp(x: f32) -> f32 {
        const LOG2E: f32 = std::f32::consts::LOG2_E;
        // ln 2 split in two so n·ln2 is exact in the first part.
        const LN2_HI: f32 = 0.693_359_4;
        const LN2_LO: f32 = -2.121_944_4e-4;
        // Adding and subtracting 1.5·2²³ rounds to the nearest integer with plain adds.
        const ROUND: f32 = 12_582_912.0;
        let x = x.clamp(-87.3, 88.7);
        let shifted = x * LOG2E + ROUND;
        let n = shifted - ROUND;
        let r = x - n * LN2_HI - n * LN2_LO;
        let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
            + 1.666_666_5e-1)
            * r
            + 0.5;
        let e_r = p * r * r + r + 1.0;
        // 2ⁿ, built in the exponent field. `n` as an integer is read from the bits
        // of `shifted` (its low mantissa bits hold ROUND + n), because a float to
        // int `as` cast saturates and would not vectorize.
        let n_int = shifted.to_bits().wrapping_sub(ROUND.to_bits());
        let two_n = f32::from_bits(n_int.wrapping_add(127) << 23);
        e_r * two_n
    }

    /// `tanh(x) = sign(x) · (1 - e) / (1 + e)` with `e = e^{-2|x|} ≤ 1`, which
    /// cannot overflow.
    #[inline(always)]
    fn tanh(x: f32) -> f32 {
        let e = Fast::exp(-2.0 * x.abs());
        ((1.0 - e) / (1.0 + e)).copysign(x)
    }

    /// `erf(x) = sign(x) · (1 - erfc(|x|))`, with `erfc(z) ≈ t · e^{-z² + P(t)}`,
    /// `t = 1 / (1 + z/2)` and `P` a degree-9 polynomial fitted to a relative
    /// error below 1.2·10⁻⁷ for every `z ≥ 0` (Press et al., *Numerical
    /// Recipes*, 2nd ed., §6.2); with f32 rounding, within 5·10⁻⁷ of the
    /// true value everywhere.
    #[inline(always)]
    fn erf(x: f32) -> f32 {
        let z = x.abs();
        let t = 1.0 / (1.0 + 0.5 * z);
        let p = -1.265_512_2
            + t * (1.000_023_7
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_204 + t * (1.488_515_9 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
        (1.0 - t * Fast::exp(-z * z + p)).copysign(x)
    }
}

/// The standard library's `exp` and `tanh`, and `erf` summed from its
/// series in `f64`: slow, and plainly right.
///
/// ```
/// use lingo_kernels::math::{Reference, Scalars};
/// assert!((Reference::erf(1.0) - 0.842_700_8).abs() < 1e-7);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Reference;

impl Scalars for Reference {
    fn exp(x: f32) -> f32 {
        x.exp()
    }

    fn tanh(x: f32) -> f32 {
        x.tanh()
    }

    /// `erf x = 2/√π · Σ_n (-1)ⁿ x^{2n+1} / (n! (2n+1))` for `|x| < 3` (the
    /// terms stay below 10³, and f64 keeps 1e-13), and beyond it
    /// `1 - erfc`, by the continued fraction
    /// `erfc(z) = e^{-z²}/√π · 1/(z + (1/2)/(z + 1/(z + (3/2)/(z + …))))`.
    fn erf(x: f32) -> f32 {
        let x = f64::from(x);
        let root_pi = std::f64::consts::PI.sqrt();
        if x.abs() < 3.0 {
            let (mut term, mut sum, mut n) = (x, x, 0.0);
            while term.abs() > 1e-17 {
                n += 1.0;
                term *= -x * x / n;
                sum += term / (2.0 * n + 1.0);
            }
            return (sum * 2.0 / root_pi) as f32;
        }
        let z = x.abs();
        let fraction = (1..60).rev().fold(z, |acc, k| z + f64::from(k) / 2.0 / acc);
        ((1.0 - (-z * z).exp() / (root_pi * fraction)).copysign(x)) as f32
    }
}

/// GELU, `x·Φ(x)` with `Φ(x) = (1 + erf(x/√2)) / 2` the standard normal CDF.
///
/// ```
/// use lingo_kernels::math::{Reference, gelu};
/// assert!((gelu::<Reference>(1.0) - 0.841_344_7).abs() < 1e-6);
/// ```
#[inline(always)]
pub fn gelu<S: Scalars>(x: f32) -> f32 {
    x * normal_cdf::<S>(x)
}

/// GELU's slope, `Φ(x) + x·φ(x)` with `φ(x) = e^{-x²/2} / √(2π)`.
///
/// ```
/// use lingo_kernels::math::{Reference, gelu_slope};
/// assert_eq!(gelu_slope::<Reference>(0.0), 0.5);
/// ```
#[inline(always)]
pub fn gelu_slope<S: Scalars>(x: f32) -> f32 {
    // 1/√(2π)
    const INV_SQRT_TAU: f32 = 0.398_942_3;
    normal_cdf::<S>(x) + x * INV_SQRT_TAU * S::exp(-0.5 * x * x)
}

#[inline(always)]
fn normal_cdf<S: Scalars>(x: f32) -> f32 {
    0.5 * (1.0 + S::erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// √(2/π) and the cubic's coefficient of GELU's tanh form.
const GELU_C: f32 = 0.797_884_6;
const GELU_A: f32 = 0.044_715;

/// GELU's tanh form, `x·(1 + tanh(u)) / 2` with `u = √(2/π)·(x + 0.044715·x³)`.
///
/// ```
/// use lingo_kernels::math::{Reference, gelu_tanh};
/// assert!((gelu_tanh::<Reference>(1.0) - 0.841_192).abs() < 1e-6);
/// ```
#[inline(always)]
pub fn gelu_tanh<S: Scalars>(x: f32) -> f32 {
    0.5 * x * (1.0 + S::tanh(GELU_C * (x + GELU_A * x * x * x)))
}

/// The tanh form's slope, `(1 + t)/2 + x·(1 - t²)/2 · √(2/π)·(1 + 3·0.044715·x²)`, `t = tanh(u)`.
///
/// ```
/// use lingo_kernels::math::{Reference, gelu_tanh_slope};
/// assert_eq!(gelu_tanh_slope::<Reference>(0.0), 0.5);
/// ```
#[inline(always)]
pub fn gelu_tanh_slope<S: Scalars>(x: f32) -> f32 {
    let t = S::tanh(GELU_C * (x + GELU_A * x * x * x));
    0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_C * (1.0 + 3.0 * GELU_A * x * x)
}

/// `x ← eˣ` for every element.
///
/// ```
/// let mut xs = [0.0_f32, 1.0, -100.0];
/// lingo_kernels::math::exp_slice(&mut xs);
/// assert_eq!(xs[0], 1.0);
/// assert!((xs[1] - 1.0_f32.exp()).abs() <= 1e-6 * xs[1] && xs[2] < 1e-37);
/// ```
#[inline]
pub fn exp_slice(xs: &mut [f32]) {
    map(xs, Fast::exp, Reference::exp);
}

/// `x ← tanh x` for every element.
///
/// ```
/// let mut xs = [0.0_f32, 0.5, -3.0];
/// lingo_kernels::math::tanh_slice(&mut xs);
/// assert_eq!(xs[0], 0.0);
/// assert!((xs[1] - 0.5_f32.tanh()).abs() < 2e-7 && (xs[2] - (-3.0_f32).tanh()).abs() < 2e-7);
/// ```
#[inline]
pub fn tanh_slice(xs: &mut [f32]) {
    map(xs, Fast::tanh, Reference::tanh);
}

/// `x ← σ(x)` for every element.
///
/// ```
/// let mut xs = [0.0_f32, 100.0];
/// lingo_kernels::math::sigmoid_slice(&mut xs);
/// assert_eq!(xs, [0.5, 1.0]);
/// ```
#[inline]
pub fn sigmoid_slice(xs: &mut [f32]) {
    map(xs, Fast::sigmoid, Reference::sigmoid);
}

/// `x ← gelu(x)` for every element.
///
/// ```
/// let mut xs = [0.0_f32, 1.0];
/// lingo_kernels::math::gelu_slice(&mut xs);
/// assert!(xs[0] == 0.0 && (xs[1] - 0.841_344_7).abs() < 1e-6);
/// ```
pub fn gelu_slice(xs: &mut [f32]) {
    map(xs, gelu::<Fast>, gelu::<Reference>);
}

/// `x ← gelu_tanh(x)` for every element.
///
/// ```
/// let mut xs = [1.0_f32];
/// lingo_kernels::math::gelu_tanh_slice(&mut xs);
/// assert!((xs[0] - 0.841_192).abs() < 1e-6);
/// ```
pub fn gelu_tanh_slice(xs: &mut [f32]) {
    map(xs, gelu_tanh::<Fast>, gelu_tanh::<Reference>);
}

/// GELU's backward: `dy ← dy · gelu'(x)`, elementwise.
///
/// ```
/// let mut dy = [2.0_f32];
/// lingo_kernels::math::gelu_backward(&mut dy, &[0.0]);
/// assert_eq!(dy, [1.0]);
/// ```
pub fn gelu_backward(dy: &mut [f32], x: &[f32]) {
    map_with(dy, x, |g, x| g * gelu_slope::<Fast>(x), |g, x| g * gelu_slope::<Reference>(x));
}

/// The tanh form's backward: `dy ← dy · gelu_tanh'(x)`, elementwise.
///
/// ```
/// let mut dy = [2.0_f32];
/// lingo_kernels::math::gelu_tanh_backward(&mut dy, &[0.0]);
/// assert_eq!(dy, [1.0]);
/// ```
pub fn gelu_tanh_backward(dy: &mut [f32], x: &[f32]) {
    map_with(dy, x, |g, x| g * gelu_tanh_slope::<Fast>(x), |g, x| g * gelu_tanh_slope::<Reference>(x));
}

/// `sum ← sum + x`, elementwise (a gradient read twice gets both
/// contributions this way). A large sum is shared between rayon's threads
/// when [`cpu::share`](crate::cpu::share) says so; each element is one
/// addition either way, so the bits are the same.
///
/// ```
/// let mut sum = vec![1.0_f32; 5];
/// lingo_kernels::math::add_into(&mut sum, &[1.0, 2.0, 3.0, 4.0, 5.0]);
/// assert_eq!(sum, [2.0, 3.0, 4.0, 5.0, 6.0]);
/// ```
pub fn add_into(sum: &mut [f32], x: &[f32]) {
    use rayon::prelude::*;
    assert_eq!(sum.len(), x.len(), "add_into: slices of one length");
    if !crate::reference() && crate::cpu::share(sum.len(), crate::cpu::GRADIENT_ADD) {
        const CHUNK: usize = 1 << 14;
        sum.par_chunks_mut(CHUNK).zip(x.par_chunks(CHUNK)).for_each(|(s, x)| add_each(s, x));
    } else {
        add_each(sum, x);
    }
}

#[inline(always)]
fn add_each(sum: &mut [f32], x: &[f32]) {
    vectorized(|| sum.iter_mut().zip(x).for_each(|(s, &x)| *s += x));
}

/// `log Σ_i e^{x_i}` of a non-empty slice, as `m + log Σ_i e^{x_i - m}` with
/// `m = max x`, so that no exponential overflows: a softmax's normaliser.
/// Two passes, nothing written: the max, then the exponentials summed as
/// they are made. The fast version takes both in lanes ([`lanes::max`],
/// [`lanes::fold`]); the reference in one running fold each.
///
/// ```
/// let z = [1.0_f32, 2.0, 3.0];
/// let direct = z.iter().map(|v| v.exp()).sum::<f32>().ln();
/// assert!((lingo_kernels::math::log_sum_exp(&z) - direct).abs() < 1e-6);
/// assert_eq!(lingo_kernels::math::log_sum_exp(&[1000.0, 1000.0]), 1000.0 + 2_f32.ln());
/// ```
pub fn log_sum_exp(xs: &[f32]) -> f32 {
    if crate::reference() {
        let max = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        return xs.iter().map(|&x| (x - max).exp()).sum::<f32>().ln() + max;
    }
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::avx2() {
        // SAFETY: the CPU has AVX2, checked on the line above.
        return unsafe { log_sum_exp_avx2(xs) };
    }
    log_sum_exp_lanes(xs)
}

/// [`log_sum_exp_lanes`] compiled for AVX2, a function of its own: too large
/// for [`vectorized`]'s closure to be inlined, it would run in four lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn log_sum_exp_avx2(xs: &[f32]) -> f32 {
    log_sum_exp_lanes(xs)
}

#[inline(always)]
fn log_sum_exp_lanes(xs: &[f32]) -> f32 {
    let max = lanes::max(xs);
    lanes::fold(xs, 0.0, |sum, x| sum + Fast::exp(x - max), |s, t| s + t).ln() + max
}

/// `x ← f(x)` over a slice: `fast` compiled for AVX2 when the CPU has it
/// (see [`vectorized`]), or `plain` under the reference kernels.
#[inline(always)]
fn map(xs: &mut [f32], fast: impl Fn(f32) -> f32, plain: impl Fn(f32) -> f32) {
    if crate::reference() {
        map_each(xs, plain);
    } else {
        vectorized(|| map_each(xs, fast));
    }
}

/// `y ← f(y, x)` over two slices of one length, as [`map`] chooses.
#[inline(always)]
fn map_with(ys: &mut [f32], xs: &[f32], fast: impl Fn(f32, f32) -> f32, plain: impl Fn(f32, f32) -> f32) {
    assert_eq!(ys.len(), xs.len(), "math: slices of one length");
    if crate::reference() {
        ys.iter_mut().zip(xs).for_each(|(y, &x)| *y = plain(*y, x));
    } else {
        vectorized(|| ys.iter_mut().zip(xs).for_each(|(y, &x)| *y = fast(*y, x)));
    }
}

/// Runs `f` compiled twice: for the baseline x86-64 target (4 lanes of SSE2)
/// and, chosen at run time when the CPU has it, for AVX2 (8 lanes). For
/// loops that vectorize (activations, optimizer updates): the compiler may
/// only use the instructions of the target it compiles for, and the baseline
/// has no 8-lane ones. Both run the same IEEE operations in the same order
/// (no fused multiply-adds are introduced), so they give the same bits.
///
/// The AVX2 copy exists only if the compiler inlines `f` into it, which it
/// does for small closures (a loop over a slice) and may decline for large
/// ones: then `f` runs as its own baseline function. A loop that matters
/// belongs in a small closure, or, when it must live in a larger one, in a
/// function of its own with `#[target_feature(enable = "avx2")]`, as
/// [`optim::adam`](crate::optim::adam) is (through a large closure it ran with 4 lanes).
///
/// ```
/// let xs = vec![1.5_f32; 1000];
/// let total: f32 = lingo_kernels::math::vectorized(|| xs.iter().map(|x| x * 2.0).sum());
/// assert_eq!(total, 3000.0);
/// ```
#[inline(always)]
pub fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::avx2() && !crate::reference() {
        // SAFETY: the CPU supports AVX2, checked on the line above.
        return unsafe { run_avx2(f) };
    }
    f()
}

/// `f()`, with `f` inlined here and so compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn run_avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[inline(always)]
fn map_each(xs: &mut [f32], f: impl Fn(f32) -> f32) {
    for x in xs {
        *x = f(*x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every 997th float bit pattern in the finite range that matters.
    fn samples() -> impl Iterator<Item = f32> {
        (0..u32::MAX / 997).map(|i| f32::from_bits(i * 997)).filter(|x| x.is_finite() && x.abs() < 80.0)
    }

    #[test]
    fn fast_exp_is_within_a_millionth_of_the_reference() {
        for x in samples().chain([-80.0, -1.0, -1e-6, 0.0, 1e-6, 0.5, 1.0, 10.0, 79.9]) {
            let (got, want) = (Fast::exp(x), Reference::exp(x));
            assert!((got - want).abs() <= 1e-6 * want, "exp({x}) = {got}, the reference says {want}");
        }
    }

    #[test]
    fn log_sum_exp_sums_the_exponentials_it_writes_nowhere_as_if_written() {
        // The lanes see the same values in the same order, so the bits are those of the
        // exponentials written out and summed; and near the reference's value.
        for len in [1, 7, 8, 9, 64, 5218] {
            let xs: Vec<f32> = (0..len).map(|i| ((i * 7919) % 1000) as f32 / 37.0 - 13.0).collect();
            let max = lanes::max(&xs);
            let mut written: Vec<f32> = xs.iter().map(|&x| x - max).collect();
            vectorized(|| map_each(&mut written, Fast::exp));
            let composed = lanes::sum(&written).ln() + max;
            if !crate::reference() {
                assert_eq!(log_sum_exp(&xs).to_bits(), composed.to_bits(), "length {len}");
            }
            let reference =
                xs.iter().map(|&x| (f64::from(x) - f64::from(max)).exp()).sum::<f64>().ln() + f64::from(max);
            assert!((f64::from(log_sum_exp(&xs)) - reference).abs() < 1e-5, "length {len}");
        }
    }

    #[test]
    fn fast_sigmoid_and_tanh_are_within_their_tolerances_of_the_reference() {
        for x in samples() {
            let (s, s_ref) = (Fast::sigmoid(x), Reference::sigmoid(x));
            assert!(
                (s - s_ref).abs() <= 1e-6 * s_ref.max(1e-30) + 1e-30,
                "sigmoid({x}) = {s}, the reference says {s_ref}"
            );
            let (t, t_ref) = (Fast::tanh(x), Reference::tanh(x));
            assert!((t - t_ref).abs() <= 2e-7, "tanh({x}) = {t}, the reference says {t_ref}");
        }
        assert_eq!((Fast::tanh(0.0), Fast::tanh(100.0), Fast::tanh(-100.0)), (0.0, 1.0, -1.0));
        assert_eq!(Fast::sigmoid(0.0), 0.5);
        assert!(Fast::sigmoid(-200.0) >= 0.0 && Fast::sigmoid(200.0) == 1.0);
    }

    #[test]
    fn fast_erf_is_within_5e_7_of_the_series() {
        for x in samples().filter(|x| x.abs() < 12.0).chain([-3.0, -0.5, 0.0, 1e-8, 0.5, 1.0, 2.9999, 3.0, 6.0]) {
            let (got, want) = (Fast::erf(x), Reference::erf(x));
            assert!((got - want).abs() <= 5e-7, "erf({x}) = {got}, the series says {want}");
        }
        assert_eq!((Fast::erf(0.0), Fast::erf(-40.0)), (0.0, -1.0));
    }

    #[test]
    fn the_reference_erf_agrees_with_known_values() {
        // erf(0.5), erf(1), erf(2), erf(3.5) to 9 digits (Abramowitz and Stegun, table 7.1 and beyond).
        for (x, want) in [(0.5, 0.520_499_878_f64), (1.0, 0.842_700_793), (2.0, 0.995_322_265), (3.5, 0.999_999_257)] {
            assert!((f64::from(Reference::erf(x)) - want).abs() < 1e-7, "erf({x})");
            assert!((f64::from(Reference::erf(-x)) + want).abs() < 1e-7, "erf(-{x})");
        }
    }

    #[test]
    fn fast_activations_and_slopes_are_near_the_reference() {
        for x in samples().filter(|x| x.abs() < 20.0) {
            let pairs = [
                (gelu::<Fast>(x), gelu::<Reference>(x)),
                (gelu_slope::<Fast>(x), gelu_slope::<Reference>(x)),
                (gelu_tanh::<Fast>(x), gelu_tanh::<Reference>(x)),
                (gelu_tanh_slope::<Fast>(x), gelu_tanh_slope::<Reference>(x)),
            ];
            for (i, (fast, plain)) in pairs.into_iter().enumerate() {
                assert!((fast - plain).abs() <= 2e-6 * plain.abs().max(1.0), "kernel {i} at {x}: {fast} vs {plain}");
            }
        }
    }

    #[test]
    fn a_large_sum_shared_between_threads_gives_the_bits_of_one_thread() {
        let n = crate::cpu::GRADIENT_ADD * 2 + 77; // shared (outside a pool), with a ragged last chunk
        let x: Vec<f32> = (0..n).map(|i| (i % 1013) as f32 * 0.37 - 90.0).collect();
        let start: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * -1.3).collect();
        let plain: Vec<f32> = start.iter().zip(&x).map(|(s, x)| s + x).collect();
        let (mut shared, mut alone) = (start.clone(), start);
        add_into(&mut shared, &x);
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        one.install(|| add_into(&mut alone, &x)); // inside a pool: never shared
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&shared), bits(&plain));
        assert_eq!(bits(&alone), bits(&plain));
    }

    #[test]
    fn a_slice_kernel_gives_the_bits_of_its_scalar_function() {
        // The vectorized loop runs the same IEEE operations as one call per
        // element (of the version LINGO_KERNELS chose).
        let xs: Vec<f32> = samples().step_by(101).collect();
        type Kernel = (fn(&mut [f32]), fn(f32) -> f32, fn(f32) -> f32); // (slice, fast, reference)
        let kernels: [Kernel; 5] = [
            (exp_slice, Fast::exp, Reference::exp),
            (tanh_slice, Fast::tanh, Reference::tanh),
            (sigmoid_slice, Fast::sigmoid, Reference::sigmoid),
            (gelu_slice, gelu::<Fast>, gelu::<Reference>),
            (gelu_tanh_slice, gelu_tanh::<Fast>, gelu_tanh::<Reference>),
        ];
        for (i, (slice, fast, plain)) in kernels.into_iter().enumerate() {
            let scalar = if crate::reference() { plain } else { fast };
            let mut ys = xs.clone();
            slice(&mut ys);
            assert!(ys.iter().zip(&xs).all(|(y, &x)| y.to_bits() == scalar(x).to_bits()), "kernel {i}");
        }
    }
}
