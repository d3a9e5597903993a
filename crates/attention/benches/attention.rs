//! `cargo bench -p lingo-attention`: every scorer, forward and
//! forward+backward, at the sizes of issue #3, against a plain
//! `matrixmultiply` product of the same total size measured in the same run.
//!
//! Criterion reports each workload's time and its rate in FLOPs
//! (`Throughput::Elements`, shown as "elem/s"; FLOPs as counted by
//! `AttentionConfig::flops`). A summary table follows: GFLOP/s of each
//! workload beside the rate of one square product `(n × n) · (n × n)` with
//! `2n³` equal to the workload's FLOPs: the best `matrixmultiply` does with
//! that much work on this machine, so the share is how close a kernel comes
//! to that ceiling. Above the table, one core's FMA peak, measured the
//! same way (twelve independent chains of 8-lane multiply-adds): the
//! ceiling of any product.
//!
//! `cargo bench -p lingo-attention -- summary` prints the table alone,
//! `-- summary:WORD` only its rows whose name contains `WORD`,
//! `-- summary=NAME` only the workload named exactly `NAME` (as
//! `benches/pytorch/compare.py` runs them, one at a time); `-- WORD`
//! (say `additive` or `b8_t200`) limits both parts to matching workloads.
//! With `LINGO_BENCH_JSON=path` the summary is also written there as JSON
//! (for `benches/pytorch/attention.py --lingo`).

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use lingo_attention::{Attention, AttentionConfig, Scorer};
use lingo_kernels::gemm;
use lingo_tensor::Tensor;
use ndarray::{Array2, ArrayD};
use rand::SeedableRng;
use rand::rngs::StdRng;

/// (batch, tgt_len, src_len, d), as in issue #3; `d` is the query, key and attention size.
const SIZES: [(usize, usize, usize, usize); 3] = [(64, 8, 8, 64), (32, 50, 50, 256), (8, 200, 200, 512)];

/// Heads of the multi-head scorer (head size 8, 32, 64 at the three sizes).
const HEADS: usize = 8;

struct Workload {
    attn: Attention,
    queries: Tensor,
    enc_out: Tensor,
    dims: (usize, usize, usize, usize),
}

impl Workload {
    fn new(scorer: Scorer, dims: (usize, usize, usize, usize)) -> Workload {
        let (b, t, s, d) = dims;
        let mut rng = StdRng::seed_from_u64(0);
        let attn = Attention::new("attn", &AttentionConfig { scorer, query_dim: d, key_dim: d, attn_dim: d }, &mut rng)
            .unwrap();
        // Both sides want gradients, as in training (decoder states and encoder outputs).
        let mut var = |shape: &[usize]| Tensor::variable(Tensor::randn(shape, 1.0, &mut rng).unwrap().data().clone());
        Workload { attn, queries: var(&[b, t, d]), enc_out: var(&[b, s, d]), dims }
    }

    fn name(&self, backward: bool) -> String {
        let (b, t, s, d) = self.dims;
        format!("{}/{}/b{b}_t{t}_s{s}_d{d}", self.attn.config().scorer, if backward { "fwd_bwd" } else { "fwd" })
    }

    fn flops(&self, backward: bool) -> u64 {
        let (b, t, s, _) = self.dims;
        let f = self.attn.config().flops(b, t, s);
        if backward { f.forward + f.backward } else { f.forward }
    }

    fn run(&self, backward: bool) {
        let out = self.attn.forward(&self.queries, &self.enc_out, &self.enc_out, None, false).unwrap();
        if backward {
            black_box(out.context.backward_with(ArrayD::ones(out.context.shape())).unwrap());
        } else {
            black_box(out);
        }
    }
}

/// One `(n × n) · (n × n)` product through `lingo_kernels::gemm` (matrixmultiply).
struct Reference {
    a: Array2<f32>,
    c: Array2<f32>,
}

impl Reference {
    /// The square product whose `2n³` FLOPs are closest to `flops`.
    fn for_flops(flops: u64) -> Reference {
        let n = ((flops as f64 / 2.0).cbrt().round() as usize).max(1);
        Reference { a: Array2::from_elem((n, n), 0.5), c: Array2::zeros((n, n)) }
    }

    fn flops(&self) -> u64 {
        2 * (self.a.nrows() as u64).pow(3)
    }

    fn run(&mut self) {
        gemm(1.0, self.a.view(), self.a.view(), 0.0, self.c.view_mut());
    }
}

/// One core's peak rate of single-precision multiply-adds, GFLOP/s: the
/// ceiling every product's rate is a share of. `None` without AVX2 and FMA.
fn fma_peak_gflops() -> Option<f64> {
    const STEPS: usize = 1 << 20;
    lingo_kernels::cpu::fma_chains(1)?;
    let secs = median_seconds(|| {
        black_box(lingo_kernels::cpu::fma_chains(black_box(STEPS)));
    });
    Some((STEPS * 12 * 2 * 8) as f64 / secs / 1e9)
}

#[path = "../../../benches/common/timing.rs"]
mod timing;
use timing::median_seconds;

fn main() {
    lingo_kernels::memory::keep_freed_memory(); // as the `lingo` binary does: freed buffers are reused, not faulted in again
    // Criterion reads the same filter; `summary...` matches none of its names.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    // `summary=NAME` asks for one workload by its whole name (`dot/...` is part of `scaled_dot/...`).
    let exact = filter.as_ref().and_then(|f| f.strip_prefix("summary=")).map(str::to_string);
    let filter =
        filter.map(|f| f.strip_prefix("summary").map_or(f.clone(), |rest| rest.trim_start_matches(':').to_string()));
    let wanted = |name: &str| {
        exact.as_ref().map_or_else(|| filter.as_ref().is_none_or(|f| name.contains(f.as_str())), |e| name == e)
    };
    let scorers =
        [Scorer::Dot, Scorer::General, Scorer::Additive, Scorer::ScaledDot, Scorer::MultiHead { heads: HEADS }];
    let workloads: Vec<Workload> =
        scorers.iter().flat_map(|&sc| SIZES.iter().map(move |&d| Workload::new(sc, d))).collect();

    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    for w in &workloads {
        let mut group = c.benchmark_group("attention");
        for backward in [false, true] {
            group.throughput(Throughput::Elements(w.flops(backward)));
            group.bench_function(w.name(backward), |bench| bench.iter(|| w.run(backward)));
        }
        group.finish();
    }
    c.final_summary();

    // The summary: plain medians, each workload beside its reference measured right after it.
    println!("\nsummary (median of repeated runs; FLOPs as AttentionConfig::flops counts them)");
    if let Some(peak) = fma_peak_gflops() {
        println!("one core's FMA peak: {peak:.1} GFLOP/s (twelve independent chains of 8-lane FMAs)");
    }
    println!("{:<36} {:>10} {:>9} {:>14} {:>9}", "workload", "ms", "GFLOP/s", "sgemm GFLOP/s", "share");
    let mut references: HashMap<u64, f64> = HashMap::new();
    let mut rows = Vec::new();
    for w in &workloads {
        for backward in [false, true] {
            let name = w.name(backward);
            if !wanted(&name) {
                continue;
            }
            let flops = w.flops(backward);
            let secs = median_seconds(|| w.run(backward));
            let rate = flops as f64 / secs / 1e9;
            let mut reference = Reference::for_flops(flops);
            let ref_rate = *references
                .entry(reference.flops())
                .or_insert_with(|| reference.flops() as f64 / median_seconds(|| reference.run()) / 1e9);
            println!("{name:<36} {:>10.3} {rate:>9.1} {ref_rate:>14.1} {:>8.0}%", secs * 1e3, 100.0 * rate / ref_rate);
            rows.push(
                serde_json::json!({ "workload": name, "ms": secs * 1e3, "gflops": rate, "sgemm_gflops": ref_rate }),
            );
        }
    }
    if let Ok(path) = std::env::var("LINGO_BENCH_JSON") {
        std::fs::write(&path, serde_json::to_string_pretty(&rows).unwrap())
            .unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
    }
}
