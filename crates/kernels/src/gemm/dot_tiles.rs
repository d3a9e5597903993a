//! Products whose operands are both contiguous along `k`, without packing.
//!
//! `C = A·Bᵀ` with `A (m, k)` and `B (n, k)` both stored row by row is the
//! most common product in these models: every `linear` layer's forward pass
//! (`x·Wᵀ`, PyTorch's weight layout), every recurrent step (`h·W_hhᵀ`), and
//! attention's scores (`Q·Kᵀ`) and their backward (`dC·Vᵀ`). `matrixmultiply`
//! packs both operands into panels before it multiplies, and in this layout
//! it has to gather them one element at a time.
//!
//! Here nothing is copied: `C[i, j]` is the dot product of two contiguous
//! rows, and a tile of three rows of `A` by four rows of `B` keeps twelve
//! running 8-lane sums in registers:
//!
//! ```text
//! for p in (0..k).step_by(8):
//!     a_r = A[i + r, p..p+8]                 r = 0, 1, 2   (three loads)
//!     for q in 0..4:
//!         b = B[j + q, p..p+8]                            (one load, used three times)
//!         acc[r][q] += a_r ⊙ b               fused multiply-add, 8 lanes
//! C[i + r, j + q] = α · Σ_lanes acc[r][q] + β · C[i + r, j + q]
//! ```
//!
//! Twelve accumulators, three rows of `A` and one row of `B` are the sixteen
//! registers AVX2 has. The lanes are added in one fixed order and the last
//! `k mod 8` products after them, so every element's bits depend only on its
//! row of `A` and its row of `B`: not on the tile it fell in, nor on how a
//! product is split between threads. Tiles at the edges repeat the last row
//! or column and keep only the valid results.
//!
//! The limits below keep the path where it was measured to beat
//! `matrixmultiply` (`docs/performance.md`, "Thresholds").

use ndarray::ArrayView2;

use super::out::Out;

/// The largest `B` (`n·k` floats, 512 KiB) this path takes: every tile of
/// rows reads all of `B`, which must stay in the core's cache between them.
const MAX_B: usize = 1 << 17;

/// The shortest `k` this path takes: each element ends with a sum across
/// lanes, which short rows do not amortize.
const MIN_K: usize = 128;

/// The most multiply-adds (`m·k·n`, 16 M) this path takes: past it, inside
/// a larger computation whose operands come from memory, re-reading all of
/// `B` for every tile of rows costs more than one packed copy.
const MAX_MACS: usize = 1 << 24;

/// The most rows of `A` this path takes: past them `matrixmultiply`'s
/// packing of `B` is paid once for many rows, and its kernel is faster.
const MAX_M: usize = 256;

/// Whether this path takes `a·b`: the rows of `a` and the columns of `b`
/// contiguous, `k` at least [`MIN_K`], at most [`MAX_M`] rows, `b` no
/// larger than [`MAX_B`], at most [`MAX_MACS`] multiply-adds, and a CPU
/// with AVX2 and FMA. A block of rows or columns of a product it takes is
/// taken too.
pub(crate) fn applies(a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>) -> bool {
    let sizes = a.ncols() >= MIN_K && a.nrows() <= MAX_M && b.len() <= MAX_B && a.nrows() * b.len() <= MAX_MACS;
    let layout = a.strides()[1] == 1 && b.strides()[0] == 1 && sizes;
    layout && crate::cpu::avx2_fma()
}

/// `c ← alpha·a·b + beta·c` for a product this path [`applies`] to (it
/// panics otherwise). With `beta` = 0 no element of `c` is read.
///
/// # Safety
///
/// `c` must describe `m × n` elements that neither operand overlaps and no
/// one else accesses during the call, written ones unless `beta` is 0.
pub(crate) unsafe fn gemm(alpha: f32, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, beta: f32, c: Out) {
    assert!(applies(a, b) && c.dim == (a.nrows(), b.ncols()), "dot_tiles::gemm called on a product it does not take");
    let ((m, k), n) = (a.dim(), b.ncols());
    if m == 0 || n == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `applies` checked that the CPU has AVX2 and FMA and that
    // `a`'s rows and `b`'s columns have unit stride; the operand pointers
    // and strides come from the views, so `tiles` reads only inside them,
    // and it writes only the elements `c` describes (the caller's promise).
    unsafe {
        let [rsa, csb] = [a.strides()[0], b.strides()[1]];
        let [rsc, csc] = c.strides;
        avx2::tiles(alpha, (m, k, n), (a.as_ptr(), rsa), (b.as_ptr(), csb), beta, (c.ptr, rsc, csc));
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Rows of `A` and of `B` in one tile (see the module docs).
    const R: usize = 3;
    const Q: usize = 4;

    /// The tiles of `C ← α·A·Bᵀ + β·C`; `a`: the first row of `A` and the
    /// distance between rows, `b`: the same for `B` (the columns of the
    /// GEMM's right operand), `c`: the first element and both strides.
    ///
    /// # Safety
    ///
    /// AVX2 and FMA must be available; `A` must have `m` rows of `k`
    /// contiguous floats, `B` `n` such rows, and `C` `m × n` writable
    /// elements at the given strides, not overlapping `A` or `B`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tiles(
        alpha: f32,
        (m, k, n): (usize, usize, usize),
        (a, lda): (*const f32, isize),
        (b, ldb): (*const f32, isize),
        beta: f32,
        (c, rsc, csc): (*mut f32, isize, isize),
    ) {
        let lanes = k / 8 * 8;
        for i0 in (0..m).step_by(R) {
            // SAFETY (all pointer arithmetic below): rows and columns are
            // clamped to m - 1 and n - 1, and p stays below k.
            let rows: [*const f32; R] =
                std::array::from_fn(|r| unsafe { a.offset((i0 + r).min(m - 1) as isize * lda) });
            for j0 in (0..n).step_by(Q) {
                let cols: [*const f32; Q] =
                    std::array::from_fn(|q| unsafe { b.offset((j0 + q).min(n - 1) as isize * ldb) });
                let mut acc = [[_mm256_setzero_ps(); Q]; R];
                for p in (0..lanes).step_by(8) {
                    let a_p: [__m256; R] = std::array::from_fn(|r| unsafe { _mm256_loadu_ps(rows[r].add(p)) });
                    for (q, col) in cols.iter().enumerate() {
                        let b_p = unsafe { _mm256_loadu_ps(col.add(p)) };
                        for r in 0..R {
                            acc[r][q] = _mm256_fmadd_ps(a_p[r], b_p, acc[r][q]);
                        }
                    }
                }
                for (r, acc_r) in acc.iter().enumerate().take(m - i0) {
                    for (q, &acc_rq) in acc_r.iter().enumerate().take(n - j0) {
                        let mut sum = lane_sum(acc_rq);
                        for p in lanes..k {
                            sum += unsafe { *rows[r].add(p) * *cols[q].add(p) };
                        }
                        let out = unsafe { c.offset((i0 + r) as isize * rsc + (j0 + q) as isize * csc) };
                        // β = 0 overwrites (NaN included) without reading, as BLAS does.
                        unsafe { *out = if beta == 0.0 { alpha * sum } else { alpha * sum + beta * *out } };
                    }
                }
            }
        }
    }

    /// `v₀ + … + v₇` in one fixed order: `((v₀+v₄) + (v₂+v₆)) + ((v₁+v₅) + (v₃+v₇))`.
    #[target_feature(enable = "avx2,fma")]
    fn lane_sum(v: __m256) -> f32 {
        let halves = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v)); // vᵢ + vᵢ₊₄
        let pairs = _mm_add_ps(halves, _mm_movehl_ps(halves, halves)); // (v₀+v₄) + (v₂+v₆), (v₁+v₅) + (v₃+v₇)
        _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps::<1>(pairs, pairs)))
    }
}
