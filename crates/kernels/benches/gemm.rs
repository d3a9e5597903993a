//! `cargo bench -p lingo-kernels --bench gemm`: `lingo_kernels::gemm` on the
//! products of the default translation model (`lingo train`: batches of 64,
//! embeddings 256, hidden 384, about 5,000 target tokens), against one
//! `matrixmultiply::sgemm` call on the same operands, in the same run.
//!
//! Every product runs on one thread (a one-thread rayon pool), so the
//! figures are per core. The summary prints GFLOP/s (a multiply-add counted
//! as two) from medians of repeated calls with the same operands.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use ndarray::{Array2, ArrayView2, ArrayViewMut2};

/// (name, m, k, n, whether B is stored transposed: `x·Wᵀ` with `W` row by row).
const PRODUCTS: [(&str, usize, usize, usize, bool); 5] = [
    ("lstm step h·W_hhᵀ", 64, 384, 1536, false),
    ("lstm step da·W_hh", 64, 1536, 384, false),
    ("lstm input x·W_ihᵀ", 640, 256, 1536, true),
    ("output x·W_outᵀ", 640, 384, 5218, true),
    ("output G·W_out", 640, 5218, 384, false),
];

fn operands(m: usize, k: usize, n: usize, transposed: bool) -> (Array2<f32>, Array2<f32>) {
    let value = |i: usize, j: usize| ((i * 31 + j * 17) % 97) as f32 / 48.5 - 1.0;
    let a = Array2::from_shape_fn((m, k), |(i, j)| value(i, j));
    let b = if transposed {
        Array2::from_shape_fn((n, k), |(j, p)| value(p, j)).reversed_axes()
    } else {
        Array2::from_shape_fn((k, n), |(p, j)| value(p, j))
    };
    (a, b)
}

/// The baseline: one plain `matrixmultiply` call.
fn sgemm(a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>, c: ArrayViewMut2<'_, f32>) {
    lingo_kernels::gemm::matrixmultiply(1.0, a, b, 0.0, c);
}

#[path = "../../../benches/common/timing.rs"]
mod timing;
use timing::median_seconds;

fn main() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    let cases: Vec<_> =
        PRODUCTS.iter().map(|&(name, m, k, n, t)| (name, operands(m, k, n, t), Array2::<f32>::zeros((m, n)))).collect();
    let mut group = c.benchmark_group("gemm");
    for (name, (a, b), out) in &cases {
        let mut out = out.clone();
        group.throughput(Throughput::Elements((2 * a.nrows() * a.ncols() * b.ncols()) as u64));
        group.bench_function(format!("lingo/{name}"), |bench| {
            bench.iter(|| pool.install(|| lingo_kernels::gemm(1.0, black_box(a.view()), b.view(), 0.0, out.view_mut())))
        });
        group.bench_function(format!("matrixmultiply/{name}"), |bench| {
            bench.iter(|| pool.install(|| sgemm(black_box(a.view()), b.view(), out.view_mut())))
        });
    }
    group.finish();
    c.final_summary();

    println!("\nsummary (one thread, median of repeated calls, GFLOP/s)");
    println!("{:<22} {:>18} {:>8} {:>15} {:>7}", "product", "m × k × n", "lingo", "matrixmultiply", "ratio");
    for (name, (a, b), out) in &cases {
        let mut out = out.clone();
        let flops = 2.0 * (a.nrows() * a.ncols() * b.ncols()) as f64;
        let lingo = flops
            / median_seconds(|| pool.install(|| lingo_kernels::gemm(1.0, a.view(), b.view(), 0.0, out.view_mut())))
            / 1e9;
        let plain = flops / median_seconds(|| pool.install(|| sgemm(a.view(), b.view(), out.view_mut()))) / 1e9;
        let dims = format!("{}×{}×{}", a.nrows(), a.ncols(), b.ncols());
        println!("{name:<22} {dims:>18} {lingo:>8.1} {plain:>15.1} {:>6.2}×", lingo / plain);
    }
}
