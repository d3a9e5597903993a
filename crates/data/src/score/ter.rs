//! TER, the translation edit rate (Snover et al., 2006), as sacrebleu and
//! Tercom compute it: the fewest edits that turn the hypothesis into a
//! reference, over the reference's length, where an edit is inserting,
//! deleting or substituting a word, or *shifting* a block of words to
//! another place:
//!
//! ```text
//! TER = 100 · Σ edits / Σ reference words        (lower is better; can exceed 100)
//! ```
//!
//! Finding the fewest edits with shifts is NP-hard, so Tercom searches
//! greedily: while some shift lowers the word edit distance, take the one
//! that lowers it most (ties: the longest block, the earliest block, the
//! earliest destination), then count the remaining insertions, deletions
//! and substitutions. Its limits are kept as they are, since they change
//! scores: blocks of at most 10 words moved at most 50 positions, 1,000
//! candidate shifts per sentence in all, and an edit distance computed in
//! a band of 25 cells either side of the diagonal.

use super::tokenize::{split_dots_commas_dashes, split_punctuation, unescape_entities};
use super::{Metric, Signature, is_py_space, py_split, yes_no};

/// The longest block of words a shift moves.
const MAX_SHIFT_SIZE: usize = 10;
/// How far (in words) a block may sit from where it matches the reference.
const MAX_SHIFT_DIST: usize = 50;
/// Half the width of the band the edit distance is computed in.
const BEAM_WIDTH: usize = 25;
/// Candidate shifts tried per sentence before the search gives up.
const MAX_SHIFT_CANDIDATES: usize = 1000;
/// The cost of a cell outside the band.
const UNREACHED: i64 = 10_000_000_000_000_000;

/// TER's settings, sacrebleu's defaults by [`Default`]: case-insensitive,
/// words split at spaces and nothing else.
///
/// ```
/// use lingo_data::{Metric, Ter};
/// let ter = Ter::default();
/// assert_eq!(ter.score(&ter.stats("The Cat", &["the cat"])), 0.0);
/// let cased = Ter { case_sensitive: true, ..Ter::default() };
/// assert_eq!(cased.score(&cased.stats("The Cat", &["the cat"])), 100.0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ter {
    /// Keep case (`case:mixed`); by default TER lowercases.
    pub case_sensitive: bool,
    /// Tercom's normalization (`norm:yes`): HTML entities unescaped, ASCII
    /// punctuation split off, `'s` split off its word.
    pub normalized: bool,
    /// Drop `. , ? : ; ! " ( )` before scoring (`punct:no`).
    pub no_punct: bool,
}

impl Ter {
    /// The words TER compares: trailing whitespace stripped, then
    /// lowercased, normalized and stripped of punctuation as set.
    fn words(&self, line: &str) -> Vec<String> {
        let mut line = line.trim_end_matches(is_py_space).to_string();
        if !self.case_sensitive {
            line = line.to_lowercase();
        }
        if self.normalized {
            line = normalize(&line);
        }
        if self.no_punct {
            line.retain(|c| !".,?:;!\"()".contains(c));
        }
        py_split(&line).map(str::to_string).collect()
    }
}

/// Tercom's normalization of western text, sacrebleu's `TercomTokenizer`
/// rule by rule: entities unescaped, ASCII punctuation split as 13a splits
/// it, and possessive `'s` split off.
fn normalize(line: &str) -> String {
    let line = line.replace("\n-", "").replace('\n', " ");
    let line = unescape_entities(&line);
    let line: String = split_punctuation(&format!(" {line} ")).into_iter().collect();
    // `'s$` never fires: the line ends in the space padded on above.
    let line: Vec<char> = line.replace("'s ", " 's ").chars().collect();
    split_dots_commas_dashes(&line).into_iter().collect()
}

impl Metric for Ter {
    fn name(&self) -> String {
        "TER".into()
    }

    fn higher_is_better(&self) -> bool {
        false
    }

    fn signature(&self, nrefs: usize) -> Signature {
        let case = if self.case_sensitive { "mixed" } else { "lc" };
        let fields = [
            ("case", case),
            ("tok", "tercom"),
            ("norm", yes_no(self.normalized)),
            ("punct", yes_no(!self.no_punct)),
            ("asian", "no"),
        ];
        Signature::new(nrefs, &fields)
    }

    /// `[edits against the closest reference, mean reference length]`.
    fn stats(&self, hyp: &str, refs: &[&str]) -> Vec<f64> {
        let hyp = self.words(hyp);
        let hyp: Vec<&str> = hyp.iter().map(String::as_str).collect();
        let (mut best, mut ref_words) = (usize::MAX, 0);
        for reference in refs {
            let reference = self.words(reference);
            let reference: Vec<&str> = reference.iter().map(String::as_str).collect();
            let (edits, length) = translation_edit_rate(&hyp, &reference);
            best = best.min(edits);
            ref_words += length;
        }
        vec![best as f64, ref_words as f64 / refs.len().max(1) as f64]
    }

    fn score(&self, stats: &[f64]) -> f64 {
        let (edits, ref_words) = (stats[0], stats[1]);
        if ref_words > 0.0 {
            100.0 * edits / ref_words
        } else if edits > 0.0 {
            100.0 // an empty reference, a hypothesis that is not
        } else {
            0.0
        }
    }
}

/// `(edits, reference length)` of `hyp` against `reference`: the shifts the
/// greedy search takes plus the word edit distance left after them.
///
/// ```
/// use lingo_data::translation_edit_rate;
/// // One shift moves "today" to the end: 1 edit, where deleting and
/// // inserting it would be 2.
/// let hyp = ["today", "the", "cat", "sat", "on", "the", "mat"];
/// let reference = ["the", "cat", "sat", "on", "the", "mat", "today"];
/// assert_eq!(translation_edit_rate(&hyp, &reference), (1, 7));
/// assert_eq!(translation_edit_rate(&hyp, &[]), (7, 0));
/// ```
pub fn translation_edit_rate(hyp: &[&str], reference: &[&str]) -> (usize, usize) {
    if reference.is_empty() {
        return (hyp.len(), 0);
    }
    let (mut words, mut shifts, mut tried) = (hyp.to_vec(), 0, 0);
    loop {
        let (gain, shifted) = best_shift(&words, reference, &mut tried);
        // Out of candidates, Tercom stops without taking the round's best.
        if tried >= MAX_SHIFT_CANDIDATES || gain <= 0 {
            break;
        }
        shifts += 1;
        words = shifted;
    }
    (shifts + edit_distance(&words, reference).0, reference.len())
}

/// One step of the edit path from the hypothesis to the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// The two words agree.
    Match,
    /// One word replaces the other.
    Substitute,
    /// A reference word the hypothesis lacks.
    Insert,
    /// A hypothesis word the reference lacks.
    Delete,
    /// A cell outside the band.
    Unreached,
}

/// The word edit distance of `hyp` to `reference` and its path, computed in
/// a band around the diagonal `j = i · |ref| / |hyp|` (the whole last row),
/// as Tercom does. Rows are hypothesis words, columns reference words; a
/// cell keeps the first of match/substitute, delete, insert that is cheapest.
fn edit_distance(hyp: &[&str], reference: &[&str]) -> (usize, Vec<Op>) {
    let (n_h, n_r) = (hyp.len(), reference.len());
    let mut dist = vec![vec![(UNREACHED, Op::Unreached); n_r + 1]; n_h + 1];
    for (j, cell) in dist[0].iter_mut().enumerate() {
        *cell = (j as i64, Op::Insert);
    }
    let ratio = if n_h > 0 { n_r as f64 / n_h as f64 } else { 1.0 };
    let beam =
        if (BEAM_WIDTH as f64) < ratio / 2.0 { (ratio / 2.0 + BEAM_WIDTH as f64).ceil() as usize } else { BEAM_WIDTH };
    for i in 1..=n_h {
        let diagonal = (i as f64 * ratio).floor() as usize;
        let last = if i == n_h { n_r + 1 } else { (diagonal + beam).min(n_r + 1) };
        for j in diagonal.saturating_sub(beam)..last {
            if j == 0 {
                dist[i][0] = (dist[i - 1][0].0 + 1, Op::Delete);
                continue;
            }
            let (cost, op) = if hyp[i - 1] == reference[j - 1] { (0, Op::Match) } else { (1, Op::Substitute) };
            let steps = [
                (dist[i - 1][j - 1].0 + cost, op),
                (dist[i - 1][j].0 + 1, Op::Delete),
                (dist[i][j - 1].0 + 1, Op::Insert),
            ];
            for step in steps {
                if dist[i][j].0 > step.0 {
                    dist[i][j] = step;
                }
            }
        }
    }
    let (mut i, mut j, mut path) = (n_h, n_r, Vec::with_capacity(n_h + n_r));
    while i > 0 || j > 0 {
        let op = dist[i][j].1;
        path.push(op);
        match op {
            Op::Match | Op::Substitute => (i, j) = (i - 1, j - 1),
            Op::Insert => j -= 1,
            Op::Delete => i -= 1,
            Op::Unreached => break, // the band always holds a path; stop rather than loop
        }
    }
    path.reverse();
    (dist[n_h][n_r].0.max(0) as usize, path)
}

/// What an edit path says about each position: for each reference word the
/// hypothesis position it lines up with (`-1` before the first), and which
/// reference and hypothesis words are in error.
struct Alignment {
    hyp_of_ref: Vec<isize>,
    ref_err: Vec<bool>,
    hyp_err: Vec<bool>,
}

impl Alignment {
    fn of(path: &[Op]) -> Alignment {
        let (mut h, mut a) = (-1_isize, Alignment { hyp_of_ref: Vec::new(), ref_err: Vec::new(), hyp_err: Vec::new() });
        for &op in path {
            match op {
                Op::Match | Op::Substitute => {
                    h += 1;
                    a.hyp_of_ref.push(h);
                    a.hyp_err.push(op == Op::Substitute);
                    a.ref_err.push(op == Op::Substitute);
                }
                Op::Delete => {
                    h += 1;
                    a.hyp_err.push(true);
                }
                Op::Insert => {
                    a.hyp_of_ref.push(h);
                    a.ref_err.push(true);
                }
                Op::Unreached => {}
            }
        }
        a
    }
}

/// Every `(hyp start, ref start, length)` where `hyp` and `reference` agree
/// on `length` words (up to [`MAX_SHIFT_SIZE`]), the starts at most
/// [`MAX_SHIFT_DIST`] apart, in Tercom's order.
fn matching_blocks(hyp: &[&str], reference: &[&str]) -> Vec<(usize, usize, usize)> {
    let mut blocks = Vec::new();
    for h in 0..hyp.len() {
        for r in 0..reference.len() {
            if h.abs_diff(r) > MAX_SHIFT_DIST {
                continue;
            }
            let mut length = 0;
            while length < MAX_SHIFT_SIZE && h + length < hyp.len() && r + length < reference.len() {
                if hyp[h + length] != reference[r + length] {
                    break;
                }
                length += 1;
                blocks.push((h, r, length));
            }
        }
    }
    blocks
}

/// `words` with the block `start..start + length` moved to `target` (a
/// position in the words as they were), with Python's slicing of the
/// original, bounds clamped.
fn shift<'a>(words: &[&'a str], start: usize, length: usize, target: usize) -> Vec<&'a str> {
    let n = words.len();
    let part = |a: usize, b: usize| &words[a.min(n)..b.min(n).max(a.min(n))];
    let block = part(start, start + length);
    if target < start {
        [part(0, target), block, part(target, start), part(start + length, n)].concat()
    } else if target > start + length {
        [part(0, start), part(start + length, target), block, part(target, n)].concat()
    } else {
        [part(0, start), part(start + length, length + target), block, part(length + target, n)].concat()
    }
}

/// How Tercom ranks a candidate shift: by gain, then length, then the
/// earliest start (negated), then the earliest target (negated).
type Rank = (i64, usize, isize, isize);

/// The shift that lowers the edit distance of `words` most, and by how
/// much (0 when none is tried); `tried` counts the candidates, across calls.
fn best_shift<'a>(words: &[&'a str], reference: &[&str], tried: &mut usize) -> (i64, Vec<&'a str>) {
    let (before, path) = edit_distance(words, reference);
    let a = Alignment::of(&path);
    let mut best: Option<(Rank, Vec<&'a str>)> = None;
    for (h, r, length) in matching_blocks(words, reference) {
        let block = h as isize..(h + length) as isize;
        // A block already right, against a reference block already right, or already in place: no use.
        let wrong = |errors: &[bool], at: usize| errors.get(at..at + length).is_some_and(|e| e.contains(&true));
        if !wrong(&a.hyp_err, h) || !wrong(&a.ref_err, r) || a.hyp_of_ref.get(r).is_none_or(|at| block.contains(at)) {
            continue;
        }
        let mut previous = None;
        // Targets: just after the hypothesis word each reference word of the block (or the one before it) lines up with.
        for offset in -1..length as isize {
            let at = r as isize + offset;
            let target = match at {
                -1 => 0,
                _ => match a.hyp_of_ref.get(at as usize) {
                    Some(&h_at) => (h_at + 1) as usize,
                    None => break,
                },
            };
            if previous == Some(target) {
                continue;
            }
            previous = Some(target);
            let shifted = shift(words, h, length, target);
            let gain = before as i64 - edit_distance(&shifted, reference).0 as i64;
            let rank = (gain, length, -(h as isize), -(target as isize));
            *tried += 1;
            if best.as_ref().is_none_or(|(best_rank, _)| rank > *best_rank) {
                best = Some((rank, shifted));
            }
        }
        if *tried >= MAX_SHIFT_CANDIDATES {
            break;
        }
    }
    best.map_or_else(|| (0, words.to_vec()), |((gain, ..), shifted)| (gain, shifted))
}
