//! Synthetic tasks whose correct alignment is known, so attention can be
//! scored instead of eyeballed.
//!
//! Every task writes the source as `<sos> x1 .. xn <eos>` and the target as
//! `<sos> y1 .. ym <eos>`. The gold alignment has one entry per decoder
//! output position (a row of [`crate::Batch::tgt_out`], `y1 .. ym <eos>`),
//! listing the source positions (indices into the source row, where `<sos>`
//! is index 0) that the output token comes from; `<eos>` has none.
//!
//! Those gold sets are the *possible* links of Och and Ney's alignment
//! error rate: every position an output may correctly attend to. The
//! *sure* links, a subset, are the ones every correct alignment must
//! have; they differ only where the answer is ambiguous, as for the sort's
//! equal digits.

use crate::batch::SeqPair;
use crate::error::{Error, Result};
use crate::vocab::{EOS, SOS, Vocab};
use rand::Rng;

/// A task example: ids plus the gold alignment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AlignedExample {
    /// Source ids, `<sos> x1 .. xn <eos>`.
    pub src: Vec<usize>,
    /// Target ids, `<sos> y1 .. ym <eos>`.
    pub tgt: Vec<usize>,
    /// `gold[j]`: the source positions that output row `j` (token `y_{j+1}`,
    /// or `<eos>` for `j = m`) comes from. `gold.len() == tgt.len() - 1`.
    ///
    /// These are the possible links: alignment accuracy counts a peak on
    /// any of them as a hit.
    pub gold: Vec<Vec<usize>>,
    /// `sure[j] ⊆ gold[j]`: the links of row `j` that are not in doubt.
    /// Equal to `gold` except where the source does not decide which
    /// position an output comes from (a sorted digit that occurs twice has
    /// no sure link). `sure.len() == gold.len()`.
    pub sure: Vec<Vec<usize>>,
}

impl SeqPair for AlignedExample {
    fn src(&self) -> &[usize] {
        &self.src
    }
    fn tgt(&self) -> &[usize] {
        &self.tgt
    }
    fn gold(&self) -> Option<&[Vec<usize>]> {
        Some(&self.gold)
    }
}

/// A generator of examples with known alignments.
pub trait Task {
    /// Vocabulary of the source side.
    ///
    /// ```
    /// use lingo_data::{LexiconReverse, Task};
    /// assert_eq!(LexiconReverse::default().src_vocab().len(), 4 + 17);
    /// ```
    fn src_vocab(&self) -> &Vocab;
    /// Vocabulary of the target side.
    ///
    /// ```
    /// use lingo_data::{DigitOp, DigitTask, Task};
    /// assert_eq!(DigitTask::new(DigitOp::Sort, 10, 2, 5).unwrap().tgt_vocab().len(), 4 + 10);
    /// ```
    fn tgt_vocab(&self) -> &Vocab;
    /// Draws one example.
    ///
    /// ```
    /// use rand::{SeedableRng, rngs::StdRng};
    /// use lingo_data::{DigitOp, DigitTask, Task};
    /// let ex = DigitTask::new(DigitOp::Reverse, 10, 4, 4).unwrap().sample(&mut StdRng::seed_from_u64(0));
    /// assert_eq!(ex.gold, [vec![4], vec![3], vec![2], vec![1], vec![]]);
    /// ```
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> AlignedExample;

    /// Draws `n` examples; the same seed gives the same examples.
    ///
    /// ```
    /// use rand::{SeedableRng, rngs::StdRng};
    /// use lingo_data::{LexiconReverse, Task};
    /// let task = LexiconReverse::default();
    /// let a = task.generate(5, &mut StdRng::seed_from_u64(3));
    /// assert_eq!(a, task.generate(5, &mut StdRng::seed_from_u64(3)));
    /// ```
    fn generate<R: Rng + ?Sized>(&self, n: usize, rng: &mut R) -> Vec<AlignedExample> {
        (0..n).map(|_| self.sample(rng)).collect()
    }
}

/// The tutorial's 17-word English to Spanish lexicon (accents dropped, as there).
pub const DEFAULT_LEXICON: [(&str, &str); 17] = [
    ("the", "el"),
    ("a", "un"),
    ("cat", "gato"),
    ("dog", "perro"),
    ("bird", "pajaro"),
    ("fish", "pez"),
    ("child", "nino"),
    ("woman", "mujer"),
    ("man", "hombre"),
    ("sees", "ve"),
    ("eats", "come"),
    ("finds", "halla"),
    ("wants", "quiere"),
    ("small", "pequeno"),
    ("big", "grande"),
    ("red", "rojo"),
    ("old", "viejo"),
];

/// Checks a `min..=max` length range.
fn check_range(what: &'static str, min: usize, max: usize) -> Result<()> {
    if min == 0 || min > max {
        return Err(Error::invalid(what, format!("need 1 <= min <= max, got {min}..={max}")));
    }
    Ok(())
}

/// Translate word for word through a lexicon, then reverse:
/// `the cat sees a small bird` → `pajaro pequeno un ve gato el`.
///
/// With `n` words, source `<sos> w1 .. wn <eos>` and target
/// `<sos> t_n .. t_1 <eos>`, output row `j < n` holds `t_{n-j}`, which
/// comes from source position `n - j`: the gold alignment is the
/// anti-diagonal.
///
/// ```
/// use rand::{SeedableRng, rngs::StdRng};
/// use lingo_data::{LexiconReverse, Task};
/// let task = LexiconReverse::default();
/// let ex = task.sample(&mut StdRng::seed_from_u64(0));
/// let n = ex.src.len() - 2;
/// assert_eq!(ex.gold[0], [n]);
/// assert!(ex.gold[n].is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexiconReverse {
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    /// `(source id, target id)` of each lexicon entry, in lexicon order.
    entries: Vec<(usize, usize)>,
    min_words: usize,
    max_words: usize,
}

impl Default for LexiconReverse {
    /// The tutorial's setting: [`DEFAULT_LEXICON`], 3 to 6 words.
    fn default() -> Self {
        let mut task = Self::build(&DEFAULT_LEXICON);
        (task.min_words, task.max_words) = (3, 6);
        task
    }
}

impl LexiconReverse {
    /// A task over `lexicon` (pairs `(english, spanish)`) with sentences of
    /// `min_words..=max_words` words. Each word is drawn uniformly from the
    /// lexicon entries. Source words must be distinct; the vocabularies are
    /// the specials followed by the words in sorted order, as in the tutorial.
    ///
    /// ```
    /// use lingo_data::{LexiconReverse, Task};
    /// let task = LexiconReverse::new(&[("hi", "hola"), ("bye", "adios")], 1, 2).unwrap();
    /// assert_eq!(task.src_vocab().tokens()[4..], ["bye", "hi"]);
    /// assert!(LexiconReverse::new(&[("x", "y"), ("x", "z")], 1, 2).is_err());
    /// ```
    pub fn new<S: AsRef<str>>(lexicon: &[(S, S)], min_words: usize, max_words: usize) -> Result<Self> {
        check_range("word count range", min_words, max_words)?;
        if lexicon.is_empty() {
            return Err(Error::invalid("lexicon", "is empty"));
        }
        if lexicon.iter().any(|(_, t)| crate::SPECIALS.contains(&t.as_ref())) {
            return Err(Error::invalid("lexicon", "a target word is a special token"));
        }
        let mut task = Self::build(lexicon);
        if task.src_vocab.len() - crate::SPECIALS.len() != lexicon.len() {
            return Err(Error::invalid("lexicon", "a source word appears twice (or is a special)"));
        }
        (task.min_words, task.max_words) = (min_words, max_words);
        Ok(task)
    }

    /// The example for a given English sentence (a slice of lexicon words),
    /// whatever its length; an unknown word is an error.
    ///
    /// ```
    /// use lingo_data::{LexiconReverse, Task};
    /// let task = LexiconReverse::default();
    /// let ex = task.example(&["the", "cat", "sees"]).unwrap();
    /// assert_eq!(task.tgt_vocab().decode(&ex.tgt, true), ["ve", "gato", "el"]);
    /// assert_eq!(ex.gold, [vec![3], vec![2], vec![1], vec![]]);
    /// assert!(task.example(&["the", "unicorn"]).is_err());
    /// ```
    pub fn example<S: AsRef<str>>(&self, words: &[S]) -> Result<AlignedExample> {
        let pairs = words
            .iter()
            .map(|w| {
                let w = w.as_ref();
                let src = self.src_vocab.get(w).filter(|&id| id >= crate::SPECIALS.len());
                src.and_then(|s| self.entries.iter().find(|e| e.0 == s).copied())
                    .ok_or_else(|| Error::invalid("word", format!("{w:?} is not in the lexicon")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(reverse_translation(&pairs))
    }

    /// Vocabularies and id pairs for a lexicon; the length range is set by the caller.
    fn build<S: AsRef<str>>(lexicon: &[(S, S)]) -> Self {
        let sorted = |mut words: Vec<&str>| {
            words.sort_unstable();
            Vocab::from_tokens(words)
        };
        let src_vocab = sorted(lexicon.iter().map(|(s, _)| s.as_ref()).collect());
        let tgt_vocab = sorted(lexicon.iter().map(|(_, t)| t.as_ref()).collect());
        let entries = lexicon.iter().map(|(s, t)| (src_vocab.id(s.as_ref()), tgt_vocab.id(t.as_ref()))).collect();
        Self { src_vocab, tgt_vocab, entries, min_words: 0, max_words: 0 }
    }
}

impl Task for LexiconReverse {
    fn src_vocab(&self) -> &Vocab {
        &self.src_vocab
    }
    fn tgt_vocab(&self) -> &Vocab {
        &self.tgt_vocab
    }

    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> AlignedExample {
        let n = rng.random_range(self.min_words..=self.max_words);
        let words: Vec<(usize, usize)> =
            (0..n).map(|_| self.entries[rng.random_range(0..self.entries.len())]).collect();
        reverse_translation(&words)
    }
}

/// The example for `(source id, target id)` word pairs: source in order,
/// target reversed.
fn reverse_translation(words: &[(usize, usize)]) -> AlignedExample {
    let n = words.len();
    let src = wrap(words.iter().map(|&(s, _)| s), n);
    let tgt = wrap(words.iter().rev().map(|&(_, t)| t), n);
    // Output row j holds the translation of word n - j (1-based), which
    // sits at source position n - j because <sos> takes position 0.
    let mut gold: Vec<Vec<usize>> = (0..n).map(|j| vec![n - j]).collect();
    gold.push(Vec::new());
    AlignedExample { src, tgt, sure: gold.clone(), gold }
}

/// `<sos> ids <eos>`.
fn wrap(ids: impl Iterator<Item = usize>, n: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(n + 2);
    out.push(SOS);
    out.extend(ids);
    out.push(EOS);
    out
}

/// What a [`DigitTask`] does to its digit sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigitOp {
    /// Output = input; output `j` comes from source position `j + 1`.
    Copy,
    /// Output = input reversed; output `j` comes from source position `n - j`.
    Reverse,
    /// Output = input sorted ascending; output `j` comes from **every**
    /// source position holding the same digit (duplicates make it a set).
    /// Only a digit that occurs once has a sure link.
    Sort,
}

/// Copy, reverse or sort a random sequence of "digits" (tokens `"0"`,
/// `"1"`, ... `"{num_digits - 1}"`), as in the sorting case study.
/// Source and target share one vocabulary.
///
/// ```
/// use rand::{SeedableRng, rngs::StdRng};
/// use lingo_data::{DigitOp, DigitTask, Task};
/// let task = DigitTask::new(DigitOp::Sort, 10, 5, 5).unwrap();
/// let ex = task.sample(&mut StdRng::seed_from_u64(1));
/// assert_eq!(ex.tgt.len(), 7);
/// assert!(ex.tgt[1..6].windows(2).all(|w| w[0] <= w[1]));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DigitTask {
    op: DigitOp,
    vocab: Vocab,
    num_digits: usize,
    min_len: usize,
    max_len: usize,
}

impl DigitTask {
    /// A task over `num_digits` distinct tokens with sequences of
    /// `min_len..=max_len` tokens.
    ///
    /// ```
    /// use lingo_data::{DigitOp, DigitTask, Task};
    /// let task = DigitTask::new(DigitOp::Copy, 3, 1, 4).unwrap();
    /// assert_eq!(task.src_vocab().tokens()[4..], ["0", "1", "2"]);
    /// assert!(DigitTask::new(DigitOp::Copy, 0, 1, 4).is_err());
    /// ```
    pub fn new(op: DigitOp, num_digits: usize, min_len: usize, max_len: usize) -> Result<Self> {
        check_range("sequence length range", min_len, max_len)?;
        if num_digits == 0 {
            return Err(Error::invalid("num_digits", "must be at least 1"));
        }
        let vocab = Vocab::from_tokens((0..num_digits).map(|d| d.to_string()));
        Ok(Self { op, vocab, num_digits, min_len, max_len })
    }

    /// The example for given digit values (each below `num_digits`),
    /// whatever their number.
    ///
    /// ```
    /// use lingo_data::{DigitOp, DigitTask, Task};
    /// let task = DigitTask::new(DigitOp::Sort, 10, 5, 5).unwrap();
    /// let ex = task.example(&[7, 2, 5, 2, 9]).unwrap();
    /// assert_eq!(task.tgt_vocab().decode(&ex.tgt, true), ["2", "2", "5", "7", "9"]);
    /// assert_eq!(ex.gold[0], [2, 4]);
    /// // The two 2s could each have come from either place: nothing is sure.
    /// assert!(ex.sure[0].is_empty());
    /// assert_eq!(ex.sure[2], [3]);
    /// assert!(task.example(&[10]).is_err());
    /// ```
    pub fn example(&self, digits: &[usize]) -> Result<AlignedExample> {
        if let Some(&d) = digits.iter().find(|&&d| d >= self.num_digits) {
            return Err(Error::invalid("digit", format!("{d} is not below num_digits {}", self.num_digits)));
        }
        Ok(self.build(digits))
    }

    /// The example for digit values already known to be in range.
    fn build(&self, digits: &[usize]) -> AlignedExample {
        let n = digits.len();
        // Source position of each output token (before <sos> shifts them by one).
        let order: Vec<usize> = match self.op {
            DigitOp::Copy => (0..n).collect(),
            DigitOp::Reverse => (0..n).rev().collect(),
            DigitOp::Sort => {
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by_key(|&i| digits[i]);
                order
            }
        };
        let first = crate::SPECIALS.len();
        let src = wrap(digits.iter().map(|&d| first + d), n);
        let tgt = wrap(order.iter().map(|&i| first + digits[i]), n);
        let mut gold: Vec<Vec<usize>> = match self.op {
            DigitOp::Copy | DigitOp::Reverse => order.iter().map(|&i| vec![i + 1]).collect(),
            // Which of two equal digits an output copies is undecidable, so
            // every position holding that digit is a correct place to look.
            DigitOp::Sort => {
                order.iter().map(|&i| (0..n).filter(|&k| digits[k] == digits[i]).map(|k| k + 1).collect()).collect()
            }
        };
        gold.push(Vec::new());
        // A repeated digit's link is a guess between equal positions, so it
        // is possible but not sure; a unique digit's link is both.
        let sure = gold.iter().map(|g| if g.len() == 1 { g.clone() } else { Vec::new() }).collect();
        AlignedExample { src, tgt, gold, sure }
    }
}

impl Task for DigitTask {
    fn src_vocab(&self) -> &Vocab {
        &self.vocab
    }
    fn tgt_vocab(&self) -> &Vocab {
        &self.vocab
    }

    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> AlignedExample {
        let n = rng.random_range(self.min_len..=self.max_len);
        let digits: Vec<usize> = (0..n).map(|_| rng.random_range(0..self.num_digits)).collect();
        self.build(&digits)
    }
}
