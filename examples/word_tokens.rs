//! Writes a parallel corpus as an aligner reads it: lingo's words of each
//! side (`--tokenizer word`, lowercased, punctuation apart), one sentence
//! per line, a line for every line of the corpus file. The Pharaoh links
//! an aligner writes from these two files index exactly the words
//! `lingo train --alignments` counts; `tools/align.py` runs this, then
//! eflomal.
//!
//! A row that lenient reading skips (a blank or malformed line) becomes an
//! empty line on both sides, so line `i` of the links still belongs to
//! line `i` of the corpus.
//!
//! ```text
//! cargo run --release --example word_tokens -- data/eng-spa-sample.tsv /tmp/src.txt /tmp/tgt.txt
//! ```

use std::io::Write;

use lingo::data::{Corpus, ReadOptions, Tokenizer, WordTokenizer};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [corpus, src, tgt] = args.as_slice() else {
        eprintln!("usage: word_tokens CORPUS.tsv SRC_OUT TGT_OUT");
        std::process::exit(2);
    };
    if let Err(e) = write_tokens(corpus, src, tgt) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn write_tokens(corpus: &str, src: &str, tgt: &str) -> Result<(), Box<dyn std::error::Error>> {
    let loaded = Corpus::read_tsv(corpus, &ReadOptions { lenient: true, ..ReadOptions::default() })?;
    let lines = loaded.corpus.len() + loaded.skipped.len();
    let (mut src_lines, mut tgt_lines) = (vec![String::new(); lines], vec![String::new(); lines]);
    let words = WordTokenizer::lowercased();
    for (pair, &line) in loaded.corpus.pairs.iter().zip(&loaded.lines) {
        src_lines[line - 1] = words.tokenize(&pair.src).join(" ");
        tgt_lines[line - 1] = words.tokenize(&pair.tgt).join(" ");
    }
    for (path, text) in [(src, src_lines), (tgt, tgt_lines)] {
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        for line in text {
            writeln!(out, "{line}")?;
        }
        out.flush()?;
    }
    eprintln!("{corpus}: {lines} lines, {} skipped; words in {src} and {tgt}", loaded.skipped.len());
    Ok(())
}
