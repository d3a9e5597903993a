//! `C ← α·A·B + β·C` for 2-D views of any strides: the one entry point for
//! every matrix product in lingo.
//!
//! Because every path reads strides, a transposed operand (`Aᵀ` is `A` with
//! its two strides swapped) costs nothing: backward passes such as
//! `dA = dC·Bᵀ` never copy. `Path::of` picks one path per product, by its
//! size and memory layout, once for the whole product:
//!
//! | path | takes | why |
//! |---|---|---|
//! | `direct.rs` | at most two rows, or at most [`SMALL_MACS`] multiply-adds | packing costs more than the arithmetic |
//! | `panel_tiles.rs` | on AVX-512 CPUs, the rest with `C`'s rows contiguous | 16 lanes, `B` packed once per block |
//! | `dot_tiles.rs` | `A`'s rows and `B`'s columns contiguous (`Q·Kᵀ`, `x·Wᵀ`) | no copy: each result is a dot product of two rows |
//! | `row_tiles.rs` | `B`'s rows (or, after a row-major copy, columns) and `C`'s rows contiguous (`dĥ·W_hh`, `dYᵀ·X`) | no packing: broadcast multiply-adds along `B`'s rows |
//! | `packed.rs` | everything else | `matrixmultiply`, which packs both operands |
//!
//! Each path's own limits are constants in its module. Every path sums
//! each element in a fixed order, so results do not depend on the thread
//! count (`shared` splits a large product by blocks of `C`, never along
//! `k`); the row tiles and the panel tiles sum in the order of
//! `matrixmultiply`'s FMA kernels and give their bits, while the direct
//! loops and the dot tiles may differ from them in the last bits.
//!
//! A right operand that meets many products (a recurrent weight, at every
//! step of a sequence) is packed once for all of them ([`Prepared`], with
//! [`gemm_prepared`]), with the same bits. [`gemm_uninit`] writes into
//! memory not yet written, sparing a fresh result its zeroing pass; the
//! blocked paths see their result as a raw block (`Out`) and, with
//! `β = 0`, never read an element before writing it.
//!
//! `cargo bench -p lingo-kernels --bench gemm` measures the model's largest
//! products against one `matrixmultiply` call; the figures are in
//! `docs/performance.md`.

use std::borrow::Cow;
use std::mem::MaybeUninit;
use std::ops::Range;

use ndarray::{Array2, ArrayView2, ArrayViewMut2, CowArray, Ix2, s};
use rayon::prelude::*;

mod direct;
mod dot_tiles;
mod out;
mod packed;
mod panel_tiles;
pub mod reference;
mod row_tiles;

pub use packed::matrixmultiply;

use out::Out;

use crate::cpu;

/// `c ← alpha · a · b + beta · c`, with `a: (m, k)`, `b: (k, n)`, `c: (m, n)`,
/// any strides (pass `b.t()` for `Bᵀ`: no copy is made).
///
/// This is the low-level kernel that ops and fused kernels call; it panics
/// if the shapes disagree, so public ops check shapes first and return an
/// error naming both. It takes the path the module docs (`gemm/mod.rs`) give
/// for the product's size and layout; each element is summed in a fixed
/// order on every path, so results do not depend on the thread count (the
/// paths may differ in the last bits).
///
/// ```
/// use ndarray::{arr2, Array2};
/// let a = arr2(&[[1.0_f32, 2.0], [3.0, 4.0]]);
/// let mut c = Array2::<f32>::ones((2, 2));
/// lingo_kernels::gemm(1.0, a.view(), a.t(), 1.0, c.view_mut());   // c = a·aᵀ + c
/// assert_eq!(c, arr2(&[[6.0, 12.0], [12.0, 26.0]]));
/// ```
pub fn gemm(alpha: f32, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, beta: f32, mut c: ArrayViewMut2<'_, f32>) {
    if crate::reference() {
        return reference::gemm(alpha, a, b, beta, c);
    }
    let k = checked_dims(a, b, c.dim());
    if k == 0 {
        // A·B is the zero matrix; only the β·C part is left (β = 0 overwrites, NaN too).
        c.mapv_inplace(|v| if beta == 0.0 { 0.0 } else { beta * v });
        return;
    }
    match Path::of(a, b, c.strides()) {
        Path::Direct => direct::gemm(alpha, a, b, beta, c),
        // SAFETY: `c` is a unique view of written floats, so `Out` describes
        // memory the kernel may read and write and no operand aliases.
        Path::Kernel(kernel) => unsafe {
            product(kernel, alpha, a, b, beta, Out::new(c.as_mut_ptr(), c.dim(), c.strides()))
        },
    }
}

/// `c ← alpha · a · b` into `c` whose elements need not have been written
/// (a fresh [`Array::uninit`](ndarray::Array::uninit) result, or a block of
/// one), returned as floats with every element written.
///
/// The same product, and the same bits, as [`gemm`] with `β = 0`, minus
/// the zeroing that `gemm` on a fresh result would need first: `C` is
/// written without being read (`matrixmultiply` documents that for
/// `β = 0`, and the tile kernels do the same). The direct loops for small
/// products, which work on slices of floats, get `c` zeroed first.
///
/// ```
/// use ndarray::{arr2, Array2};
/// let a = arr2(&[[1.0_f32, 2.0], [3.0, 4.0]]);
/// let mut fresh = Array2::<f32>::uninit((2, 2));
/// let c = lingo_kernels::gemm_uninit(1.0, a.view(), a.t(), fresh.view_mut());
/// assert_eq!(c, arr2(&[[5.0, 11.0], [11.0, 25.0]]));
/// ```
pub fn gemm_uninit<'c>(
    alpha: f32,
    a: ArrayView2<'_, f32>,
    b: ArrayView2<'_, f32>,
    mut c: ArrayViewMut2<'c, MaybeUninit<f32>>,
) -> ArrayViewMut2<'c, f32> {
    let k = checked_dims(a, b, c.dim());
    match Path::of(a, b, c.strides()) {
        Path::Kernel(kernel) if k > 0 && !crate::reference() => {
            // SAFETY: `c` is a unique view, so no operand aliases it, and with
            // β = 0 every kernel writes each element of `C` before reading
            // any; so afterwards every element is written.
            unsafe {
                product(kernel, alpha, a, b, 0.0, Out::new(c.as_mut_ptr().cast(), c.dim(), c.strides()));
                c.assume_init()
            }
        }
        _ => {
            c.fill(MaybeUninit::new(0.0));
            // SAFETY: every element was written on the line above.
            let mut c = unsafe { c.assume_init() };
            gemm(alpha, a, b, 0.0, c.view_mut());
            c
        }
    }
}

/// `alpha · a · b` as a new `(m, n)` array, written once by
/// [`gemm_uninit`] instead of zeroed first and then written.
///
/// ```
/// let a = ndarray::arr2(&[[1.0_f32, 2.0], [3.0, 4.0]]);
/// assert_eq!(lingo_kernels::gemm_new(2.0, a.view(), a.t()), ndarray::arr2(&[[10.0, 22.0], [22.0, 50.0]]));
/// ```
pub fn gemm_new(alpha: f32, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>) -> Array2<f32> {
    let mut c = Array2::uninit((a.nrows(), b.ncols()));
    gemm_uninit(alpha, a, b, c.view_mut());
    // SAFETY: `gemm_uninit` wrote every element.
    unsafe { c.assume_init() }
}

/// A right operand prepared once for many products with it (a recurrent
/// weight meets every step of a sequence): kept as it is, and on a CPU with
/// AVX-512 also copied into the panels of the AVX-512 path, so that no
/// product with it packs it again. Products with it by [`gemm_prepared`]
/// have the bits of [`gemm`] with the plain operand.
#[derive(Debug)]
pub struct Prepared<'b> {
    plain: CowArray<'b, f32, Ix2>,
    panels: Option<Cow<'b, panel_tiles::Packed>>,
}

impl<'b> Prepared<'b> {
    /// `b`, with its panels when it will meet more than one product.
    pub fn new(b: CowArray<'b, f32, Ix2>, products: usize) -> Prepared<'b> {
        let panels = if products > 1 { panel_tiles::Packed::new(b.view()).map(Cow::Owned) } else { None };
        Prepared { plain: b, panels }
    }

    /// `b` with the panels its owner keeps (`panels` must be `b` packed, as
    /// [`Panels::new`] packs it): no product with it packs, not even the first.
    ///
    /// ```
    /// use lingo_kernels::gemm::{Panels, Prepared, gemm_prepared};
    /// let b = ndarray::Array2::from_shape_fn((64, 96), |(i, j)| (i * 96 + j) as f32 / 1e3);
    /// let a = ndarray::Array2::from_elem((48, 64), 0.5_f32);
    /// let panels = Panels::new(b.view());
    /// let mut c = ndarray::Array2::zeros((48, 96));
    /// match &panels {
    ///     Some(p) => gemm_prepared(1.0, a.view(), &Prepared::with_panels(b.view().into(), p), 0.0, c.view_mut()),
    ///     None => gemm_prepared(1.0, a.view(), &Prepared::new(b.view().into(), 2), 0.0, c.view_mut()),
    /// }
    /// assert_eq!(c, lingo_kernels::gemm_new(1.0, a.view(), b.view()));
    /// ```
    pub fn with_panels(b: CowArray<'b, f32, Ix2>, panels: &'b Panels) -> Prepared<'b> {
        debug_assert_eq!(panels.dim(), b.dim());
        Prepared { plain: b, panels: Some(Cow::Borrowed(panels)) }
    }

    /// Whether the operand was also packed into panels: on CPUs with
    /// AVX-512, when it meets more than one product (and not under the
    /// reference kernels).
    ///
    /// ```
    /// use lingo_kernels::gemm::Prepared;
    /// let w = ndarray::Array2::<f32>::ones((64, 64));
    /// assert!(!Prepared::new(w.view().into(), 1).is_packed());
    /// ```
    pub fn is_packed(&self) -> bool {
        self.panels.is_some()
    }

    /// The operand as a view.
    pub fn view(&self) -> ArrayView2<'_, f32> {
        self.plain.view()
    }
}

/// [`gemm`] with a [`Prepared`] right operand: the same product and bits,
/// without packing `b` when the product takes the panel path.
pub fn gemm_prepared(alpha: f32, a: ArrayView2<'_, f32>, b: &Prepared<'_>, beta: f32, c: ArrayViewMut2<'_, f32>) {
    gemm_with_panels(alpha, a, b.view(), || b.panels.as_deref(), beta, c);
}

/// `b (k, n)` in the panels the AVX-512 path reads, made once and read by
/// many products: a parameter keeps its own for inference (`lingo_tensor::Param::linear`).
pub use panel_tiles::Packed as Panels;

/// [`gemm`], reading `b`'s panels from `panels` when the product takes the
/// panel path (and asking for them only then): the same product and bits.
/// `panels` must give `b` packed ([`Panels::new`]), or `None` to pack as
/// [`gemm`] does.
pub fn gemm_with_panels<'p>(
    alpha: f32,
    a: ArrayView2<'_, f32>,
    b: ArrayView2<'_, f32>,
    panels: impl FnOnce() -> Option<&'p Panels>,
    beta: f32,
    mut c: ArrayViewMut2<'_, f32>,
) {
    let k = checked_dims(a, b, c.dim());
    if let (Path::Kernel(Kernel::Panels), true) = (Path::of(a, b, c.strides()), k > 0)
        && let Some(panels) = panels()
    {
        debug_assert_eq!(panels.dim(), b.dim());
        // SAFETY: `c` is a unique view of written floats, so `Out` describes
        // memory the kernel may read and write and no operand aliases.
        unsafe { panel_product(alpha, a, b, Some(panels), beta, Out::new(c.as_mut_ptr(), c.dim(), c.strides())) };
        return;
    }
    gemm(alpha, a, b, beta, c);
}

/// The panel path's product into `c`, shared between threads as [`shared`]
/// cuts it: `b` read from its `panels`, or packed as the product goes.
///
/// # Safety
///
/// As for [`product`]; with `c.init`, `init` holds `b.ncols()` floats.
unsafe fn panel_product(
    alpha: f32,
    a: ArrayView2<'_, f32>,
    b: ArrayView2<'_, f32>,
    panels: Option<&Panels>,
    beta: f32,
    c: Out,
) {
    let block = |rows: Range<usize>, cols: Range<usize>, c| {
        let rhs = match panels {
            Some(p) => panel_tiles::Rhs::Packed(p, cols),
            None => panel_tiles::Rhs::View(b.slice(s![.., cols])),
        };
        // SAFETY: the caller's promise, for the block `shared` hands out.
        unsafe { panel_tiles::gemm(alpha, a.slice(s![rows, ..]), rhs, beta, c) }
    };
    // SAFETY: the caller's promise; each block writes only its part of `c`.
    unsafe { shared((a.nrows(), a.ncols(), b.ncols()), c, block) }
}

/// `a · b + bias`, `bias` added to every row: a linear layer's `x·Wᵀ + b`,
/// as a new `(m, n)` array, reading `b`'s panels from `panels` as
/// [`gemm_with_panels`] does. The bits of [`gemm`] with `β = 1` on a
/// result whose rows were filled with `bias`; where the product takes the
/// AVX-512 panel path those rows are never written: the first block along
/// `k` adds to `bias` itself (an `(m, n)` copy less, 5 MB a step for a
/// beam's output layer over 5,218 words).
///
/// ```
/// let (a, b) = (ndarray::arr2(&[[1.0_f32, 2.0], [3.0, 4.0]]), ndarray::arr2(&[[1.0_f32, 0.0], [0.0, 1.0]]));
/// let y = lingo_kernels::gemm::gemm_bias_new(a.view(), b.view(), || None, &[10.0, 20.0]);
/// assert_eq!(y, ndarray::arr2(&[[11.0, 22.0], [13.0, 24.0]]));
/// ```
pub fn gemm_bias_new<'p>(
    a: ArrayView2<'_, f32>,
    b: ArrayView2<'_, f32>,
    panels: impl FnOnce() -> Option<&'p Panels>,
    bias: &[f32],
) -> Array2<f32> {
    let (m, n) = (a.nrows(), b.ncols());
    assert_eq!(bias.len(), n, "gemm_bias_new: one bias per column");
    let k = checked_dims(a, b, (m, n));
    let row_major = [n as isize, 1];
    if let (Path::Kernel(Kernel::Panels), true, false) = (Path::of(a, b, &row_major), k > 0, crate::reference()) {
        let mut c = Array2::uninit((m, n));
        let out = Out::new(c.as_mut_ptr().cast(), c.dim(), c.strides()).starting_as(bias);
        // SAFETY: `c` is a fresh array no operand aliases, `bias` holds `n`
        // floats; with `init` every tile reads `bias` where it would read `C`
        // at the first block along `k` and writes each element there, so no
        // element is read before it is written, and afterwards all are.
        return unsafe {
            panel_product(1.0, a, b, panels(), 1.0, out);
            c.assume_init()
        };
    }
    let mut c = Array2::from_shape_vec((m, n), bias.repeat(m)).expect("m rows of n");
    gemm_with_panels(1.0, a, b, panels, 1.0, c.view_mut());
    c
}

/// `b (k, n)`, whose columns are contiguous, copied into a row-major array
/// by the transpose the row tiles use (a recurrent layer copies `W_hhᵀ`
/// once per sequence this way).
pub fn row_major(b: ArrayView2<'_, f32>) -> Array2<f32> {
    row_tiles::transposed(b)
}

/// Checks `(m, k) · (k, n) → (m, n)` and returns `k`.
fn checked_dims(a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, c: (usize, usize)) -> usize {
    let (m, k) = a.dim();
    let (k2, n) = b.dim();
    assert!(k == k2 && c == (m, n), "gemm: (m, k) x (k, n) -> (m, n) violated: {:?} x {:?} -> {c:?}", a.dim(), b.dim());
    k
}

/// How a product is computed: chosen once per product by its sizes and layout.
#[derive(Debug, Clone, Copy)]
enum Path {
    /// The direct loops ([`direct::gemm`]): small products, and one or two
    /// rows at any size, when the rows of `B` and `C`, or the rows of `A`
    /// and the columns of `B`, are contiguous.
    Direct,
    /// One of the blocked kernels, shared between threads when large.
    Kernel(Kernel),
}

/// The blocked kernels, which write `C` through an [`Out`].
#[derive(Debug, Clone, Copy)]
enum Kernel {
    /// Rows of `A` and columns of `B` contiguous: [`dot_tiles`].
    DotTiles,
    /// Rows of `B` and `C` contiguous: [`row_tiles`].
    RowTiles,
    /// Columns of `B` and rows of `C` contiguous: [`row_tiles`] on a row-major copy of `B`.
    RowTilesTransposed,
    /// Rows of `C` contiguous, on a CPU with AVX-512: [`panel_tiles`].
    Panels,
    /// Anything else: `matrixmultiply`.
    Packed,
}

impl Path {
    /// Decided once for the whole product, so that a product split between
    /// threads takes the path it takes in one call, and has its bits.
    fn of(a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, c_strides: &[isize]) -> Path {
        let direct = (b.strides()[1] == 1 && c_strides[1] == 1) || (a.strides()[1] == 1 && b.strides()[0] == 1);
        let kernel = if a.nrows() <= 2 && direct {
            return Path::Direct;
        } else if a.nrows() * a.ncols() * b.ncols() > SMALL_MACS && panel_tiles::applies(c_strides) {
            Kernel::Panels
        } else if dot_tiles::applies(a, b) {
            Kernel::DotTiles
        } else if a.nrows() * a.ncols() * b.ncols() <= SMALL_MACS {
            return if direct { Path::Direct } else { Path::Kernel(Kernel::Packed) };
        } else if row_tiles::applies(a, b, c_strides) {
            Kernel::RowTiles
        } else if row_tiles::applies_transposed(a, b, c_strides) {
            Kernel::RowTilesTransposed
        } else {
            Kernel::Packed
        };
        Path::Kernel(kernel)
    }
}

/// `C ← α·A·B + β·C` by `kernel`, shared between threads when large.
///
/// # Safety
///
/// `c` must describe `(m, n)` elements that no operand overlaps and no one
/// else accesses during the call, written ones unless `beta` is 0.
unsafe fn product(kernel: Kernel, alpha: f32, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, beta: f32, c: Out) {
    // SAFETY: the caller's promise, for each block `shared` hands out.
    let block = |rows: Range<usize>, cols: Range<usize>, c| unsafe {
        one_thread(kernel, alpha, a.slice(s![rows, ..]), b.slice(s![.., cols]), beta, c)
    };
    // SAFETY: the caller's promise.
    unsafe { shared((a.nrows(), a.ncols(), b.ncols()), c, block) }
}

/// A product of `(m, k, n)` into `c`, computed by `block` (rows, columns,
/// that part of `c`) in one call, or in one call per thread when large.
///
/// # Safety
///
/// As for [`product`]; `block` must write only the part of `c` it is given.
unsafe fn shared(dims: (usize, usize, usize), c: Out, block: impl Fn(Range<usize>, Range<usize>, Out) + Sync) {
    let (m, k, n) = dims;
    let threads = rayon::current_num_threads();
    if cpu::share(m * n * k, cpu::GEMM_MACS) {
        // Cut the longer side of C into one block per thread, each a product
        // of its own (C's rows need A's rows, C's columns B's columns), cut at
        // multiples of 32 (a packed operand's panels); every element is still
        // summed over k by one kernel in one order, so the bits are those of
        // the undivided product.
        let (axis, len) = if m >= n { (0, m) } else { (1, n) };
        let size = len.div_ceil(threads).next_multiple_of(32);
        (0..len.div_ceil(size)).into_par_iter().for_each(|i| {
            let range = i * size..((i + 1) * size).min(len);
            let c_block = c.block(axis, range.clone());
            if axis == 0 { block(range, 0..n, c_block) } else { block(0..m, range, c_block) }
        });
        return;
    }
    block(0..m, 0..n, c);
}

/// The product on this thread, by `kernel`.
///
/// # Safety
///
/// As for [`product`].
unsafe fn one_thread(kernel: Kernel, alpha: f32, a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, beta: f32, c: Out) {
    // SAFETY (all arms): the caller's promise about `c`.
    match kernel {
        Kernel::DotTiles => unsafe { dot_tiles::gemm(alpha, a, b, beta, c) },
        Kernel::RowTiles => unsafe { row_tiles::gemm(alpha, a, b, beta, c) },
        Kernel::RowTilesTransposed => unsafe { row_tiles::gemm(alpha, a, row_tiles::transposed(b).view(), beta, c) },
        Kernel::Panels => unsafe { panel_tiles::gemm(alpha, a, panel_tiles::Rhs::View(b), beta, c) },
        Kernel::Packed => unsafe { packed::gemm(alpha, a, b, beta, c) },
    }
}

/// Products up to this many multiply-adds take the direct loops, and so do
/// products with one or two rows at any size: below it, packing the
/// operands costs more than the arithmetic (`docs/performance.md`, "Thresholds").
pub const SMALL_MACS: usize = 1 << 13;
