//! Products on CPUs with AVX-512: tiles of eight rows by thirty-two columns
//! of 16-lane multiply-adds, `B` packed into panels.
//!
//! With 512-bit registers a core does twice the multiply-adds per cycle of
//! the AVX2 tiles in `row_tiles.rs` and `dot_tiles.rs`, but only if the
//! operands arrive as fast as the arithmetic consumes them. The layout is
//! the classic one of BLIS and GotoBLAS: `B` is copied into panels of
//! [`NR`] columns (each `kc × 32` floats, one step of `k` after the other),
//! and a tile of `C` is one pass down a panel and [`MR`] rows of `A`:
//!
//! ```text
//! for p in 0..kc:
//!     b = B_panel[p, 0..32]                  two aligned loads, each used eight times
//!     for r in 0..8:
//!         acc[r] += A[i + r, p] · b          broadcast, fused multiply-add, 16 lanes
//! C[i + r, j..j+32] = α · acc[r] + β · C[i + r, j..j+32]
//! ```
//!
//! Sixteen accumulators, two vectors of `B` and one broadcast are 19 of the
//! 32 registers AVX-512 has; each step is 16 multiply-adds (eight cycles at
//! two a cycle) for ten loads (five cycles). `A` is read in place when its
//! rows are contiguous, eight rows side by side; otherwise (`Aᵀ` of a
//! weight gradient) it is first copied into panels of eight rows that step
//! along `k` the same way. The loops around the tile keep each piece where
//! it is reused: eight rows of `A` over [`KC`] steps (8 KiB) in the
//! first-level cache while the tile walks along a block of `B` ([`NC`]
//! columns by [`KC`] steps, 512 KiB) that stays in the second-level cache.
//! Eight rows, not twelve (which fit the registers too): the batches here
//! have 64 rows, which tiles of twelve would cover as 72.
//!
//! Packing costs a pass over `B`, small beside the arithmetic once `B` has
//! more than a few dozen rows to meet, and makes every layout alike: a
//! transposed operand only changes the order the copy reads in (rows of
//! `Bᵀ` are transposed eight by eight in registers). Panels past the edge
//! of `B` are padded with zeros and a tile past the last row of `A` repeats
//! it, so the tile is always whole; only the valid rows and columns of `C`
//! are written.
//!
//! Each element of `C` is one chain of fused multiply-adds in the order of
//! `k`, restarted every [`KC`] steps, each block's result put into `C` as
//! `matrixmultiply`'s FMA kernels and the row tiles put it (`α·acc` for the
//! first block when `β = 0`, else `fma(α, acc, β'·C)` with `β' = β` for the
//! first block and 1 after): so the bits are theirs. The chain of an
//! element depends only on its row of `A` and column of `B`, not on the
//! tile it fell in or on how a product is split between threads.

use std::cell::RefCell;
use std::ops::Range;

use ndarray::{ArrayView2, s};

use super::out::Out;

/// Rows of `C` per tile.
const MR: usize = 8;

/// Columns of `C` per tile: two vectors of 16 lanes.
const NR: usize = 32;

/// The block along `k`: a panel of `B` (`KC × NR`, 32 KiB) and eight rows
/// of `A` (8 KiB) are what a tile reads.
const KC: usize = 256;

/// Columns of `B` packed at a time: `KC × NC` floats (512 KiB) stay in the
/// second-level cache (1 MiB a core on the EPYCs measured, so `A`'s rows
/// and `C`'s fit beside them) while every panel of `A` meets them.
const NC: usize = 512;

/// Whether this path takes a product into `c`: rows of `c` contiguous, and
/// a CPU with AVX-512.
pub(crate) fn applies(c_strides: &[isize]) -> bool {
    c_strides[1] == 1 && crate::cpu::avx512()
}

thread_local! {
    /// The packing buffers of this thread (for `A`, for `B`), kept between
    /// products so that a product allocates nothing once they have grown.
    static PANELS: RefCell<(Vec<f32>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// A right operand `B (k, n)` packed once, every block along `k`, for many
/// products with it: a recurrent weight meets every step of a sequence.
#[derive(Debug, Clone)]
pub struct Packed {
    dim: (usize, usize),
    /// Block after block along `k`; in each, `⌈n / NR⌉` panels of `kc × NR`.
    data: Vec<f32>,
    /// Where the panels start in `data`: the first 64-byte boundary.
    start: usize,
}

impl Packed {
    /// `b` in panels, or `None` where this path does not run (on other
    /// CPUs, and under the reference kernels).
    ///
    /// ```
    /// let b = ndarray::Array2::<f32>::ones((3, 40));
    /// let panels = lingo_kernels::gemm::Panels::new(b.view());
    /// assert_eq!(panels.is_some(), lingo_kernels::cpu::avx512() && !lingo_kernels::reference());
    /// ```
    pub fn new(b: ArrayView2<'_, f32>) -> Option<Packed> {
        if !crate::cpu::avx512() || crate::reference() {
            return None;
        }
        let (k, n) = b.dim();
        let mut data = Vec::new();
        let start = aligned(&mut data, k * n.div_ceil(NR) * NR);
        let mut packed = Packed { dim: (k, n), data, start };
        for pc in (0..k).step_by(KC) {
            let block = b.slice(s![pc..(pc + KC).min(k), ..]);
            pack_into::<NR>(packed.block_mut(pc, block.nrows()), block);
        }
        Some(packed)
    }

    /// The shape of `B`.
    ///
    /// ```
    /// let b = ndarray::Array2::<f32>::ones((3, 40));
    /// if let Some(panels) = lingo_kernels::gemm::Panels::new(b.view()) {
    ///     assert_eq!(panels.dim(), (3, 40));
    /// }
    /// ```
    pub fn dim(&self) -> (usize, usize) {
        self.dim
    }

    /// Where the block starting at step `pc` begins in `data`: every block
    /// before it holds `⌈n / NR⌉` panels of [`KC`] steps.
    fn block_start(&self, pc: usize) -> usize {
        self.start + pc * self.dim.1.div_ceil(NR) * NR
    }

    /// The panels of columns `cols` (`cols.start` a multiple of [`NR`]) in
    /// the block of `kc` steps starting at step `pc`.
    fn panels(&self, pc: usize, kc: usize, cols: Range<usize>) -> &[f32] {
        let first = self.block_start(pc) + cols.start * kc;
        &self.data[first..first + cols.len().div_ceil(NR) * NR * kc]
    }

    /// The whole block of `kc` steps starting at step `pc`, to pack into.
    fn block_mut(&mut self, pc: usize, kc: usize) -> &mut [f32] {
        let first = self.block_start(pc);
        &mut self.data[first..first + self.dim.1.div_ceil(NR) * NR * kc]
    }
}

/// The right operand of one product: a view, packed as the product goes,
/// or columns `cols` of a [`Packed`] one (`cols.start` a multiple of [`NR`]).
#[derive(Debug, Clone)]
pub(crate) enum Rhs<'b> {
    View(ArrayView2<'b, f32>),
    Packed(&'b Packed, Range<usize>),
}

impl Rhs<'_> {
    fn ncols(&self) -> usize {
        match self {
            Rhs::View(b) => b.ncols(),
            Rhs::Packed(_, cols) => cols.len(),
        }
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
pub(crate) unsafe fn gemm(alpha: f32, a: ArrayView2<'_, f32>, b: Rhs<'_>, beta: f32, c: Out) {
    assert!(
        applies(&c.strides) && c.dim == (a.nrows(), b.ncols()),
        "panel_tiles::gemm called on a product it does not take"
    );
    if let Rhs::Packed(p, cols) = &b {
        assert!(
            p.dim.0 == a.ncols() && cols.start.is_multiple_of(NR) && cols.end <= p.dim.1,
            "panel_tiles::gemm: packed columns out of place"
        );
    }
    let ((m, k), n) = (a.dim(), b.ncols());
    PANELS.with_borrow_mut(|(a_buf, b_buf)| {
        for pc in (0..k).step_by(KC) {
            let kc = KC.min(k - pc);
            // Rows of A contiguous: read in place, one pointer per row of a tile;
            // otherwise (Aᵀ of a weight gradient) copied into panels first.
            let a_block = a.slice(s![.., pc..pc + kc]);
            let lhs = if a.strides()[1] == 1 {
                Lhs::Rows(a_block)
            } else {
                Lhs::Panels(pack::<MR>(a_buf, a_block.reversed_axes()))
            };
            // β scales C once, with the first block along k; later blocks add to it.
            let beta = if pc == 0 { beta } else { 1.0 };
            for jc in (0..n).step_by(NC) {
                let nc = NC.min(n - jc);
                let b_panels = match &b {
                    Rhs::View(b) => pack::<NR>(b_buf, b.slice(s![pc..pc + kc, jc..jc + nc])),
                    Rhs::Packed(p, cols) => p.panels(pc, kc, cols.start + jc..cols.start + jc + nc),
                };
                for ir in (0..m).step_by(MR) {
                    let rows = MR.min(m - ir);
                    let a_tile = lhs.tile(ir, rows, kc);
                    for (jr, b_panel) in (jc..jc + nc).step_by(NR).zip(b_panels.chunks_exact(kc * NR)) {
                        let cols = NR.min(n - jr);
                        let c_tile = (c.ptr.wrapping_offset(ir as isize * c.strides[0] + jr as isize), c.strides[0]);
                        // What the tile adds to: C, or at the first block the row C starts as.
                        let from = match c.init {
                            Some(row) if pc == 0 => (row.wrapping_add(jr), 0),
                            _ => (c_tile.0.cast_const(), c_tile.1),
                        };
                        // SAFETY: `applies` checked for AVX-512; the tile's rows of A
                        // hold `kc` floats at their step, the panel of B `kc` steps
                        // of NR floats, 64-byte aligned; the tile's `rows × cols`
                        // elements lie inside `c`, and `init` holds `n` floats
                        // (the caller's promise).
                        #[cfg(target_arch = "x86_64")]
                        unsafe {
                            let (a_tile, b_panel, size) = (a_tile, b_panel.as_ptr(), (rows, cols));
                            if cols == NR {
                                avx512::tile::<false>(kc, a_tile, b_panel, (alpha, beta), from, c_tile, size);
                            } else {
                                avx512::tile::<true>(kc, a_tile, b_panel, (alpha, beta), from, c_tile, size);
                            }
                        }
                    }
                }
            }
        }
    });
}

/// One block along `k` of the left operand, as the tiles read it.
enum Lhs<'a> {
    /// `A`'s own rows, each contiguous.
    Rows(ArrayView2<'a, f32>),
    /// Panels of [`MR`] rows packed by [`pack`].
    Panels(&'a [f32]),
}

impl Lhs<'_> {
    /// Rows `ir..ir + rows` of a tile: where each row's first element is and
    /// the distance from one step along `k` to the next. A tile past the
    /// last row repeats it; its results are not stored.
    fn tile(&self, ir: usize, rows: usize, kc: usize) -> ([*const f32; MR], usize) {
        match self {
            Lhs::Rows(a) => (std::array::from_fn(|r| a.row(ir + r.min(rows - 1)).as_ptr()), 1),
            Lhs::Panels(panels) => {
                let panel = panels[ir * kc..].as_ptr();
                (std::array::from_fn(|r| panel.wrapping_add(r)), MR)
            }
        }
    }
}

/// `x (kc, len)` copied into panels by [`pack_into`], in `buf`; returned as
/// a slice of `buf` that starts on a 64-byte boundary.
fn pack<'b, const WIDTH: usize>(buf: &'b mut Vec<f32>, x: ArrayView2<'_, f32>) -> &'b [f32] {
    let size = x.ncols().div_ceil(WIDTH) * WIDTH * x.nrows();
    let start = aligned(buf, size);
    pack_into::<WIDTH>(&mut buf[start..start + size], x);
    &buf[start..start + size]
}

/// Grows `buf` to hold `size` floats from a 64-byte boundary (the aligned
/// loads of the tile need it), and returns where that boundary is.
fn aligned(buf: &mut Vec<f32>, size: usize) -> usize {
    if buf.len() < size + 16 {
        buf.resize(size + 16, 0.0);
    }
    buf.as_ptr().align_offset(64).min(16)
}

/// `x (kc, len)` copied into `out` as panels of `WIDTH` columns, each `kc`
/// steps of `WIDTH` contiguous floats, the last panel padded with zeros.
/// `B`'s block is packed as it is, `A`'s as its transpose, so both panels
/// step along `k`.
fn pack_into<const WIDTH: usize>(out: &mut [f32], x: ArrayView2<'_, f32>) {
    let (kc, len) = x.dim();
    for (panel, first) in out.chunks_exact_mut(kc * WIDTH).zip((0..len).step_by(WIDTH)) {
        let cols = WIDTH.min(len - first);
        let block = x.slice(s![.., first..first + cols]);
        if block.strides()[1] == 1 {
            // Rows of the block contiguous (`B` row by row): one copy per step.
            for (step, row) in panel.chunks_exact_mut(WIDTH).zip(block.rows()) {
                let row = row.to_slice().expect("unit column stride");
                match <&mut [f32; WIDTH]>::try_from(step) {
                    // A whole panel's width: a copy of known size, done in registers.
                    Ok(step) if cols == WIDTH => *step = row.try_into().expect("cols == WIDTH"),
                    Ok(step) => {
                        step[..cols].copy_from_slice(row);
                        step[cols..].fill(0.0);
                    }
                    Err(_) => unreachable!("chunks of WIDTH"),
                }
            }
            continue;
        }
        if block.strides()[0] == 1 {
            // Columns contiguous (`A` row by row, `Bᵀ`): transposed eight by eight.
            super::row_tiles::transpose_into(block, panel, WIDTH);
        } else {
            for ((p, j), &v) in block.indexed_iter() {
                panel[p * WIDTH + j] = v;
            }
        }
        panel.chunks_exact_mut(WIDTH).for_each(|step| step[cols..].fill(0.0));
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// One tile: `C[..rows, ..cols] ← α·A_panel·B_panel + β·F` over `kc`
    /// steps, `F` read from `from` (`C` itself, or a row every row starts
    /// as: row distance 0); `from`, `c`: the first element and the
    /// distance between rows.
    ///
    /// # Safety
    ///
    /// AVX-512F must be available; each of `a`'s rows must hold `kc`
    /// floats `step` apart, and `b` `kc · NR` floats, 64-byte aligned; `c`
    /// must have `rows ≤ MR` rows of `cols ≤ NR` writable floats, and
    /// `from` as many readable ones unless `beta` is 0.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile<const EDGE: bool>(
        kc: usize,
        (a, step): ([*const f32; MR], usize),
        b: *const f32,
        (alpha, beta): (f32, f32),
        (from, rsf): (*const f32, isize),
        (c, rsc): (*mut f32, isize),
        (rows, cols): (usize, usize),
    ) {
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        for p in 0..kc {
            // SAFETY (pointer arithmetic): p < kc, r < MR.
            let b_v = unsafe { [_mm512_load_ps(b.add(p * NR)), _mm512_load_ps(b.add(p * NR + 16))] };
            for (acc_r, a_r) in acc.iter_mut().zip(a) {
                let a_pr = _mm512_set1_ps(unsafe { *a_r.add(p * step) });
                acc_r[0] = _mm512_fmadd_ps(a_pr, b_v[0], acc_r[0]);
                acc_r[1] = _mm512_fmadd_ps(a_pr, b_v[1], acc_r[1]);
            }
        }
        // Lanes of each vector that are inside the tile's `cols` columns.
        let lanes = |v: usize| -> __mmask16 {
            if EDGE { ((1_u32 << cols.saturating_sub(16 * v).min(16)) - 1) as __mmask16 } else { !0 }
        };
        let masks = [lanes(0), lanes(1)];
        let (alpha_v, beta_v) = (_mm512_set1_ps(alpha), _mm512_set1_ps(beta));
        for (r, acc_r) in acc.iter().enumerate().take(rows) {
            for (v, &acc_rv) in acc_r.iter().enumerate() {
                let (mask, out) = (masks[v], unsafe { c.offset(r as isize * rsc).add(16 * v) });
                if mask == 0 {
                    continue;
                }
                // β = 0 overwrites (NaN included) without reading, as BLAS does.
                let value = if beta == 0.0 {
                    _mm512_mul_ps(alpha_v, acc_rv)
                } else {
                    let f = unsafe { _mm512_maskz_loadu_ps(mask, from.offset(r as isize * rsf).add(16 * v)) };
                    _mm512_fmadd_ps(alpha_v, acc_rv, _mm512_mul_ps(f, beta_v))
                };
                unsafe { _mm512_mask_storeu_ps(out, mask, value) };
            }
        }
    }
}
