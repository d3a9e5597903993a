//! Writes the lingo-exported directories of `crates/nn/tests/fixtures/export/lingo/`:
//! one model per case, trained here on a toy task (reverse a few words), exported with
//! [`Translator::export`], and `reference.json` with a padded batch and
//! lingo's logits on it ([`Translator::write_reference`]). `python3 tools/lingo_torch.py fixtures` then loads each in
//! PyTorch, checks its logits against lingo's and records PyTorch's own;
//! `crates/nn/tests/nn/export.rs` holds lingo to those.
//!
//! Run from the repository root: `cargo run --release -p lingo-nn --example export_fixtures`.

use std::path::Path;

use lingo_data::{Example, TextTokenizer, Vocab, WordTokenizer};
use lingo_nn::{
    AnyConfig, AnyModel, NormPosition, PositionKind, Progress, Seq2SeqConfig, TrainConfig, TransformerConfig,
    Translator, train_model,
};
use rand::{Rng, SeedableRng};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/export/lingo");
    let vocab = Vocab::from_tokens((0..8).map(|i| format!("w{i}")));
    let n = vocab.len();
    let seq2seq = |fields: Seq2SeqConfig| AnyConfig::Seq2Seq(fields);
    let cases = [
        (
            "gru_bahdanau_additive_bidirectional",
            seq2seq(Seq2SeqConfig {
                rnn: lingo_nn::RnnKind::Gru,
                emb_dim: 8,
                hidden_dim: 8,
                attn_dim: 8,
                bidirectional: true,
                attention: Some("additive".parse()?),
                placement: lingo_nn::Placement::Bahdanau,
                ..Seq2SeqConfig::new(n, n)
            }),
        ),
        (
            "lstm_luong_multi_head_2_layers",
            seq2seq(Seq2SeqConfig {
                emb_dim: 8,
                hidden_dim: 8,
                attn_dim: 8,
                num_layers: 2,
                attention: Some("multi_head:2".parse()?),
                ..Seq2SeqConfig::new(n, n)
            }),
        ),
        (
            "transformer_pre_learned_tied",
            AnyConfig::Transformer(TransformerConfig {
                d_model: 8,
                heads: 2,
                ff_dim: 16,
                max_len: 16,
                norm: NormPosition::Pre,
                positions: PositionKind::Learned,
                tie_output: true,
                tie_source: true,
                ..TransformerConfig::new(n, n)
            }),
        ),
    ];
    // Unsorted lengths, so padding sits in different places in every row.
    let examples = [
        Example { src: vec![2, 4, 5, 6, 3], tgt: vec![2, 6, 5, 4, 3] },
        Example { src: vec![2, 7, 3], tgt: vec![2, 7, 8, 9, 10, 3] },
        Example { src: vec![2, 11, 9, 8, 7, 6, 3], tgt: vec![2, 5, 3] },
    ];
    for (i, (name, config)) in cases.into_iter().enumerate() {
        let mut model = AnyModel::new(config, &mut rand::rngs::StdRng::seed_from_u64(i as u64))?;
        let settings = TrainConfig { progress: Progress::Silent, seed: i as u64, ..TrainConfig::new(20, 1e-2) };
        let result = train_model(&mut model, &reversals(400, 1), &reversals(40, 2), &settings, None)?;
        println!(
            "{name}: validation loss {:.3} after {} epochs",
            result.val_losses[result.best_epoch - 1],
            result.val_losses.len()
        );
        let words = TextTokenizer::Word(WordTokenizer::lowercased());
        let translator = Translator::new(model, words, vocab.clone(), vocab.clone())?;
        let case = dir.join(name);
        translator.export(&case)?;
        translator.write_reference(&case, &examples)?;
        println!("wrote {}", case.display());
    }
    Ok(())
}

/// `count` pairs that reverse 1 to 5 words (ids 4 to 11), drawn from `seed`.
fn reversals(count: usize, seed: u64) -> Vec<Example> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let words: Vec<usize> = (0..rng.random_range(1..=5)).map(|_| rng.random_range(4..12)).collect();
            let reversed = words.iter().rev().copied();
            Example {
                src: [2].into_iter().chain(words.clone()).chain([3]).collect(),
                tgt: [2].into_iter().chain(reversed).chain([3]).collect(),
            }
        })
        .collect()
}
