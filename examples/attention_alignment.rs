//! The attention ablation of the tutorial: the same LSTM encoder–decoder
//! trained three times on lexicon-translate-then-reverse, with one flag
//! changed (no attention, Luong dot, Bahdanau additive), then measured by
//! validation loss and by alignment accuracy against the known
//! anti-diagonal.
//!
//! ```text
//! cargo run --release --example attention_alignment
//! ```

use std::time::Instant;

use lingo::attention::Scorer;
use lingo::data::{AlignedExample, AlignmentAccuracy, Batch, LexiconReverse, Task};
use lingo::nn::{Mode, Next, Schedule, Seq2Seq, Seq2SeqConfig, TrainConfig, train_model_with};
use lingo::tensor::no_grad;
use rand::SeedableRng;
use rand::rngs::StdRng;

/// Trains one configuration; returns the model and its last validation loss.
fn train_one(
    task: &LexiconReverse,
    train: &[AlignedExample],
    val: &[AlignedExample],
    attention: Option<Scorer>,
) -> (Seq2Seq, f32, f64) {
    let config = Seq2SeqConfig { attention, ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len()) };
    let model_rng = &mut StdRng::seed_from_u64(0);
    let mut model = Seq2Seq::new(config, model_rng).expect("a valid configuration");
    let train_config = TrainConfig {
        label_smoothing: 0.1,
        schedule: Schedule::LinearWarmup { warmup_steps: 4000 },
        ..TrainConfig::new(16, 5e-3)
    };
    // Training prints nothing: each finished epoch's line is printed here.
    let result = train_model_with(&mut model, train, val, &train_config, None, |report, _| {
        println!("{report}");
        Ok::<_, lingo::nn::Error>(Next::Continue)
    })
    .expect("training runs");
    let val_loss = *result.val_losses.last().expect("16 epochs");
    (model, val_loss, result.seconds)
}

/// Share of target positions whose attention peak is on the gold source word.
fn alignment_accuracy(model: &Seq2Seq, task: &LexiconReverse) -> Option<(f64, f64)> {
    let examples = task.generate(200, &mut StdRng::seed_from_u64(99));
    let mut acc = AlignmentAccuracy::new();
    no_grad(|| {
        for ex in &examples {
            let batch = Batch::from_examples(std::slice::from_ref(ex)).expect("one example");
            let out = model
                .forward(&batch.src, &batch.src_lens, &batch.tgt_in, &batch.tgt_lens, Mode::Eval)
                .expect("forward");
            let weights = out.weights_array()?;
            acc.add(weights.index_axis(ndarray::Axis(0), 0), &ex.gold, batch.src_lens[0]).expect("gold fits");
        }
        let score = acc.score();
        Some((score.accuracy, score.chance))
    })
}

fn main() {
    let task = LexiconReverse::default();
    let mut rng = StdRng::seed_from_u64(0);
    let train = task.generate(3000, &mut rng);
    let val = task.generate(300, &mut rng);
    let mut rows = Vec::new();
    for (label, scorer) in
        [("no attention", None), ("dot (Luong)", Some(Scorer::Dot)), ("additive (Bahdanau)", Some(Scorer::Additive))]
    {
        let start = Instant::now();
        let (model, val_loss, _) = train_one(&task, &train, &val, scorer);
        rows.push((label, val_loss, alignment_accuracy(&model, &task), start.elapsed().as_secs_f64()));
    }
    println!("\n{:<22} {:>10} {:>12} {:>10}", "configuration", "val loss", "alignment", "seconds");
    for (label, loss, align, secs) in &rows {
        let align = align.map_or("n/a".to_string(), |(a, _)| format!("{:.1}%", 100.0 * a));
        println!("{label:<22} {loss:>10.4} {align:>12} {secs:>10.2}");
    }
}
