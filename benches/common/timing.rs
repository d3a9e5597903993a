//! Timing shared by the benchmarks' summary tables (included with
//! `#[path]` by each crate's bench, so it is not part of any library).

use std::time::Instant;

/// The median wall-clock seconds of `f` over about a second's worth of
/// runs (at least 5, at most 500), after one warm-up run.
pub fn median_seconds(mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    f(); // warm up, and estimate
    let once = start.elapsed().as_secs_f64();
    let runs = ((1.0 / once.max(1e-6)) as usize).clamp(5, 500);
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[runs / 2]
}
