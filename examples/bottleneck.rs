//! The information bottleneck, as shapes.
//!
//! An encoder reads every source token and produces one vector per token.
//! A plain encoder–decoder then keeps only the last state: whatever the
//! sentence length, the decoder starts from `hidden_dim` numbers and never
//! sees the rest. Attention is the fix: at every target step the decoder
//! reads all the vectors again, weighted.
//!
//! ```text
//! cargo run --release --example bottleneck
//! ```

use lingo::attention::Scorer;
use lingo::nn::{Mode, Seq2Seq, Seq2SeqConfig};
use ndarray::Array2;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn main() -> Result<(), lingo::nn::Error> {
    let mut rng = StdRng::seed_from_u64(0);

    // The tutorial's baseline: one-layer LSTM, embedding and hidden 64, attention off (the default).
    let plain = Seq2Seq::new(Seq2SeqConfig::new(30, 30), &mut rng)?;

    // One source sentence of 7 tokens (ids 4.. are words; 0..4 are <pad> <unk> <sos> <eos>).
    let src: Array2<usize> = Array2::from_shape_fn((1, 7), |_| rng.random_range(4..30)); // (batch, src_len)
    let encoded = plain.encode_source(&src, &[7], Mode::Eval)?;

    println!("enc_out : {:?}   <- one 64-dim vector per source token", encoded.enc_out.shape());
    println!("hidden  : {:?}   <- ONE vector for the whole sentence", encoded.state.h.shape());
    let computed = encoded.enc_out.shape()[1];
    println!();
    println!("Without attention, {computed} vectors are computed and {} are thrown away:", computed - 1);
    println!(
        "the decoder starts from these {} numbers (and the LSTM cell's 64), however long the sentence.",
        encoded.state.h.to_vec().len()
    );

    // The same model with Luong's dot attention: the decoder reads every
    // source vector at every step, through a distribution over them.
    let config = Seq2SeqConfig { attention: Some(Scorer::Dot), ..Seq2SeqConfig::new(30, 30) };
    let attentive = Seq2Seq::new(config, &mut rng)?;
    let tgt_in =
        Array2::from_shape_fn((1, 5), |(_, t)| if t == 0 { lingo::data::SOS } else { rng.random_range(4..30) });
    let out = attentive.forward(&src, &[7], &tgt_in, &[5], Mode::Eval)?;
    let weights = out.weights_array().expect("a model with attention returns weights"); // (batch, tgt_len, src_len)
    println!();
    println!(
        "weights : {:?}   <- at each of 5 target steps, a distribution over all 7 source vectors",
        weights.shape()
    );
    println!(
        "row sums: {:?}",
        weights.sum_axis(ndarray::Axis(2)).iter().map(|s| format!("{s:.3}")).collect::<Vec<_>>()
    );
    Ok(())
}
