//! `cargo bench -p lingo-attention --bench recurrence`: Bahdanau's decoder
//! recurrence (additive attention with the previous state as the query, then
//! a GRU step on `[x_t; context_t]`), forward+backward, as the fused op
//! [`Prepared::gru_recurrence`] and as the same steps built from the graph's
//! pieces (`Prepared::attend` and `gru_cell`, the path it replaces), at the
//! sort study's size and at a translation-like one.
//!
//! Criterion reports each; a summary table follows with both medians and
//! their ratio. `-- summary` prints the table alone.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use lingo_attention::{Prepared, Scorer};
use lingo_tensor::{RnnWeights, Tensor};
use rand::SeedableRng;
use rand::rngs::StdRng;

#[path = "../../../benches/common/timing.rs"]
mod timing;
use timing::median_seconds;

#[path = "../tests/attention/common/mod.rs"]
#[allow(unused)]
mod common;
use common::{layer, pad_mask, stepped_recurrence};

/// (batch, tgt_len, src_len, A, E, H, D_v): one shard of the sort study
/// (length 5, with `<sos>`/`<eos>`; a bidirectional encoder gives `D_v = 2H`),
/// then sentence-sized steps with wider layers.
const SIZES: [(usize, usize, usize, usize, usize, usize, usize); 2] =
    [(32, 6, 7, 64, 32, 64, 128), (64, 20, 20, 256, 128, 256, 512)];

struct Workload {
    prepared: Prepared,
    x: Tensor,
    h0: Tensor,
    /// `weight_ih`, `weight_hh`, `bias_ih`, `bias_hh`.
    gru: [Tensor; 4],
    name: String,
}

impl Workload {
    fn new((b, t, s, a, e, h, dv): (usize, usize, usize, usize, usize, usize, usize)) -> Workload {
        let attn = layer(Scorer::Additive, h, dv, a, 0);
        let mut rng = StdRng::seed_from_u64(0);
        // Everything wants gradients, as in training.
        let mut var =
            |shape: &[usize], std: f32| Tensor::variable(Tensor::randn(shape, std, &mut rng).unwrap().data().clone());
        let enc_out = var(&[b, s, dv], 1.0);
        let (x, h0) = (var(&[b, t, e], 1.0), var(&[b, h], 0.5));
        let gru = [var(&[3 * h, e + dv], 0.1), var(&[3 * h, h], 0.1), var(&[3 * h], 0.1), var(&[3 * h], 0.1)];
        let lengths: Vec<usize> = (0..b).map(|i| s - i % 3).collect(); // some padding
        let prepared = attn.prepare(&enc_out, &enc_out, Some(&pad_mask(&lengths, s))).unwrap();
        Workload { prepared, x, h0, gru, name: format!("b{b}_t{t}_s{s}_a{a}_e{e}_h{h}_dv{dv}") }
    }

    fn weights(&self) -> RnnWeights<'_> {
        RnnWeights { weight_ih: &self.gru[0], weight_hh: &self.gru[1], bias_ih: &self.gru[2], bias_hh: &self.gru[3] }
    }

    /// Forward and backward of `Σ states + Σ weights`, fused or step by step.
    fn run(&self, fused: bool) {
        let (states, weights) = if fused {
            let out = self.prepared.gru_recurrence(&self.x, &self.h0, self.weights()).unwrap();
            (out.output, out.weights)
        } else {
            stepped_recurrence(&self.prepared, &self.x, &self.h0, self.weights()).unwrap()
        };
        black_box(states.sum_all().add(&weights.sum_all()).unwrap().backward().unwrap());
    }
}

fn main() {
    lingo_kernels::memory::keep_freed_memory(); // as the `lingo` binary does
    let summary_only = std::env::args().skip(1).any(|a| a.starts_with("summary"));
    let workloads: Vec<Workload> = SIZES.iter().map(|&d| Workload::new(d)).collect();
    if !summary_only {
        let mut c = Criterion::default()
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .configure_from_args();
        let mut group = c.benchmark_group("bahdanau_recurrence");
        for w in &workloads {
            for (label, fused) in [("fused", true), ("stepped", false)] {
                group.bench_function(format!("{label}/{}", w.name), |bench| bench.iter(|| w.run(fused)));
            }
        }
        group.finish();
        c.final_summary();
    }
    println!("\nsummary: forward+backward, median of repeated runs");
    println!("{:<40} {:>11} {:>11} {:>15}", "size", "fused ms", "stepped ms", "stepped/fused");
    for w in &workloads {
        let (fused, stepped) = (median_seconds(|| w.run(true)), median_seconds(|| w.run(false)));
        println!("{:<40} {:>11.3} {:>11.3} {:>15.2}", w.name, fused * 1e3, stepped * 1e3, stepped / fused);
    }
}
