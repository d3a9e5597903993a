//! `exp`, `σ`, `tanh` and `erf` for `f32` that the compiler can vectorize.
//!
//! Why: in a recurrent step the GEMM is fast, and the five transcendental
//! functions per hidden unit (three `σ`, two `tanh` for an LSTM) were most of
//! the remaining time, because the standard library's `expf` is a scalar
//! call the compiler cannot turn into SIMD. These versions are straight-line
//! arithmetic (no calls, no branches), so loops over slices of them vectorize.
//!
//! The math (Cephes' `expf`): write `x = n·ln 2 + r` with `n` the nearest
//! integer to `x / ln 2` and `|r| ≤ ln 2 / 2`; then `eˣ = 2ⁿ · eʳ`, with `eʳ`
//! from a degree-7 polynomial and `2ⁿ` built directly in the float's exponent
//! bits. The relative error is about 2·10⁻⁷ (a couple of ulps); the tests
//! below hold it to 1e-6 against the standard library over the whole range.

use crate::lanes;

/// `eˣ`, accurate to a couple of ulps; inputs are clamped to `[-87.3, 88.7]`
/// (results below the smallest normal float are returned as about `1e-38`).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
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
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r + 1.666_666_5e-1)
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

/// `σ(x) = 1 / (1 + e⁻ˣ)`.
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

/// `tanh(x) = sign(x) · (1 - e) / (1 + e)` with `e = e^{-2|x|} ≤ 1`, which
/// cannot overflow.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let e = exp(-2.0 * x.abs());
    ((1.0 - e) / (1.0 + e)).copysign(x)
}

/// `erf(x) = sign(x) · (1 - erfc(|x|))`, with `erfc(z) ≈ t · e^{-z² + P(t)}`,
/// `t = 1 / (1 + z/2)` and `P` a degree-9 polynomial fitted to a relative
/// error below 1.2·10⁻⁷ for every `z ≥ 0` (Press et al., *Numerical
/// Recipes*, 2nd ed., §6.2); with f32 rounding, `erf` is within 5·10⁻⁷ of
/// the true value everywhere. No branches: it vectorizes like the others.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let p = -1.265_512_2
        + t * (1.000_023_7
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_204 + t * (1.488_515_9 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    (1.0 - t * exp(-z * z + p)).copysign(x)
}

/// Applies `σ` to every element of `xs`.
#[inline]
pub fn sigmoid_slice(xs: &mut [f32]) {
    map_in_place(xs, sigmoid);
}

/// Applies `tanh` to every element of `xs`, vectorized (see the module docs).
///
/// ```
/// let mut xs = [0.0_f32, 0.5, -3.0];
/// lingo_kernels::math::tanh_slice(&mut xs);
/// assert_eq!(xs[0], 0.0);
/// assert!((xs[1] - 0.5_f32.tanh()).abs() < 2e-7 && (xs[2] - (-3.0_f32).tanh()).abs() < 2e-7);
/// ```
#[inline]
pub fn tanh_slice(xs: &mut [f32]) {
    map_in_place(xs, tanh);
}

/// Applies `eˣ` to every element of `xs`, vectorized (see the module docs);
/// for softmax rows in fused kernels of other crates.
///
/// ```
/// let mut xs = [0.0_f32, 1.0, -100.0];
/// lingo_kernels::math::exp_slice(&mut xs);
/// assert_eq!(xs[0], 1.0);
/// assert!((xs[1] - 1.0_f32.exp()).abs() <= 1e-6 * xs[1] && xs[2] < 1e-37);
/// ```
#[inline]
pub fn exp_slice(xs: &mut [f32]) {
    map_in_place(xs, exp);
}

/// `log Σ_i e^{x_i}` of a non-empty slice, as `m + log Σ_i e^{x_i - m}` with
/// `m = max x`, so that no exponential overflows: a softmax's normaliser.
/// The max and the sum run in eight lanes each, combined in a fixed order
/// (fixed bits, whatever the thread), and `scratch` ends up holding the
/// `e^{x_i - m}` of [`exp_slice`].
///
/// ```
/// let mut scratch = Vec::new();
/// let z = [1.0_f32, 2.0, 3.0];
/// let direct = z.iter().map(|v| v.exp()).sum::<f32>().ln();
/// assert!((lingo_kernels::math::log_sum_exp(&z, &mut scratch) - direct).abs() < 1e-6);
/// assert_eq!(lingo_kernels::math::log_sum_exp(&[1000.0, 1000.0], &mut scratch), 1000.0 + 2_f32.ln());
/// ```
pub fn log_sum_exp(xs: &[f32], scratch: &mut Vec<f32>) -> f32 {
    vectorized(|| {
        let max = lanes::max(xs);
        scratch.clear();
        scratch.extend(xs.iter().map(|&x| x - max));
        map_each(scratch, exp);
        lanes::sum(scratch).ln() + max
    })
}

/// `x ← f(x)` over a slice, compiled for AVX2 when the CPU has it (see [`vectorized`]).
#[inline(always)]
fn map_in_place(xs: &mut [f32], f: impl Fn(f32) -> f32) {
    vectorized(|| map_each(xs, f));
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
/// function of its own with `#[target_feature(enable = "avx2")]` (Adam's
/// update in lingo-nn ran with 4 lanes through a large closure here).
///
/// ```
/// let xs = vec![1.5_f32; 1000];
/// let total: f32 = lingo_kernels::math::vectorized(|| xs.iter().map(|x| x * 2.0).sum());
/// assert_eq!(total, 3000.0);
/// ```
#[inline(always)]
pub fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::avx2() {
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
    fn exp_matches_the_standard_library() {
        for x in samples().chain([-80.0, -1.0, -1e-6, 0.0, 1e-6, 0.5, 1.0, 10.0, 79.9]) {
            let (got, want) = (exp(x), x.exp());
            assert!((got - want).abs() <= 1e-6 * want, "exp({x}) = {got}, std says {want}");
        }
    }

    #[test]
    fn sigmoid_and_tanh_match_the_standard_library() {
        for x in samples() {
            let (s, s_std) = (sigmoid(x), 1.0 / (1.0 + (-x).exp()));
            assert!((s - s_std).abs() <= 1e-6 * s_std.max(1e-30) + 1e-30, "sigmoid({x}) = {s}, std says {s_std}");
            let (t, t_std) = (tanh(x), x.tanh());
            assert!((t - t_std).abs() <= 2e-7, "tanh({x}) = {t}, std says {t_std}");
        }
        assert_eq!(tanh(0.0), 0.0);
        assert_eq!(tanh(100.0), 1.0);
        assert_eq!(tanh(-100.0), -1.0);
        assert_eq!(sigmoid(0.0), 0.5);
        assert!(sigmoid(-200.0) >= 0.0 && sigmoid(200.0) == 1.0);
    }

    /// `erf(x)` in f64 from its Maclaurin series (`|x| < 3`, where the terms
    /// stay below 10³ and f64 keeps 1e-13) and from `1 - erfc` by the
    /// continued fraction `erfc(x) = e^{-x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …))))`
    /// beyond: a reference independent of the fit.
    fn erf_reference(x: f64) -> f64 {
        if x.abs() < 3.0 {
            let (mut term, mut sum, mut n) = (x, x, 0.0);
            while term.abs() > 1e-17 {
                n += 1.0;
                term *= -x * x / n;
                sum += term / (2.0 * n + 1.0);
            }
            return sum * 2.0 / std::f64::consts::PI.sqrt();
        }
        let z = x.abs();
        let fraction = (1..60).rev().fold(z, |acc, k| z + f64::from(k) / 2.0 / acc);
        (1.0 - (-z * z).exp() / (std::f64::consts::PI.sqrt() * fraction)).copysign(x)
    }

    #[test]
    fn erf_matches_an_independent_reference() {
        for x in samples().filter(|x| x.abs() < 12.0).chain([-3.0, -0.5, 0.0, 1e-8, 0.5, 1.0, 2.9999, 3.0, 6.0]) {
            let (got, want) = (erf(x), erf_reference(f64::from(x)));
            assert!((f64::from(got) - want).abs() <= 5e-7, "erf({x}) = {got}, the series says {want}");
        }
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(-40.0), -1.0);
    }
}
