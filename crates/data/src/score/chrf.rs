//! chrF (Popović, 2015) and chrF++ (Popović, 2017) as sacrebleu computes
//! them: character n-grams up to 6 with whitespace removed, and for chrF++
//! word n-grams up to 2 as well; precision and recall averaged over the
//! orders present, then
//!
//! ```text
//! chrF = 100 · (1 + β²) P R / (β² P + R)          (β = 2: recall counts twice)
//! ```
//!
//! Each sentence keeps the statistics of its best-scoring reference.

use super::{Metric, Signature, is_py_space, lowered, ngram_counts, py_split};
use crate::error::Result;

/// The ASCII punctuation chrF++ splits off the start or end of a word
/// before counting word n-grams.
const PUNCTUATION: &str = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/// chrF's settings, sacrebleu's defaults by [`Default`] (chrF2: character
/// 6-grams, no word n-grams, `β = 2`).
///
/// ```
/// use lingo_data::{Chrf, Metric};
/// let chrf_pp = Chrf { word_order: 2, ..Chrf::default() };
/// assert_eq!((Chrf::default().name(), chrf_pp.name()), ("chrF2".to_string(), "chrF2++".to_string()));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chrf {
    /// The longest character n-gram (`nc:`).
    pub char_order: usize,
    /// The longest word n-gram (`nw:`); 2 makes chrF++.
    pub word_order: usize,
    /// How many times recall counts as much as precision.
    pub beta: u32,
    /// Lowercase hypotheses and references first (`case:lc`).
    pub lowercase: bool,
}

impl Default for Chrf {
    fn default() -> Chrf {
        Chrf { char_order: 6, word_order: 0, beta: 2, lowercase: false }
    }
}

impl Chrf {
    /// Each order's n-gram counts of one line: characters first, then words.
    fn ngrams(&self, line: &str) -> Vec<Vec<(Vec<char>, usize)>> {
        let chars: Vec<char> = line.chars().filter(|&c| !is_py_space(c)).collect();
        let mut orders = by_order(&chars, self.char_order, |gram| gram.to_vec());
        if self.word_order > 0 {
            let words = split_punctuation(line);
            // A word n-gram is keyed by its words joined with spaces, as sacrebleu does.
            orders.extend(by_order(&words, self.word_order, |gram| gram.join(" ").chars().collect()));
        }
        orders
    }

    /// The F-score of (summed) statistics, `[hyp, ref, matched]` per order.
    fn f_score(&self, stats: &[f64]) -> f64 {
        let (mut precision, mut recall, mut orders) = (0.0, 0.0, 0);
        for order in stats.chunks_exact(3) {
            let [hyp, reference, matched] = [order[0], order[1], order[2]];
            if hyp > 0.0 && reference > 0.0 {
                precision += matched / hyp;
                recall += matched / reference;
                orders += 1;
            }
        }
        if orders == 0 {
            return 0.0;
        }
        let (precision, recall) = (precision / orders as f64, recall / orders as f64);
        let beta2 = f64::from(self.beta * self.beta);
        if precision + recall == 0.0 {
            return 0.0;
        }
        // In sacrebleu's order of operations, so the scores agree to the last bit.
        100.0 * ((1.0 + beta2) * precision * recall / (beta2 * precision + recall))
    }
}

/// For `n` in `1..=max_order`, the counts of the n-grams of `items`, each
/// keyed by `key(gram)`.
fn by_order<T: Eq + std::hash::Hash>(
    items: &[T],
    max_order: usize,
    key: impl Fn(&[T]) -> Vec<char>,
) -> Vec<Vec<(Vec<char>, usize)>> {
    let counts = ngram_counts(items, max_order);
    let mut orders = vec![Vec::new(); max_order];
    for (gram, n) in counts {
        orders[gram.len() - 1].push((key(gram), n));
    }
    orders
}

/// The words of `line` with one punctuation mark split off each word's end,
/// or else its start (a one-character word stays whole).
fn split_punctuation(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    for word in py_split(line) {
        let chars: Vec<char> = word.chars().collect();
        let punct = |c: char| PUNCTUATION.contains(c);
        match (chars.len(), chars.first(), chars.last()) {
            (n, Some(_), Some(&last)) if n > 1 && punct(last) => {
                words.extend([chars[..n - 1].iter().collect(), last.to_string()]);
            }
            (n, Some(&first), _) if n > 1 && punct(first) => {
                words.extend([first.to_string(), chars[1..].iter().collect()]);
            }
            _ => words.push(word.to_string()),
        }
    }
    words
}

/// `[hyp, ref, matched]` of one order: the hypothesis n-grams (counted only
/// when the reference has some), the reference's, and the matches.
fn order_stats(hyp: &[(Vec<char>, usize)], reference: &[(Vec<char>, usize)]) -> [f64; 3] {
    let reference: std::collections::HashMap<&[char], usize> =
        reference.iter().map(|(gram, n)| (gram.as_slice(), *n)).collect();
    let hyp_total: usize = hyp.iter().map(|(_, n)| n).sum();
    let ref_total: usize = reference.values().sum();
    let matched: usize =
        hyp.iter().map(|(gram, n)| (*n).min(reference.get(gram.as_slice()).copied().unwrap_or(0))).sum();
    [if ref_total > 0 { hyp_total } else { 0 } as f64, ref_total as f64, matched as f64]
}

impl Metric for Chrf {
    fn name(&self) -> String {
        format!("chrF{}{}", self.beta, "+".repeat(self.word_order))
    }

    fn signature(&self, nrefs: usize) -> Signature {
        let case = if self.lowercase { "lc" } else { "mixed" };
        let (nc, nw) = (self.char_order.to_string(), self.word_order.to_string());
        Signature::new(nrefs, &[("case", case), ("eff", "yes"), ("nc", &nc), ("nw", &nw), ("space", "no")])
    }

    fn stats(&self, hyp: &str, refs: &[&str]) -> Vec<f64> {
        let hyp = self.ngrams(&lowered(hyp, self.lowercase));
        let mut best: Option<(f64, Vec<f64>)> = None;
        for reference in refs {
            let reference = self.ngrams(&lowered(reference, self.lowercase));
            let stats: Vec<f64> = hyp.iter().zip(&reference).flat_map(|(h, r)| order_stats(h, r)).collect();
            let f = self.f_score(&stats);
            // The first reference wins a tie.
            if best.as_ref().is_none_or(|(best_f, _)| f > *best_f) {
                best = Some((f, stats));
            }
        }
        best.map(|(_, stats)| stats).unwrap_or_else(|| vec![0.0; 3 * (self.char_order + self.word_order)])
    }

    fn score(&self, stats: &[f64]) -> f64 {
        self.f_score(stats)
    }
}

/// Corpus chrF of `hyps` against one reference each, with sacrebleu's
/// defaults: `corpus_chrf(hyps, [refs]).score` is the same number.
///
/// ```
/// let same = lingo_data::corpus_chrf(&["el gato"], &["el gato"]).unwrap();
/// assert!((same - 100.0).abs() < 1e-9);
/// assert_eq!(lingo_data::corpus_chrf(&["xyz"], &["el gato"]).unwrap(), 0.0);
/// assert!(lingo_data::corpus_chrf(&["a"], &["a", "b"]).is_err());
/// ```
pub fn corpus_chrf<H: AsRef<str>, R: AsRef<str>>(hyps: &[H], refs: &[R]) -> Result<f64> {
    let refs: Vec<Vec<&str>> = refs.iter().map(|r| vec![r.as_ref()]).collect();
    super::corpus_score(&Chrf::default(), hyps, &refs)
}
