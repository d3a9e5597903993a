//! Attention and accuracy metrics: alignment accuracy against gold
//! positions, attention entropy, token and sequence accuracy.
//!
//! Attention weights come in per example as `ArrayView2<f32>`
//! `(tgt_len, src_len)`: row `j` is the distribution over source positions
//! used while predicting output `j`. Take them from a batch's
//! `(batch, tgt_len, src_len)` array with `weights.index_axis(Axis(0), b)`.

use crate::error::{Error, Result};
use ndarray::{Array1, ArrayView2, Zip};

/// Alignment accuracy with its chance level.
#[derive(Clone, Copy, Debug, PartialEq)]
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
