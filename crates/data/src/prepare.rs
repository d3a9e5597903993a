//! A parallel corpus made ready for training, as `lingo train` makes it:
//! read, keep the pairs of at most `max_len` words a side, drop repeated
//! pairs ([`filtered`]); then split into training, validation and test
//! pairs, learn the tokenizer and the vocabularies on the training pairs
//! alone, and encode ([`prepare`]).

use std::path::Path;

use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::error::Result;
use crate::{
    Bpe, BpeConfig, Corpus, Example, Loaded, ReadOptions, SkippedRow, SplitFractions, TextTokenizer, Vocab,
    VocabConfig, WordTokenizer,
};

/// Word-level or subword vocabulary.
///
/// ```
/// assert_eq!(lingo_data::TokenizerKind::default(), lingo_data::TokenizerKind::Bpe);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TokenizerKind {
    /// Lowercased words and punctuation marks
    Word,
    /// Byte-pair encoding learned on the training sentences of both languages
    #[default]
    Bpe,
}

/// The pairs of a corpus file worth training on, and what reading them found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filtered {
    /// Pairs of at most `max_len` (lowercased) words a side, each once.
    pub corpus: Corpus,
    /// Pairs read.
    pub read: usize,
    /// Rows lenient reading skipped.
    pub skipped: Vec<SkippedRow>,
    /// Lines with more than two columns (only the first two are read).
    pub extra_columns: Vec<usize>,
}

/// Reads `path` and keeps its pairs of at most `max_len` words a side
/// (counted by the lowercased word tokenizer), each pair once.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("lingo-filtered-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("pairs.tsv");
/// std::fs::write(&path, "Go.\tVe.\nGo.\tVe.\nThis is far too long.\tEs demasiado largo.\n").unwrap();
/// let kept = lingo_data::filtered(&path, false, 3).unwrap();
/// assert_eq!((kept.read, kept.corpus.len()), (3, 1));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn filtered(path: &Path, lenient: bool, max_len: usize) -> Result<Filtered> {
    let Loaded { mut corpus, skipped, extra_columns } =
        Corpus::read_tsv(path, &ReadOptions { lenient, ..ReadOptions::default() })?;
    let read = corpus.len();
    corpus.filter_max_len(&WordTokenizer::lowercased(), max_len, max_len);
    corpus.dedup();
    Ok(Filtered { corpus, read, skipped, extra_columns })
}

/// How [`prepare`] splits and encodes a corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrepareConfig {
    /// Test pairs.
    pub test_size: usize,
    /// Validation pairs.
    pub valid_size: usize,
    /// Seeds the split.
    pub split_seed: u64,
    /// Words or BPE subwords.
    pub tokenizer: TokenizerKind,
    /// BPE merges (with [`TokenizerKind::Bpe`]).
    pub bpe_merges: usize,
    /// The largest vocabulary per language, the specials included.
    pub vocab_size: usize,
    /// One vocabulary for both languages.
    pub joint_vocab: bool,
}

/// A corpus split, tokenized and encoded for training.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// The tokenizer learned on the training pairs.
    pub tokenizer: TextTokenizer,
    /// The source vocabulary.
    pub src_vocab: Vocab,
    /// The target vocabulary (the source's, with a joint vocabulary).
    pub tgt_vocab: Vocab,
    /// The training pairs, encoded.
    pub train: Vec<Example>,
    /// The validation pairs, encoded.
    pub valid: Vec<Example>,
    /// The training pairs as text.
    pub train_pairs: Corpus,
    /// The validation pairs as text.
    pub valid_pairs: Corpus,
    /// The test pairs as text (translated and scored as text).
    pub test: Corpus,
}

/// Splits `corpus` by `config` (seeded), learns the tokenizer and each
/// language's vocabulary (words seen at least twice) on the training pairs
/// only, and encodes the training and validation pairs.
///
/// ```
/// use lingo_data::{Corpus, Pair, PrepareConfig, TokenizerKind, prepare};
/// let pairs = (0..40).map(|i| Pair { src: format!("word {i}"), tgt: format!("palabra {i}") }).collect();
/// let config = PrepareConfig { test_size: 4, valid_size: 4, split_seed: 0, tokenizer: TokenizerKind::Word, bpe_merges: 0, vocab_size: 100, joint_vocab: false };
/// let prepared = prepare(Corpus { pairs }, &config).unwrap();
/// assert_eq!((prepared.train.len(), prepared.valid.len(), prepared.test.len()), (32, 4, 4));
/// assert!(prepared.src_vocab.id("word") != lingo_data::UNK);
/// ```
pub fn prepare(corpus: Corpus, config: &PrepareConfig) -> Result<Prepared> {
    let n = corpus.len() as f64;
    let fractions = SplitFractions { valid: config.valid_size as f64 / n, test: config.test_size as f64 / n };
    let split = corpus.split(fractions, &mut StdRng::seed_from_u64(config.split_seed))?;
    let tokenizer = match config.tokenizer {
        TokenizerKind::Word => TextTokenizer::Word(WordTokenizer::lowercased()),
        TokenizerKind::Bpe => {
            let texts = split.train.pairs.iter().flat_map(|p| [p.src.as_str(), p.tgt.as_str()]);
            TextTokenizer::Bpe(Box::new(Bpe::learn(
                texts,
                &BpeConfig { merges: config.bpe_merges, ..BpeConfig::default() },
            )))
        }
    };
    let vocab = VocabConfig { min_freq: 2, max_size: Some(config.vocab_size) };
    let pairs = &split.train.pairs;
    let (src_vocab, tgt_vocab) = if config.joint_vocab {
        let both = Vocab::build(pairs.iter().flat_map(|p| [&p.src, &p.tgt]), &tokenizer, &vocab);
        (both.clone(), both)
    } else {
        let src = Vocab::build(pairs.iter().map(|p| &p.src), &tokenizer, &vocab);
        (src, Vocab::build(pairs.iter().map(|p| &p.tgt), &tokenizer, &vocab))
    };
    Ok(Prepared {
        train: split.train.encode(&tokenizer, &src_vocab, &tokenizer, &tgt_vocab),
        valid: split.valid.encode(&tokenizer, &src_vocab, &tokenizer, &tgt_vocab),
        train_pairs: split.train,
        valid_pairs: split.valid,
        test: split.test,
        tokenizer,
        src_vocab,
        tgt_vocab,
    })
}
