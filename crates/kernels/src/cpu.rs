//! What this CPU can do, and when work is worth sharing between threads:
//! the one place that asks either question.
//!
//! # Features
//!
//! The build targets baseline x86-64, so every fast path asks at run time
//! whether the CPU has the instructions it was written for
//! (`is_x86_feature_detected!` answers from a cache after the first call).
//! On other architectures every answer is no and the plain loops run.
//!
//! # Threads
//!
//! Work is handed to rayon's threads only when [`share`] says so: the
//! caller is outside rayon's pool, there is more than one thread, and the
//! work is at least its threshold. Work already on a pool thread (a batch
//! entry of an attention kernel, a data-parallel shard, one of the
//! ablation's configurations trained side by side) has the other cores
//! busy with its siblings; and below its threshold, handing work out costs
//! more than it saves. Each threshold is one constant below. Every split
//! keeps each sum in one thread and one order, so none changes the bits.
//!
//! ```
//! use lingo_kernels::cpu;
//! assert!(!cpu::share(1, cpu::GEMM_MACS));             // far below the threshold
//! let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
//! assert!(!pool.install(|| cpu::share(usize::MAX, 0))); // already on a pool thread
//! ```

/// Whether this CPU has AVX2.
///
/// ```
/// let _lanes = if lingo_kernels::cpu::avx2() { 8 } else { 4 };
/// ```
pub fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether this CPU has AVX2 and FMA, which the AVX2 tile kernels need.
///
/// ```
/// assert!(!lingo_kernels::cpu::avx2_fma() || lingo_kernels::cpu::avx2());
/// ```
pub fn avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// `steps` rounds of one FMA in each of twelve independent chains of eight
/// lanes, summed: the work one core's FMA peak is timed on (the attention
/// benchmark's ceiling). A core issues two FMAs per cycle, and each waits
/// for the one before it in its chain for about four cycles: twelve chains
/// keep both units busy where one product's twelve accumulators would.
/// `None` without AVX2 and FMA.
///
/// ```
/// if let Some(sum) = lingo_kernels::cpu::fma_chains(10) {
///     assert!(sum > 0.0);
/// }
/// ```
pub fn fma_chains(steps: usize) -> Option<f32> {
    #[cfg(target_arch = "x86_64")]
    if avx2_fma() {
        // SAFETY: both target features were just detected.
        return Some(unsafe { fma_chains_avx2(steps) });
    }
    let _ = steps;
    None
}

/// [`fma_chains`] on AVX2.
///
/// # Safety
///
/// The CPU must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_chains_avx2(steps: usize) -> f32 {
    use std::arch::x86_64::{_mm256_fmadd_ps, _mm256_set1_ps, _mm256_storeu_ps};
    use std::hint::black_box;
    // Values the compiler cannot see, or it works the loop out ahead of time.
    let (a, b) = (_mm256_set1_ps(black_box(0.999_999)), _mm256_set1_ps(black_box(1e-6)));
    let mut chains = [_mm256_set1_ps(black_box(1.0)); 12];
    for _ in 0..steps {
        for c in &mut chains {
            *c = _mm256_fmadd_ps(*c, a, b);
        }
    }
    let mut lanes = [0.0_f32; 8];
    // SAFETY: `lanes` holds the eight floats the store writes.
    chains
        .iter()
        .map(|c| unsafe {
            _mm256_storeu_ps(lanes.as_mut_ptr(), *c);
            lanes.iter().sum::<f32>()
        })
        .sum()
}

/// Whether this CPU has AVX-512 (the foundation set), which the panel tiles need.
///
/// ```
/// let _tile_width = if lingo_kernels::cpu::avx512() { 32 } else { 16 };
/// ```
pub fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether `work` (in the unit of its `threshold`) should be shared between
/// rayon's threads: called from outside the pool, more than one thread, and
/// `work ≥ threshold` (see the [module docs](self)).
///
/// ```
/// use lingo_kernels::cpu;
/// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// assert!(!pool.install(|| cpu::share(usize::MAX, 0)));   // inside a pool
/// ```
pub fn share(work: usize, threshold: usize) -> bool {
    work >= threshold && rayon::current_thread_index().is_none() && rayon::current_num_threads() > 1
}

/// Multiply-adds (`m·k·n`) of a product worth splitting: about 0.1 ms on one core.
pub const GEMM_MACS: usize = 1 << 21;

/// Elements (1 MiB) of a sum worth splitting ([`add_into`](crate::math::add_into)): below, the addition is faster than the hand-off.
pub const GRADIENT_ADD: usize = 1 << 18;

/// FLOPs of a whole attention batch worth sharing out by entry: about 0.1 ms.
pub const ATTENTION_FLOPS: usize = 1 << 20;

/// Parameters of an optimizer step worth updating in parallel: any two.
pub const OPTIMIZER_PARAMS: usize = 2;

/// Rows of a row-by-row kernel handed to one task ([`map_rows`]): enough
/// work per task to be worth a thread, few enough rows that a task's block
/// stays in cache.
pub const ROWS_PER_TASK: usize = 16;

/// `f(i, row_i)` for every row of `data` (rows of `width` floats, in
/// place), in blocks of [`ROWS_PER_TASK`] rows on rayon's threads; the
/// results in row order. Each row is one call on one thread, so its bits do
/// not depend on the thread count. Under the reference kernels the rows run
/// in order on this thread.
///
/// ```
/// let mut data = vec![1.0_f32, 2.0, 3.0, 4.0, 5.0, 6.0];
/// let sums = lingo_kernels::cpu::map_rows(&mut data, 3, |i, row| {
///     row[0] = i as f32;
///     row.iter().sum::<f32>()
/// });
/// assert_eq!((sums, data), (vec![5.0, 12.0], vec![0.0, 2.0, 3.0, 1.0, 5.0, 6.0]));
/// ```
pub fn map_rows<T: Send>(data: &mut [f32], width: usize, f: impl Fn(usize, &mut [f32]) -> T + Sync) -> Vec<T> {
    use rayon::prelude::*;
    if data.is_empty() {
        return Vec::new();
    }
    assert!(width > 0 && data.len().is_multiple_of(width), "map_rows: whole rows of {width}");
    if crate::reference() {
        return data.chunks_mut(width).enumerate().map(|(i, row)| f(i, row)).collect();
    }
    data.par_chunks_mut(width * ROWS_PER_TASK)
        .enumerate()
        .flat_map_iter(|(block, rows)| {
            let f = &f;
            rows.chunks_mut(width).enumerate().map(move |(i, row)| f(block * ROWS_PER_TASK + i, row))
        })
        .collect()
}
