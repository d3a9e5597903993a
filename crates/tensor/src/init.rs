//! Weight initialisers, as in PyTorch's `torch.nn.init`, each drawing from an
//! explicit seeded RNG.
//!
//! * [`xavier_uniform`]: `U(-a, a)` with `a = gain · √(6 / (fan_in + fan_out))`
//!   (Glorot & Bengio, 2010), keeping activations' variance steady across a
//!   layer; the usual choice for input and output projections.
//! * [`orthogonal`]: a (semi-)orthogonal matrix (Saxe et al., 2014); for
//!   recurrent weights, whose repeated product over time neither explodes nor
//!   vanishes when all singular values are 1.
//! * zeros for biases: `ArrayD::zeros`.

use ndarray::{Array2, ArrayD, IxDyn};
use ndarray_rand::RandomExt;
use ndarray_rand::rand_distr::{StandardNormal, Uniform};
use rand::Rng;

use crate::error::{Result, bad_shape};

/// `(fan_in, fan_out)` of a weight `(out, in, ...)`: trailing axes multiply both.
fn fans(op: &'static str, shape: &[usize]) -> Result<(usize, usize)> {
    if shape.len() < 2 {
        return Err(bad_shape(op, shape, "needs at least two axes (out, in)"));
    }
    let receptive: usize = shape[2..].iter().product();
    Ok((shape[1] * receptive, shape[0] * receptive))
}

/// Xavier (Glorot) uniform: `U(-a, a)`, `a = gain · √(6 / (fan_in + fan_out))`
/// for a weight of shape `(out, in, ...)`.
///
/// ```
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let w = lingo_tensor::init::xavier_uniform(&[64, 32], 1.0, &mut rng).unwrap();
/// let bound = (6.0_f32 / 96.0).sqrt();
/// assert!(w.iter().all(|v| v.abs() <= bound));
/// assert!(lingo_tensor::init::xavier_uniform(&[5], 1.0, &mut rng).is_err());
/// ```
pub fn xavier_uniform(shape: &[usize], gain: f32, rng: &mut impl Rng) -> Result<ArrayD<f32>> {
    let (fan_in, fan_out) = fans("xavier_uniform", shape)?;
    let bound = gain * (6.0 / (fan_in + fan_out).max(1) as f32).sqrt();
    Ok(uniform(shape, bound, rng))
}

/// `U(-bound, bound)` (PyTorch's default for RNN weights uses `bound = 1/√H`).
///
/// ```
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let w = lingo_tensor::init::uniform(&[3, 3], 0.1, &mut rng);
/// assert!(w.iter().all(|v| v.abs() <= 0.1));
/// ```
pub fn uniform(shape: &[usize], bound: f32, rng: &mut impl Rng) -> ArrayD<f32> {
    match Uniform::new_inclusive(-bound.abs(), bound.abs()) {
        Ok(dist) => ArrayD::random_using(IxDyn(shape), dist, rng),
        Err(_) => ArrayD::zeros(IxDyn(shape)), // bound is 0 (or NaN): nothing to draw
    }
}

/// A random (semi-)orthogonal matrix `(rows, cols)` times `gain`: its columns
/// are orthonormal when `rows ≥ cols`, its rows when `rows < cols`.
///
/// Made as PyTorch does: the `Q` of a QR factorisation of a standard normal
/// matrix, with `R`'s diagonal taken positive so `Q` is uniformly
/// distributed. The factorisation is modified Gram–Schmidt in `f64`.
///
/// ```
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let q = lingo_tensor::init::orthogonal(&[12, 3], 1.0, &mut rng).unwrap(); // like an LSTM's W_hh, H = 3
/// let q = q.into_dimensionality::<ndarray::Ix2>().unwrap();
/// let qtq = q.t().dot(&q);                                              // 3 x 3 identity
/// for i in 0..3 { for j in 0..3 {
///     assert!((qtq[[i, j]] - if i == j { 1.0 } else { 0.0 }).abs() < 1e-5);
/// } }
/// ```
pub fn orthogonal(shape: &[usize], gain: f32, rng: &mut impl Rng) -> Result<ArrayD<f32>> {
    let (rows, cols) = match shape {
        [r, c] => (*r, *c),
        _ => return Err(bad_shape("orthogonal", shape, "needs a matrix (rows, cols)")),
    };
    // Orthonormalise the columns of a tall (n, m) matrix, n ≥ m; transpose back if wide.
    let (n, m) = (rows.max(cols), rows.min(cols));
    let mut a: Array2<f64> = Array2::random_using((n, m), StandardNormal, rng);
    for j in 0..m {
        for k in 0..j {
            // remove the component along the already orthonormal column k
            let proj = a.column(j).dot(&a.column(k));
            let qk = a.column(k).to_owned();
            a.column_mut(j).scaled_add(-proj, &qk);
        }
        let norm = a.column(j).dot(&a.column(j)).sqrt();
        // R_jj = norm > 0, so no sign correction is needed afterwards.
        a.column_mut(j).mapv_inplace(|v| v / norm.max(f64::MIN_POSITIVE));
    }
    let q = if rows >= cols { a } else { a.reversed_axes() };
    Ok(q.mapv(|v| (v * f64::from(gain)) as f32).into_dyn().as_standard_layout().into_owned())
}
