//! Attention and accuracy metrics: alignment accuracy and alignment error
//! rate against gold positions, hard (argmax) alignments and their Pharaoh
//! links, attention entropy, how attention agrees with saliency (peaks and
//! rank correlation), token and sequence accuracy.
//!
//! Attention weights come in per example as `ArrayView2<f32>`
//! `(tgt_len, src_len)`: row `j` is the distribution over source positions
//! used while predicting output `j`. Take them from a batch's
//! `(batch, tgt_len, src_len)` array with `weights.index_axis(Axis(0), b)`.

use crate::Links;
use crate::error::{Error, Result};
use ndarray::{Array1, ArrayView2, Zip};

/// Alignment accuracy with its chance level.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct AlignmentScore {
    /// Share of scored rows whose attention peak is on a gold position.
    pub accuracy: f64,
    /// What a uniformly random peak would score: the mean over scored rows
    /// of `|gold| / src_len`.
    pub chance: f64,
    /// Rows whose peak hit a gold position.
    pub hits: usize,
    /// Rows scored (rows with a non-empty gold set).
    pub scored: usize,
}

/// Accumulates alignment accuracy over examples (and batches).
///
/// A row `j` with a non-empty gold set `G_j` is a hit when
/// `argmax_i weights[j, i]` over the valid source positions `i < src_len`
/// is in `G_j`. Rows with an empty gold set (`<eos>`) and padded rows past
/// `gold.len()` are not scored.
///
/// ```
/// use ndarray::array;
/// use lingo_data::AlignmentAccuracy;
/// // Source "<sos> a b <eos>", target "b a <eos>": gold is the anti-diagonal.
/// let weights = array![[0.1f32, 0.1, 0.7, 0.1], [0.1, 0.2, 0.6, 0.1], [0.0, 0.0, 0.0, 1.0]];
/// let gold = vec![vec![2], vec![1], vec![]];
/// let mut acc = AlignmentAccuracy::new();
/// acc.add(weights.view(), &gold, 4).unwrap();
/// let score = acc.score();
/// assert_eq!((score.hits, score.scored), (1, 2));
/// assert_eq!(score.chance, 0.25);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AlignmentAccuracy {
    hits: usize,
    scored: usize,
    /// Sum over scored rows of `|gold| / src_len`.
    chance_sum: f64,
}

impl AlignmentAccuracy {
    /// An empty accumulator.
    ///
    /// ```
    /// assert_eq!(lingo_data::AlignmentAccuracy::new().score().scored, 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Scores one example: `weights` `(tgt_len, src_len_padded)`, one gold
    /// set per output row (`gold.len() <= tgt_len`; extra weight rows are
    /// padding), and `src_len` valid source positions.
    ///
    /// ```
    /// use ndarray::array;
    /// use lingo_data::AlignmentAccuracy;
    /// let mut acc = AlignmentAccuracy::new();
    /// // Gold position 3 is past the valid source length 2.
    /// assert!(acc.add(array![[0.5f32, 0.5, 0.0]].view(), &[vec![2]], 2).is_err());
    /// ```
    pub fn add(&mut self, weights: ArrayView2<f32>, gold: &[Vec<usize>], src_len: usize) -> Result<()> {
        let (rows, cols) = weights.dim();
        if gold.len() > rows {
            return Err(Error::invalid("gold", format!("{} rows of gold for {rows} rows of weights", gold.len())));
        }
        if src_len == 0 || src_len > cols {
            return Err(Error::invalid("src_len", format!("{src_len} not in 1..={cols}")));
        }
        if let Some(&bad) = gold.iter().flatten().find(|&&i| i >= src_len) {
            return Err(Error::invalid("gold", format!("position {bad} is past src_len {src_len}")));
        }
        for (row, gold_row) in weights.rows().into_iter().zip(gold) {
            if gold_row.is_empty() {
                continue;
            }
            let peak = argmax(row.iter().take(src_len).copied());
            self.hits += usize::from(gold_row.contains(&peak));
            self.scored += 1;
            self.chance_sum += gold_row.len() as f64 / src_len as f64;
        }
        Ok(())
    }

    /// The score so far (zeros if nothing was scored).
    ///
    /// ```
    /// use ndarray::array;
    /// let mut acc = lingo_data::AlignmentAccuracy::new();
    /// acc.add(array![[0.2f32, 0.8]].view(), &[vec![1]], 2).unwrap();
    /// assert_eq!(acc.score().accuracy, 1.0);
    /// ```
    pub fn score(&self) -> AlignmentScore {
        let per_row = |x: f64| if self.scored == 0 { 0.0 } else { x / self.scored as f64 };
        AlignmentScore {
            accuracy: per_row(self.hits as f64),
            chance: per_row(self.chance_sum),
            hits: self.hits,
            scored: self.scored,
        }
    }
}

/// Index of the largest value; the first one on ties. NaN never wins.
fn argmax(values: impl Iterator<Item = f32>) -> usize {
    let mut best = (0, f32::NEG_INFINITY);
    for (i, v) in values.enumerate() {
        if v > best.1 {
            best = (i, v);
        }
    }
    best.0
}

/// How attention and saliency agree, row by row; see [`SaliencyAgreement`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct AgreementScore {
    /// Share of rows whose attention and saliency peak on the same source position.
    pub peak_agreement: f64,
    /// Mean over the correlated rows of the [`spearman`] rank correlation
    /// of the row's attention and saliency (0 when no row was correlated).
    pub mean_rank_correlation: f64,
    /// Rows compared.
    pub rows: usize,
    /// Rows whose peaks are on the same position.
    pub same_peak: usize,
    /// Rows whose rank correlation is undefined and left out of the mean:
    /// fewer than 2 source positions, or one side constant.
    pub uncorrelated: usize,
}

/// Accumulates how attention and saliency agree over examples (and batches).
///
/// Both come in per example as `(tgt_len, src_len)` rows over the source
/// (padded alike); only the real part, the first `tgt_len` rows and
/// `src_len` columns, is compared. A row counts toward
/// [`peak_agreement`](AgreementScore::peak_agreement) when the two peak on
/// the same position (the first on ties, as [`hard_alignment`]), and adds its
/// [`spearman`] correlation to the mean when that is defined.
///
/// Saliency rows score against gold positions as attention rows do: hand
/// them to [`AlignmentAccuracy`].
///
/// ```
/// use ndarray::array;
/// use lingo_data::SaliencyAgreement;
/// let attention = array![[0.1f32, 0.7, 0.2, 0.0], [0.5, 0.3, 0.2, 0.0]];
/// let saliency = array![[0.2f32, 0.5, 0.3, 0.0], [0.1, 0.3, 0.6, 0.0]]; // column 3 is padding
/// let mut agreement = SaliencyAgreement::new();
/// agreement.add(attention.view(), saliency.view(), 3, 2).unwrap();
/// let score = agreement.score();
/// assert_eq!((score.rows, score.same_peak, score.peak_agreement), (2, 1, 0.5));
/// // Row 0 ranks alike (ρ = 1), row 1 in reverse (ρ = −1).
/// assert_eq!(score.mean_rank_correlation, 0.0);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SaliencyAgreement {
    rows: usize,
    same_peak: usize,
    uncorrelated: usize,
    /// Sum of the defined rank correlations, in the order rows were added.
    correlation_sum: f64,
}

impl SaliencyAgreement {
    /// An empty accumulator.
    ///
    /// ```
    /// assert_eq!(lingo_data::SaliencyAgreement::new().score().rows, 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Compares one example: attention `weights` and `saliency`, both
    /// `(tgt_len_padded, src_len_padded)`, over the first `tgt_len` rows and
    /// `src_len` columns. Errors when the shapes differ or the lengths do not fit.
    ///
    /// ```
    /// use ndarray::array;
    /// let mut agreement = lingo_data::SaliencyAgreement::new();
    /// let (a, s) = (array![[0.5f32, 0.5]], array![[0.5f32, 0.5, 0.0]]);
    /// assert!(agreement.add(a.view(), s.view(), 2, 1).is_err());        // shapes differ
    /// assert!(agreement.add(a.view(), a.view(), 2, 2).is_err());        // one row, not two
    /// agreement.add(a.view(), a.view(), 1, 1).unwrap();                 // one position: no correlation
    /// assert_eq!(agreement.score().uncorrelated, 1);
    /// ```
    pub fn add(
        &mut self,
        weights: ArrayView2<f32>,
        saliency: ArrayView2<f32>,
        src_len: usize,
        tgt_len: usize,
    ) -> Result<()> {
        if weights.dim() != saliency.dim() {
            return Err(Error::invalid(
                "saliency",
                format!("shape {:?} differs from the attention's {:?}", saliency.dim(), weights.dim()),
            ));
        }
        let (rows, cols) = weights.dim();
        if src_len == 0 || src_len > cols {
            return Err(Error::invalid("src_len", format!("{src_len} not in 1..={cols}")));
        }
        if tgt_len > rows {
            return Err(Error::invalid("tgt_len", format!("{tgt_len} rows for {rows} rows of weights")));
        }
        for (a, s) in weights.rows().into_iter().zip(saliency.rows()).take(tgt_len) {
            let (a, s): (Vec<f32>, Vec<f32>) = a.iter().zip(s).take(src_len).map(|(&a, &s)| (a, s)).unzip();
            self.rows += 1;
            self.same_peak += usize::from(argmax(a.iter().copied()) == argmax(s.iter().copied()));
            match spearman(&a, &s)? {
                Some(rho) => self.correlation_sum += rho,
                None => self.uncorrelated += 1,
            }
        }
        Ok(())
    }

    /// The score so far (zeros if nothing was compared).
    ///
    /// ```
    /// use ndarray::array;
    /// let mut agreement = lingo_data::SaliencyAgreement::new();
    /// let weights = array![[0.2f32, 0.8, 0.0]];
    /// agreement.add(weights.view(), array![[0.1f32, 0.3, 0.6]].view(), 3, 1).unwrap();
    /// let score = agreement.score();
    /// assert_eq!((score.peak_agreement, score.mean_rank_correlation), (0.0, -0.5));
    /// ```
    pub fn score(&self) -> AgreementScore {
        let share = |x: f64, n: usize| if n == 0 { 0.0 } else { x / n as f64 };
        AgreementScore {
            peak_agreement: share(self.same_peak as f64, self.rows),
            mean_rank_correlation: share(self.correlation_sum, self.rows - self.uncorrelated),
            rows: self.rows,
            same_peak: self.same_peak,
            uncorrelated: self.uncorrelated,
        }
    }
}

/// Spearman's rank correlation of `a` and `b`: the Pearson correlation of
/// their ranks, tied values sharing the mean of the ranks they span.
/// `None` when it is undefined: fewer than 2 values, or either side
/// constant. Errors when the lengths differ.
///
/// ```
/// use lingo_data::spearman;
/// assert_eq!(spearman(&[0.1, 0.5, 0.2], &[1.0, 3.0, 2.0]).unwrap(), Some(1.0));
/// assert_eq!(spearman(&[0.1, 0.5, 0.2], &[3.0, 1.0, 2.0]).unwrap(), Some(-1.0));
/// // Ties: ranks (1.5, 1.5, 3) against (1, 2, 3) give ρ = 1.5 / √(1.5 · 2).
/// let rho = spearman(&[0.2, 0.2, 0.6], &[1.0, 2.0, 3.0]).unwrap().unwrap();
/// assert!((rho - 1.5 / 3f64.sqrt()).abs() < 1e-12);
/// assert_eq!(spearman(&[0.5, 0.5], &[1.0, 2.0]).unwrap(), None);
/// assert!(spearman(&[0.5], &[1.0, 2.0]).is_err());
/// ```
pub fn spearman(a: &[f32], b: &[f32]) -> Result<Option<f64>> {
    if a.len() != b.len() {
        return Err(Error::invalid("spearman", format!("{} values against {}", a.len(), b.len())));
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let mean = (a.len() as f64 + 1.0) / 2.0;
    let (mut cov, mut var_a, mut var_b) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        let (dx, dy) = (x - mean, y - mean);
        cov += dx * dy;
        var_a += dx * dx;
        var_b += dy * dy;
    }
    // Fewer than 2 values leave both variances 0 too.
    Ok((var_a > 0.0 && var_b > 0.0).then(|| cov / (var_a * var_b).sqrt()))
}

/// The 1-based rank of every value, equal values sharing the mean of the
/// ranks they span (NaN sorts last and ties nothing).
fn ranks(values: &[f32]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let tied = order[start..].iter().take_while(|&&i| values[i] == values[order[start]]).count().max(1);
        // Ranks start + 1 ..= start + tied, averaged.
        let rank = start as f64 + (tied as f64 + 1.0) / 2.0;
        for &i in &order[start..start + tied] {
            ranks[i] = rank;
        }
        start += tied;
    }
    ranks
}

/// Alignment error rate with the counts it comes from.
///
/// With `A` the hard alignment, `S` the sure and `P` the possible links,
/// precision is `possible_hits / links` and recall `sure_hits / sure`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct AerScore {
    /// `1 − (|A∩S| + |A∩P|) / (|A| + |S|)`: 0 when every link is possible
    /// and every sure link is found, 1 when no link is possible. 1 when
    /// nothing was scored, as accuracy is then 0.
    pub aer: f64,
    /// `|A|`: links of the hard alignment on scored rows.
    pub links: usize,
    /// `|S|`: sure gold links.
    pub sure: usize,
    /// `|A∩S|`: links that are sure.
    pub sure_hits: usize,
    /// `|A∩P|`: links that are possible.
    pub possible_hits: usize,
}

/// Accumulates the alignment error rate (Och and Ney, 2003) over examples
/// (and batches).
///
/// Each example brings sure links `S` and possible links `P ⊇ S`, one set
/// per output row (for a task example, its `sure` and `gold`), and a hard
/// alignment `A`. [`add`](Self::add) takes `A` from attention weights: the
/// peak `(j, argmax_i weights[j, i])` over the valid source positions of
/// every scored row, a row with a non-empty possible set (so not `<eos>`).
/// [`add_links`](Self::add_links) takes any link sets. The counts add up
/// over examples and
/// `AER = 1 − (|A∩S| + |A∩P|) / (|A| + |S|)`.
///
/// With one link per row and `S = P`, AER is `1 − accuracy`. A row with
/// two sure links, as in a many-to-one phrase, costs a one-peak alignment
/// a missed sure link even when [`AlignmentAccuracy`] counts its peak as a
/// hit.
///
/// ```
/// use ndarray::array;
/// use lingo_data::AlignmentErrorRate;
/// // Source "<sos> a b <eos>"; row 0 may come from a or b but surely from b,
/// // row 1 surely from a, row 2 is <eos>.
/// let weights = array![[0.1f32, 0.7, 0.1, 0.1], [0.1, 0.6, 0.2, 0.1], [0.0, 0.0, 0.0, 1.0]];
/// let sure = [vec![2], vec![1], vec![]];
/// let possible = [vec![1, 2], vec![1], vec![]];
/// let mut aer = AlignmentErrorRate::new();
/// aer.add(weights.view(), &sure, &possible, 4).unwrap();
/// let score = aer.score();
/// // A = {(0, 1), (1, 1)}: both possible, one sure; |S| = 2.
/// assert_eq!((score.links, score.sure, score.sure_hits, score.possible_hits), (2, 2, 1, 2));
/// assert_eq!(score.aer, 1.0 - 3.0 / 4.0);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AlignmentErrorRate {
    links: usize,
    sure: usize,
    sure_hits: usize,
    possible_hits: usize,
}

impl AlignmentErrorRate {
    /// An empty accumulator.
    ///
    /// ```
    /// assert_eq!(lingo_data::AlignmentErrorRate::new().score().links, 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Scores one example's attention: `weights` `(tgt_len, src_len_padded)`,
    /// the sure and possible sets of each output row (`sure.len() ==
    /// possible.len() <= tgt_len`; extra weight rows are padding), and
    /// `src_len` valid source positions. Every sure set must lie within its
    /// possible set, which also catches the two passed the wrong way round.
    ///
    /// ```
    /// use ndarray::array;
    /// use lingo_data::AlignmentErrorRate;
    /// let mut aer = AlignmentErrorRate::new();
    /// let weights = array![[0.2f32, 0.8, 0.0]];
    /// // Sure {1, 2} is not within possible {1}.
    /// assert!(aer.add(weights.view(), &[vec![1, 2]], &[vec![1]], 3).is_err());
    /// aer.add(weights.view(), &[vec![1]], &[vec![1, 2]], 3).unwrap();
    /// assert_eq!(aer.score().aer, 0.0);
    /// ```
    pub fn add(
        &mut self,
        weights: ArrayView2<f32>,
        sure: &[Vec<usize>],
        possible: &[Vec<usize>],
        src_len: usize,
    ) -> Result<()> {
        if possible.len() > weights.nrows() {
            return Err(Error::invalid(
                "gold",
                format!("{} rows of gold for {} rows of weights", possible.len(), weights.nrows()),
            ));
        }
        let peaks = hard_alignment(weights, src_len)?;
        let links: Vec<Vec<usize>> = peaks.into_iter().take(possible.len()).map(|i| vec![i]).collect();
        self.add_links(&links, sure, possible, src_len)
    }

    /// Scores one example's hard alignment given as link sets:
    /// `links[j]` holds the source positions output row `j` is aligned to
    /// (any number, repeats counted once). Rows past `possible.len()` and
    /// rows with an empty possible set are not scored, so links there do
    /// not count.
    ///
    /// ```
    /// use lingo_data::AlignmentErrorRate;
    /// // Row 0 comes from two source words, both sure: both links are needed for 0.
    /// let gold = [vec![1, 2], vec![3], vec![]];
    /// let mut both = AlignmentErrorRate::new();
    /// both.add_links(&[vec![1, 2], vec![3], vec![4]], &gold, &gold, 5).unwrap();
    /// assert_eq!(both.score().aer, 0.0);
    /// let mut one = AlignmentErrorRate::new();
    /// one.add_links(&[vec![2], vec![3], vec![]], &gold, &gold, 5).unwrap();
    /// assert_eq!(one.score().aer, 1.0 - 4.0 / 5.0);
    /// ```
    pub fn add_links(
        &mut self,
        links: &[Vec<usize>],
        sure: &[Vec<usize>],
        possible: &[Vec<usize>],
        src_len: usize,
    ) -> Result<()> {
        if sure.len() != possible.len() {
            return Err(Error::invalid(
                "gold",
                format!("{} rows of sure links for {} rows of possible links", sure.len(), possible.len()),
            ));
        }
        if links.len() < possible.len() {
            return Err(Error::invalid(
                "links",
                format!("{} rows of links for {} rows of gold", links.len(), possible.len()),
            ));
        }
        if src_len == 0 {
            return Err(Error::invalid("src_len", "must be at least 1"));
        }
        let mut every = links.iter().take(possible.len()).chain(possible).flatten();
        if let Some(&bad) = every.find(|&&i| i >= src_len) {
            return Err(Error::invalid("alignment", format!("position {bad} is past src_len {src_len}")));
        }
        if let Some(j) = (0..sure.len()).find(|&j| sure[j].iter().any(|i| !possible[j].contains(i))) {
            return Err(Error::invalid(
                "gold",
                format!("row {j}: sure links {:?} are not within possible links {:?}", sure[j], possible[j]),
            ));
        }
        for ((row, sure_row), possible_row) in links.iter().zip(sure).zip(possible) {
            if possible_row.is_empty() {
                continue;
            }
            let mut row = row.clone();
            row.sort_unstable();
            row.dedup();
            self.links += row.len();
            self.sure += sure_row.len();
            self.sure_hits += row.iter().filter(|i| sure_row.contains(i)).count();
            self.possible_hits += row.iter().filter(|i| possible_row.contains(i)).count();
        }
        Ok(())
    }

    /// Scores one sentence pair's word links against gold word links that
    /// are all sure (`S = P`, as an aligner's Pharaoh file gives them):
    /// every predicted link counts, repeats once.
    ///
    /// ```
    /// let mut aer = lingo_data::AlignmentErrorRate::new();
    /// aer.add_word_links(&[(0, 0), (1, 2)], &[(0, 0), (1, 1), (2, 2)]);
    /// let score = aer.score();
    /// assert_eq!((score.links, score.sure, score.sure_hits), (2, 3, 1));
    /// assert_eq!(score.aer, 1.0 - 2.0 / 5.0);
    /// ```
    pub fn add_word_links(&mut self, predicted: &[(usize, usize)], gold: &[(usize, usize)]) {
        let mut predicted = predicted.to_vec();
        predicted.sort_unstable();
        predicted.dedup();
        let hits = predicted.iter().filter(|link| gold.contains(link)).count();
        self.links += predicted.len();
        self.sure += gold.len();
        self.sure_hits += hits;
        self.possible_hits += hits;
    }

    /// The score so far; AER is 1 if nothing was scored.
    ///
    /// ```
    /// use ndarray::array;
    /// let mut aer = lingo_data::AlignmentErrorRate::new();
    /// assert_eq!(aer.score().aer, 1.0);
    /// aer.add(array![[0.2f32, 0.8]].view(), &[vec![1]], &[vec![1]], 2).unwrap();
    /// assert_eq!(aer.score().aer, 0.0);
    /// ```
    pub fn score(&self) -> AerScore {
        let total = self.links + self.sure;
        let aer = if total == 0 { 1.0 } else { 1.0 - (self.sure_hits + self.possible_hits) as f64 / total as f64 };
        AerScore {
            aer,
            links: self.links,
            sure: self.sure,
            sure_hits: self.sure_hits,
            possible_hits: self.possible_hits,
        }
    }
}

/// The hard alignment of an attention matrix: for every row, the source
/// position in `0..src_len` with the most weight (the first on ties; NaN
/// never wins). `<sos>` and `<eos>` are positions like any other here, so
/// a row parked on them is aligned to them.
///
/// ```
/// use ndarray::array;
/// let weights = array![[0.1f32, 0.2, 0.7, 0.0], [0.1, 0.8, 0.1, 0.9]];
/// // Column 3 is padding: src_len 3 leaves it out.
/// assert_eq!(lingo_data::hard_alignment(weights.view(), 3).unwrap(), [2, 1]);
/// assert!(lingo_data::hard_alignment(weights.view(), 5).is_err());
/// ```
pub fn hard_alignment(weights: ArrayView2<f32>, src_len: usize) -> Result<Vec<usize>> {
    let cols = weights.ncols();
    if src_len == 0 || src_len > cols {
        return Err(Error::invalid("src_len", format!("{src_len} not in 1..={cols}")));
    }
    Ok(weights.rows().into_iter().map(|row| argmax(row.iter().take(src_len).copied())).collect())
}

/// A hard alignment that may give a row several links: every source
/// position in `0..src_len` holding at least `threshold` of the row's
/// weight, or the row's peak when none does. A word made of two source
/// words, its weight split between them, gets both links, which one peak
/// per row ([`hard_alignment`]) cannot give.
///
/// ```
/// use ndarray::array;
/// let weights = array![[0.1f32, 0.45, 0.45, 0.0], [0.2, 0.2, 0.25, 0.35]];
/// let links = lingo_data::threshold_alignment(weights.view(), 4, 0.3).unwrap();
/// assert_eq!(links, [vec![1, 2], vec![3]]);
/// assert_eq!(lingo_data::threshold_alignment(weights.view(), 3, 0.3).unwrap()[1], [2]); // the peak
/// ```
pub fn threshold_alignment(weights: ArrayView2<f32>, src_len: usize, threshold: f32) -> Result<Vec<Vec<usize>>> {
    let peaks = hard_alignment(weights, src_len)?;
    let rows = weights.rows().into_iter().zip(peaks);
    let links = rows.map(|(row, peak)| {
        let above: Vec<usize> = (0..src_len).filter(|&i| row[i] >= threshold).collect();
        if above.is_empty() { vec![peak] } else { above }
    });
    Ok(links.collect())
}

/// The hard alignment as Pharaoh word links `(i, j)`: target word `j` is
/// aligned to source word `i`, both 0-based word indices without `<sos>`
/// (source position `i + 1`, output row `j`).
///
/// Rows `0..tgt_words` hold the target words (`tgt_words = tgt.len() - 2`);
/// the `<eos>` row after them is not read. Each row's peak is taken over
/// the `src_len` valid source positions, `<sos>` and `<eos>` included, as
/// for [`AlignmentErrorRate`]; a peak on either of them aligns the word to
/// no source word, so it leaves no link. Links come in target order.
///
/// ```
/// use ndarray::array;
/// use lingo_data::{format_pharaoh, pharaoh_links};
/// // Source "<sos> a b <eos>", target "B A C <eos>": C's row peaks on <eos>.
/// let weights = array![
///     [0.1f32, 0.1, 0.7, 0.1],
///     [0.1, 0.6, 0.2, 0.1],
///     [0.1, 0.1, 0.1, 0.7],
///     [0.0, 0.0, 0.0, 1.0],
/// ];
/// let links = pharaoh_links(weights.view(), 4, 3).unwrap();
/// assert_eq!(links, [(1, 0), (0, 1)]);
/// assert_eq!(format_pharaoh(&links), "1-0 0-1");
/// ```
pub fn pharaoh_links(weights: ArrayView2<f32>, src_len: usize, tgt_words: usize) -> Result<Vec<(usize, usize)>> {
    if tgt_words > weights.nrows() {
        return Err(Error::invalid("tgt_words", format!("{tgt_words} words for {} rows of weights", weights.nrows())));
    }
    if src_len < 2 {
        return Err(Error::invalid("src_len", format!("{src_len} cannot hold <sos> and <eos>")));
    }
    let peaks = hard_alignment(weights, src_len)?;
    // Positions 1..src_len - 1 are words; 0 and src_len - 1 are <sos> and <eos>.
    let words = 1..src_len - 1;
    Ok(peaks
        .into_iter()
        .take(tgt_words)
        .enumerate()
        .filter(|(_, i)| words.contains(i))
        .map(|(j, i)| (i - 1, j))
        .collect())
}

/// The hard alignment of `weights (output tokens, source tokens)` as word
/// links, for tokenizers that split words into pieces: each output row's
/// peak ([`pharaoh_links`]) is moved to the words of its two tokens,
/// `src_words[i]` being source token `i`'s word (without `<sos>` and
/// `<eos>`) and `tgt_words[j]` output token `j`'s ([`crate::Tokenizer::word_indices`]).
/// Links come once each, in target order.
///
/// ```
/// use ndarray::array;
/// // Source "<sos> un· believ· able <eos>" (one word), output "in· creíble <eos>" (one word).
/// let weights = array![[0.0f32, 0.6, 0.2, 0.1, 0.1], [0.0, 0.1, 0.2, 0.6, 0.1], [0.0, 0.0, 0.0, 0.0, 1.0]];
/// assert_eq!(lingo_data::word_alignment(weights.view(), &[0, 0, 0], &[0, 0]).unwrap(), [(0, 0)]);
/// ```
pub fn word_alignment(weights: ArrayView2<f32>, src_words: &[usize], tgt_words: &[usize]) -> Result<Links> {
    let token_links = pharaoh_links(weights, src_words.len() + 2, tgt_words.len())?;
    let mut links: Links = token_links.into_iter().map(|(i, j)| (src_words[i], tgt_words[j])).collect();
    links.sort_by_key(|&(i, j)| (j, i));
    links.dedup();
    Ok(links)
}

/// Pharaoh's text form of word links: `i-j` pairs separated by spaces, the
/// line fast_align and the alignment scorers read.
///
/// ```
/// assert_eq!(lingo_data::format_pharaoh(&[(0, 0), (2, 1)]), "0-0 2-1");
/// assert_eq!(lingo_data::format_pharaoh(&[]), "");
/// ```
pub fn format_pharaoh(links: &[(usize, usize)]) -> String {
    links.iter().map(|(i, j)| format!("{i}-{j}")).collect::<Vec<_>>().join(" ")
}

/// Entropy of each attention row in nats, `H_j = -Σ_i w_ji ln w_ji`
/// (with `0 ln 0 = 0`): 0 for a one-hot row, `ln(src_len)` for a uniform one.
/// Pass only the valid part of a padded matrix (`weights.slice(s![..tgt_len, ..src_len])`).
///
/// ```
/// use ndarray::array;
/// let h = lingo_data::attention_entropy(array![[1.0f32, 0.0], [0.5, 0.5]].view());
/// assert_eq!(h[0], 0.0);
/// assert!((h[1] - 2f32.ln()).abs() < 1e-6);
/// ```
pub fn attention_entropy(weights: ArrayView2<f32>) -> Array1<f32> {
    weights
        .rows()
        .into_iter()
        .map(|row| {
            let h: f64 = row.iter().filter(|&&w| w > 0.0).map(|&w| -f64::from(w) * f64::from(w).ln()).sum();
            h as f32
        })
        .collect()
}

/// The source positions no output token attends to as much as `threshold`:
/// columns `i` strictly between the first and the last (`<sos>` and `<eos>`
/// are not words) with `max_j w_ji < threshold`. A word the translation
/// dropped usually shows up here, as a column nothing read. Pass only the
/// valid part of a padded matrix.
///
/// ```
/// use ndarray::array;
/// // Three output rows over `<sos> a b c <eos>`: nothing reads `b` (column 2) as much as 0.1.
/// let w = array![[0.0f32, 0.9, 0.05, 0.05, 0.0], [0.0, 0.1, 0.02, 0.88, 0.0], [0.1, 0.0, 0.0, 0.1, 0.8]];
/// assert_eq!(lingo_data::unread_sources(w.view(), 0.1), vec![2]);
/// assert_eq!(lingo_data::unread_sources(w.view(), 0.01), Vec::<usize>::new());
/// ```
pub fn unread_sources(weights: ArrayView2<f32>, threshold: f32) -> Vec<usize> {
    let words = 1..weights.ncols().saturating_sub(1);
    words.filter(|&i| weights.column(i).iter().all(|&w| w < threshold)).collect()
}

/// Mean of [`attention_entropy`] over the rows (0 for no rows).
///
/// ```
/// use ndarray::array;
/// let h = lingo_data::mean_attention_entropy(array![[1.0f32, 0.0], [0.5, 0.5]].view());
/// assert!((h - 2f32.ln() / 2.0).abs() < 1e-6);
/// ```
pub fn mean_attention_entropy(weights: ArrayView2<f32>) -> f32 {
    attention_entropy(weights).mean().unwrap_or(0.0)
}

/// A count of correct items out of a total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Accuracy {
    /// Items that were right.
    pub correct: usize,
    /// Items scored.
    pub total: usize,
}

impl Accuracy {
    /// `correct / total`, or 0 when nothing was scored.
    ///
    /// ```
    /// let a = lingo_data::Accuracy { correct: 3, total: 4 };
    /// assert_eq!(a.value(), 0.75);
    /// ```
    pub fn value(&self) -> f64 {
        if self.total == 0 { 0.0 } else { self.correct as f64 / self.total as f64 }
    }

    /// Adds another count (to accumulate over batches).
    ///
    /// ```
    /// let mut a = lingo_data::Accuracy { correct: 1, total: 2 };
    /// a.merge(lingo_data::Accuracy { correct: 1, total: 2 });
    /// assert_eq!(a, lingo_data::Accuracy { correct: 2, total: 4 });
    /// ```
    pub fn merge(&mut self, other: Accuracy) {
        self.correct += other.correct;
        self.total += other.total;
    }
}

/// Checks that predictions, targets and the padding mask share one shape.
fn check_shapes(
    predictions: &ArrayView2<usize>,
    targets: &ArrayView2<usize>,
    pad_mask: &ArrayView2<bool>,
) -> Result<()> {
    if predictions.dim() != targets.dim() || targets.dim() != pad_mask.dim() {
        return Err(Error::invalid(
            "shapes",
            format!(
                "predictions {:?}, targets {:?} and pad mask {:?} must match",
                predictions.dim(),
                targets.dim(),
                pad_mask.dim()
            ),
        ));
    }
    Ok(())
}

/// Share of non-padding positions where the prediction equals the target.
/// All three arrays are `(batch, tgt_len)`, like [`crate::Batch::tgt_out`]
/// and [`crate::Batch::tgt_pad_mask`].
///
/// ```
/// use ndarray::array;
/// let pred = array![[5, 6, 3], [7, 3, 9]];
/// let gold = array![[5, 8, 3], [7, 3, 0]];
/// let pad = array![[false, false, false], [false, false, true]];
/// let acc = lingo_data::token_accuracy(pred.view(), gold.view(), pad.view()).unwrap();
/// assert_eq!((acc.correct, acc.total), (4, 5));
/// ```
pub fn token_accuracy(
    predictions: ArrayView2<usize>,
    targets: ArrayView2<usize>,
    pad_mask: ArrayView2<bool>,
) -> Result<Accuracy> {
    check_shapes(&predictions, &targets, &pad_mask)?;
    let mut acc = Accuracy::default();
    Zip::from(&predictions).and(&targets).and(&pad_mask).for_each(|p, t, &pad| {
        if !pad {
            acc.total += 1;
            acc.correct += usize::from(p == t);
        }
    });
    Ok(acc)
}

/// Share of rows whose every non-padding position is right (exact match).
///
/// ```
/// use ndarray::array;
/// let pred = array![[5, 6, 3], [7, 3, 9]];
/// let gold = array![[5, 8, 3], [7, 3, 0]];
/// let pad = array![[false, false, false], [false, false, true]];
/// let acc = lingo_data::sequence_accuracy(pred.view(), gold.view(), pad.view()).unwrap();
/// assert_eq!((acc.correct, acc.total), (1, 2));
/// ```
pub fn sequence_accuracy(
    predictions: ArrayView2<usize>,
    targets: ArrayView2<usize>,
    pad_mask: ArrayView2<bool>,
) -> Result<Accuracy> {
    check_shapes(&predictions, &targets, &pad_mask)?;
    let correct = Zip::from(predictions.rows()).and(targets.rows()).and(pad_mask.rows()).fold(0, |n, p, t, pad| {
        let ok = p.iter().zip(t).zip(pad).all(|((p, t), &pad)| pad || p == t);
        n + usize::from(ok)
    });
    Ok(Accuracy { correct, total: targets.nrows() })
}
