//! The sorting case study in one page: a bidirectional GRU encoder, a GRU
//! decoder and Bahdanau's additive attention learn to sort five digits;
//! then greedy decoding is scored by exact match, and the attention of the
//! case study's example `7 2 5 2 9` is printed as numbers.
//!
//! `lingo sort-study` runs the whole study (both lengths, without
//! attention, the failure modes).
//!
//! ```text
//! cargo run --release --example sort_case_study
//! ```

use lingo::attention::Scorer;
use lingo::data::{Batch, DigitOp, DigitTask, PAD, Task, sequence_accuracy};
use lingo::nn::{Mode, Next, Placement, RnnKind, Seq2Seq, Seq2SeqConfig, TrainConfig, greedy_decode, train_model_with};
use lingo::tensor::no_grad;
use lingo::viz::{CellStyle, TextOptions, format_attention};
use ndarray::{Array2, Axis};
use rand::SeedableRng;
use rand::rngs::StdRng;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Source: five digits; target: the same digits in ascending order.
    let task = DigitTask::new(DigitOp::Sort, 10, 5, 5)?;
    let mut rng = StdRng::seed_from_u64(0);
    let (train, val, test) =
        (task.generate(10_000, &mut rng), task.generate(500, &mut rng), task.generate(1000, &mut rng));

    // The case study's architecture.
    let config = Seq2SeqConfig {
        rnn: RnnKind::Gru,
        bidirectional: true, // the encoder reads both ways: enc_out is (batch, src_len, 2·64)
        attention: Some(Scorer::Additive), // v · tanh(W_q s + W_k h)
        placement: Placement::Bahdanau, // the context joins the decoder's input at each step
        emb_dim: 32,
        ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len())
    };
    let mut model = Seq2Seq::new(config, &mut StdRng::seed_from_u64(0))?;
    // Training prints nothing: each finished epoch's line is printed here.
    train_model_with(&mut model, &train, &val, &TrainConfig::new(8, 3e-3), None, |report, _| {
        println!("{report}");
        Ok::<_, lingo::nn::Error>(Next::Continue)
    })?;

    // Exact match under greedy decoding: every digit and the final <eos> right.
    let batch = Batch::from_examples(&test)?;
    let (rows, width) = batch.tgt_out.dim();
    let hyps = greedy_decode(&model, &batch.src, &batch.src_lens, width, false)?;
    let predicted = Array2::from_shape_fn((rows, width), |(b, t)| hyps[b].tokens.get(t).copied().unwrap_or(PAD));
    let accuracy = sequence_accuracy(predicted.view(), batch.tgt_out.view(), batch.tgt_pad_mask.view())?;
    println!("\nsequence accuracy on {rows} test sequences: {:.1}%", 100.0 * accuracy.value());

    // Where the decoder looks: rows are its inputs (<sos> then the sorted digits).
    let example = task.example(&[7, 2, 5, 2, 9])?;
    let one = Batch::from_examples(std::slice::from_ref(&example))?;
    let out = no_grad(|| model.forward(&one.src, &one.src_lens, &one.tgt_in, &one.tgt_lens, Mode::Eval))?;
    let weights = out.weights_array().expect("attention is on").index_axis_move(Axis(0), 0); // (tgt_len, src_len)
    let src_tokens = task.src_vocab().decode(&example.src, false);
    let tgt_tokens = task.tgt_vocab().decode(&example.tgt[..example.tgt.len() - 1], false);
    let options = TextOptions::default().cells(CellStyle::Number).mark_peak(true);
    println!("\n{}", format_attention(weights.view(), &src_tokens, &tgt_tokens, &options)?);
    Ok(())
}
