//! Times each step of loading an English–Spanish corpus: reading,
//! vocabulary building, encoding, BPE learning, batching.
//!
//! `cargo run --release -p lingo-data --example load_eng_spa [CORPUS.tsv]`
//!
//! `CORPUS.tsv` defaults to the 2,000-pair sample that ships with the
//! repository, `data/eng-spa-sample.tsv`; the times worth reading are those
//! of the full corpus (118,121 pairs, from manythings.org/anki; see
//! `data/README.md`).

use lingo_data::*;
use rand::{SeedableRng, rngs::StdRng};
use std::path::PathBuf;
use std::time::Instant;

fn main() -> Result<()> {
    let path = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/eng-spa-sample.tsv"));
    let t = Instant::now();
    let corpus = Corpus::read_tsv(&path, &ReadOptions::default())?.corpus;
    println!("read {} pairs:              {:>8.1?}", corpus.len(), t.elapsed());

    let tok = WordTokenizer::lowercased();
    let t = Instant::now();
    let config = VocabConfig::default();
    let src_vocab = Vocab::build(corpus.pairs.iter().map(|p| &p.src), &tok, &config);
    let tgt_vocab = Vocab::build(corpus.pairs.iter().map(|p| &p.tgt), &tok, &config);
    println!("word vocabularies {} / {}:  {:>8.1?}", src_vocab.len(), tgt_vocab.len(), t.elapsed());

    let t = Instant::now();
    let examples = corpus.encode(&tok, &src_vocab, &tok, &tgt_vocab);
    println!("encode {} examples:         {:>8.1?}", examples.len(), t.elapsed());

    let t = Instant::now();
    let batching = BatchConfig { batch_size: 64, bucket: true, shuffle: true, max_tokens: None };
    let batches = batching.batches(&examples, &mut StdRng::seed_from_u64(0))?;
    println!("{} bucketed batches:          {:>8.1?}", batches.len(), t.elapsed());

    let t = Instant::now();
    let texts = corpus.pairs.iter().flat_map(|p| [&p.src, &p.tgt]);
    let bpe = Bpe::learn(texts.clone(), &BpeConfig { merges: 8000, ..BpeConfig::default() });
    println!("BPE, {} merges learned:     {:>8.1?}", bpe.merges().len(), t.elapsed());
    let t = Instant::now();
    let bpe_vocab = Vocab::build(texts, &bpe, &config);
    let bpe_examples = corpus.encode(&bpe, &bpe_vocab, &bpe, &bpe_vocab);
    println!("BPE vocabulary {} + encode:  {:>8.1?}", bpe_vocab.len(), t.elapsed());
    let tokens = |ex: &[Example]| ex.iter().map(|e| e.src.len() + e.tgt.len()).sum::<usize>();
    println!("tokens with <sos>/<eos>: words {}, BPE {}", tokens(&examples), tokens(&bpe_examples));
    Ok(())
}
