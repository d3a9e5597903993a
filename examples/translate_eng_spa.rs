//! Real data: English to Spanish (Tatoeba via manythings.org/anki, CC BY
//! 2.0), short sentences only, a few minutes of training with Luong
//! attention; then BLEU on held-out pairs, five translations and one
//! attention heatmap. Real alignments are not an anti-diagonal: Spanish
//! moves adjectives after nouns, drops subject pronouns and merges words.
//!
//! `lingo train` is the full version (time budget, BPE, checkpoints).
//!
//! ```text
//! cargo run --release --example translate_eng_spa [CORPUS.tsv]
//! ```
//!
//! `CORPUS.tsv` defaults to the 2,000-pair sample that ships with the
//! repository, `data/eng-spa-sample.tsv`: enough to run, far too few to
//! learn Spanish (expect `<unk>`s). The full corpus (118,121 pairs, from
//! manythings.org/anki; see `data/README.md`) learns real translations.

use std::path::PathBuf;
use std::time::Duration;

use lingo::attention::Scorer;
use lingo::data::{
    Corpus, ReadOptions, SplitFractions, Tokenizer, Vocab, VocabConfig, WordTokenizer, Wrap, corpus_bleu,
};
use lingo::nn::{Next, Seq2Seq, Seq2SeqConfig, TrainConfig, greedy_decode, train_model_with};
use lingo::viz::{TextOptions, format_attention};
use ndarray::Array2;
use rand::SeedableRng;
use rand::rngs::StdRng;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/eng-spa-sample.tsv"));
    // Pairs of at most 6 words a side, without repeats; a tenth (at most
    // 500) held out for testing, as many for validation.
    let tok = WordTokenizer::lowercased();
    let mut corpus = Corpus::read_tsv(&path, &ReadOptions::default())?.corpus;
    corpus.filter_max_len(&tok, 6, 6);
    corpus.dedup();
    let test_share = (corpus.len() / 10).min(500) as f64 / corpus.len() as f64;
    let split = corpus.split(SplitFractions { valid: test_share, test: test_share }, &mut StdRng::seed_from_u64(0))?;

    let vocab_config = VocabConfig { min_freq: 2, max_size: Some(4000) };
    let src_vocab = Vocab::build(split.train.pairs.iter().map(|p| &p.src), &tok, &vocab_config);
    let tgt_vocab = Vocab::build(split.train.pairs.iter().map(|p| &p.tgt), &tok, &vocab_config);
    let train = split.train.encode(&tok, &src_vocab, &tok, &tgt_vocab);
    let valid = split.valid.encode(&tok, &src_vocab, &tok, &tgt_vocab);
    println!("{} training pairs, vocabularies {} / {}", train.len(), src_vocab.len(), tgt_vocab.len());

    let config = Seq2SeqConfig {
        attention: Some(Scorer::General),
        emb_dim: 128,
        hidden_dim: 256,
        ..Seq2SeqConfig::new(src_vocab.len(), tgt_vocab.len())
    };
    let mut model = Seq2Seq::new(config, &mut StdRng::seed_from_u64(0))?;
    let mut train_config = TrainConfig::new(4, 2e-3);
    train_config.batching.bucket = true; // similar lengths share a batch: less padding
    train_config.time_budget = Some(Duration::from_secs(180)); // checked after each epoch
    // Training prints nothing: each finished epoch's line is printed here.
    train_model_with(&mut model, &train, &valid, &train_config, None, |report, _| {
        println!("{report}");
        Ok::<_, lingo::nn::Error>(Next::Continue)
    })?;

    // Greedy translations of the test sources, one padded batch.
    let sources: Vec<Vec<usize>> =
        split.test.pairs.iter().map(|p| src_vocab.encode(&tok.tokenize(&p.src), Wrap::SosEos)).collect();
    let width = sources.iter().map(Vec::len).max().unwrap_or(0);
    let src = Array2::from_shape_fn((sources.len(), width), |(b, t)| sources[b].get(t).copied().unwrap_or(0)); // (batch, src_len)
    let src_lens: Vec<usize> = sources.iter().map(Vec::len).collect();
    let hyps = greedy_decode(&model, &src, &src_lens, 20, true)?;
    let outputs: Vec<String> = hyps.iter().map(|h| tgt_vocab.decode(&h.tokens, true).join(" ")).collect();
    let refs: Vec<String> = split.test.pairs.iter().map(|p| tok.tokenize(&p.tgt).join(" ")).collect();
    println!("\nBLEU on {} held-out pairs (lowercased): {}", refs.len(), corpus_bleu(&outputs, &refs)?);
    for (pair, output) in split.test.pairs.iter().zip(&outputs).take(5) {
        println!("\n  {}\n  reference: {}\n  lingo:     {output}", pair.src, pair.tgt);
    }

    // Where the model looked while translating the first test sentence.
    let (hyp, n) = (&hyps[0], src_lens[0]);
    if let Some(weights) = &hyp.attention {
        let mut rows = vec!["<sos>"];
        rows.extend(tgt_vocab.decode(&hyp.tokens[..hyp.tokens.len() - 1], false));
        let cols = src_vocab.decode(&sources[0], false);
        println!("\n{}", format_attention(weights.slice(ndarray::s![.., ..n]), &cols, &rows, &TextOptions::default())?);
    }
    Ok(())
}
