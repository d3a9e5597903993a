//! `gemm` against a plain triple loop in f64, on both sides of the size at
//! which it stops packing (`SMALL_MACS`), for every combination of
//! transposed operands and for the `β` values that behave differently.

use lingo_tensor::{PARALLEL_MACS, SMALL_MACS, gemm};
use ndarray::{Array2, ArrayView2};

fn reference(alpha: f32, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, beta: f32, c: &Array2<f32>) -> Array2<f64> {
    Array2::from_shape_fn(c.dim(), |(i, j)| {
        let sum: f64 = (0..a.ncols()).map(|p| f64::from(a[[i, p]]) * f64::from(b[[p, j]])).sum();
        let old = if beta == 0.0 { 0.0 } else { f64::from(beta) * f64::from(c[[i, j]]) };
        f64::from(alpha) * sum + old
    })
}

/// A deterministic matrix with entries in [-1, 1), stored as `(rows, cols)`
/// or transposed in memory (`t`), so both operand layouts are exercised.
fn matrix(rows: usize, cols: usize, seed: usize, t: bool) -> Array2<f32> {
    let value = |i: usize, j: usize| ((i * 31 + j * 17 + seed * 7) % 97) as f32 / 48.5 - 1.0;
    if t { Array2::from_shape_fn((cols, rows), |(j, i)| value(i, j)).reversed_axes() } else { Array2::from_shape_fn((rows, cols), |(i, j)| value(i, j)) }
}

#[test]
fn small_and_packed_products_agree_with_a_plain_loop() {
    let shapes = [(1, 6, 128), (1, 128, 6), (2, 200, 512), (1, 1, 1), (3, 5, 7), (8, 8, 64), (4, 64, 64), (16, 64, 64), (64, 64, 192), (5, 0, 3), (300, 200, 100), (20, 300, 500)];
    let mut small = 0;
    for &(m, k, n) in &shapes {
        small += usize::from(m <= 2 || m * n * k <= SMALL_MACS);
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            for (alpha, beta) in [(1.0, 0.0), (0.5, 1.0), (-2.0, 0.25)] {
                let (a, b) = (matrix(m, k, 1, ta), matrix(k, n, 2, tb));
                // β = 0 must overwrite whatever is there, NaN included.
                let mut c = if beta == 0.0 { Array2::from_elem((m, n), f32::NAN) } else { matrix(m, n, 3, false) };
                let want = reference(alpha, a.view(), b.view(), beta, &c);
                gemm(alpha, a.view(), b.view(), beta, c.view_mut());
                for (got, want) in c.iter().zip(&want) {
                    assert!((f64::from(*got) - want).abs() <= 1e-4 * (1.0 + want.abs()), "{m}x{k}x{n} ta={ta} tb={tb} α={alpha} β={beta}: {got} vs {want}");
                }
            }
        }
    }
    assert!(small >= 5 && small < shapes.len(), "the shapes cover both paths");
}

#[test]
fn a_product_shared_between_threads_has_the_bits_of_one_call() {
    // Row blocks (m ≥ n) and column blocks (n > m), both above the size at
    // which `gemm` splits work when called from outside rayon's pool.
    for &(m, k, n) in &[(300, 200, 100), (20, 300, 500)] {
        assert!(m * k * n >= PARALLEL_MACS);
        let (a, b) = (matrix(m, k, 4, false), matrix(k, n, 5, true));
        let mut split = Array2::zeros((m, n));
        gemm(1.0, a.view(), b.view(), 0.0, split.view_mut());
        // On a pool thread of a one-thread pool the same product is one call.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let mut whole = Array2::zeros((m, n));
        pool.install(|| gemm(1.0, a.view(), b.view(), 0.0, whole.view_mut()));
        assert_eq!(split, whole, "{m}x{k}x{n}");
    }
}
