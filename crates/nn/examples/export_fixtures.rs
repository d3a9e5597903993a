//! Writes the lingo-exported directories of `crates/nn/tests/fixtures/export/lingo/`:
//! one freshly initialised model per case, exported with
//! [`Translator::export`], and `lingo.json` with a padded batch and lingo's
//! logits on it. `python3 tools/lingo_torch.py fixtures` then loads each in
//! PyTorch, checks its logits against lingo's and records PyTorch's own;
//! `crates/nn/tests/export.rs` holds lingo to those.
//!
//! Run from the repository root: `cargo run --release -p lingo-nn --example export_fixtures`.

use std::path::Path;

use lingo_data::{Batch, Example, TextTokenizer, Vocab, WordTokenizer};
use lingo_nn::{AnyConfig, AnyModel, NormPosition, PositionKind, Seq2SeqConfig, TransformerConfig, Translator};
use rand::SeedableRng;
use serde_json::json;

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
    let batch = Batch::from_examples(&examples)?;
    for (i, (name, config)) in cases.into_iter().enumerate() {
        let model = AnyModel::new(config, &mut rand::rngs::StdRng::seed_from_u64(i as u64))?;
        let logits = model.logits(&batch)?;
        let words = TextTokenizer::Word(WordTokenizer::lowercased());
        let translator = Translator::new(model, words, vocab.clone(), vocab.clone())?;
        let case = dir.join(name);
        translator.export(&case)?;
        let pairs: Vec<_> = examples.iter().map(|e| json!({"src": e.src, "tgt": e.tgt})).collect();
        let record = json!({"generator": "cargo run --release -p lingo-nn --example export_fixtures",
            "batch": pairs, "logits_shape": logits.shape(), "logits": logits.to_vec()});
        std::fs::write(case.join("lingo.json"), format!("{record}\n"))?;
        println!("wrote {}", case.display());
    }
    Ok(())
}
