//! `cargo bench -p lingo-tensor`: fused LSTM and GRU sequences, forward and
//! forward+backward, against a plain `matrixmultiply` product measured in
//! the same run.
//!
//! Criterion reports each workload's time and, through `Throughput::Elements`,
//! its rate in GEMM FLOPs per second (shown as "elem/s"). A summary table at
//! the end prints GFLOP/s and the share of the GEMM reference rate.
//!
//! FLOPs counted (GEMMs only; the gate math is a few percent on top):
//! forward `2·B·T·G·(I + H)` (input projection and recurrent product),
//! backward twice that (`dX`, `dW_ih`, `dW_hh`, `dh_{t-1}`), so
//! forward+backward is `6·B·T·G·(I + H)` with `G = 4H` (LSTM) or `3H` (GRU).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use lingo_tensor::{
    RnnWeights, Tensor,
    fused::{gru_sequence, lstm_sequence},
};
use ndarray::{Array2, ArrayD};
use rand::SeedableRng;
use rand::rngs::StdRng;

/// (batch, time, input, hidden): issue #2's two sizes, and the encoder of
/// the default translation model (`lingo train`: embeddings 256, hidden 384,
/// about ten tokens a sentence).
const SIZES: [(usize, usize, usize, usize); 3] = [(64, 8, 64, 64), (64, 30, 256, 256), (64, 10, 256, 384)];

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Lstm,
    Gru,
}

impl Kind {
    fn gates(self) -> usize {
        match self {
            Kind::Lstm => 4,
            Kind::Gru => 3,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Kind::Lstm => "lstm",
            Kind::Gru => "gru",
        }
    }
}

struct Workload {
    kind: Kind,
    x: Tensor,
    h0: Tensor,
    weights: [Tensor; 4],
    lengths: Vec<usize>,
    dims: (usize, usize, usize, usize),
}

impl Workload {
    fn new(kind: Kind, dims: (usize, usize, usize, usize)) -> Workload {
        let (b, t, i, h) = dims;
        let mut rng = StdRng::seed_from_u64(0);
        let g = kind.gates() * h;
        let mut var = |shape: &[usize]| Tensor::variable(Tensor::randn(shape, 0.1, &mut rng).unwrap().data().clone());
        let weights = [var(&[g, i]), var(&[g, h]), var(&[g]), var(&[g])];
        let x = var(&[b, t, i]);
        let h0 = Tensor::zeros(&[b, h]);
        Workload { kind, x, h0, weights, lengths: vec![t; b], dims }
    }

    fn flops(&self, backward: bool) -> u64 {
        let (b, t, i, h) = self.dims;
        let forward = 2 * b * t * self.kind.gates() * h * (i + h);
        (if backward { 3 * forward } else { forward }) as u64
    }

    fn run(&self, backward: bool) {
        let [w_ih, w_hh, b_ih, b_hh] = &self.weights;
        let w = RnnWeights { weight_ih: w_ih, weight_hh: w_hh, bias_ih: b_ih, bias_hh: b_hh };
        let output = match self.kind {
            Kind::Lstm => lstm_sequence(&self.x, &self.h0, &self.h0, &self.lengths, false, w).unwrap().output,
            Kind::Gru => gru_sequence(&self.x, &self.h0, &self.lengths, false, w).unwrap().output,
        };
        if backward {
            black_box(output.backward_with(ArrayD::ones(output.shape())).unwrap());
        } else {
            black_box(output);
        }
    }
}

/// The reference: one `(64 × 128) · (128 × 256)` product, the size of an
/// LSTM-64 gate GEMM over `[x; h]`.
fn gemm_reference() -> (Array2<f32>, Array2<f32>) {
    (Array2::from_elem((64, 128), 0.5), Array2::from_elem((128, 256), 0.25))
}

/// The baseline: one plain `matrixmultiply` call.
fn gemm_once(a: &Array2<f32>, b: &Array2<f32>, c: &mut Array2<f32>) {
    lingo_kernels::gemm::matrixmultiply(1.0, a.view(), b.view(), 0.0, c.view_mut());
}

#[path = "../../../benches/common/timing.rs"]
mod timing;
use timing::median_seconds;

fn main() {
    lingo_kernels::memory::keep_freed_memory(); // as the `lingo` binary does: freed buffers are reused, not faulted in again
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let (a, b) = gemm_reference();
    let mut out = Array2::zeros((64, 256));
    let gemm_flops = 2 * 64 * 128 * 256;
    let mut group = c.benchmark_group("matrixmultiply");
    group.throughput(Throughput::Elements(gemm_flops));
    group.bench_function("sgemm_64x128x256", |bench| bench.iter(|| gemm_once(black_box(&a), black_box(&b), &mut out)));
    group.finish();

    let workloads: Vec<Workload> =
        [Kind::Lstm, Kind::Gru].iter().flat_map(|&k| SIZES.iter().map(move |&d| Workload::new(k, d))).collect();
    for w in &workloads {
        let (bs, t, i, h) = w.dims;
        let mut group = c.benchmark_group(format!("{}_sequence", w.kind.name()));
        for backward in [false, true] {
            group.throughput(Throughput::Elements(w.flops(backward)));
            let label = format!("{}/b{bs}_t{t}_i{i}_h{h}", if backward { "fwd_bwd" } else { "fwd" });
            group.bench_function(label, |bench| bench.iter(|| w.run(backward)));
        }
        group.finish();
    }
    c.final_summary();

    // The summary: medians of plain timing loops, so the GFLOP/s figures and
    // the ratio to the GEMM reference come from one run on one machine state.
    let gemm_rate = gemm_flops as f64 / median_seconds(|| gemm_once(&a, &b, &mut out)) / 1e9;
    println!("\nsummary (median of repeated runs; GFLOP/s of GEMM work)");
    println!("{:<34} {:>10} {:>10} {:>12}", "workload", "ms", "GFLOP/s", "of sgemm");
    println!(
        "{:<34} {:>10.4} {:>10.1} {:>11.0}%",
        "sgemm 64x128x256",
        gemm_flops as f64 / gemm_rate / 1e6,
        gemm_rate,
        100.0
    );
    for w in &workloads {
        let (bs, t, i, h) = w.dims;
        for backward in [false, true] {
            let secs = median_seconds(|| w.run(backward));
            let rate = w.flops(backward) as f64 / secs / 1e9;
            let name = format!("{} {} b{bs} t{t} i{i} h{h}", w.kind.name(), if backward { "fwd+bwd" } else { "fwd" });
            println!("{name:<34} {:>10.3} {rate:>10.1} {:>11.0}%", secs * 1e3, 100.0 * rate / gemm_rate);
        }
    }
}
