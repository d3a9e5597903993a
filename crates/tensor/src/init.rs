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
/// distributed. The factorisation is modified Gram–Schmidt in `f64`
/// ([`gram_schmidt`]).
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
    gram_schmidt(&mut a);
    let q = if rows >= cols { a } else { a.reversed_axes() };
    Ok(q.mapv(|v| (v * f64::from(gain)) as f32).into_dyn().as_standard_layout().into_owned())
}

/// Modified Gram–Schmidt on the columns of `a` `(n, m)`, `n ≥ m`, in place:
///
/// ```text
/// for j in 0..m:
///     for k in 0..j:  a_j ← a_j − (a_j · q_k) q_k        (q_k: column k, done)
///     q_j ← a_j / ‖a_j‖                                  (R_jj = ‖a_j‖ > 0: no sign fix)
/// ```
///
/// Every column sees the same operations in the same order as in that loop
/// (each dot product summed from row 0 up), so the bits are the loop's. The
/// work is arranged for speed: columns go in groups of eight (`GROUP`) packed row
/// by row, so one pass over a `q_k` updates a group's columns in SIMD lanes;
/// as soon as a group is done, its columns are projected out of every later
/// group at once, the groups shared between threads (each column's
/// arithmetic is the same on any thread).
///
/// ```
/// let mut a = ndarray::array![[3.0, 1.0], [4.0, 2.0]];
/// lingo_tensor::init::gram_schmidt(&mut a);
/// assert_eq!(a.column(0).to_vec(), [0.6, 0.8]);
/// assert!(a.column(0).dot(&a.column(1)).abs() < 1e-15);
/// ```
pub fn gram_schmidt(a: &mut Array2<f64>) {
    use rayon::prelude::*;
    let (n, m) = a.dim();
    if m == 1 {
        // One contiguous column: ndarray sums its norm with its unrolled dot.
        let norm = a.column(0).dot(&a.column(0)).sqrt();
        a.mapv_inplace(|v| v / norm.max(f64::MIN_POSITIVE));
        return;
    }
    // Group g holds columns g·GROUP.., row by row: groups[g][i·w + c] = a[i, g·GROUP + c].
    let mut groups: Vec<(usize, Vec<f64>)> = (0..m)
        .step_by(GROUP)
        .map(|start| {
            let w = GROUP.min(m - start);
            (w, (0..n).flat_map(|i| (0..w).map(move |c| (i, start + c))).map(|(i, j)| a[[i, j]]).collect())
        })
        .collect();
    for g in 0..groups.len() {
        let (done, later) = groups.split_at_mut(g + 1);
        let (w, group) = &mut done[g];
        finish_group(group, *w, n);
        let finished: &[f64] = group;
        let width = *w;
        later.par_iter_mut().for_each(|(w, other)| {
            for k in 0..width {
                project_out(other, *w, finished, width, k, n);
            }
        });
    }
    for (g, (w, group)) in groups.iter().enumerate() {
        for i in 0..n {
            for c in 0..*w {
                a[[i, g * GROUP + c]] = group[i * w + c];
            }
        }
    }
}

/// Columns per group of [`gram_schmidt`]: eight `f64` lanes, two AVX2 registers.
const GROUP: usize = 8;

/// The last steps of each column of a group, every earlier group's columns
/// already projected out: the group's own earlier columns, then the norm.
fn finish_group(group: &mut [f64], w: usize, n: usize) {
    for j in 0..w {
        for k in 0..j {
            // a_j · q_k, summed from row 0 up, then a_j ← a_j − (a_j · q_k) q_k.
            let mut dot = 0.0;
            for i in 0..n {
                dot += group[i * w + j] * group[i * w + k];
            }
            for i in 0..n {
                group[i * w + j] += -dot * group[i * w + k];
            }
        }
        let mut norm = 0.0_f64;
        for i in 0..n {
            norm += group[i * w + j] * group[i * w + j];
        }
        let norm = norm.sqrt().max(f64::MIN_POSITIVE);
        for i in 0..n {
            group[i * w + j] /= norm;
        }
    }
}

/// Projects column `k` of the finished group `q` (width `qw`) out of every
/// column of `group` (width `w`): one sum per column, all in step.
fn project_out(group: &mut [f64], w: usize, q: &[f64], qw: usize, k: usize, n: usize) {
    let mut dots = [0.0_f64; GROUP];
    for i in 0..n {
        let qi = q[i * qw + k];
        for (dot, &x) in dots.iter_mut().zip(&group[i * w..(i + 1) * w]) {
            *dot += x * qi;
        }
    }
    for i in 0..n {
        let qi = q[i * qw + k];
        for (x, &dot) in group[i * w..(i + 1) * w].iter_mut().zip(&dots) {
            *x += -dot * qi;
        }
    }
}
