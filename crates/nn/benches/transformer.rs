//! `cargo bench -p lingo-nn --bench transformer`: the Transformer's
//! training step and its cached decoding, at the two sizes issue #22 sets
//! (the ablation's and a real-data one), as `benches/pytorch/transformer.py`
//! runs the same model in PyTorch.
//!
//! | workload | what is timed |
//! |---|---|
//! | `train_step/<size>` | loss, backward and an Adam step on one batch of 64 pairs, in two data-parallel shards ([`SHARDS`]) |
//! | `greedy/<size>` | greedy decoding of 64 sources, `max_len` steps with the cache |
//! | `beam5/<size>` | beam search, beam 5, of the same sources |
//!
//! Each prints the median of repeated runs in milliseconds (and, for
//! decoding, output tokens per second: sources × `max_len` / time).
//! Decoding uses a model that cannot emit `<eos>`, so that both sides take
//! every step for every sentence. Sizes:
//! `small` is d = 64, 2 + 2 layers, 4 heads, feed-forward 256, vocabularies
//! of 40, lengths 5 to 8; `real` is d = 256, 3 + 3 layers, 4 heads,
//! feed-forward 1024, vocabularies of 4,330 and 5,218 (eng-spa's), lengths 4
//! to 12. Dropout is 0.1 on the sublayers and 0 on the attention weights
//! (the fused kernel), as in the PyTorch script.
//!
//! Arguments: a word selects the workloads whose name contains it;
//! `--json` prints one JSON object per workload on standard output.

use std::hint::black_box;
use std::time::Instant;

use lingo_data::{Batch, EOS, Example, SOS};
use lingo_nn::{
    Algorithm, BeamConfig, Optimizer, TrainConfig, Transformer, TransformerConfig, batch_gradients, beam_search,
    greedy_decode,
};
use lingo_tensor::Module;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Row groups of the batch trained on parallel threads, as `lingo train`
/// does by default (`--shards 2`): on two cores the whole step runs on both
/// threads with no hand-offs inside it, where one batch on two threads
/// meets at every product (`docs/performance.md` has the figures).
const SHARDS: usize = 2;

/// One model size of the table in the module docs.
struct Size {
    name: &'static str,
    config: TransformerConfig,
    lengths: (usize, usize),
}

fn sizes() -> Vec<Size> {
    let small = TransformerConfig {
        d_model: 64,
        heads: 4,
        encoder_layers: 2,
        decoder_layers: 2,
        ff_dim: 256,
        attention_dropout: 0.0,
        ..TransformerConfig::new(40, 40)
    };
    let real = TransformerConfig {
        d_model: 256,
        heads: 4,
        encoder_layers: 3,
        decoder_layers: 3,
        ff_dim: 1024,
        attention_dropout: 0.0,
        ..TransformerConfig::new(4330, 5218)
    };
    vec![Size { name: "small", config: small, lengths: (5, 8) }, Size { name: "real", config: real, lengths: (4, 12) }]
}

/// 64 pairs, `<sos> w.. <eos>` on both sides, word counts cycling through
/// `lengths` (the same batch as the PyTorch script builds).
fn pairs(size: &Size) -> Vec<Example> {
    let (lo, hi) = size.lengths;
    let (src_vocab, tgt_vocab) = (size.config.src_vocab, size.config.tgt_vocab);
    let mut rng = StdRng::seed_from_u64(0);
    (0..64)
        .map(|i| {
            let n = lo + (i * 7) % (hi - lo + 1);
            let mut words = |vocab: usize| -> Vec<usize> {
                [vec![SOS], (0..n - 2).map(|_| rng.random_range(4..vocab)).collect(), vec![EOS]].concat()
            };
            Example { src: words(src_vocab), tgt: words(tgt_vocab) }
        })
        .collect()
}

/// The median of `reps` timed runs of `f` after two untimed ones, in ms.
fn median_ms(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    f();
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[reps / 2]
}

fn main() {
    lingo_kernels::memory::keep_freed_memory(); // as the `lingo` binary does
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let json = args.iter().any(|a| a == "--json");
    let filter = args.iter().find(|a| !a.starts_with("--")).cloned().unwrap_or_default();
    for size in sizes() {
        let examples = pairs(&size);
        let batch = Batch::from_examples(&examples).unwrap();
        let max_len = size.lengths.1;
        let mut model = Transformer::new(size.config.clone(), &mut StdRng::seed_from_u64(1)).unwrap();
        let mut results = Vec::new();
        let name = format!("train_step/{}", size.name);
        if name.contains(&filter) {
            let mut opt = Optimizer::new(Algorithm::adam(), 1e-4).unwrap();
            let mut rng = StdRng::seed_from_u64(2);
            let config = TrainConfig { shards: SHARDS, label_smoothing: 0.1, ..TrainConfig::new(1, 1e-4) };
            let ms = median_ms(20, || {
                let (_, grads) = batch_gradients(&model, &batch, &config, &mut rng).unwrap();
                opt.step(&mut model, &grads).unwrap();
            });
            results.push((name, ms, None));
        }
        // Decoding runs a fresh model that never ends a sentence: its output
        // bias for <eos> is -1e9, so every row takes all max_len steps, as in
        // the PyTorch script (whose loop never stops early).
        let mut model = Transformer::new(size.config.clone(), &mut StdRng::seed_from_u64(1)).unwrap();
        if let Some(bias) = model.params_mut().into_iter().find(|p| p.name() == "out.bias") {
            bias.update(|b| b[[EOS]] = -1e9);
        }
        let tokens = (examples.len() * max_len) as f64;
        let name = format!("greedy/{}", size.name);
        if name.contains(&filter) {
            let ms = median_ms(10, || {
                black_box(greedy_decode(&model, &batch.src, &batch.src_lens, max_len, false).unwrap());
            });
            results.push((name, ms, Some(tokens / ms * 1e3)));
        }
        let name = format!("beam5/{}", size.name);
        if name.contains(&filter) {
            let cfg = BeamConfig { beam_size: 5, n_best: 1, alpha: 0.6, ..BeamConfig::default() };
            let ms = median_ms(5, || {
                black_box(beam_search(&model, &batch.src, &batch.src_lens, max_len, cfg, false).unwrap());
            });
            results.push((name, ms, Some(tokens / ms * 1e3)));
        }
        for (name, ms, rate) in results {
            let rate_text = rate.map_or(String::new(), |r| format!("  {r:>10.0} tokens/s"));
            eprintln!("{name:<20} {ms:>10.3} ms{rate_text}");
            if json {
                let rate = rate.map_or("null".to_string(), |r| format!("{r}"));
                println!("{{\"workload\": \"{name}\", \"ms\": {ms}, \"tokens_per_second\": {rate}}}");
            }
        }
    }
}
