//! `gemm` and its reference loop against a triple loop in f64, on both sides of the size at
//! which it stops packing (`SMALL_MACS`), for every combination of
//! transposed operands and for the `β` values that behave differently;
//! `gemm_uninit` against `gemm` with `β = 0`, and `gemm_bias_new` against
//! `gemm` onto rows of the bias, bit for bit.

use std::mem::MaybeUninit;

use lingo_kernels::cpu::GEMM_MACS;
use lingo_kernels::gemm::{Panels, Prepared, gemm_bias_new, gemm_prepared};
use lingo_kernels::{SMALL_MACS, gemm, gemm_uninit};
use ndarray::{Array2, ArrayView2, CowArray};

fn exact(alpha: f32, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, beta: f32, c: &Array2<f32>) -> Array2<f64> {
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
    if t {
        Array2::from_shape_fn((cols, rows), |(j, i)| value(i, j)).reversed_axes()
    } else {
        Array2::from_shape_fn((rows, cols), |(i, j)| value(i, j))
    }
}

#[test]
fn small_and_packed_products_agree_with_a_plain_loop() {
    // (7, 131, 9), (10, 300, 11): the dot-product tiles' edges (3 × 4 tiles, 8 lanes, k ≥ 128).
    // (13, 300, 40), (5, 33, 8), (3, 2, 24): the row tiles' edges (6 × 16 tiles, then 8 columns;
    // k cut into blocks of 256), and (7, 600, 16) past the longest k they take.
    // (9, 520, 1057): the panel tiles' edges (8 × 32 tiles, k in blocks of 256,
    // B packed 1,024 columns at a time).
    let shapes = [
        (1, 6, 128),
        (1, 128, 6),
        (2, 200, 512),
        (1, 1, 1),
        (3, 5, 7),
        (8, 8, 64),
        (4, 64, 64),
        (16, 64, 64),
        (64, 64, 192),
        (5, 0, 3),
        (300, 200, 100),
        (20, 300, 500),
        (7, 131, 9),
        (10, 300, 11),
        (4, 7, 5),
        (64, 1100, 300),
        (13, 300, 40),
        (5, 33, 8),
        (3, 2, 24),
        (7, 600, 16),
        (9, 520, 1057),
    ];
    let mut small = 0;
    for &(m, k, n) in &shapes {
        small += usize::from(m <= 2 || m * n * k <= SMALL_MACS);
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            for (alpha, beta) in [(1.0, 0.0), (0.5, 1.0), (-2.0, 0.25)] {
                let (a, b) = (matrix(m, k, 1, ta), matrix(k, n, 2, tb));
                // β = 0 must overwrite whatever is there, NaN included.
                let mut c = if beta == 0.0 { Array2::from_elem((m, n), f32::NAN) } else { matrix(m, n, 3, false) };
                let want = exact(alpha, a.view(), b.view(), beta, &c);
                let mut plain = c.clone();
                gemm(alpha, a.view(), b.view(), beta, c.view_mut());
                lingo_kernels::gemm::reference::gemm(alpha, a.view(), b.view(), beta, plain.view_mut());
                for ((got, plain), want) in c.iter().zip(&plain).zip(&want) {
                    assert!(
                        (f64::from(*got) - want).abs() <= 1e-4 * (1.0 + want.abs())
                            && (got - plain).abs() <= 1e-4 * (1.0 + plain.abs()),
                        "{m}x{k}x{n} ta={ta} tb={tb} α={alpha} β={beta}: {got}, the reference loop {plain}, exact {want}"
                    );
                }
                if beta == 0.0 {
                    // Into memory not written yet: `gemm`'s bits, on every path. NaN
                    // stands for whatever was there; reading any of it would show.
                    let mut fresh = Array2::from_elem((m, n), MaybeUninit::new(f32::NAN));
                    let got = gemm_uninit(alpha, a.view(), b.view(), fresh.view_mut());
                    assert!(
                        got.iter().zip(&c).all(|(x, y)| x.to_bits() == y.to_bits()),
                        "{m}x{k}x{n} ta={ta} tb={tb} α={alpha}: gemm_uninit differs"
                    );
                }
            }
        }
    }
    assert!(small >= 5 && small < shapes.len(), "the shapes cover both paths");
}

#[test]
fn strided_operands_and_results() {
    // A's rows and C's rows longer than the views (column slices of wider
    // matrices), and C written through its transpose.
    let (wide_a, b) = (matrix(9, 40, 6, false), matrix(33, 10, 7, true));
    let a = wide_a.slice(ndarray::s![.., 3..36]);
    let mut wide_c = Array2::from_elem((9, 14), f32::NAN);
    let want = exact(1.0, a, b.view(), 0.0, &Array2::zeros((9, 10)));
    gemm(1.0, a, b.view(), 0.0, wide_c.slice_mut(ndarray::s![.., 2..12]));
    let mut c_t = Array2::<f32>::zeros((10, 9));
    gemm(1.0, a, b.view(), 0.0, c_t.view_mut().reversed_axes());
    for ((got, got_t), want) in wide_c.slice(ndarray::s![.., 2..12]).iter().zip(c_t.t().iter()).zip(&want) {
        assert!(
            (f64::from(*got) - want).abs() <= 1e-4 * (1.0 + want.abs()) && got == got_t,
            "{got} / {got_t} vs {want}"
        );
    }
    assert!(
        wide_c.slice(ndarray::s![.., ..2]).iter().chain(wide_c.slice(ndarray::s![.., 12..]).iter()).all(|v| v.is_nan()),
        "nothing outside the view is written"
    );
}

#[test]
fn an_element_does_not_depend_on_the_rows_around_it() {
    // With both operands contiguous along k (the dot-product tiles), rows
    // 4..9 of a product are rows 4..9 of the whole, and columns 2..11 its
    // columns 2..11: each element is summed the same way wherever it falls
    // in a tile. The same holds with B's rows contiguous (the row tiles) for
    // any rows and for columns cut at multiples of 8. (Other layouts may
    // switch between the direct loops and the packed kernel with the size,
    // which sum in different orders.)
    for (tb, cols) in [(true, 2..11), (false, 8..24)] {
        let n = if tb { 13 } else { 40 };
        let (a, b) = (matrix(11, 141, 8, false), matrix(141, n, 9, tb));
        let mut whole = Array2::zeros((11, n));
        gemm(1.0, a.view(), b.view(), 0.0, whole.view_mut());
        let mut rows = Array2::zeros((5, n));
        gemm(1.0, a.slice(ndarray::s![4..9, ..]), b.view(), 0.0, rows.view_mut());
        assert_eq!(rows, whole.slice(ndarray::s![4..9, ..]), "tb={tb}");
        let mut some = Array2::zeros((11, cols.len()));
        gemm(1.0, a.view(), b.slice(ndarray::s![.., cols.clone()]), 0.0, some.view_mut());
        assert_eq!(some, whole.slice(ndarray::s![.., cols]), "tb={tb}");
    }
}

/// With AVX2 and FMA, a product whose operands are both contiguous along
/// `k` is summed as `dot_tiles` documents: eight lanes of fused
/// multiply-adds, the lanes added in a fixed order, then the leftover
/// products. Checked bit for bit against that recipe written out in scalars.
#[test]
fn contiguous_operands_are_summed_in_the_documented_order() {
    if !tiles_used() {
        return;
    }
    let (m, k, n) = (5, 133, 6);
    let (a, b) = (matrix(m, k, 10, false), matrix(k, n, 11, true));
    let mut c = Array2::zeros((m, n));
    gemm(1.0, a.view(), b.view(), 0.0, c.view_mut());
    for i in 0..m {
        for j in 0..n {
            let mut lane = [0.0_f32; 8];
            for p in 0..k / 8 * 8 {
                lane[p % 8] = a[[i, p]].mul_add(b[[p, j]], lane[p % 8]);
            }
            let mut sum = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
            for p in k / 8 * 8..k {
                sum += a[[i, p]] * b[[p, j]];
            }
            assert_eq!(c[[i, j]].to_bits(), sum.to_bits(), "element ({i}, {j})");
        }
    }
}

/// With AVX2 and FMA, a product whose right operand's rows are contiguous
/// is summed as `row_tiles` documents (and as `matrixmultiply`'s FMA kernels
/// and, with AVX-512, `panel_tiles` sum): per element one chain of fused multiply-adds along `k`, restarted
/// every 256 steps, each chain's result put into `C` as `α·acc` for the
/// first block when `β = 0`, else as `fma(α, acc, β'·C)` with `β' = β` for
/// the first block and 1 after. Checked bit for bit against that recipe
/// written out in scalars, with `A` read through its transpose, and `B`
/// stored row by row or column by column (then copied into rows first).
#[test]
fn row_major_right_operands_are_summed_in_the_documented_order() {
    if !tiles_used() {
        return;
    }
    let (m, k, n) = (7, 300, 24);
    for ((alpha, beta), tb) in [(1.0_f32, 0.0_f32), (-0.5, 0.75)].into_iter().flat_map(|ab| [(ab, false), (ab, true)]) {
        let (a, b) = (matrix(m, k, 12, true), matrix(k, n, 13, tb));
        let start = matrix(m, n, 14, false);
        let mut c = start.clone();
        gemm(alpha, a.view(), b.view(), beta, c.view_mut());
        for i in 0..m {
            for j in 0..n {
                let mut out = start[[i, j]];
                for (block, ps) in [0..256, 256..k].into_iter().enumerate() {
                    let acc = ps.fold(0.0_f32, |acc, p| a[[i, p]].mul_add(b[[p, j]], acc));
                    let beta = if block == 0 { beta } else { 1.0 };
                    out = if beta == 0.0 { alpha * acc } else { alpha.mul_add(acc, out * beta) };
                }
                assert_eq!(c[[i, j]].to_bits(), out.to_bits(), "element ({i}, {j}), α={alpha} β={beta} tb={tb}");
            }
        }
    }
}

/// Whether this CPU has AVX2 and FMA, which both tile kernels need (the
/// tests of their summation order are skipped without them).
fn tiles_used() -> bool {
    #[cfg(target_arch = "x86_64")]
    let used = lingo_kernels::cpu::avx2_fma();
    #[cfg(not(target_arch = "x86_64"))]
    let used = false;
    if !used {
        eprintln!("skipped: this CPU has no AVX2 and FMA, so the tile kernels are not used");
    }
    used
}

#[test]
fn a_product_shared_between_threads_has_the_bits_of_one_call() {
    // Row blocks (m ≥ n) and column blocks (n > m), both above the size at
    // which `gemm` splits work when called from outside rayon's pool; `B`
    // stored both ways, so the dot-product tiles, the row tiles and the packed
    // kernel all split.
    for (&(m, k, n), tb) in [(300, 200, 100), (20, 300, 500), (20, 300, 400), (256, 256, 64), (40, 160, 400)]
        .iter()
        .flat_map(|s| [(s, false), (s, true)])
    {
        assert!(m * k * n >= GEMM_MACS);
        let (a, b) = (matrix(m, k, 4, false), matrix(k, n, 5, tb));
        let mut split = Array2::zeros((m, n));
        gemm(1.0, a.view(), b.view(), 0.0, split.view_mut());
        // On a pool thread of a one-thread pool the same product is one call.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let mut whole = Array2::zeros((m, n));
        pool.install(|| gemm(1.0, a.view(), b.view(), 0.0, whole.view_mut()));
        assert_eq!(split, whole, "{m}x{k}x{n} tb={tb}");
    }
}

#[test]
fn a_prepared_operand_gives_the_bits_of_the_plain_one() {
    // Shared between threads by rows and by columns (cut inside the
    // packed panels' columns), one row, and products on every path.
    for &(m, k, n) in &[(300, 200, 100), (20, 520, 1100), (64, 384, 1536), (1, 300, 64), (5, 7, 9)] {
        for tb in [false, true] {
            let (a, b) = (matrix(m, k, 1, false), matrix(k, n, 2, tb));
            let prepared = Prepared::new(CowArray::from(b.view()), 2);
            let panel_path = lingo_kernels::cpu::avx512() && !lingo_kernels::reference();
            assert_eq!(prepared.is_packed(), panel_path, "panels exactly where the path runs");
            for beta in [0.0, 0.5] {
                let start = matrix(m, n, 3, false);
                let (mut plain, mut split, mut whole) = (start.clone(), start.clone(), start.clone());
                gemm(0.75, a.view(), b.view(), beta, plain.view_mut());
                gemm_prepared(0.75, a.view(), &prepared, beta, split.view_mut());
                let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
                pool.install(|| gemm_prepared(0.75, a.view(), &prepared, beta, whole.view_mut()));
                let same = |x: &Array2<f32>| plain.iter().zip(x).all(|(p, x)| p.to_bits() == x.to_bits());
                assert!(same(&split) && same(&whole), "{m}x{k}x{n} tb={tb} β={beta}");
            }
        }
    }
}

#[test]
fn a_product_onto_its_bias_has_the_bits_of_one_onto_rows_of_it() {
    // Every path (direct, dot and row tiles, panels: blocks along k, shared
    // by rows and by columns), b plain and packed, one thread and the pool.
    for &(m, k, n) in &[(300, 200, 100), (20, 520, 1100), (64, 384, 1536), (1, 300, 64), (5, 7, 9), (33, 64, 40)] {
        for tb in [false, true] {
            let (a, b) = (matrix(m, k, 1, false), matrix(k, n, 2, tb));
            let bias: Vec<f32> = matrix(1, n, 3, false).into_iter().collect();
            let mut rows = Array2::from_shape_fn((m, n), |(_, j)| bias[j]);
            gemm(1.0, a.view(), b.view(), 1.0, rows.view_mut());
            let panels = Panels::new(b.view());
            let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            for packed in [None, panels.as_ref()] {
                let shared = gemm_bias_new(a.view(), b.view(), || packed, &bias);
                let alone = pool.install(|| gemm_bias_new(a.view(), b.view(), || packed, &bias));
                let same = |x: &Array2<f32>| rows.iter().zip(x).all(|(r, x)| r.to_bits() == x.to_bits());
                assert!(same(&shared) && same(&alone), "{m}x{k}x{n} tb={tb} packed={}", packed.is_some());
            }
        }
    }
}
