//! `cargo bench -p lingo-nn --bench lab`: what the attention lab's
//! measurements cost, on the ablation's workload: 200 lexicon-reverse
//! sentences (3 to 6 words), an LSTM with dot attention (embeddings and
//! hidden 64) and the ablation's Transformer (d = 64, 2 + 2 layers, 4
//! heads). Speed does not depend on training, so the models are fresh.
//!
//! | workload | what is timed |
//! |---|---|
//! | `probe_uniform/<model>` | [`probe`] under uniform attention: teacher-forced loss and greedy decoding with the weights replaced |
//! | `head_attention/<model>` | every head's weights of the 200 sentences, in batches of 32 |
//! | `saliency/<model>` | gradient × input saliency of the 200 sentences, in batches of 32 (one backward pass per target position) |
//! | `compare_saliency/<model>` | [`compare_saliency`]: saliency, attention and their agreement, in parallel chunks |
//!
//! Each prints the median wall-clock milliseconds. Arguments: a word
//! selects the workloads whose name contains it; `--json` prints one JSON
//! object per workload on standard output.

use std::hint::black_box;

use lingo_data::{AlignedExample, Batch, LexiconReverse, Task};
use lingo_nn::{
    EncoderDecoder, Probe, Seq2Seq, Seq2SeqConfig, Transformer, TransformerConfig, compare_saliency, probe, saliency,
};
use rand::SeedableRng;
use rand::rngs::StdRng;

#[path = "../../../benches/common/timing.rs"]
mod timing;
use timing::median_seconds;

/// Sentences per batch where the workload batches by itself.
const BATCH: usize = 32;

/// Times every workload of one model whose name contains `filter`.
fn time_model<M: EncoderDecoder + Clone>(
    name: &str,
    model: &M,
    examples: &[AlignedExample],
    filter: &str,
) -> Vec<(String, f64)> {
    let batches: Vec<Batch> = examples.chunks(BATCH).map(|c| Batch::from_examples(c).unwrap()).collect();
    let mut workloads: Vec<(String, Box<dyn FnMut() + '_>)> = vec![
        (
            format!("probe_uniform/{name}"),
            Box::new(|| {
                black_box(probe(model, examples, Probe::Uniform).unwrap());
            }),
        ),
        (
            format!("head_attention/{name}"),
            Box::new(|| {
                batches.iter().for_each(|b| {
                    black_box(model.head_attention(b).unwrap());
                })
            }),
        ),
        (
            format!("saliency/{name}"),
            Box::new(|| {
                batches.iter().for_each(|b| {
                    black_box(saliency(model, b).unwrap());
                })
            }),
        ),
        (
            format!("compare_saliency/{name}"),
            Box::new(|| {
                black_box(compare_saliency(model, examples).unwrap());
            }),
        ),
    ];
    workloads
        .iter_mut()
        .filter(|(workload, _)| workload.contains(filter))
        .map(|(workload, f)| (workload.clone(), median_seconds(f) * 1e3))
        .collect()
}

fn main() {
    lingo_kernels::memory::keep_freed_memory(); // as the `lingo` binary does
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let json = args.iter().any(|a| a == "--json");
    let filter = args.iter().find(|a| !a.starts_with("--")).cloned().unwrap_or_default();
    let task = LexiconReverse::new(&lingo_data::DEFAULT_LEXICON, 3, 6).unwrap();
    let examples = task.generate(200, &mut StdRng::seed_from_u64(0));
    let (src, tgt) = (task.src_vocab().len(), task.tgt_vocab().len());
    let lstm = Seq2Seq::new(
        Seq2SeqConfig { attention: Some("dot".parse().unwrap()), ..Seq2SeqConfig::new(src, tgt) },
        &mut StdRng::seed_from_u64(1),
    )
    .unwrap();
    let transformer = Transformer::new(
        TransformerConfig { d_model: 64, heads: 4, ff_dim: 256, ..TransformerConfig::new(src, tgt) },
        &mut StdRng::seed_from_u64(1),
    )
    .unwrap();
    let mut results = time_model("lstm_dot", &lstm, &examples, &filter);
    results.extend(time_model("transformer", &transformer, &examples, &filter));
    for (name, ms) in results {
        eprintln!("{name:<30} {ms:>10.3} ms");
        if json {
            println!("{{\"workload\": \"{name}\", \"ms\": {ms}}}");
        }
    }
}
