//! Products whose right operand is stored row by row, without packing.
//!
//! `C = A·B` with the rows of `B` and of `C` contiguous is the layout of
//! every backward product in these models: a recurrent step's
//! `dh_{t-1} = dĥ·W_hh`, a layer's input gradient `dX = dY·W`, and the weight
//! gradients `dW = dYᵀ·X` (`X`'s rows contiguous, `dYᵀ` read down its
//! columns). `matrixmultiply` packs both operands on every call, which for
//! the small products of one recurrent step costs a good part of the
//! arithmetic, at every step of a sequence.
//!
//! Here nothing is copied. A tile of six rows of `C` by sixteen columns
//! keeps twelve 8-lane sums in registers; each step along `k` loads two
//! vectors of one row of `B` and multiplies them by six broadcast elements
//! of `A`:
//!
//! ```text
//! for p in 0..k:
//!     b = B[p, j..j+16]                      two loads, each used six times
//!     for r in 0..6:
//!         acc[r] += A[i + r, p] · b          broadcast, fused multiply-add
//! C[i + r, j..j+16] = α · acc[r] + β · C[i + r, j..j+16]
//! ```
//!
//! Twelve accumulators, two vectors of `B` and one broadcast are fifteen of
//! the sixteen registers AVX2 has. `A` is only ever read one element at a
//! time, so its strides do not matter (`dYᵀ` costs nothing); the tile of
//! the last rows is narrower, and a last block of eight columns uses one
//! vector per row.
//!
//! # The same bits as `matrixmultiply`
//!
//! Each element is one chain of fused multiply-adds in the order of `p`,
//! restarted every [`KC`] steps the way `matrixmultiply` blocks `k`, and the
//! chain's result goes into `C` as `matrixmultiply`'s kernels put it there:
//! `C = α·acc` when `β = 0` (first block), else `C = fma(α, acc, β·C)` (later
//! blocks with `β = 1`). So a product gives the same bits by this path as
//! by `matrixmultiply`'s FMA kernels, and whichever way a product is split
//! between threads.
//!
//! [`MAX_K`] and [`MAX_B`] keep the path where it was measured to win
//! (`docs/performance.md`, "Thresholds").
//!
//! # `B` stored column by column
//!
//! A `linear` layer's `x·Wᵀ` with `W` stored row by row reads `B = Wᵀ` down
//! its columns. With long rows (`k ≥ 128`) the dot-product tiles take that
//! layout; with short ones, [`transposed`] first copies `B` into row order,
//! eight by eight with AVX2 shuffles, far cheaper than `matrixmultiply`'s
//! element-by-element packing of that layout, and the tiles above run on
//! the copy, with the same bits.

use ndarray::{Array2, ArrayView2};

use super::out::Out;

/// `matrixmultiply`'s block along `k` for `f32` (its `S_KC`): each element's
/// chain of multiply-adds restarts here, as it does there.
const KC: usize = 256;

/// The largest `B` (`k·n` floats, 128 KiB) this path takes: every band of
/// six rows reads all of `B`, which must stay in the core's cache.
const MAX_B: usize = 1 << 15;

/// The longest `k` this path takes: past it, reading `A` one element at a
/// time down its columns misses the cache.
const MAX_K: usize = 512;

/// Whether this path takes `a·b` into `c`: the rows of `b` and `c`
/// contiguous, a multiple of 8 columns, `k` at most [`MAX_K`], `b` no larger
/// than [`MAX_B`], and a CPU with AVX2 and FMA. A block of rows, or of
/// columns cut at multiples of 8, of a product it takes is taken too.
pub(crate) fn applies(a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, c_strides: &[isize]) -> bool {
    b.strides()[1] == 1 && fits(a, b, c_strides)
}

/// Whether this path takes `a·b` into `c` after copying `b` into row order
/// with [`transposed`]: as [`applies`], with the columns of `b` contiguous
/// instead of its rows.
pub(crate) fn applies_transposed(a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, c_strides: &[isize]) -> bool {
    b.strides()[0] == 1 && fits(a, b, c_strides)
}

/// What both layouts need besides `b`'s: see [`applies`].
fn fits(a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, c_strides: &[isize]) -> bool {
    let sizes = c_strides[1] == 1 && b.ncols().is_multiple_of(8) && a.ncols() <= MAX_K && b.len() <= MAX_B;
    sizes && crate::cpu::avx2_fma()
}

/// `b (k, n)`, whose columns are contiguous, copied into a row-major array.
pub(crate) fn transposed(b: ArrayView2<'_, f32>) -> Array2<f32> {
    let mut out = Array2::<f32>::uninit(b.dim());
    // SAFETY: `out` is a fresh row-major `(k, n)` array: `k` rows of `n`
    // writable floats `n` apart, every one of which `transpose` writes.
    unsafe {
        transpose(b, out.as_mut_ptr().cast::<f32>(), b.ncols());
        out.assume_init()
    }
}

/// `b (k, n)`, whose columns are contiguous, copied into the rows of `dst`,
/// `ldd ≥ n` floats apart (row `p` of `b` at `dst[p · ldd..][..n]`); the
/// floats between the rows are left as they are.
pub(crate) fn transpose_into(b: ArrayView2<'_, f32>, dst: &mut [f32], ldd: usize) {
    let (k, n) = b.dim();
    assert!(n <= ldd && dst.len() >= k.saturating_sub(1) * ldd + n, "row_tiles::transpose_into: destination too small");
    // SAFETY: `dst` has `k` rows of `n` writable floats `ldd` apart (checked above).
    unsafe { transpose(b, dst.as_mut_ptr(), ldd) };
}

/// `b (k, n)`, whose columns are contiguous, written as `k` rows of `n`
/// floats `ldd` apart from `dst`: eight by eight with AVX2 where the CPU
/// has it, element by element otherwise.
///
/// # Safety
///
/// `dst` must have `k` rows of `n` writable floats `ldd` apart, not
/// overlapping `b`.
unsafe fn transpose(b: ArrayView2<'_, f32>, dst: *mut f32, ldd: usize) {
    assert!(b.strides()[0] == 1, "row_tiles::transpose needs contiguous columns");
    let (k, n) = b.dim();
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::avx2() {
        // SAFETY: AVX2 is present; `b` has `n` columns of `k` contiguous
        // floats `strides()[1]` apart; `dst` as the caller promises.
        unsafe { avx2::transpose(b.as_ptr(), b.strides()[1], (k, n), (dst, ldd)) };
        return;
    }
    for ((p, j), &v) in b.indexed_iter() {
        // SAFETY: p < k, j < n: inside the rows the caller promises.
        unsafe { dst.add(p * ldd + j).write(v) };
    }
}

/// `c ← alpha·a·b + beta·c` for a product this path [`applies`] to (it
/// panics otherwise). With `beta` = 0 no element of `c` is read before it
/// is written.
///
/// # Safety
///
/// `c` must describe `m × n` elements that neither operand overlaps and no
/// one else accesses during the call, written ones unless `beta` is 0.
pub(crate) unsafe fn gemm(alpha: f32, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, beta: f32, c: Out) {
    assert!(
        applies(a, b, &c.strides) && c.dim == (a.nrows(), b.ncols()),
        "row_tiles::gemm called on a product it does not take"
    );
    let ((m, k), n) = (a.dim(), b.ncols());
    if m == 0 || n == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `applies` checked that the CPU has AVX2 and FMA, that `b`'s
    // and `c`'s rows have unit stride and that `n` is a multiple of 8; the
    // operand pointers and strides come from the views, so `tiles` reads
    // only inside them, and it writes only the elements `c` describes (the
    // caller's promise).
    unsafe {
        let [rsa, csa, rsb] = [a.strides()[0], a.strides()[1], b.strides()[0]];
        avx2::tiles(alpha, (m, k, n), (a.as_ptr(), rsa, csa), (b.as_ptr(), rsb), beta, (c.ptr, c.strides[0]));
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::KC;
    use std::arch::x86_64::*;

    /// `dst (k, n)`, rows `ldd` apart, from `src`, `n` columns of `k`
    /// contiguous floats `lds` apart: blocks of 8 × 8 loaded as eight rows of `Bᵀ` and
    /// transposed in registers (unpack pairs, shuffle quads, swap halves),
    /// then the edges element by element.
    ///
    /// # Safety
    ///
    /// AVX2 must be available; `src` must hold the `n × k` floats described,
    /// `dst` `k` rows of `n` writable floats `ldd` apart, not overlapping.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn transpose(src: *const f32, lds: isize, (k, n): (usize, usize), (dst, ldd): (*mut f32, usize)) {
        let (n8, k8) = (n / 8 * 8, k / 8 * 8);
        // SAFETY (all pointer arithmetic below): j < n, p < k.
        let at = |j: usize, p: usize| unsafe { src.offset(j as isize * lds).add(p) };
        for j in (0..n8).step_by(8) {
            for p in (0..k8).step_by(8) {
                let r: [__m256; 8] = std::array::from_fn(|i| unsafe { _mm256_loadu_ps(at(j + i, p)) });
                let t = [
                    _mm256_unpacklo_ps(r[0], r[1]),
                    _mm256_unpackhi_ps(r[0], r[1]),
                    _mm256_unpacklo_ps(r[2], r[3]),
                    _mm256_unpackhi_ps(r[2], r[3]),
                    _mm256_unpacklo_ps(r[4], r[5]),
                    _mm256_unpackhi_ps(r[4], r[5]),
                    _mm256_unpacklo_ps(r[6], r[7]),
                    _mm256_unpackhi_ps(r[6], r[7]),
                ];
                let u = [
                    _mm256_shuffle_ps::<0x44>(t[0], t[2]),
                    _mm256_shuffle_ps::<0xEE>(t[0], t[2]),
                    _mm256_shuffle_ps::<0x44>(t[1], t[3]),
                    _mm256_shuffle_ps::<0xEE>(t[1], t[3]),
                    _mm256_shuffle_ps::<0x44>(t[4], t[6]),
                    _mm256_shuffle_ps::<0xEE>(t[4], t[6]),
                    _mm256_shuffle_ps::<0x44>(t[5], t[7]),
                    _mm256_shuffle_ps::<0xEE>(t[5], t[7]),
                ];
                for i in 0..4 {
                    // Row p + i of dst takes the low halves, row p + 4 + i the high ones.
                    unsafe {
                        _mm256_storeu_ps(dst.add((p + i) * ldd + j), _mm256_permute2f128_ps::<0x20>(u[i], u[4 + i]))
                    };
                    unsafe {
                        _mm256_storeu_ps(dst.add((p + 4 + i) * ldd + j), _mm256_permute2f128_ps::<0x31>(u[i], u[4 + i]))
                    };
                }
            }
        }
        // The edges: columns past the last block of 8 rows of `Bᵀ`, and rows past the last block of `k`.
        for j in 0..n {
            for p in if j < n8 { k8 } else { 0 }..k {
                unsafe { *dst.add(p * ldd + j) = *at(j, p) };
            }
        }
    }

    /// Rows of `C` in one tile (see the module docs).
    const R: usize = 6;

    /// The tiles of `C ← α·A·B + β·C`; `a`: the first element and both
    /// strides, `b` and `c`: the first element and the distance between rows.
    ///
    /// # Safety
    ///
    /// AVX2 and FMA must be available; `n` must be a multiple of 8; `A`
    /// must have `m × k` readable elements at its strides, `B` `k` rows of
    /// `n` contiguous floats, and `C` `m` rows of `n` contiguous writable
    /// floats, not overlapping `A` or `B`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tiles(
        alpha: f32,
        (m, k, n): (usize, usize, usize),
        a: (*const f32, isize, isize),
        b: (*const f32, isize),
        beta: f32,
        c: (*mut f32, isize),
    ) {
        for i in (0..m).step_by(R) {
            // A const number of rows per band lets the compiler keep the
            // accumulators in registers.
            let band = |rows| unsafe {
                match rows {
                    6 => band::<6>(alpha, i, (k, n), a, b, beta, c),
                    5 => band::<5>(alpha, i, (k, n), a, b, beta, c),
                    4 => band::<4>(alpha, i, (k, n), a, b, beta, c),
                    3 => band::<3>(alpha, i, (k, n), a, b, beta, c),
                    2 => band::<2>(alpha, i, (k, n), a, b, beta, c),
                    _ => band::<1>(alpha, i, (k, n), a, b, beta, c),
                }
            };
            band((m - i).min(R));
        }
    }

    /// Rows `i..i + ROWS` of `C`: sixteen columns at a time, then eight.
    ///
    /// # Safety
    ///
    /// As for [`tiles`], with rows `i..i + ROWS` inside `C`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn band<const ROWS: usize>(
        alpha: f32,
        i: usize,
        (k, n): (usize, usize),
        a: (*const f32, isize, isize),
        b: (*const f32, isize),
        beta: f32,
        c: (*mut f32, isize),
    ) {
        let mut j = 0;
        while j + 16 <= n {
            unsafe { tile::<ROWS, 2>(alpha, (i, j), k, a, b, beta, c) };
            j += 16;
        }
        if j < n {
            unsafe { tile::<ROWS, 1>(alpha, (i, j), k, a, b, beta, c) };
        }
    }

    /// One tile: rows `i..i + ROWS`, columns `j..j + 8·VECS` of `C`, with
    /// `k` cut into blocks of [`KC`] (see the module docs for why).
    ///
    /// # Safety
    ///
    /// As for [`tiles`], with the tile inside `C`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn tile<const ROWS: usize, const VECS: usize>(
        alpha: f32,
        (i, j): (usize, usize),
        k: usize,
        (a, rsa, csa): (*const f32, isize, isize),
        (b, rsb): (*const f32, isize),
        beta: f32,
        (c, rsc): (*mut f32, isize),
    ) {
        // SAFETY (all pointer arithmetic below): rows stay below i + ROWS ≤ m,
        // columns below j + 8·VECS ≤ n, and p below k.
        let a_rows: [*const f32; ROWS] = std::array::from_fn(|r| unsafe { a.offset((i + r) as isize * rsa) });
        let c_rows: [*mut f32; ROWS] = std::array::from_fn(|r| unsafe { c.offset((i + r) as isize * rsc).add(j) });
        for block in (0..k).step_by(KC) {
            let mut acc = [[_mm256_setzero_ps(); VECS]; ROWS];
            for p in block..(block + KC).min(k) {
                let b_p = unsafe { b.offset(p as isize * rsb).add(j) };
                let b_v: [__m256; VECS] = std::array::from_fn(|v| unsafe { _mm256_loadu_ps(b_p.add(8 * v)) });
                for (acc_r, a_r) in acc.iter_mut().zip(a_rows) {
                    let a_rp = _mm256_set1_ps(unsafe { *a_r.offset(p as isize * csa) });
                    for (acc_rv, &b_pv) in acc_r.iter_mut().zip(&b_v) {
                        *acc_rv = _mm256_fmadd_ps(a_rp, b_pv, *acc_rv);
                    }
                }
            }
            // matrixmultiply's epilogue: β applies to the first block only.
            let beta = if block == 0 { beta } else { 1.0 };
            let (alpha_v, beta_v) = (_mm256_set1_ps(alpha), _mm256_set1_ps(beta));
            for (acc_r, &c_r) in acc.iter().zip(&c_rows) {
                for (v, &acc_rv) in acc_r.iter().enumerate() {
                    let out = unsafe { c_r.add(8 * v) };
                    // β = 0 overwrites (NaN included) without reading, as BLAS does.
                    let value = if beta == 0.0 {
                        _mm256_mul_ps(alpha_v, acc_rv)
                    } else {
                        _mm256_fmadd_ps(alpha_v, acc_rv, _mm256_mul_ps(unsafe { _mm256_loadu_ps(out) }, beta_v))
                    };
                    unsafe { _mm256_storeu_ps(out, value) };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposed_copies_every_element_including_the_edges() {
        // 13 × 37: blocks of 8 × 8 and leftover rows and columns on both sides.
        let w = Array2::from_shape_fn((13, 37), |(j, p)| (j * 100 + p) as f32);
        let b = w.t(); // (37, 13) with contiguous columns
        assert_eq!(transposed(b), b.to_owned());
        assert_eq!(transposed(b).strides(), &[13, 1]);
    }
}
