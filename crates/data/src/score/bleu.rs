//! BLEU (Papineni et al., 2002) as sacrebleu computes it: n-grams up to 4
//! of the tokenizer's tokens, `exp` smoothing.
//!
//! ```text
//! p_n  = matched n-grams / hypothesis n-grams      (clipped by the reference counts)
//! BP   = 1                       if c >= r
//!        exp(1 - r / c)          otherwise         (c, r: hypothesis and closest-reference lengths)
//! BLEU = 100 * BP * exp( (1/N) Σ_n ln p_n )
//! ```
//!
//! where a `p_n` with no match becomes `1 / (2^k * total_n)`, `k` counting
//! the zero-match orders so far (the NIST/mteval "exp" smoothing), and `N`
//! is 4, or with the *effective order* (sentence-level BLEU) the highest
//! order the hypothesis has n-grams of.

use std::collections::HashMap;

use super::{BleuTokenize, Metric, Signature, lowered, ngram_counts, py_split, yes_no};
use crate::error::Result;

/// Highest n-gram order of BLEU.
const ORDER: usize = 4;

/// BLEU's settings, sacrebleu's defaults by [`Default`].
///
/// ```
/// use lingo_data::{Bleu, BleuTokenize};
/// let refs = vec![vec!["El gato, negro."]];
/// let default = Bleu::default().corpus(&["El gato negro."], &refs).unwrap();
/// let none = Bleu { tokenize: BleuTokenize::None, ..Bleu::default() }.corpus(&["El gato negro."], &refs).unwrap();
/// assert!(default.score > none.score);   // 13a splits the comma and the stop off
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bleu {
    /// The tokenizer (`tok:` in the signature).
    pub tokenize: BleuTokenize,
    /// Lowercase hypotheses and references first (`case:lc`).
    pub lowercase: bool,
    /// Average over the orders the hypothesis has n-grams of, not all four
    /// (`eff:yes`): what sentence-level BLEU needs, as a short sentence has
    /// no 4-grams.
    pub effective_order: bool,
}

impl Bleu {
    /// Corpus BLEU with its parts; `refs[i]` lists the references of
    /// `hyps[i]`: n-gram counts are clipped by the largest count in any
    /// reference, and the reference length is the closest one (the shorter
    /// on ties).
    ///
    /// ```
    /// let refs = vec![vec!["a b c d e", "a b"]];
    /// let bleu = lingo_data::Bleu::default().corpus(&["a b"], &refs).unwrap();
    /// assert_eq!((bleu.sys_len, bleu.ref_len), (2, 2));
    /// ```
    pub fn corpus<H: AsRef<str>, R: AsRef<str>>(&self, hyps: &[H], refs: &[Vec<R>]) -> Result<BleuScore> {
        let stats = super::sentence_stats(self, hyps, refs)?;
        Ok(self.from_stats(&super::sum_stats(&stats)))
    }

    /// Sentence-level BLEU as sacrebleu's `sentence_bleu`: this setting with
    /// the effective order.
    ///
    /// ```
    /// let bleu = lingo_data::Bleu::default();
    /// let short = bleu.sentence("Hola .", &["Hola ."]);
    /// assert!((short.score - 100.0).abs() < 1e-9);   // two tokens: no 3- or 4-grams, still 100
    /// assert_eq!(bleu.from_stats(&lingo_data::Metric::stats(&bleu, "Hola .", &["Hola ."])).score, 0.0);
    /// ```
    pub fn sentence(&self, hyp: &str, refs: &[&str]) -> BleuScore {
        let effective = Bleu { effective_order: true, ..*self };
        effective.from_stats(&effective.stats(hyp, refs))
    }

    /// BLEU from (summed) statistics `[sys_len, ref_len, matched × 4,
    /// totals × 4]`, sacrebleu's order.
    ///
    /// ```
    /// let bleu = lingo_data::Bleu::default().from_stats(&[4.0, 4.0, 4.0, 3.0, 2.0, 1.0, 4.0, 3.0, 2.0, 1.0]);
    /// assert!((bleu.score - 100.0).abs() < 1e-9);
    /// ```
    pub fn from_stats(&self, stats: &[f64]) -> BleuScore {
        let count = |k: usize| stats.get(k).map_or(0, |&v| v as usize);
        let (sys_len, ref_len) = (count(0), count(1));
        let counts: [usize; ORDER] = std::array::from_fn(|n| count(2 + n));
        let totals: [usize; ORDER] = std::array::from_fn(|n| count(2 + ORDER + n));
        let bp = if sys_len >= ref_len {
            1.0
        } else if sys_len > 0 {
            (1.0 - ref_len as f64 / sys_len as f64).exp()
        } else {
            0.0
        };
        let mut precisions = [0.0; ORDER];
        if counts.iter().all(|&c| c == 0) {
            return BleuScore { score: 0.0, counts, totals, precisions, bp, sys_len, ref_len };
        }
        let (mut smooth, mut orders) = (1.0, ORDER);
        for n in 0..ORDER {
            if totals[n] == 0 {
                // No n-grams of this order: with all four orders BLEU collapses
                // to 0, with the effective order it stops at the last one.
                break;
            }
            if self.effective_order {
                orders = n + 1;
            }
            precisions[n] = if counts[n] == 0 {
                smooth *= 2.0;
                100.0 / (smooth * totals[n] as f64)
            } else {
                100.0 * counts[n] as f64 / totals[n] as f64
            };
        }
        // sacrebleu floors ln(0) at -9999999999 rather than -inf.
        let log = |p: f64| if p == 0.0 { -9_999_999_999.0 } else { p.ln() };
        let score = bp * (precisions[..orders].iter().map(|&p| log(p)).sum::<f64>() / orders as f64).exp();
        BleuScore { score, counts, totals, precisions, bp, sys_len, ref_len }
    }

    /// The tokens BLEU counts: lowercased if asked, then tokenized.
    fn tokens(&self, line: &str) -> String {
        self.tokenize.apply(&lowered(line, self.lowercase))
    }
}

impl Metric for Bleu {
    fn name(&self) -> String {
        "BLEU".into()
    }

    fn signature(&self, nrefs: usize) -> Signature {
        let case = if self.lowercase { "lc" } else { "mixed" };
        let fields =
            [("case", case), ("eff", yes_no(self.effective_order)), ("tok", self.tokenize.name()), ("smooth", "exp")];
        Signature::new(nrefs, &fields)
    }

    fn stats(&self, hyp: &str, refs: &[&str]) -> Vec<f64> {
        let hyp = self.tokens(hyp);
        let hyp: Vec<&str> = py_split(&hyp).collect();
        let refs: Vec<String> = refs.iter().map(|r| self.tokens(r)).collect();
        let refs: Vec<Vec<&str>> = refs.iter().map(|r| py_split(r).collect()).collect();
        // The largest count of each n-gram over the references.
        let mut max_ref: HashMap<&[&str], usize> = HashMap::new();
        for tokens in &refs {
            for (gram, n) in ngram_counts(tokens, ORDER) {
                let slot = max_ref.entry(gram).or_insert(0);
                *slot = (*slot).max(n);
            }
        }
        let (mut counts, mut totals) = ([0; ORDER], [0; ORDER]);
        for (gram, n) in ngram_counts(&hyp, ORDER) {
            totals[gram.len() - 1] += n;
            counts[gram.len() - 1] += n.min(max_ref.get(gram).copied().unwrap_or(0));
        }
        let c = hyp.len();
        // The closest reference length; the shorter one on a tie.
        let r = refs.iter().map(Vec::len).min_by_key(|&r| (r.abs_diff(c), r)).unwrap_or(0);
        let mut stats = vec![c as f64, r as f64];
        stats.extend(counts.iter().chain(&totals).map(|&v| v as f64));
        stats
    }

    fn score(&self, stats: &[f64]) -> f64 {
        self.from_stats(stats).score
    }
}

/// BLEU with its parts, as sacrebleu reports them.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct BleuScore {
    /// BLEU in `[0, 100]`.
    pub score: f64,
    /// Matched n-grams for n = 1..4 (clipped by reference counts).
    pub counts: [usize; ORDER],
    /// Hypothesis n-grams for n = 1..4.
    pub totals: [usize; ORDER],
    /// Smoothed n-gram precisions in percent.
    pub precisions: [f64; ORDER],
    /// Brevity penalty.
    pub bp: f64,
    /// Total hypothesis length in tokens.
    pub sys_len: usize,
    /// Total closest-reference length in tokens.
    pub ref_len: usize,
}

impl BleuScore {
    /// What sacrebleu's summary line says after the score (its JSON's
    /// `verbose_score`): the precisions, the brevity penalty and the lengths.
    ///
    /// ```
    /// let bleu = lingo_data::corpus_bleu(&["a b c"], &["a b c d"]).unwrap();
    /// assert_eq!(bleu.verbose(), "100.0/100.0/100.0/0.0 (BP = 0.717 ratio = 0.750 hyp_len = 3 ref_len = 4)");
    /// ```
    pub fn verbose(&self) -> String {
        let [p1, p2, p3, p4] = self.precisions;
        let ratio = if self.ref_len == 0 { 0.0 } else { self.sys_len as f64 / self.ref_len as f64 };
        format!(
            "{p1:.1}/{p2:.1}/{p3:.1}/{p4:.1} (BP = {:.3} ratio = {ratio:.3} hyp_len = {} ref_len = {})",
            self.bp, self.sys_len, self.ref_len
        )
    }
}

impl std::fmt::Display for BleuScore {
    /// sacrebleu's summary line:
    /// `BLEU = 65.87 81.0/67.4/58.2/51.4 (BP = 0.894 ratio = 0.899 hyp_len = 358 ref_len = 398)`.
    ///
    /// ```
    /// let bleu = lingo_data::corpus_bleu(&["a b c d"], &["a b c d"]).unwrap();
    /// assert_eq!(bleu.to_string(),
    ///     "BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 4 ref_len = 4)");
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BLEU = {:.2} {}", self.score, self.verbose())
    }
}

/// Corpus BLEU of `hyps` against one reference each, with sacrebleu's
/// defaults: `corpus_bleu(hyps, [refs]).score` is the same number.
///
/// ```
/// let bleu = lingo_data::corpus_bleu(&["the cat sat on the mat"], &["the cat sat on the mat"]).unwrap();
/// assert!((bleu.score - 100.0).abs() < 1e-9);
/// let half = lingo_data::corpus_bleu(&["the cat"], &["the cat sat on the mat"]).unwrap();
/// assert!(half.bp < 1.0);
/// assert!(lingo_data::corpus_bleu(&["a", "b"], &["a"]).is_err());
/// ```
pub fn corpus_bleu<H: AsRef<str>, R: AsRef<str>>(hyps: &[H], refs: &[R]) -> Result<BleuScore> {
    let refs: Vec<Vec<&str>> = refs.iter().map(|r| vec![r.as_ref()]).collect();
    Bleu::default().corpus(hyps, &refs)
}
