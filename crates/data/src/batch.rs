//! Padded batches with masks and shifted decoder input/output, and
//! (bucketed, shuffled) batch plans.

use std::ops::Range;

use ndarray::{Array2, Array3, s};
use rand::Rng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::vocab::PAD;

/// A source/target pair of id sequences. The target is the full
/// `<sos> y1 .. yn <eos>`; [`Batch`] shifts it into decoder input and output.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Example {
    /// Source ids, usually `<sos> x1 .. xm <eos>`.
    pub src: Vec<usize>,
    /// Target ids, `<sos> y1 .. yn <eos>`.
    pub tgt: Vec<usize>,
}

/// Anything that holds a source and a target id sequence, so the same
/// batching serves corpus [`Example`]s and task [`crate::AlignedExample`]s.
pub trait SeqPair {
    /// Source ids.
    ///
    /// ```
    /// use lingo_data::{Example, SeqPair};
    /// assert_eq!(Example { src: vec![2, 5, 3], tgt: vec![2, 3] }.src(), [2, 5, 3]);
    /// ```
    fn src(&self) -> &[usize];
    /// Target ids, `<sos> .. <eos>`.
    ///
    /// ```
    /// use lingo_data::{Example, SeqPair};
    /// assert_eq!(Example { src: vec![2, 5, 3], tgt: vec![2, 3] }.tgt(), [2, 3]);
    /// ```
    fn tgt(&self) -> &[usize];
    /// The gold alignment, when known: for each output row `j` (token
    /// `y_{j+1}`, or `<eos>` last), the source positions it comes from.
    /// Guided alignment trains attention towards it.
    ///
    /// ```
    /// use lingo_data::{Example, SeqPair};
    /// assert!(Example { src: vec![2, 5, 3], tgt: vec![2, 3] }.gold().is_none());
    /// ```
    fn gold(&self) -> Option<&[Vec<usize>]> {
        None
    }
}

impl SeqPair for Example {
    fn src(&self) -> &[usize] {
        &self.src
    }
    fn tgt(&self) -> &[usize] {
        &self.tgt
    }
}

/// A corpus [`Example`] with the gold rows of its word links
/// ([`SeqPair::gold`]), as guided alignment on a corpus trains on it
/// ([`crate::Prepared::linked_train`]).
///
/// ```
/// use lingo_data::{Example, Linked, SeqPair};
/// let example = Example { src: vec![2, 5, 3], tgt: vec![2, 6, 3] };
/// let gold = [vec![1], vec![]];
/// assert_eq!(Linked { example: &example, gold: &gold }.gold(), Some(&gold[..]));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Linked<'a> {
    /// The encoded pair.
    pub example: &'a Example,
    /// For each output row, the source positions it reads.
    pub gold: &'a [Vec<usize>],
}

impl SeqPair for Linked<'_> {
    fn src(&self) -> &[usize] {
        &self.example.src
    }
    fn tgt(&self) -> &[usize] {
        &self.example.tgt
    }
    fn gold(&self) -> Option<&[Vec<usize>]> {
        Some(self.gold)
    }
}

/// One padded mini-batch, the only thing that crosses into the models.
///
/// From targets `<sos> y1 .. yn <eos>`: `tgt_in` is `<sos> y1 .. yn` (what
/// the decoder reads under teacher forcing) and `tgt_out` is
/// `y1 .. yn <eos>` (what it must predict), both of length `n + 1`.
/// Rows are padded with `<pad>` = 0 to the longest in the batch; the masks
/// are `true` at padding.
///
/// ```
/// use lingo_data::{Batch, Example};
/// let ex = vec![
///     Example { src: vec![2, 5, 3], tgt: vec![2, 7, 8, 3] },
///     Example { src: vec![2, 5, 6, 3], tgt: vec![2, 9, 3] },
/// ];
/// let b = Batch::from_examples(&ex).unwrap();
/// assert_eq!(b.src.row(0).to_vec(), [2, 5, 3, 0]);
/// assert_eq!(b.tgt_in.row(0).to_vec(), [2, 7, 8]);
/// assert_eq!(b.tgt_out.row(0).to_vec(), [7, 8, 3]);
/// assert_eq!(b.tgt_out.row(1).to_vec(), [9, 3, 0]);
/// assert_eq!(b.tgt_pad_mask.row(1).to_vec(), [false, false, true]);
/// assert_eq!((b.src_lens.clone(), b.tgt_lens.clone()), (vec![3, 4], vec![3, 2]));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    /// Source ids, `(batch, src_len)`.
    pub src: Array2<usize>,
    /// Unpadded length of each source row.
    pub src_lens: Vec<usize>,
    /// `true` at source padding, `(batch, src_len)`.
    pub src_pad_mask: Array2<bool>,
    /// Decoder input `<sos> y1 .. yn`, `(batch, tgt_len)`.
    pub tgt_in: Array2<usize>,
    /// Decoder output `y1 .. yn <eos>`, `(batch, tgt_len)`.
    pub tgt_out: Array2<usize>,
    /// Unpadded length of each `tgt_in` / `tgt_out` row.
    pub tgt_lens: Vec<usize>,
    /// `true` at target padding, `(batch, tgt_len)`.
    pub tgt_pad_mask: Array2<bool>,
    /// Each row's gold alignment ([`SeqPair::gold`]), when every example
    /// of the batch has one.
    pub gold: Option<Vec<Vec<Vec<usize>>>>,
}

/// A copy of the rows `rows` of `a`.
fn row_range<T: Clone>(a: &Array2<T>, rows: &Range<usize>) -> Array2<T> {
    a.slice(s![rows.clone(), ..]).to_owned()
}

/// Copies `rows` into a zero-padded `(rows, width)` array and its padding mask.
fn pad_rows<'a>(
    rows: impl ExactSizeIterator<Item = &'a [usize]>,
    width: usize,
) -> Result<(Array2<usize>, Array2<bool>)> {
    let n = rows.len();
    let mut ids = vec![PAD; n * width];
    let mut mask = vec![true; n * width];
    for ((id_row, mask_row), row) in
        ids.chunks_exact_mut(width.max(1)).zip(mask.chunks_exact_mut(width.max(1))).zip(rows)
    {
        id_row[..row.len()].copy_from_slice(row);
        mask_row[..row.len()].fill(false);
    }
    let shape_err = |e: ndarray::ShapeError| Error::invalid("batch shape", e.to_string());
    Ok((
        Array2::from_shape_vec((n, width), ids).map_err(shape_err)?,
        Array2::from_shape_vec((n, width), mask).map_err(shape_err)?,
    ))
}

impl Batch {
    /// Batches all `examples` in order.
    ///
    /// ```
    /// use lingo_data::{Batch, Example};
    /// let ex = [Example { src: vec![2, 3], tgt: vec![2, 3] }];
    /// assert_eq!(Batch::from_examples(&ex).unwrap().len(), 1);
    /// ```
    pub fn from_examples<E: SeqPair>(examples: &[E]) -> Result<Self> {
        let all: Vec<usize> = (0..examples.len()).collect();
        Self::gather(examples, &all)
    }

    /// Batches `examples[i]` for each `i` in `indices`, in that order.
    /// Fails on an empty selection, an index out of range, an empty source,
    /// or a target shorter than 2 (it must hold at least `<sos> <eos>`).
    ///
    /// ```
    /// use lingo_data::{Batch, Example};
    /// let ex = [Example { src: vec![2, 3], tgt: vec![2, 3] }, Example { src: vec![2, 4, 3], tgt: vec![2, 4, 3] }];
    /// let b = Batch::gather(&ex, &[1]).unwrap();
    /// assert_eq!(b.src.dim(), (1, 3));
    /// assert!(Batch::gather(&ex, &[2]).is_err());
    /// ```
    pub fn gather<E: SeqPair>(examples: &[E], indices: &[usize]) -> Result<Self> {
        if indices.is_empty() {
            return Err(Error::invalid("batch", "no examples selected"));
        }
        let mut chosen = Vec::with_capacity(indices.len());
        for &i in indices {
            let ex = examples.get(i).ok_or_else(|| {
                Error::invalid("batch", format!("index {i} out of range for {} examples", examples.len()))
            })?;
            if ex.src().is_empty() {
                return Err(Error::invalid("batch", format!("example {i} has an empty source")));
            }
            if ex.tgt().len() < 2 {
                return Err(Error::invalid("batch", format!("example {i}: target needs at least <sos> <eos>")));
            }
            if let Some(gold) = ex.gold()
                && (gold.len() != ex.tgt().len() - 1 || gold.iter().flatten().any(|&s| s >= ex.src().len()))
            {
                let reason = format!("example {i}: gold links need one row per output token, each within the source");
                return Err(Error::invalid("batch", reason));
            }
            chosen.push(ex);
        }
        let src_lens: Vec<usize> = chosen.iter().map(|e| e.src().len()).collect();
        let tgt_lens: Vec<usize> = chosen.iter().map(|e| e.tgt().len() - 1).collect();
        let src_width = src_lens.iter().copied().max().unwrap_or(0);
        let tgt_width = tgt_lens.iter().copied().max().unwrap_or(0);
        let (src, src_pad_mask) = pad_rows(chosen.iter().map(|e| e.src()), src_width)?;
        // Teacher forcing: the decoder reads y[..n] and predicts y[1..].
        let (tgt_in, tgt_pad_mask) = pad_rows(chosen.iter().map(|e| &e.tgt()[..e.tgt().len() - 1]), tgt_width)?;
        let (tgt_out, _) = pad_rows(chosen.iter().map(|e| &e.tgt()[1..]), tgt_width)?;
        let gold = chosen.iter().map(|e| e.gold().map(<[Vec<usize>]>::to_vec)).collect();
        Ok(Self { src, src_lens, src_pad_mask, tgt_in, tgt_out, tgt_lens, tgt_pad_mask, gold })
    }

    /// Number of examples in the batch.
    ///
    /// ```
    /// use lingo_data::{Batch, Example};
    /// let ex = vec![Example { src: vec![2, 3], tgt: vec![2, 3] }; 3];
    /// assert_eq!(Batch::from_examples(&ex).unwrap().len(), 3);
    /// ```
    pub fn len(&self) -> usize {
        self.src_lens.len()
    }

    /// True for a batch without examples (never built by this crate).
    ///
    /// ```
    /// use lingo_data::{Batch, Example};
    /// let ex = [Example { src: vec![2, 3], tgt: vec![2, 3] }];
    /// assert!(!Batch::from_examples(&ex).unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.src_lens.is_empty()
    }

    /// The batch cut into at most `parts` consecutive groups of rows, as
    /// even as can be (sizes differ by at most one; never an empty group):
    /// the shards of data-parallel training. Every row keeps its padding
    /// width, so a row's numbers do not depend on which shard it is in.
    ///
    /// ```
    /// use lingo_data::{Batch, Example};
    /// let ex: Vec<Example> = (0..5).map(|i| Example { src: vec![2, 4 + i, 3], tgt: vec![2, 3] }).collect();
    /// let shards = Batch::from_examples(&ex).unwrap().shards(2);
    /// assert_eq!(shards.iter().map(Batch::len).collect::<Vec<_>>(), [2, 3]);
    /// assert_eq!(shards[1].src.row(0).to_vec(), vec![2, 6, 3]); // the third example
    /// ```
    pub fn shards(&self, parts: usize) -> Vec<Batch> {
        let n = self.len();
        let parts = parts.clamp(1, n.max(1));
        (0..parts)
            .map(|i| {
                let rows = n * i / parts..n * (i + 1) / parts;
                Batch {
                    src: row_range(&self.src, &rows),
                    src_lens: self.src_lens[rows.clone()].to_vec(),
                    src_pad_mask: row_range(&self.src_pad_mask, &rows),
                    tgt_in: row_range(&self.tgt_in, &rows),
                    tgt_out: row_range(&self.tgt_out, &rows),
                    tgt_lens: self.tgt_lens[rows.clone()].to_vec(),
                    tgt_pad_mask: row_range(&self.tgt_pad_mask, &rows),
                    gold: self.gold.as_ref().map(|gold| gold[rows.clone()].to_vec()),
                }
            })
            .collect()
    }

    /// Number of real (unpadded) decoder output positions: the denominator
    /// of a per-token loss.
    ///
    /// ```
    /// use lingo_data::{Batch, Example};
    /// let ex = [Example { src: vec![2, 3], tgt: vec![2, 7, 3] }, Example { src: vec![2, 3], tgt: vec![2, 3] }];
    /// assert_eq!(Batch::from_examples(&ex).unwrap().num_tgt_tokens(), 3);
    /// ```
    pub fn num_tgt_tokens(&self) -> usize {
        self.tgt_lens.iter().sum()
    }

    /// The gold alignment as attention should look, `(batch, tgt_len,
    /// src_len)`: each output row's links share its weight equally (a row
    /// of `k` links holds `1/k` at each), rows without links and padding
    /// hold 0. `None` without gold links.
    ///
    /// ```
    /// use lingo_data::{AlignedExample, Batch};
    /// let ex = AlignedExample { src: vec![2, 5, 6, 3], tgt: vec![2, 7, 3], gold: vec![vec![1, 2], vec![]], sure: vec![vec![], vec![]] };
    /// let gold = Batch::from_examples(&[ex]).unwrap().gold_weights().unwrap();
    /// assert_eq!(gold.shape(), &[1, 2, 4]);
    /// assert_eq!(gold.sum_axis(ndarray::Axis(2)), ndarray::arr2(&[[1.0, 0.0]]));
    /// assert_eq!(gold[[0, 0, 2]], 0.5);
    /// ```
    pub fn gold_weights(&self) -> Option<Array3<f32>> {
        let gold = self.gold.as_ref()?;
        let mut weights = Array3::zeros((self.len(), self.tgt_in.ncols(), self.src.ncols()));
        for (b, rows) in gold.iter().enumerate() {
            for (t, links) in rows.iter().enumerate().filter(|(_, links)| !links.is_empty()) {
                for &s in links {
                    weights[[b, t, s]] = 1.0 / links.len() as f32;
                }
            }
        }
        Some(weights)
    }
}

/// How to cut a dataset into batches each epoch; serializable, as part of
/// a training configuration written to a file.
///
/// ```
/// let c = lingo_data::BatchConfig { batch_size: 32, bucket: true, shuffle: true, max_tokens: Some(900) };
/// let text = serde_json::to_string(&c).unwrap();
/// assert_eq!(serde_json::from_str::<lingo_data::BatchConfig>(&text).unwrap(), c);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchConfig {
    /// Examples per batch (the last batch may be smaller).
    pub batch_size: usize,
    /// Sort by length before cutting, so each batch holds similar lengths
    /// and little padding.
    pub bucket: bool,
    /// Shuffle examples (before bucketing, so ties land randomly) and the
    /// order of the batches.
    pub shuffle: bool,
    /// A cap on each batch's padded size, `rows × longest sequence` (source
    /// or target), besides `batch_size` rows: fairseq's `--max-tokens`.
    /// With bucketing, batches of short sentences get more rows, so each
    /// step does about the same work. An example longer than the cap is a
    /// batch of its own.
    pub max_tokens: Option<usize>,
}

impl BatchConfig {
    /// The example indices of each batch, in the order to visit them.
    ///
    /// With bucketing, examples are sorted by `(src_len, tgt_len)` and cut
    /// into consecutive chunks (of `batch_size` rows, or fewer where
    /// `max_tokens` would be passed); with shuffling, the examples are first
    /// shuffled (so equal lengths mix differently each epoch) and the chunks
    /// are visited in random order.
    ///
    /// ```
    /// use rand::{SeedableRng, rngs::StdRng};
    /// use lingo_data::{BatchConfig, Example};
    /// let ex: Vec<Example> = [5, 2, 4, 3].iter().map(|&n| Example { src: vec![4; n], tgt: vec![2, 3] }).collect();
    /// let config = BatchConfig { batch_size: 2, bucket: true, shuffle: false, max_tokens: None };
    /// let plan = config.plan(&ex, &mut StdRng::seed_from_u64(0)).unwrap();
    /// assert_eq!(plan, [vec![1, 3], vec![2, 0]]);
    /// // At most 8 padded tokens: lengths 2 and 3 together (2 × 3), then 4
    /// // and 5 alone (2 × 5 would pass the cap).
    /// let capped = BatchConfig { max_tokens: Some(8), ..config }.plan(&ex, &mut StdRng::seed_from_u64(0)).unwrap();
    /// assert_eq!(capped, [vec![1, 3], vec![2], vec![0]]);
    /// ```
    pub fn plan<E: SeqPair, R: Rng + ?Sized>(&self, examples: &[E], rng: &mut R) -> Result<Vec<Vec<usize>>> {
        if self.batch_size == 0 {
            return Err(Error::invalid("batch_size", "must be at least 1"));
        }
        if self.max_tokens == Some(0) {
            return Err(Error::invalid("max_tokens", "must be at least 1"));
        }
        let mut order: Vec<usize> = (0..examples.len()).collect();
        if self.shuffle {
            order.shuffle(rng);
        }
        if self.bucket {
            // Stable, so the shuffled order survives among equal lengths.
            order.sort_by_key(|&i| (examples[i].src().len(), examples[i].tgt().len()));
        }
        let mut plan = match self.max_tokens {
            None => order.chunks(self.batch_size).map(<[usize]>::to_vec).collect(),
            Some(max_tokens) => {
                let len = |i: usize| examples[i].src().len().max(examples[i].tgt().len());
                let mut plan: Vec<Vec<usize>> = vec![];
                let mut longest = 0; // of the open batch, the last one
                for i in order {
                    match plan.last_mut() {
                        Some(open)
                            if open.len() < self.batch_size && (open.len() + 1) * longest.max(len(i)) <= max_tokens =>
                        {
                            open.push(i);
                            longest = longest.max(len(i));
                        }
                        _ => {
                            plan.push(vec![i]);
                            longest = len(i);
                        }
                    }
                }
                plan
            }
        };
        if self.shuffle {
            plan.shuffle(rng);
        }
        Ok(plan)
    }

    /// Builds the batches of [`BatchConfig::plan`].
    ///
    /// ```
    /// use rand::{SeedableRng, rngs::StdRng};
    /// use lingo_data::{BatchConfig, Example};
    /// let ex = vec![Example { src: vec![2, 3], tgt: vec![2, 3] }; 5];
    /// let config = BatchConfig { batch_size: 2, bucket: false, shuffle: true, max_tokens: None };
    /// let batches = config.batches(&ex, &mut StdRng::seed_from_u64(0)).unwrap();
    /// assert_eq!(batches.iter().map(|b| b.len()).sum::<usize>(), 5);
    /// ```
    pub fn batches<E: SeqPair, R: Rng + ?Sized>(&self, examples: &[E], rng: &mut R) -> Result<Vec<Batch>> {
        self.plan(examples, rng)?.iter().map(|idx| Batch::gather(examples, idx)).collect()
    }
}
