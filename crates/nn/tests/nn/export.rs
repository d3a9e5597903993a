//! Models that leave lingo and come back (`Translator::export`,
//! `Translator::import`), held to PyTorch:
//!
//! - `fixtures/export/pytorch/<case>/`: models of every placement, scorer and
//!   kind that PyTorch trained and exported (`tools/lingo_torch.py
//!   fixtures`); lingo imports each and reproduces PyTorch's logits to 1e-5
//!   and its greedy translations exactly;
//! - `fixtures/export/lingo/<case>/`: models lingo exported (`cargo run
//!   --example export_fixtures`), which PyTorch loaded; lingo's logits match
//!   the ones PyTorch computed on them, and exporting again gives the
//!   committed bytes;
//! - `fixtures/export/ddp/<case>/`: one of those, trained on by PyTorch's
//!   DistributedDataParallel on two processes (`tools/lingo_ddp.py
//!   fixture`), held to PyTorch as the first kind;
//! - round trips through safetensors keep every bit.

use std::path::{Path, PathBuf};

use lingo_data::{Batch, Example, TextTokenizer, Vocab, WordTokenizer};
use lingo_nn::{
    AnyConfig, AnyModel, NormPosition, PositionKind, Seq2SeqConfig, StateDict, TransformerConfig, Translator,
    greedy_decode,
};
use rand::SeedableRng;
use serde::Deserialize;

/// What `tools/lingo_torch.py` recorded of PyTorch's run on a case.
#[derive(Deserialize)]
struct Reference {
    batch: Vec<Pair>,
    logits_shape: Vec<usize>,
    logits: Vec<f64>,
    greedy: Vec<Vec<usize>>,
    max_len: usize,
}

#[derive(Deserialize)]
struct Pair {
    src: Vec<usize>,
    tgt: Vec<usize>,
}

fn cases(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/export").join(kind);
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    cases.sort();
    cases
}

/// Imports `dir` and checks lingo's logits on the recorded batch (real
/// target positions) and its greedy output against PyTorch's.
fn matches_pytorch(dir: &Path) -> Translator {
    let name = dir.display();
    let translator = Translator::import(dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    let reference: Reference = serde_json::from_slice(&std::fs::read(dir.join("pytorch.json")).unwrap()).unwrap();
    let examples: Vec<Example> = reference.batch.into_iter().map(|p| Example { src: p.src, tgt: p.tgt }).collect();
    let batch = Batch::from_examples(&examples).unwrap();
    let logits = translator.model().logits(&batch).unwrap();
    assert_eq!(logits.shape(), reference.logits_shape, "{name}");
    let (rows, steps, vocab) = (logits.shape()[0], logits.shape()[1], logits.shape()[2]);
    let ours = logits.to_vec();
    let mut gap = 0.0_f64;
    for b in 0..rows {
        for i in (b * steps * vocab..).take(batch.tgt_lens[b] * vocab) {
            gap = gap.max((f64::from(ours[i]) - reference.logits[i]).abs());
        }
    }
    assert!(gap < 1e-5, "{name}: lingo's logits are {gap:e} from PyTorch's");
    let decoded = greedy_decode(translator.model(), &batch.src, &batch.src_lens, reference.max_len, false).unwrap();
    let tokens: Vec<Vec<usize>> = decoded.into_iter().map(|h| h.tokens).collect();
    assert_eq!(tokens, reference.greedy, "{name}: greedy translations");
    translator
}

#[test]
fn pytorch_trained_models_give_pytorchs_logits_and_translations() {
    let cases = cases("pytorch");
    // Ten recurrent variants and two Transformers (tools/lingo_torch.py CASES).
    assert_eq!(cases.len(), 12);
    for dir in cases {
        matches_pytorch(&dir);
    }
}

#[test]
fn a_model_pytorch_trained_on_two_processes_gives_pytorchs_logits_and_translations() {
    // tools/lingo_ddp.py fixture: lingo's exported Transformer, trained on by
    // DistributedDataParallel with two gloo processes.
    let cases = cases("ddp");
    assert_eq!(cases.len(), 1);
    matches_pytorch(&cases[0]);
}

#[test]
fn lingo_exported_models_are_what_pytorch_ran() {
    let cases = cases("lingo");
    assert_eq!(cases.len(), 3);
    for dir in cases {
        let translator = matches_pytorch(&dir);
        // The committed files are lingo's export of this very model.
        let again = tempfile::tempdir().unwrap();
        translator.export(again.path()).unwrap();
        for file in ["model.safetensors", "config.json"] {
            let committed = std::fs::read(dir.join(file)).unwrap();
            assert!(std::fs::read(again.path().join(file)).unwrap() == committed, "{}: {file}", dir.display());
        }
    }
}

/// A translator of `config` with fresh weights and vocabularies of its sizes.
fn translator(config: AnyConfig, seed: u64) -> Translator {
    let model = AnyModel::new(config, &mut rand::rngs::StdRng::seed_from_u64(seed)).unwrap();
    let vocab = Vocab::from_tokens((0..8).map(|i| format!("w{i}")));
    Translator::new(model, TextTokenizer::Word(WordTokenizer::lowercased()), vocab.clone(), vocab).unwrap()
}

#[test]
fn safetensors_round_trip_keeps_every_bit() {
    let n = 12;
    let configs = [
        AnyConfig::Seq2Seq(Seq2SeqConfig {
            bidirectional: true,
            num_layers: 2,
            attention: Some("additive".parse().unwrap()),
            ..Seq2SeqConfig::new(n, n)
        }),
        AnyConfig::Seq2Seq(Seq2SeqConfig { rnn: lingo_nn::RnnKind::Gru, ..Seq2SeqConfig::new(n, n) }),
        AnyConfig::Transformer(TransformerConfig {
            norm: NormPosition::Pre,
            positions: PositionKind::Learned,
            tie_output: true,
            ..TransformerConfig::new(n, n)
        }),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (seed, config) in configs.into_iter().enumerate() {
        let original = translator(config, seed as u64);
        let (saved, exported) = (dir.path().join("a.ckpt"), dir.path().join(format!("export-{seed}")));
        original.save(&saved).unwrap();
        original.export(&exported).unwrap();
        let back = Translator::import(&exported).unwrap();
        assert_eq!(StateDict::from_module(back.model()).unwrap(), StateDict::from_module(original.model()).unwrap());
        let resaved = dir.path().join("b.ckpt");
        back.save(&resaved).unwrap();
        assert!(std::fs::read(&saved).unwrap() == std::fs::read(&resaved).unwrap(), "config {seed}: model.ckpt bytes");
    }
}

#[test]
fn a_tied_table_is_stored_once_under_the_decoders_name() {
    let n = 12;
    let config = TransformerConfig { tie_output: true, tie_source: true, ..TransformerConfig::new(n, n) };
    let dir = tempfile::tempdir().unwrap();
    translator(AnyConfig::Transformer(config), 0).export(dir.path()).unwrap();
    let bytes = std::fs::read(dir.path().join("model.safetensors")).unwrap();
    let dict = StateDict::from_safetensors(&bytes, Path::new("model.safetensors")).unwrap();
    let tables: Vec<&str> = dict
        .tensors()
        .iter()
        .map(|t| t.name.as_str())
        .filter(|n| n.contains("embedding") || *n == "out.weight")
        .collect();
    assert_eq!(tables, ["decoder.embedding.weight"]);
}
