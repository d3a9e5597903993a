//! Corpus BLEU and chrF, computed as sacrebleu computes them by default, so
//! numbers here can be compared with published ones.
//!
//! BLEU (Papineni et al., 2002) with sacrebleu's defaults: `13a`
//! tokenization, n-grams up to 4, `exp` smoothing, no lowercasing:
//!
//! ```text
//! p_n  = matched n-grams / hypothesis n-grams      (clipped by the reference counts)
//! BP   = 1                       if c >= r
//!        exp(1 - r / c)          otherwise         (c, r: hypothesis and closest-reference lengths)
//! BLEU = 100 * BP * exp( (1/4) Σ_n ln p_n )
//! ```
//! where a `p_n` with no match becomes `1 / (2^k * total_n)`, `k` counting
//! the zero-match orders so far (the NIST/mteval "exp" smoothing).
//!
//! chrF (Popović, 2015) with sacrebleu's defaults: character n-grams up to
//! 6 with whitespace removed, `β = 2`, averaged precision and recall over
//! the orders present:
//!
//! ```text
//! chrF = 100 * (1 + β²) P R / (β² P + R)
//! ```

use crate::error::{Error, Result};
use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::Hash;

/// Highest n-gram order of BLEU.
const BLEU_ORDER: usize = 4;
/// Highest character n-gram order of chrF.
const CHRF_ORDER: usize = 6;
/// chrF weighs recall `β` times as much as precision.
const CHRF_BETA: f64 = 2.0;

/// How BLEU and chrF read the text, where sacrebleu offers a choice.
///
/// ```
/// use lingo_data::{ScoreOptions, corpus_bleu_with};
/// let refs = vec![vec!["the cat sat on the mat"]];
/// let mixed = corpus_bleu_with(&["The Cat sat on the mat"], &refs, ScoreOptions::default()).unwrap();
/// let lower = corpus_bleu_with(&["The Cat sat on the mat"], &refs, ScoreOptions { lowercase: true }).unwrap();
/// assert!(mixed.score < 100.0 && (lower.score - 100.0).abs() < 1e-9);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScoreOptions {
    /// Lowercase hypotheses and references before scoring, as sacrebleu's
    /// `lowercase=True` does (`case:lc` in its signature); off by default.
    pub lowercase: bool,
}

impl ScoreOptions {
    /// `text` as the metrics read it: lowercased if asked (Unicode's full
    /// mapping, as Python's `str.lower`).
    fn read<'a>(self, text: &'a str) -> Cow<'a, str> {
        if self.lowercase { Cow::Owned(text.to_lowercase()) } else { Cow::Borrowed(text) }
    }
}

/// Python's `str.isspace`, which is what `str.split()` and `str.rstrip()`
/// in sacrebleu use: Unicode whitespace plus the ASCII separators 0x1C-0x1F.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1C}'..='\u{1F}').contains(&c)
}

/// Python's `' '.join(s.split())`.
fn squeeze_spaces(s: &str) -> String {
    s.split(is_py_space).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// sacrebleu's `13a` tokenizer (mteval-v13a) as its BLEU applies it: strips
/// trailing whitespace, unescapes a few HTML entities, splits most ASCII punctuation off words, splits `.` and `,`
/// unless they sit between digits, splits `-` after a digit.
///
/// ```
/// use lingo_data::tokenize_13a;
/// assert_eq!(tokenize_13a("¿Qué? It costs $3.50, isn't it."), "¿Qué ? It costs $ 3.50 , isn't it .");
/// assert_eq!(tokenize_13a("1-2 &amp; x-y"), "1 - 2 & x-y");
/// ```
pub fn tokenize_13a(line: &str) -> String {
    let mut line = line.trim_end_matches(is_py_space).replace("<skipped>", "").replace("-\n", "").replace('\n', " ");
    if line.contains('&') {
        line = line.replace("&quot;", "\"").replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">");
    }
    // The four regular expressions of sacrebleu's TokenizerRegexp, applied in
    // turn to " line " as left-to-right, non-overlapping substitutions.
    let mut chars: Vec<char> = Vec::with_capacity(line.len() + 2);
    chars.push(' ');
    chars.extend(line.chars());
    chars.push(' ');
    // 1. ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> " \1 "
    let is_split_punct = |c: char| matches!(c, '{'..='~' | '['..='`' | ' '..='&' | '('..='+' | ':'..='@' | '/');
    let mut out = Vec::with_capacity(chars.len() * 2);
    for &c in &chars {
        if is_split_punct(c) {
            out.extend([' ', c, ' ']);
        } else {
            out.push(c);
        }
    }
    let digit = |c: char| c.is_ascii_digit();
    let dot_comma = |c: char| c == '.' || c == ',';
    // 2. ([^0-9])([\.,]) -> "\1 \2 "
    let out = substitute_pairs(&out, |a, b| !digit(a) && dot_comma(b), |a, b| [a, ' ', b, ' ']);
    // 3. ([\.,])([^0-9]) -> " \1 \2"
    let out = substitute_pairs(&out, |a, b| dot_comma(a) && !digit(b), |a, b| [' ', a, ' ', b]);
    // 4. ([0-9])(-) -> "\1 \2 "
    let out = substitute_pairs(&out, |a, b| digit(a) && b == '-', |a, b| [a, ' ', b, ' ']);
    squeeze_spaces(&out.into_iter().collect::<String>())
}

/// One pass of a two-character regex substitution: scanning left to right,
/// each non-overlapping pair `(a, b)` that `matches` is replaced by
/// `replace(a, b)` (what Python's `re.sub` does for a pattern of two
/// single-character classes).
fn substitute_pairs(
    chars: &[char],
    matches: impl Fn(char, char) -> bool,
    replace: impl Fn(char, char) -> [char; 4],
) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len() + chars.len() / 2);
    let mut i = 0;
    while i < chars.len() {
        match chars.get(i + 1) {
            Some(&b) if matches(chars[i], b) => {
                out.extend(replace(chars[i], b));
                i += 2;
            }
            _ => {
                out.push(chars[i]);
                i += 1;
            }
        }
    }
    out
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

/// Corpus BLEU with its parts, as sacrebleu reports them.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct BleuScore {
    /// BLEU in `[0, 100]`.
    pub score: f64,
    /// Matched n-grams for n = 1..4 (clipped by reference counts).
    pub counts: [usize; BLEU_ORDER],
    /// Hypothesis n-grams for n = 1..4.
    pub totals: [usize; BLEU_ORDER],
    /// Smoothed n-gram precisions in percent.
    pub precisions: [f64; BLEU_ORDER],
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

/// Checks that there is one reference set per hypothesis, each non-empty.
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

/// Corpus BLEU of `hyps` against one reference each; equal to sacrebleu's
/// `corpus_bleu(hyps, [refs]).score`.
///
/// ```
/// let bleu = lingo_data::corpus_bleu(&["the cat sat on the mat"], &["the cat sat on the mat"]).unwrap();
/// assert!((bleu.score - 100.0).abs() < 1e-9);
/// let half = lingo_data::corpus_bleu(&["the cat"], &["the cat sat on the mat"]).unwrap();
/// assert!(half.bp < 1.0);
/// ```
pub fn corpus_bleu<H: AsRef<str>, R: AsRef<str>>(hyps: &[H], refs: &[R]) -> Result<BleuScore> {
    let refs: Vec<Vec<&str>> = refs.iter().map(|r| vec![r.as_ref()]).collect();
    corpus_bleu_multi(hyps, &refs)
}

/// Corpus BLEU where `refs[i]` lists the references of `hyps[i]`: n-gram
/// counts are clipped by the largest count in any reference, and the
/// reference length is the closest one (the shorter on ties).
///
/// ```
/// let refs = vec![vec!["a b c d e", "a b"]];
/// let bleu = lingo_data::corpus_bleu_multi(&["a b"], &refs).unwrap();
/// assert_eq!((bleu.sys_len, bleu.ref_len), (2, 2));
/// ```
pub fn corpus_bleu_multi<H: AsRef<str>, R: AsRef<str>>(hyps: &[H], refs: &[Vec<R>]) -> Result<BleuScore> {
    corpus_bleu_with(hyps, refs, ScoreOptions::default())
}

/// [`corpus_bleu_multi`] with [`ScoreOptions`]; equal to sacrebleu's
/// `BLEU(lowercase=...).corpus_score(hyps, refs)`.
///
/// ```
/// use lingo_data::{ScoreOptions, corpus_bleu_with};
/// let refs = vec![vec!["Hola mundo ."]];
/// let lower = corpus_bleu_with(&["HOLA MUNDO ."], &refs, ScoreOptions { lowercase: true }).unwrap();
/// assert_eq!(lower.counts, [3, 2, 1, 0]);
/// ```
pub fn corpus_bleu_with<H: AsRef<str>, R: AsRef<str>>(
    hyps: &[H],
    refs: &[Vec<R>],
    options: ScoreOptions,
) -> Result<BleuScore> {
    check_refs(hyps, refs)?;
    let (mut sys_len, mut ref_len) = (0, 0);
    let (mut counts, mut totals) = ([0; BLEU_ORDER], [0; BLEU_ORDER]);
    for (hyp, refs) in hyps.iter().zip(refs) {
        let hyp = tokenize_13a(&options.read(hyp.as_ref()));
        let hyp_tokens: Vec<&str> = hyp.split(' ').filter(|t| !t.is_empty()).collect();
        let ref_strings: Vec<String> = refs.iter().map(|r| tokenize_13a(&options.read(r.as_ref()))).collect();
        let ref_tokens: Vec<Vec<&str>> =
            ref_strings.iter().map(|r| r.split(' ').filter(|t| !t.is_empty()).collect()).collect();
        // Largest count of each n-gram over the references.
        let mut max_ref: HashMap<&[&str], usize> = HashMap::new();
        for tokens in &ref_tokens {
            for (gram, n) in ngram_counts(tokens, BLEU_ORDER) {
                let slot = max_ref.entry(gram).or_insert(0);
                *slot = (*slot).max(n);
            }
        }
        for (gram, n) in ngram_counts(&hyp_tokens, BLEU_ORDER) {
            totals[gram.len() - 1] += n;
            counts[gram.len() - 1] += n.min(max_ref.get(gram).copied().unwrap_or(0));
        }
        let c = hyp_tokens.len();
        sys_len += c;
        // Closest reference length; the shorter one on a tie.
        ref_len += ref_tokens.iter().map(Vec::len).min_by_key(|&r| (r.abs_diff(c), r)).unwrap_or(0);
    }
    Ok(bleu_from_stats(counts, totals, sys_len, ref_len))
}

/// BLEU from its sufficient statistics, with `exp` smoothing.
fn bleu_from_stats(
    counts: [usize; BLEU_ORDER],
    totals: [usize; BLEU_ORDER],
    sys_len: usize,
    ref_len: usize,
) -> BleuScore {
    let bp = if sys_len >= ref_len {
        1.0
    } else if sys_len > 0 {
        (1.0 - ref_len as f64 / sys_len as f64).exp()
    } else {
        0.0
    };
    let mut precisions = [0.0; BLEU_ORDER];
    let mut score = 0.0;
    if counts.iter().any(|&c| c > 0) {
        let mut smooth = 1.0;
        for n in 0..BLEU_ORDER {
            if totals[n] == 0 {
                // No n-grams of this order (all sentences too short): the
                // precision stays 0 and BLEU collapses to 0, as in sacrebleu.
                break;
            }
            precisions[n] = if counts[n] == 0 {
                smooth *= 2.0;
                100.0 / (smooth * totals[n] as f64)
            } else {
                100.0 * counts[n] as f64 / totals[n] as f64
            };
        }
        // sacrebleu floors ln(0) at -9999999999 rather than -inf.
        let log_sum: f64 = precisions.iter().map(|&p| if p == 0.0 { -9_999_999_999.0 } else { p.ln() }).sum();
        score = bp * (log_sum / BLEU_ORDER as f64).exp();
    }
    BleuScore { score, counts, totals, precisions, bp, sys_len, ref_len }
}

/// Per-order `[hypothesis n-grams, reference n-grams, matches]` of chrF.
type ChrfStats = [[usize; 3]; CHRF_ORDER];

/// Character n-gram statistics of one hypothesis against one reference,
/// both given without whitespace.
fn chrf_stats(hyp: &[char], reference: &[char]) -> ChrfStats {
    let hyp_grams = ngram_counts(hyp, CHRF_ORDER);
    let ref_grams = ngram_counts(reference, CHRF_ORDER);
    let mut stats = [[0; 3]; CHRF_ORDER];
    for n in 1..=CHRF_ORDER {
        let hyp_total = hyp.len().saturating_sub(n - 1);
        let ref_total = reference.len().saturating_sub(n - 1);
        let matched: usize = hyp_grams
            .iter()
            .filter(|(g, _)| g.len() == n)
            .map(|(g, &c)| c.min(ref_grams.get(g).copied().unwrap_or(0)))
            .sum();
        // sacrebleu counts no hypothesis n-grams when the reference has none.
        stats[n - 1] = [if ref_total > 0 { hyp_total } else { 0 }, ref_total, matched];
    }
    stats
}

/// chrF from summed statistics: precision and recall averaged over the
/// orders where both sides have n-grams, then the F_β score.
fn chrf_from_stats(stats: &ChrfStats) -> f64 {
    let (mut prec, mut rec, mut orders) = (0.0, 0.0, 0);
    for &[hyp, reference, matched] in stats {
        if hyp > 0 && reference > 0 {
            prec += matched as f64 / hyp as f64;
            rec += matched as f64 / reference as f64;
            orders += 1;
        }
    }
    if orders == 0 {
        return 0.0;
    }
    let (prec, rec) = (prec / orders as f64, rec / orders as f64);
    let beta2 = CHRF_BETA * CHRF_BETA;
    if prec + rec == 0.0 { 0.0 } else { 100.0 * (1.0 + beta2) * prec * rec / (beta2 * prec + rec) }
}

/// Corpus chrF of `hyps` against one reference each; equal to sacrebleu's
/// `corpus_chrf(hyps, [refs]).score`.
///
/// ```
/// let same = lingo_data::corpus_chrf(&["el gato"], &["el gato"]).unwrap();
/// assert!((same - 100.0).abs() < 1e-9);
/// let none = lingo_data::corpus_chrf(&["xyz"], &["el gato"]).unwrap();
/// assert_eq!(none, 0.0);
/// ```
pub fn corpus_chrf<H: AsRef<str>, R: AsRef<str>>(hyps: &[H], refs: &[R]) -> Result<f64> {
    let refs: Vec<Vec<&str>> = refs.iter().map(|r| vec![r.as_ref()]).collect();
    corpus_chrf_multi(hyps, &refs)
}

/// Corpus chrF where `refs[i]` lists the references of `hyps[i]`; each
/// sentence uses the statistics of its best-scoring reference (the first on ties).
///
/// ```
/// let refs = vec![vec!["otra cosa", "el gato"]];
/// let best = lingo_data::corpus_chrf_multi(&["el gato"], &refs).unwrap();
/// assert!((best - 100.0).abs() < 1e-9);
/// ```
pub fn corpus_chrf_multi<H: AsRef<str>, R: AsRef<str>>(hyps: &[H], refs: &[Vec<R>]) -> Result<f64> {
    corpus_chrf_with(hyps, refs, ScoreOptions::default())
}

/// [`corpus_chrf_multi`] with [`ScoreOptions`]; equal to sacrebleu's
/// `CHRF(lowercase=...).corpus_score(hyps, refs)`.
///
/// ```
/// use lingo_data::{ScoreOptions, corpus_chrf_with};
/// let refs = vec![vec!["el gato"]];
/// let mixed = corpus_chrf_with(&["EL GATO"], &refs, ScoreOptions::default()).unwrap();
/// let lower = corpus_chrf_with(&["EL GATO"], &refs, ScoreOptions { lowercase: true }).unwrap();
/// assert_eq!((mixed, lower), (0.0, 100.0));
/// ```
pub fn corpus_chrf_with<H: AsRef<str>, R: AsRef<str>>(
    hyps: &[H],
    refs: &[Vec<R>],
    options: ScoreOptions,
) -> Result<f64> {
    check_refs(hyps, refs)?;
    let no_space = |s: &str| options.read(s).chars().filter(|&c| !is_py_space(c)).collect::<Vec<char>>();
    let mut total: ChrfStats = [[0; 3]; CHRF_ORDER];
    for (hyp, refs) in hyps.iter().zip(refs) {
        let hyp = no_space(hyp.as_ref());
        let mut best: Option<(f64, ChrfStats)> = None;
        for reference in refs {
            let stats = chrf_stats(&hyp, &no_space(reference.as_ref()));
            let f = chrf_from_stats(&stats);
            if best.is_none_or(|(best_f, _)| f > best_f) {
                best = Some((f, stats));
            }
        }
        if let Some((_, stats)) = best {
            for (sum, s) in total.iter_mut().zip(stats) {
                for k in 0..3 {
                    sum[k] += s[k];
                }
            }
        }
    }
    Ok(chrf_from_stats(&total))
}

/// A sacrebleu signature: the settings that make a score comparable, as
/// `key:value` fields in sacrebleu's order. The version names lingo's, as
/// its metrics are not sacrebleu's code.
///
/// ```
/// use lingo_data::{ScoreOptions, Signature};
/// let signature = Signature::bleu(1, ScoreOptions { lowercase: true });
/// assert!(signature.to_string().starts_with("nrefs:1|case:lc|eff:no|tok:13a|smooth:exp|version:lingo-"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature(Vec<(&'static str, String)>);

impl Signature {
    /// [`corpus_bleu_with`]'s: no effective order, the 13a tokenizer, exponential smoothing.
    ///
    /// ```
    /// let signature = lingo_data::Signature::bleu(2, Default::default());
    /// assert_eq!(signature.fields()[..2], [("nrefs", "2".to_string()), ("case", "mixed".to_string())]);
    /// ```
    pub fn bleu(nrefs: usize, options: ScoreOptions) -> Signature {
        Signature::new(nrefs, options, &[("eff", "no"), ("tok", "13a"), ("smooth", "exp")])
    }

    /// [`corpus_chrf_with`]'s: chrF2 with character 6-grams, no word n-grams, spaces left out.
    ///
    /// ```
    /// let signature = lingo_data::Signature::chrf(1, Default::default());
    /// assert!(signature.to_string().contains("|eff:yes|nc:6|nw:0|space:no|"));
    /// ```
    pub fn chrf(nrefs: usize, options: ScoreOptions) -> Signature {
        Signature::new(nrefs, options, &[("eff", "yes"), ("nc", "6"), ("nw", "0"), ("space", "no")])
    }

    /// The number of references and the case, the metric's own `fields`, then the version.
    fn new(nrefs: usize, options: ScoreOptions, fields: &[(&'static str, &str)]) -> Signature {
        let case = if options.lowercase { "lc" } else { "mixed" };
        let mut all = vec![("nrefs", nrefs.to_string()), ("case", case.to_string())];
        all.extend(fields.iter().map(|&(key, value)| (key, value.to_string())));
        all.push(("version", format!("lingo-{}", env!("CARGO_PKG_VERSION"))));
        Signature(all)
    }

    /// The fields, in order.
    ///
    /// ```
    /// assert_eq!(lingo_data::Signature::bleu(1, Default::default()).fields().len(), 6);
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
