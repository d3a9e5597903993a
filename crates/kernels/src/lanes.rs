//! Reductions in eight lanes, in a fixed order: the one trick behind every
//! fast sum, maximum and dot product in lingo.
//!
//! A plain running sum `s = s + x_i` makes each addition wait for the one
//! before, so it cannot use SIMD. Eight running sums, element `i` going to
//! lane `i mod 8`, are independent: the compiler keeps them in one vector
//! register. The lanes are then combined in order, and the remainder (the
//! last `len mod 8` elements) added last. The order depends only on the
//! length, so the bits are the same on every run and every thread; they
//! differ from the plain running sum (the reference, `LINGO_KERNELS=reference`)
//! in the last bits. The maximum, exact in any order, takes 32 lanes
//! ([`max`]).

/// `xs` and `ys` folded pairwise with `step` in eight lanes (pair `i` into
/// lane `i mod 8`), the lanes then joined in order with `join`, and the
/// remainder's fold joined last: `join(join(…join(init, lane₀)…, lane₇), tail)`.
/// The slices must have the same length. The reference kernels fold in one
/// running accumulator instead: `join(init, step(…step(init, x₀, y₀)…))`.
///
/// ```
/// // Σ x_i y_i in f64
/// let (x, y) = ([1.0_f32, 2.0, 3.0], [4.0_f32, 5.0, 6.0]);
/// let dot = lingo_kernels::lanes::fold_pairs(&x, &y, 0.0_f64, |s, a, b| s + f64::from(a * b), |s, t| s + t);
/// assert_eq!(dot, 32.0);
/// ```
#[inline(always)]
pub fn fold_pairs<A: Copy>(
    xs: &[f32],
    ys: &[f32],
    init: A,
    step: impl Fn(A, f32, f32) -> A,
    join: impl Fn(A, A) -> A,
) -> A {
    debug_assert_eq!(xs.len(), ys.len(), "lanes: slices of one length");
    if crate::reference() {
        return join(init, xs.iter().zip(ys).fold(init, |a, (&x, &y)| step(a, x, y)));
    }
    let mut acc = [init; 8];
    let (xc, yc) = (xs.chunks_exact(8), ys.chunks_exact(8));
    let tail = xc.remainder().iter().zip(yc.remainder()).fold(init, |a, (&x, &y)| step(a, x, y));
    for (x, y) in xc.zip(yc) {
        for i in 0..8 {
            acc[i] = step(acc[i], x[i], y[i]);
        }
    }
    join(acc.into_iter().fold(init, &join), tail)
}

/// `xs` folded with `step` in eight lanes, joined as [`fold_pairs`] joins them.
///
/// ```
/// let xs = [3.0_f32, -1.0, 7.5, 2.0];
/// assert_eq!(lingo_kernels::lanes::fold(&xs, f32::NEG_INFINITY, f32::max, f32::max), 7.5);
/// ```
#[inline(always)]
pub fn fold<A: Copy>(xs: &[f32], init: A, step: impl Fn(A, f32) -> A, join: impl Fn(A, A) -> A) -> A {
    fold_pairs(xs, xs, init, |a, x, _| step(a, x), join)
}

/// `Σ_i x_i` in eight `f32` lanes.
///
/// ```
/// let xs: Vec<f32> = (1..=10).map(|i| i as f32).collect();
/// assert_eq!(lingo_kernels::lanes::sum(&xs), 55.0);
/// ```
#[inline(always)]
pub fn sum(xs: &[f32]) -> f32 {
    fold(xs, 0.0, |s, x| s + x, |s, t| s + t)
}

/// `max_i x_i` (exact in any order); `-∞` for an empty slice. In 32 lanes,
/// not eight: each maximum of one vector waits for the one before (a
/// compare and a blend keep `f32::max`'s NaN rule), so four vectors side by
/// side keep the unit busy.
///
/// ```
/// assert_eq!(lingo_kernels::lanes::max(&[1.0, 9.0, -3.0]), 9.0);
/// ```
#[inline(always)]
pub fn max(xs: &[f32]) -> f32 {
    if crate::reference() {
        return xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    }
    let mut acc = [f32::NEG_INFINITY; 32];
    let blocks = xs.chunks_exact(32);
    let tail = blocks.remainder().iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for block in blocks {
        acc.iter_mut().zip(block).for_each(|(a, &x)| *a = a.max(x));
    }
    acc.into_iter().fold(tail, f32::max)
}

/// `Σ_i x_i y_i` in eight `f32` lanes. The slices must have the same length.
///
/// ```
/// let x: Vec<f32> = (1..=10).map(|i| i as f32).collect();
/// assert_eq!(lingo_kernels::lanes::dot(&x, &x), 385.0); // 1² + … + 10²
/// ```
#[inline(always)]
pub fn dot(xs: &[f32], ys: &[f32]) -> f32 {
    fold_pairs(xs, ys, 0.0, |s, x, y| s + x * y, |s, t| s + t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(n: usize) -> Vec<f32> {
        (0..n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect()
    }

    #[test]
    fn lanes_agree_with_the_plain_running_fold() {
        for n in [0, 1, 7, 8, 9, 16, 31, 32, 33, 63, 1000] {
            let (x, y) = (ramp(n), ramp(n + 3)[3..].to_vec());
            let plain_sum: f64 = x.iter().map(|&v| f64::from(v)).sum();
            let plain_dot: f64 = x.iter().zip(&y).map(|(&a, &b)| f64::from(a) * f64::from(b)).sum();
            let scale = x.iter().map(|v| v.abs()).sum::<f32>().max(1.0);
            assert!((f64::from(sum(&x)) - plain_sum).abs() <= 1e-6 * f64::from(scale) * n as f64, "sum of {n}");
            assert!((f64::from(dot(&x, &y)) - plain_dot).abs() <= 1e-5 * f64::from(scale * scale), "dot of {n}");
            assert_eq!(max(&x), x.iter().copied().fold(f32::NEG_INFINITY, f32::max), "max of {n}");
        }
    }

    #[test]
    fn each_lane_sums_its_own_elements_first() {
        // Lane 1 holds 1 + 1 = 2, which 2²⁴ keeps; a running sum adds each 1 to
        // 2²⁴ alone, and each rounds away (2²⁴ + 1 is not a float).
        let mut xs = vec![0.0_f32; 16];
        (xs[0], xs[1], xs[9]) = (16_777_216.0, 1.0, 1.0);
        let lanes = if crate::reference() { 16_777_216.0 } else { 16_777_218.0 };
        assert_eq!(sum(&xs), lanes);
        assert_eq!(xs.iter().fold(0.0_f32, |s, &x| s + x), 16_777_216.0);
    }
}
