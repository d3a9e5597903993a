//! `data/eng-spa-sample.tsv`, the corpus sample that ships with lingo: it
//! reads without a single bad row, it carries its attribution, and (when the
//! full corpus is beside the checkout) every line of it is a line of the
//! corpus, in the corpus's order.

use std::path::Path;

use lingo::data::{Corpus, ReadOptions};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

#[test]
fn the_sample_reads_cleanly_and_is_attributed() {
    let read = Corpus::read_tsv(root().join("data/eng-spa-sample.tsv"), &ReadOptions::default()).unwrap();
    assert_eq!(read.corpus.len(), 2000);
    assert!(read.corpus.pairs.iter().all(|p| !p.src.is_empty() && !p.tgt.is_empty()));
    let readme = std::fs::read_to_string(root().join("data/README.md")).unwrap();
    assert!(readme.contains("Attribution: www.manythings.org/anki and tatoeba.org"));
    assert!(readme.contains("Creative Commons Attribution 2.0"));
}

#[test]
fn the_sample_is_every_59th_line_of_the_corpus() {
    let full = root().join("../shared/data/eng-spa.tsv");
    let Ok(corpus) = std::fs::read_to_string(&full) else {
        eprintln!("skipped: {} is not here", full.display());
        return;
    };
    let sample = std::fs::read_to_string(root().join("data/eng-spa-sample.tsv")).unwrap();
    let expected: Vec<&str> = corpus.lines().skip(58).step_by(59).take(2000).collect();
    assert_eq!(sample.lines().collect::<Vec<_>>(), expected);
}
