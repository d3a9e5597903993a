//! The one process-wide setting lingo asks of the C allocator.
//!
//! A training step allocates and frees the same large buffers over and over
//! (activations, gradients, `matrixmultiply`'s packing space). glibc's
//! `malloc` serves blocks above its mmap threshold (128 KiB at first) with
//! fresh `mmap`s, and hands freed memory at the top of the heap back to the
//! kernel once more than the trim threshold is free; either way the next
//! allocation of that size starts on fresh pages, and the kernel must fault
//! in and zero every page again, which on the attention benchmark took a
//! large share of the time (`docs/performance.md`, "Keeping freed memory,
//! zeroing where the work is").

/// Keeps freed memory in the process for reuse: blocks up to 32 MiB come
/// from the heap instead of their own `mmap`, and the heap is only trimmed
/// once 512 MiB at its top are free. Call it once, early, from a binary
/// (the `lingo` command and the benchmarks do); a library should leave the
/// choice to its binary. Returns whether the settings took effect: `true`
/// on Linux with glibc, `false` elsewhere (nothing is changed).
///
/// The cost is memory the process keeps after a peak instead of returning
/// it (measured in `docs/performance.md`, "Keeping freed memory, zeroing
/// where the work is").
///
/// ```
/// let tuned = lingo_kernels::memory::keep_freed_memory();
/// assert_eq!(tuned, cfg!(all(target_os = "linux", target_env = "gnu")));
/// ```
pub fn keep_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::ffi::c_int;
        unsafe extern "C" {
            // glibc's <malloc.h>: int mallopt(int param, int value);
            fn mallopt(param: c_int, value: c_int) -> c_int;
        }
        const M_TRIM_THRESHOLD: c_int = -1;
        const M_MMAP_THRESHOLD: c_int = -3;
        // SAFETY: mallopt only changes two of the allocator's thresholds;
        // it is thread-safe (it takes the arena locks) and returns 1 on success.
        unsafe { mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 512 << 20) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}
