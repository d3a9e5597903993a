//! Layer normalization's rows (Ba et al., 2016): the loops under
//! `Tensor::layer_norm`. For each row `x` of `d` features:
//!
//! ```text
//! μ = Σ x / d      σ² = Σ (x - μ)² / d      r = 1 / √(σ² + ε)
//! x̂ = (x - μ) · r                           y = γ ⊙ x̂ + β
//! ```
//!
//! Mean and variance are summed in f64, so a row's offset does not cost it
//! precision.

/// Rows whose sums run side by side in [`forward`]: each row is summed in
/// its own order (so its bits are those of [`reference::forward`], one row
/// at a time), but one row's adds no longer wait on another's.
const ROWS_AT_ONCE: usize = 4;

/// The rows of `x` (`d = gamma.len()` features each) normalized into `y`
/// and `x_hat`, returning each row's `r`.
///
/// ```
/// let (x, gamma, beta) = ([1.0_f32, 2.0, 3.0], [1.0_f32; 3], [0.0_f32; 3]);
/// let (mut y, mut x_hat) = ([0.0; 3], [0.0; 3]);
/// let rstd = lingo_kernels::norm::forward(&x, (&gamma, &beta), 1e-5, (&mut y, &mut x_hat));
/// assert!((y[0] + 1.2247).abs() < 1e-3 && y[1].abs() < 1e-6);   // (-√1.5, 0, √1.5)
/// assert_eq!(rstd.len(), 1);
/// ```
pub fn forward(x: &[f32], (gamma, beta): (&[f32], &[f32]), eps: f32, (y, x_hat): (&mut [f32], &mut [f32])) -> Vec<f32> {
    if crate::reference() {
        return reference::forward(x, (gamma, beta), eps, (y, x_hat));
    }
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::avx2() {
        // SAFETY: the CPU has AVX2, checked on the line above.
        return unsafe { forward_avx2(x, (gamma, beta), eps, (y, x_hat)) };
    }
    forward_blocks(x, (gamma, beta), eps, (y, x_hat))
}

/// [`forward_blocks`] compiled for AVX2: four f64 lanes, not SSE's two; the
/// same operations, so the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn forward_avx2(x: &[f32], params: (&[f32], &[f32]), eps: f32, out: (&mut [f32], &mut [f32])) -> Vec<f32> {
    forward_blocks(x, params, eps, out)
}

#[inline(always)]
fn forward_blocks(
    x: &[f32],
    (gamma, beta): (&[f32], &[f32]),
    eps: f32,
    (y, x_hat): (&mut [f32], &mut [f32]),
) -> Vec<f32> {
    let d = gamma.len();
    let mut rstd = Vec::with_capacity(x.len() / d);
    let block = ROWS_AT_ONCE * d;
    let whole = x.len() - x.len() % block;
    let ((x, rest), (y, y_rest), (xh, xh_rest)) = (x.split_at(whole), y.split_at_mut(whole), x_hat.split_at_mut(whole));
    for ((x, y), xh) in x.chunks_exact(block).zip(y.chunks_exact_mut(block)).zip(xh.chunks_exact_mut(block)) {
        rows::<ROWS_AT_ONCE>(x, (gamma, beta), eps, (y, xh), &mut rstd);
    }
    rstd.extend(reference::forward(rest, (gamma, beta), eps, (y_rest, xh_rest))); // the rows left over
    rstd
}

/// `R` rows of `x` into `y` and `x̂`, their `r` appended to `rstd`.
#[inline(always)]
fn rows<const R: usize>(
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

/// `μ` and `r = 1/√(σ² + ε)` of each of `R` rows, summed in f64 feature by feature.
#[inline(always)]
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

/// The gradients of the rows from `dy` and what [`forward`] kept: with
/// `g = dy ⊙ γ` (the gradient reaching `x̂`),
///
/// ```text
/// dβ = Σ_rows dy      dγ = Σ_rows dy ⊙ x̂      dx = r · (g - mean(g) - x̂ · mean(g ⊙ x̂))
/// ```
///
/// The last is the chain rule through `μ` and `r`: shifting every `x` by
/// the same amount, or scaling it about `μ`, leaves `x̂` unchanged, so `dx`
/// has no component along either direction.
///
/// ```
/// let (gamma, x_hat, rstd) = ([1.0_f32; 2], [-1.0_f32, 1.0], [2.0_f32]);
/// let (mut dx, mut dgamma, mut dbeta) = ([0.0; 2], [0.0; 2], [0.0; 2]);
/// lingo_kernels::norm::backward(&[1.0, 1.0], &gamma, (&x_hat, &rstd), (&mut dx, &mut dgamma, &mut dbeta));
/// assert_eq!((dx, dgamma, dbeta), ([0.0, 0.0], [-1.0, 1.0], [1.0, 1.0])); // a shift changes nothing
/// ```
pub fn backward(
    dy: &[f32],
    gamma: &[f32],
    (x_hat, rstd): (&[f32], &[f32]),
    (dx, dgamma, dbeta): (&mut [f32], &mut [f32], &mut [f32]),
) {
    let d = gamma.len();
    let rows = dy.chunks_exact(d).zip(x_hat.chunks_exact(d)).zip(dx.chunks_exact_mut(d));
    for (((dy, xh), dx), &r) in rows.zip(rstd) {
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
}

/// The plain version of [`forward`]: one row at a time.
pub mod reference {
    /// [`forward`](super::forward), one row after another: the formulas of
    /// the [module docs](super), each row's sums in feature order.
    ///
    /// ```
    /// let (x, gamma, beta) = ([1.0_f32, 3.0], [2.0_f32; 2], [1.0_f32; 2]);
    /// let (mut y, mut x_hat) = ([0.0; 2], [0.0; 2]);
    /// lingo_kernels::norm::reference::forward(&x, (&gamma, &beta), 1e-5, (&mut y, &mut x_hat));
    /// assert!((y[0] + 1.0).abs() < 1e-4 && (y[1] - 3.0).abs() < 1e-4);   // x̂ = (-1, 1)
    /// ```
    pub fn forward(
        x: &[f32],
        (gamma, beta): (&[f32], &[f32]),
        eps: f32,
        (y, x_hat): (&mut [f32], &mut [f32]),
    ) -> Vec<f32> {
        let d = gamma.len();
        let mut rstd = Vec::with_capacity(x.len() / d);
        for ((x, y), xh) in x.chunks_exact(d).zip(y.chunks_exact_mut(d)).zip(x_hat.chunks_exact_mut(d)) {
            super::rows::<1>(x, (gamma, beta), eps, (y, xh), &mut rstd);
        }
        rstd
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rows_side_by_side_have_the_bits_of_rows_one_at_a_time() {
        let (d, n) = (7, 11); // two blocks of four rows and three rows left over
        let x: Vec<f32> = (0..d * n).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.37 + 1e3).collect();
        let gamma: Vec<f32> = (0..d).map(|j| 0.5 + j as f32 * 0.1).collect();
        let beta: Vec<f32> = (0..d).map(|j| j as f32 * -0.2).collect();
        let mut fast = (vec![0.0; d * n], vec![0.0; d * n]);
        let mut plain = (vec![0.0; d * n], vec![0.0; d * n]);
        let r_fast = super::forward(&x, (&gamma, &beta), 1e-5, (&mut fast.0, &mut fast.1));
        let r_plain = super::reference::forward(&x, (&gamma, &beta), 1e-5, (&mut plain.0, &mut plain.1));
        assert_eq!((r_fast, fast), (r_plain, plain));
    }
}
