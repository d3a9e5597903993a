//! A parallel corpus made ready for training, as `lingo train` makes it:
//! read, keep the pairs of at most `max_len` words a side, drop repeated
//! pairs ([`filtered`]); then split into training, validation and test
//! pairs, learn the tokenizer and the vocabularies on the training pairs
//! alone, and encode ([`prepare`]).

use std::path::Path;

use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::error::{Error, Result};
use crate::{
    Bpe, BpeConfig, Corpus, Example, Linked, Links, Loaded, ReadOptions, SkippedRow, Split, SplitFractions,
    TextTokenizer, Tokenizer, Vocab, VocabConfig, WordTokenizer, check_links, gold_rows,
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
    /// The 1-based line of the file each kept pair comes from.
    pub lines: Vec<usize>,
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
    let Loaded { corpus, lines, skipped, extra_columns } =
        Corpus::read_tsv(path, &ReadOptions { lenient, ..ReadOptions::default() })?;
    let read = corpus.len();
    // Corpus::filter_max_len, then Corpus::dedup, keeping each pair's line beside it.
    let words = WordTokenizer::lowercased();
    let mut seen = std::collections::HashSet::with_capacity(read);
    let (pairs, lines) = corpus
        .pairs
        .into_iter()
        .zip(lines)
        .filter(|(p, _)| words.count_tokens(&p.src) <= max_len && words.count_tokens(&p.tgt) <= max_len)
        .filter(|(p, _)| seen.insert(p.clone()))
        .unzip();
    Ok(Filtered { corpus: Corpus { pairs }, lines, read, skipped, extra_columns })
}

impl Filtered {
    /// The word links of each kept pair, from `alignments`, the Pharaoh
    /// lines of the whole corpus file (one per line of it, a skipped row's
    /// too; [`crate::read_pharaoh`] reads them from `path`, which labels the
    /// errors). A link past its pair's words is an error at `path`'s line.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("lingo-links-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("pairs.tsv");
    /// std::fs::write(&path, "Go.\tVe.\nGo.\tVe.\nI see.\tVeo.\n").unwrap();
    /// let kept = lingo_data::filtered(&path, false, 5).unwrap();
    /// let align = lingo_data::parse_pharaoh(b"0-0 1-1\n0-0 1-1\n1-0 2-1\n", "pairs.align").unwrap();
    /// assert_eq!(kept.links(&align, "pairs.align".as_ref()).unwrap(), [vec![(0, 0), (1, 1)], vec![(1, 0), (2, 1)]]);
    /// let err = kept.links(&align[..2], "pairs.align".as_ref()).unwrap_err();
    /// assert_eq!(err.to_string(), "invalid alignments: pairs.align has 2 lines for the 3 of the corpus; an alignment file has one line per line of its corpus");
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn links(&self, alignments: &[Links], path: &Path) -> Result<Vec<Links>> {
        let corpus_lines = self.read + self.skipped.len();
        if alignments.len() != corpus_lines {
            let reason = format!(
                "{} has {} lines for the {corpus_lines} of the corpus; an alignment file has one line per line of its corpus",
                path.display(),
                alignments.len()
            );
            return Err(Error::invalid("alignments", reason));
        }
        self.corpus
            .pairs
            .iter()
            .zip(&self.lines)
            .map(|(pair, &line)| {
                let links = &alignments[line - 1];
                check_links(links, pair).map_err(|problem| Error::Row { path: path.to_owned(), line, problem })?;
                Ok(links.clone())
            })
            .collect()
    }
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
    /// Each training pair's gold rows ([`gold_rows`]), when the corpus came
    /// with word links ([`prepare_linked`]).
    pub train_gold: Option<Vec<Vec<Vec<usize>>>>,
    /// The validation pairs, encoded.
    pub valid: Vec<Example>,
    /// The training pairs as text.
    pub train_pairs: Corpus,
    /// The validation pairs as text.
    pub valid_pairs: Corpus,
    /// The test pairs as text (translated and scored as text).
    pub test: Corpus,
    /// Each test pair's word links, when the corpus came with them: what
    /// a trained model's attention is scored against.
    pub test_links: Option<Vec<Links>>,
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
    prepare_parts(corpus, None, config)
}

/// [`prepare`] of a corpus with the word links of each pair
/// ([`Filtered::links`]): the links follow their pairs through the split,
/// each training pair's become its [`Prepared::train_gold`] rows between
/// the learned tokens, and the test pairs' are kept as
/// [`Prepared::test_links`]. The split, the tokenizer and the vocabularies
/// are [`prepare`]'s.
///
/// ```
/// use lingo_data::{Corpus, Pair, PrepareConfig, TokenizerKind, prepare_linked};
/// let pairs = (0..40).map(|i| Pair { src: format!("word {i}"), tgt: format!("{i} palabra") }).collect();
/// let links = vec![vec![(0, 1), (1, 0)]; 40];
/// let config = PrepareConfig { test_size: 4, valid_size: 4, split_seed: 0, tokenizer: TokenizerKind::Word, bpe_merges: 0, vocab_size: 100, joint_vocab: false };
/// let prepared = prepare_linked(Corpus { pairs }, links, &config).unwrap();
/// // "<sos> word i <eos>" → "i palabra <eos>": `i` reads position 2, `palabra` position 1, `<eos>` nothing.
/// assert_eq!(prepared.train_gold.unwrap()[0], [vec![2], vec![1], vec![]]);
/// assert_eq!(prepared.test_links.unwrap(), vec![vec![(0, 1), (1, 0)]; 4]);
/// ```
pub fn prepare_linked(corpus: Corpus, links: Vec<Links>, config: &PrepareConfig) -> Result<Prepared> {
    if links.len() != corpus.len() {
        let reason = format!("{} link lines for {} pairs", links.len(), corpus.len());
        return Err(Error::invalid("links", reason));
    }
    prepare_parts(corpus, Some(links), config)
}

/// [`prepare`], and with `links` [`prepare_linked`].
fn prepare_parts(corpus: Corpus, links: Option<Vec<Links>>, config: &PrepareConfig) -> Result<Prepared> {
    let n = corpus.len() as f64;
    let fractions = SplitFractions { valid: config.valid_size as f64 / n, test: config.test_size as f64 / n };
    let [train, valid, test] = corpus.split_indices(fractions, &mut StdRng::seed_from_u64(config.split_seed))?;
    let split = Split { train: corpus.gather(&train), valid: corpus.gather(&valid), test: corpus.gather(&test) };
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
    let test_links = links.as_ref().map(|links| test.iter().map(|&i| links[i].clone()).collect());
    let train_gold = links.map(|links| {
        let words = |text: &str| tokenizer.token_words(text);
        train.iter().zip(pairs).map(|(&i, p)| gold_rows(&links[i], &words(&p.src), &words(&p.tgt))).collect()
    });
    Ok(Prepared {
        train: split.train.encode(&tokenizer, &src_vocab, &tokenizer, &tgt_vocab),
        train_gold,
        valid: split.valid.encode(&tokenizer, &src_vocab, &tokenizer, &tgt_vocab),
        train_pairs: split.train,
        valid_pairs: split.valid,
        test: split.test,
        test_links,
        tokenizer,
        src_vocab,
        tgt_vocab,
    })
}

impl Prepared {
    /// The training pairs with their gold rows, when there are any: what
    /// guided alignment trains on.
    ///
    /// ```
    /// use lingo_data::{Corpus, Pair, PrepareConfig, SeqPair, TokenizerKind, prepare, prepare_linked};
    /// let pairs: Vec<Pair> = (0..40).map(|i| Pair { src: format!("word {i}"), tgt: format!("palabra {i}") }).collect();
    /// let config = PrepareConfig { test_size: 4, valid_size: 4, split_seed: 0, tokenizer: TokenizerKind::Word, bpe_merges: 0, vocab_size: 100, joint_vocab: false };
    /// assert!(prepare(Corpus { pairs: pairs.clone() }, &config).unwrap().linked_train().is_none());
    /// let prepared = prepare_linked(Corpus { pairs }, vec![vec![(0, 0)]; 40], &config).unwrap();
    /// let linked = prepared.linked_train().unwrap();
    /// assert_eq!((linked.len(), linked[0].src(), linked[0].gold().unwrap()[0].as_slice()), (32, prepared.train[0].src.as_slice(), &[1][..]));
    /// ```
    pub fn linked_train(&self) -> Option<Vec<Linked<'_>>> {
        let gold = self.train_gold.as_ref()?;
        Some(self.train.iter().zip(gold).map(|(example, gold)| Linked { example, gold }).collect())
    }
}
