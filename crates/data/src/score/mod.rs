//! Translation metrics as sacrebleu computes them: BLEU with its four
//! tokenizers, chrF and chrF++, TER; sentence-level scores; and comparing
//! systems by paired bootstrap resampling.
//!
//! Every metric works the way sacrebleu's do: each sentence yields a short
//! vector of *sufficient statistics* (n-gram counts, edit counts, lengths),
//! the corpus score is computed once from their sum, and a sentence's own
//! score from its own vector. That is why a corpus BLEU is not the mean of
//! sentence BLEUs, and why a bootstrap resample costs one sum per metric:
//!
//! ```text
//! corpus score   = f(Σ_i stats_i)
//! sentence score = f(stats_i)
//! resample       = f(Σ_k stats_{i_k}),  i_k drawn with replacement
//! ```
//!
//! A score is comparable with another only under the same settings, which
//! its [`Signature`] spells out as sacrebleu does.

mod bleu;
mod bootstrap;
mod chrf;
mod ter;
mod tokenize;
mod unicode;

pub use bleu::{Bleu, BleuScore, corpus_bleu};
pub use bootstrap::{NumpyRng, PairedBootstrap, SystemResult};
pub use chrf::{Chrf, corpus_chrf};
pub use ter::{Ter, translation_edit_rate};
pub use tokenize::{BleuTokenize, tokenize_13a};

use std::collections::HashMap;
use std::hash::Hash;

use crate::error::{Error, Result};

/// A corpus metric computed from per-sentence sufficient statistics.
///
/// ```
/// use lingo_data::{Bleu, Metric, Ter};
/// let ter = Ter::default();
/// let stats = ter.stats("the cat sat", &["the cat sat down"]);
/// assert_eq!(stats, vec![1.0, 4.0]);                 // one insertion, four reference words
/// assert_eq!(ter.score(&stats), 25.0);
/// assert!(Bleu::default().higher_is_better() && !ter.higher_is_better());
/// ```
pub trait Metric {
    /// The name sacrebleu prints: `BLEU`, `chrF2`, `chrF2++`, `TER`.
    fn name(&self) -> String;

    /// Whether a higher score is better (not for TER, an error rate).
    fn higher_is_better(&self) -> bool {
        true
    }

    /// The settings that make a score comparable, for `nrefs` references
    /// per sentence.
    fn signature(&self, nrefs: usize) -> Signature;

    /// One sentence's sufficient statistics against its references.
    fn stats(&self, hyp: &str, refs: &[&str]) -> Vec<f64>;

    /// The score of (summed) statistics.
    fn score(&self, stats: &[f64]) -> f64;
}

/// Every sentence's statistics: `refs[i]` lists the references of `hyps[i]`.
///
/// ```
/// use lingo_data::{Chrf, sentence_stats};
/// let stats = sentence_stats(&Chrf::default(), &["ab", "c"], &[vec!["ab"], vec!["d"]]).unwrap();
/// assert_eq!(stats.len(), 2);
/// assert_eq!(stats[0][..3], [2.0, 2.0, 2.0]);     // unigrams: hypothesis, reference, matched
/// ```
pub fn sentence_stats<M, H, R>(metric: &M, hyps: &[H], refs: &[Vec<R>]) -> Result<Vec<Vec<f64>>>
where
    M: Metric + ?Sized,
    H: AsRef<str>,
    R: AsRef<str>,
{
    check_refs(hyps, refs)?;
    let stats = hyps.iter().zip(refs).map(|(hyp, refs)| {
        let refs: Vec<&str> = refs.iter().map(AsRef::as_ref).collect();
        metric.stats(hyp.as_ref(), &refs)
    });
    Ok(stats.collect())
}

/// The statistics of a whole corpus: the element-wise sum of its sentences'.
///
/// ```
/// let total = lingo_data::sum_stats(&[vec![1.0, 4.0], vec![2.0, 3.0]]);
/// assert_eq!(total, vec![3.0, 7.0]);
/// ```
pub fn sum_stats(stats: &[Vec<f64>]) -> Vec<f64> {
    let mut total = vec![0.0; stats.first().map_or(0, Vec::len)];
    for sentence in stats {
        for (sum, s) in total.iter_mut().zip(sentence) {
            *sum += s;
        }
    }
    total
}

/// The corpus score of `hyps` against `refs` (`refs[i]`: the references of
/// `hyps[i]`): the metric of the summed statistics.
///
/// ```
/// use lingo_data::{Ter, corpus_score};
/// let ter = corpus_score(&Ter::default(), &["a b c", "x"], &[vec!["a b c d"], vec!["x"]]).unwrap();
/// assert_eq!(ter, 20.0);                            // 1 edit over 5 reference words
/// ```
pub fn corpus_score<M, H, R>(metric: &M, hyps: &[H], refs: &[Vec<R>]) -> Result<f64>
where
    M: Metric + ?Sized,
    H: AsRef<str>,
    R: AsRef<str>,
{
    Ok(metric.score(&sum_stats(&sentence_stats(metric, hyps, refs)?)))
}

/// Each sentence's own score (for BLEU, use [`Bleu::sentence`], whose
/// effective order keeps short sentences from scoring 0, as sacrebleu's
/// sentence-level BLEU does).
///
/// ```
/// use lingo_data::{Chrf, sentence_scores};
/// let scores = sentence_scores(&Chrf::default(), &["el gato", "xyz"], &[vec!["el gato"], vec!["el perro"]]).unwrap();
/// assert_eq!(scores, vec![100.0, 0.0]);
/// ```
pub fn sentence_scores<M, H, R>(metric: &M, hyps: &[H], refs: &[Vec<R>]) -> Result<Vec<f64>>
where
    M: Metric + ?Sized,
    H: AsRef<str>,
    R: AsRef<str>,
{
    Ok(sentence_stats(metric, hyps, refs)?.iter().map(|s| metric.score(s)).collect())
}

/// Checks that there is one reference set per hypothesis, each non-empty
/// and of the same size.
fn check_refs<H, R>(hyps: &[H], refs: &[Vec<R>]) -> Result<()> {
    if hyps.len() != refs.len() {
        return Err(Error::invalid(
            "references",
            format!("{} hypotheses but {} reference sets", hyps.len(), refs.len()),
        ));
    }
    if let Some(i) = refs.iter().position(Vec::is_empty) {
        return Err(Error::invalid("references", format!("hypothesis {i} has no reference")));
    }
    Ok(())
}

/// A sacrebleu signature: the settings that make a score comparable, as
/// `key:value` fields in sacrebleu's order (the number of references, the
/// test's settings, the metric's own, the version last). The version names
/// lingo's, as its metrics are not sacrebleu's code.
///
/// ```
/// use lingo_data::{Bleu, Metric};
/// let signature = Bleu { lowercase: true, ..Bleu::default() }.signature(1);
/// assert!(signature.to_string().starts_with("nrefs:1|case:lc|eff:no|tok:13a|smooth:exp|version:lingo-"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature(Vec<(&'static str, String)>);

impl Signature {
    /// A signature of `nrefs` references and a metric's own `fields`.
    ///
    /// ```
    /// let signature = lingo_data::Signature::new(2, &[("case", "lc")]);
    /// assert_eq!(signature.fields()[..2], [("nrefs", "2".to_string()), ("case", "lc".to_string())]);
    /// ```
    pub fn new(nrefs: usize, fields: &[(&'static str, &str)]) -> Signature {
        let mut all = vec![("nrefs", nrefs.to_string())];
        all.extend(fields.iter().map(|&(key, value)| (key, value.to_string())));
        all.push(("version", format!("lingo-{}", env!("CARGO_PKG_VERSION"))));
        Signature(all)
    }

    /// The same signature with a paired bootstrap's resamples and seed
    /// after the number of references, where sacrebleu puts them.
    ///
    /// ```
    /// use lingo_data::{Metric, Ter};
    /// let signature = Ter::default().signature(1).with_bootstrap(1000, 12345);
    /// assert!(signature.to_string().starts_with("nrefs:1|bs:1000|seed:12345|case:lc|tok:tercom|"));
    /// ```
    pub fn with_bootstrap(mut self, resamples: usize, seed: u64) -> Signature {
        self.0.splice(1..1, [("bs", resamples.to_string()), ("seed", seed.to_string())]);
        self
    }

    /// The fields, in order.
    ///
    /// ```
    /// use lingo_data::{Bleu, Metric};
    /// assert_eq!(Bleu::default().signature(1).fields().len(), 6);
    /// ```
    pub fn fields(&self) -> &[(&'static str, String)] {
        &self.0
    }
}

/// `nrefs:1|case:mixed|...`, as sacrebleu prints it.
impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fields: Vec<String> = self.0.iter().map(|(key, value)| format!("{key}:{value}")).collect();
        f.write_str(&fields.join("|"))
    }
}

/// `yes` or `no`, as sacrebleu writes a setting that is on or off.
fn yes_no(on: bool) -> &'static str {
    if on { "yes" } else { "no" }
}

/// Python's `str.isspace`, which is what `str.split()` and `str.rstrip()`
/// in sacrebleu use: Unicode whitespace plus the ASCII separators 0x1C-0x1F.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1C}'..='\u{1F}').contains(&c)
}

/// Python's `s.split()`: the words between runs of whitespace.
fn py_split(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_py_space).filter(|w| !w.is_empty())
}

/// Python's `str.lower` when `lowercase`, else the text as it is.
fn lowered(text: &str, lowercase: bool) -> std::borrow::Cow<'_, str> {
    if lowercase { std::borrow::Cow::Owned(text.to_lowercase()) } else { std::borrow::Cow::Borrowed(text) }
}

/// Counts of all n-grams of `tokens` for `n` in `1..=max_order`.
fn ngram_counts<T: Eq + Hash>(tokens: &[T], max_order: usize) -> HashMap<&[T], usize> {
    let mut counts = HashMap::new();
    for n in 1..=max_order {
        for gram in tokens.windows(n) {
            *counts.entry(gram).or_insert(0) += 1;
        }
    }
    counts
}
