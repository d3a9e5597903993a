//! Decoding: batched greedy search and batched beam search, for every model
//! configuration, both able to return the attention of the chosen output.
//!
//! Both run under [`no_grad`]: no graph is recorded, nothing is kept for a
//! backward pass. Both run the model one step at a time through
//! [`EncoderDecoder::step`] (for the recurrent model, the same code
//! Bahdanau's placement trains with).
//!
//! Both drop an input's rows from the batch (its decoder state and its
//! prepared source) as soon as it is done, so a batch of sentences of
//! different lengths costs what its unfinished sentences cost, and both cut
//! a batch into even groups of at most [`ROWS_PER_GROUP`] sentences decoded
//! side by side on rayon's threads. Beam search's first step reads one row
//! per input, since its K beams are still the one empty beam; the K rows of
//! each input start from that step's K best continuations. An output does
//! not depend on the batch it was decoded in, except in the last bits: a
//! product's kernel depends on its number of rows.

use lingo_data::{EOS, SOS};
use lingo_tensor::no_grad;
use ndarray::{Array2, Axis};
use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Result, config};
use crate::model::{EncoderDecoder, SelectRows};

/// One decoded output.
#[derive(Debug, Clone, PartialEq)]
pub struct Hypothesis {
    /// The output tokens, without `<sos>`; ends with `<eos>` when the model
    /// finished the sentence within the length limit.
    pub tokens: Vec<usize>,
    /// `Σ log p(token)` over `tokens`.
    pub log_prob: f32,
    /// The score beams are ranked by: `log_prob / lp(|tokens|) + cp + γ·|tokens|`
    /// with GNMT's length penalty `lp(n) = ((5 + n) / 6)^α`, coverage penalty
    /// `cp` ([`BeamConfig::beta`]) and word reward `γ` ([`BeamConfig::gamma`]);
    /// equal to `log_prob` for greedy.
    pub score: f32,
    /// Attention over the source for each output token, `(tokens.len(), src_len)`,
    /// when asked for and the model has attention.
    pub attention: Option<Array2<f32>>,
}

impl Hypothesis {
    /// Whether the model ended the output with `<eos>`.
    ///
    /// ```
    /// let h = lingo_nn::Hypothesis { tokens: vec![7, lingo_data::EOS], log_prob: -1.0, score: -1.0, attention: None };
    /// assert!(h.finished());
    /// ```
    pub fn finished(&self) -> bool {
        self.tokens.last() == Some(&EOS)
    }
}

/// The `k` best continuations of each row of `(rows, vocab)` logits, for
/// the rows that have a `base` (a beam's log-probability so far; 0 for
/// greedy): `(base + log p_c, c)`, best first, ties to the smaller token, with
///
/// ```text
/// log p_c = z_c - log Σ_c' e^{z_c'} = z_c - (max z + log Σ_c' e^{z_c' - max z})
/// ```
///
/// Only the normaliser needs the whole row; the `k` best of `log p` are
/// those of `z`, so no row of log-probabilities is written. Rows are shared
/// between threads (the exponentials are `lingo_kernels::math`'s), each
/// row one thread's, so the bits do not depend on the thread count.
fn best_continuations(logits: &ndarray::ArrayD<f32>, bases: &[Option<f32>], k: usize) -> Vec<Vec<(f32, usize)>> {
    let logits = logits.view().into_dimensionality::<ndarray::Ix2>().expect("step logits are 2-D");
    let logits = logits.as_standard_layout();
    let mut out = vec![Vec::new(); bases.len()];
    out.par_chunks_mut(8).zip(bases.par_chunks(8)).enumerate().for_each(|(chunk, (out, bases))| {
        for (i, (best, base)) in out.iter_mut().zip(bases).enumerate() {
            let Some(base) = *base else { continue };
            let row = logits.row(chunk * 8 + i);
            let row = row.as_slice().expect("a standard-layout row");
            *best = top_k(row, lingo_kernels::math::log_sum_exp(row), base, k);
        }
    });
    out
}

/// Greedy decoding of a batch: at each step every unfinished row takes its
/// most probable token, until `<eos>` or `max_len` tokens.
///
/// ```
/// use lingo_nn::{Seq2Seq, Seq2SeqConfig, greedy_decode};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let model = Seq2Seq::new(Seq2SeqConfig { attention: Some("dot".parse().unwrap()), ..Seq2SeqConfig::new(9, 9) }, &mut rng).unwrap();
/// let src = ndarray::arr2(&[[2_usize, 5, 6, 3], [2, 7, 3, 0]]);
/// let out = greedy_decode(&model, &src, &[4, 3], 5, true).unwrap();
/// assert_eq!(out.len(), 2);
/// assert!(out[0].tokens.len() <= 5);
/// assert_eq!(out[1].attention.as_ref().unwrap().ncols(), 4);
/// ```
pub fn greedy_decode<M: EncoderDecoder>(
    model: &M,
    src: &Array2<usize>,
    src_lens: &[usize],
    max_len: usize,
    with_attention: bool,
) -> Result<Vec<Hypothesis>> {
    in_groups(src, src_lens, |src, src_lens| greedy_group(model, src, src_lens, max_len, with_attention))
}

/// The most sentences one thread decodes together: a larger batch is cut
/// into groups of at most this many rows, decoded side by side on rayon's
/// threads, each group's products on its own thread (one batch on two
/// threads met at every product of every step). The groups depend on the
/// batch alone, so that an output's bits do not depend on the thread count.
pub const ROWS_PER_GROUP: usize = 32;

/// `decode` on each group of `src`'s rows, in parallel; the outputs in row
/// order. The fewest groups of at most [`ROWS_PER_GROUP`] rows, of sizes
/// within one of each other: 51 rows are 25 + 26, not 32 + 19, which would
/// leave one of two threads idle for a third of the batch.
fn in_groups<H: Send>(
    src: &Array2<usize>,
    src_lens: &[usize],
    decode: impl Fn(&Array2<usize>, &[usize]) -> Result<Vec<H>> + Sync,
) -> Result<Vec<H>> {
    let n = src.nrows();
    if n <= ROWS_PER_GROUP {
        return decode(src, src_lens);
    }
    let groups = n.div_ceil(ROWS_PER_GROUP);
    // Group g starts at ⌊g·n / groups⌋.
    let bounds: Vec<usize> = (0..=groups).map(|g| g * n / groups).collect();
    let groups = bounds
        .par_windows(2)
        .map(|w| {
            let rows = w[0]..w[1];
            decode(&src.slice(ndarray::s![rows.clone(), ..]).to_owned(), &src_lens[rows])
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(groups.into_iter().flatten().collect())
}

/// [`greedy_decode`] of one group of rows, on this thread's share of the work.
fn greedy_group<M: EncoderDecoder>(
    model: &M,
    src: &Array2<usize>,
    src_lens: &[usize],
    max_len: usize,
    with_attention: bool,
) -> Result<Vec<Hypothesis>> {
    if src.nrows() == 0 {
        return Ok(Vec::new()); // no sentences, no hypotheses (and no empty batch for the encoder)
    }
    no_grad(|| {
        let batch = src.nrows();
        let (mut ctx, mut state) = model.start(src, src_lens, 1)?;
        // Row r of the step is input active[r]; a finished input's row is dropped.
        let mut active: Vec<usize> = (0..batch).collect();
        let mut prev = vec![SOS; batch];
        let mut hyps: Vec<Hypothesis> =
            (0..batch).map(|_| Hypothesis { tokens: vec![], log_prob: 0.0, score: 0.0, attention: None }).collect();
        let mut rows_attn: Vec<Vec<ndarray::Array1<f32>>> = vec![Vec::new(); batch];
        for _ in 0..max_len {
            let step = model.step(&ctx, &state, &prev)?;
            let best = best_continuations(step.logits.data(), &vec![Some(0.0); active.len()], 1);
            let mut going = Vec::with_capacity(active.len());
            for (r, &b) in active.iter().enumerate() {
                let (value, best) = best[r][0];
                hyps[b].tokens.push(best);
                hyps[b].log_prob += value;
                prev[r] = best;
                if with_attention && let Some(w) = &step.weights {
                    rows_attn[b].push(row_of(w, r));
                }
                if best != EOS {
                    going.push(r);
                }
            }
            state = step.state;
            if going.is_empty() {
                break;
            }
            if going.len() < active.len() {
                // Finished rows cost nothing more. As with any change of batch, the
                // rest may take another product path and move in the last bits.
                (state, ctx) = (state.select_rows(&going)?, ctx.select_rows(&going)?);
                active = going.iter().map(|&r| active[r]).collect();
                prev = going.iter().map(|&r| prev[r]).collect();
            }
        }
        for (hyp, rows) in hyps.iter_mut().zip(rows_attn) {
            hyp.score = hyp.log_prob;
            hyp.attention = stack_rows(&rows);
        }
        Ok(hyps)
    })
}

/// Row `row` of a step's `(batch, src_len)` attention weights.
fn row_of(weights: &lingo_tensor::Tensor, row: usize) -> ndarray::Array1<f32> {
    weights.data().index_axis(Axis(0), row).iter().copied().collect()
}

/// Rows `(src_len)` stacked into `(n, src_len)`; `None` when there are none.
fn stack_rows(rows: &[ndarray::Array1<f32>]) -> Option<Array2<f32>> {
    let views: Vec<_> = rows.iter().map(|r| r.view()).collect();
    (!views.is_empty()).then(|| ndarray::stack(Axis(0), &views).ok()).flatten()
}

/// Settings of [`beam_search`].
///
/// ```
/// let c = lingo_nn::BeamConfig::default();
/// assert_eq!((c.beam_size, c.n_best), (5, 1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BeamConfig {
    /// Hypotheses kept alive per input, `K ≥ 1`.
    pub beam_size: usize,
    /// GNMT length penalty exponent `α` (0: no normalisation; 0.6 to 1 are usual).
    pub alpha: f32,
    /// GNMT coverage penalty weight `β` (0: none): a finished hypothesis
    /// gains `β Σ_i log min(Σ_j p_ij, 1)` over the source positions `i`,
    /// with `p_ij` output token `j`'s attention on source token `i`, so an
    /// output that left source tokens unread ranks lower. A model without
    /// attention gets no penalty.
    pub beta: f32,
    /// Word reward `γ` (0: none): a finished hypothesis gains `γ` per
    /// output token, `<eos>` included (negative: a penalty per token).
    pub gamma: f32,
    /// When an input's search ends ([`Stopping`]).
    pub stopping: Stopping,
    /// How many finished hypotheses to return per input (`≤ beam_size`).
    pub n_best: usize,
}

impl Default for BeamConfig {
    fn default() -> Self {
        BeamConfig { beam_size: 5, alpha: 0.6, beta: 0.0, gamma: 0.0, stopping: Stopping::KFinished, n_best: 1 }
    }
}

impl BeamConfig {
    /// Checks `1 ≤ n_best ≤ beam_size`.
    ///
    /// ```
    /// use lingo_nn::BeamConfig;
    /// assert!(BeamConfig::default().check().is_ok());
    /// let err = BeamConfig { n_best: 6, ..BeamConfig::default() }.check().unwrap_err();
    /// assert!(err.to_string().contains("got n_best 6 and beam_size 5"), "{err}");
    /// ```
    pub fn check(&self) -> Result<()> {
        let BeamConfig { beam_size, n_best, .. } = *self;
        if beam_size == 0 || n_best == 0 || n_best > beam_size {
            return Err(config(
                "beam",
                format!("need 1 ≤ n_best ≤ beam_size, got n_best {n_best} and beam_size {beam_size}"),
            ));
        }
        Ok(())
    }
}

/// When [`beam_search`] ends an input's search.
///
/// ```
/// assert_eq!(lingo_nn::BeamConfig::default().stopping, lingo_nn::Stopping::KFinished);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Stopping {
    /// Once `K` hypotheses have ended (fairseq's rule). The search follows
    /// `log p`, so the shortest outputs end first: the length penalty and
    /// the word reward only rank those.
    #[cfg_attr(
        feature = "clap",
        value(
            help = "Once --beam outputs have ended (fairseq's rule): the shortest end first, and the penalties rank only those"
        )
    )]
    KFinished,
    /// Once no live beam can outscore the `n_best`-th best ended one, `K`
    /// of which are kept by score (Tensor2Tensor's rule). Longer outputs
    /// get to end, at the cost of more steps.
    #[cfg_attr(
        feature = "clap",
        value(
            help = "Once no live beam can outscore the best ended output (Tensor2Tensor's rule): longer outputs get to end, at the cost of more steps"
        )
    )]
    Bound,
}

/// The beam search of one input, step by step: every candidate it weighed
/// and what became of it ([`beam_search_traced`]). Step `t` holds the
/// candidates for output token `t + 1`: the `K` best continuations of each
/// live beam, best first by `log p`, as pruning went through them.
///
/// ```
/// use lingo_nn::{BeamConfig, Fate, Seq2Seq, Seq2SeqConfig, beam_search_traced};
/// use rand::SeedableRng;
/// let model = Seq2Seq::new(Seq2SeqConfig::new(9, 9), &mut rand::rngs::StdRng::seed_from_u64(1)).unwrap();
/// let src = ndarray::arr2(&[[2_usize, 5, 6, 3]]);
/// let cfg = BeamConfig { beam_size: 3, ..BeamConfig::default() };
/// let (outputs, traces) = beam_search_traced(&model, &src, &[4], 6, cfg, false).unwrap();
/// let trace = &traces[0];
/// // At the first step only the start beam is live: its 3 best tokens, all kept.
/// assert!(trace.steps[0].iter().all(|c| c.parent == 0 && matches!(c.fate, Fate::Kept(_))));
/// // The winner, followed back through its parents, is the output.
/// let (step, at) = trace.find(&outputs[0][0]).unwrap();
/// assert_eq!(trace.tokens(step, at), outputs[0][0].tokens);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BeamTrace {
    /// The candidates of each step, in the order pruning weighed them.
    pub steps: Vec<Vec<Candidate>>,
}

/// One candidate of a beam-search step: live beam `parent` continued by `token`.
///
/// ```
/// let c = lingo_nn::Candidate { parent: 0, token: 7, log_prob: -0.5, fate: lingo_nn::Fate::Kept(0) };
/// assert_eq!(c.fate, lingo_nn::Fate::Kept(0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Candidate {
    /// The beam it continues: its place among the live beams after the
    /// previous step (the [`Fate::Kept`] index there; 0 at the first step).
    pub parent: usize,
    /// The token it appends.
    pub token: usize,
    /// `Σ log p` of its tokens: what the search ranks candidates by.
    pub log_prob: f32,
    /// What became of it.
    pub fate: Fate,
}

/// What pruning did with a [`Candidate`].
///
/// ```
/// assert_ne!(lingo_nn::Fate::Pruned, lingo_nn::Fate::Kept(0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    /// Kept as live beam `j` of the next step.
    Kept(usize),
    /// It appended `<eos>`: a finished output.
    Finished {
        /// The [`Hypothesis::score`] it is ranked by.
        score: f32,
    },
    /// Dropped: the step had its `K` live beams (or, under
    /// [`Stopping::KFinished`], the input its `K` finished outputs) before
    /// pruning reached it.
    Pruned,
}

impl BeamTrace {
    /// The tokens of candidate `at` of step `step`, from the first: its
    /// beam's tokens, followed back through the parents, and its own.
    ///
    /// ```
    /// use lingo_nn::{BeamTrace, Candidate, Fate};
    /// let c = |parent, token, fate| Candidate { parent, token, log_prob: 0.0, fate };
    /// let trace = BeamTrace { steps: vec![
    ///     vec![c(0, 5, Fate::Kept(0)), c(0, 6, Fate::Kept(1))],
    ///     vec![c(1, 7, Fate::Kept(0)), c(0, 8, Fate::Pruned)],
    /// ] };
    /// assert_eq!(trace.tokens(1, 0), [6, 7]);
    /// assert_eq!(trace.tokens(1, 1), [5, 8]);
    /// ```
    pub fn tokens(&self, step: usize, at: usize) -> Vec<usize> {
        self.path(step, at).iter().enumerate().map(|(t, &k)| self.steps[t][k].token).collect()
    }

    /// Where candidate `at` of step `step` and the beams it continues stood:
    /// their places in each step from the first (with [`find`](Self::find),
    /// where a translation stood at every step of the search).
    ///
    /// ```
    /// use lingo_nn::{BeamTrace, Candidate, Fate};
    /// let c = |parent, token, fate| Candidate { parent, token, log_prob: 0.0, fate };
    /// let trace = BeamTrace { steps: vec![
    ///     vec![c(0, 5, Fate::Kept(0)), c(0, 6, Fate::Kept(1))],
    ///     vec![c(0, 8, Fate::Pruned), c(1, 7, Fate::Kept(0))],
    /// ] };
    /// assert_eq!(trace.path(1, 1), [1, 1]); // 6 was second at step 1, 6 7 second at step 2
    /// ```
    pub fn path(&self, step: usize, at: usize) -> Vec<usize> {
        let mut places = vec![at];
        let mut parent = self.steps[step][at].parent;
        for earlier in self.steps[..step].iter().rev() {
            let kept = earlier.iter().position(|c| c.fate == Fate::Kept(parent)).expect("a parent was kept");
            places.push(kept);
            parent = earlier[kept].parent;
        }
        places.reverse();
        places
    }

    /// Where `output` ended: its step and its place there (the candidate
    /// that finished it, or for an output `max_len` cut short, the live beam
    /// it was). `None` if it is not this trace's.
    ///
    /// ```
    /// use lingo_nn::{BeamTrace, Candidate, Fate, Hypothesis};
    /// use lingo_data::EOS;
    /// let ended = Candidate { parent: 0, token: EOS, log_prob: -0.1, fate: Fate::Finished { score: -0.1 } };
    /// let trace = BeamTrace { steps: vec![vec![ended]] };
    /// let output = Hypothesis { tokens: vec![EOS], log_prob: -0.1, score: -0.1, attention: None };
    /// assert_eq!(trace.find(&output), Some((0, 0)));
    /// ```
    pub fn find(&self, output: &Hypothesis) -> Option<(usize, usize)> {
        let step = output.tokens.len().checked_sub(1)?;
        let candidates = self.steps.get(step)?;
        (0..candidates.len())
            .find(|&at| {
                let c = &candidates[at];
                let ended = match c.fate {
                    Fate::Finished { score } => output.finished() && score == output.score,
                    Fate::Kept(_) => !output.finished() && c.log_prob == output.log_prob,
                    Fate::Pruned => false,
                };
                ended && self.tokens(step, at) == output.tokens
            })
            .map(|at| (step, at))
    }
}

/// GNMT's length penalty `lp(n) = ((5 + n) / 6)^α` (Wu et al., 2016).
fn length_penalty(n: usize, alpha: f32) -> f32 {
    ((5.0 + n as f32) / 6.0).powf(alpha)
}

/// GNMT's coverage penalty `cp = β Σ_i log min(Σ_j p_ij, 1)` over the
/// first `src_len` source positions of `attention (tokens, src_len)`: 0
/// when every source token got a total weight of at least 1. A total of 0
/// counts as the smallest normal float, so the penalty stays finite.
fn coverage_penalty(attention: Option<&Array2<f32>>, src_len: usize, beta: f32) -> f32 {
    match attention {
        Some(weights) if beta > 0.0 => {
            let coverage = weights.sum_axis(Axis(0));
            beta * coverage.iter().take(src_len).map(|&c| c.clamp(f32::MIN_POSITIVE, 1.0).ln()).sum::<f32>()
        }
        _ => 0.0,
    }
}

/// A live beam: its tokens, log-probability and attention rows so far.
#[derive(Clone)]
struct Beam {
    tokens: Vec<usize>,
    log_prob: f32,
    attention: Vec<ndarray::Array1<f32>>,
}

impl Beam {
    /// The hypothesis a candidate stands for: this beam with `token` appended, at `log_prob` in all.
    fn child(&self, token: usize, log_prob: f32, attention: Option<ndarray::Array1<f32>>) -> Beam {
        let mut tokens = self.tokens.clone();
        tokens.push(token);
        let mut rows = self.attention.clone();
        rows.extend(attention);
        Beam { tokens, log_prob, attention: rows }
    }
}

/// The search of one input: up to K hypotheses still growing and up to K ended.
#[derive(Clone)]
struct Beams {
    /// The hypotheses still growing, best first.
    live: Vec<Beam>,
    /// The hypotheses that ended with `<eos>`, in the order they ended.
    finished: Vec<Hypothesis>,
    /// The source's length in tokens: the positions the coverage penalty reads.
    src_len: usize,
    /// The most tokens an output may have: the bound of [`Stopping::Bound`] reads it.
    max_len: usize,
    /// Every step's candidates and their fates, when traced.
    trace: Option<BeamTrace>,
}

/// Beam search over a batch: `K = beam_size` hypotheses per input advance
/// together as `batch · K` rows of one decoder step. Each step, every input
/// keeps its `K` best continuations by log-probability; a continuation that
/// ends in `<eos>` becomes a finished hypothesis, ranked by
/// `log p / lp(length) + cp + γ·length` ([`BeamConfig`]; the search itself
/// follows `log p` alone). An input is done when [`BeamConfig::stopping`]
/// says so or `max_len` tokens (`<eos>` included) are reached (its live
/// beams then count as unfinished outputs). Returns the `n_best` best per
/// input, best first.
///
/// With `beam_size = 1` this is exactly greedy decoding.
///
/// ```
/// use lingo_nn::{BeamConfig, Seq2Seq, Seq2SeqConfig, beam_search, greedy_decode};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(1);
/// let model = Seq2Seq::new(Seq2SeqConfig::new(9, 9), &mut rng).unwrap();
/// let src = ndarray::arr2(&[[2_usize, 5, 6, 3]]);
/// let one = BeamConfig { beam_size: 1, n_best: 1, alpha: 0.0, ..BeamConfig::default() };
/// let beam = beam_search(&model, &src, &[4], 6, one, false).unwrap();
/// let greedy = greedy_decode(&model, &src, &[4], 6, false).unwrap();
/// assert_eq!(beam[0][0].tokens, greedy[0].tokens);
/// ```
pub fn beam_search<M: EncoderDecoder>(
    model: &M,
    src: &Array2<usize>,
    src_lens: &[usize],
    max_len: usize,
    cfg: BeamConfig,
    with_attention: bool,
) -> Result<Vec<Vec<Hypothesis>>> {
    cfg.check()?;
    let searched = in_groups(src, src_lens, |src, src_lens| {
        beam_group(model, src, src_lens, max_len, cfg, with_attention, false)
    })?;
    Ok(searched.into_iter().map(|(outputs, _)| outputs).collect())
}

/// [`beam_search`] that also returns, for each input, the [`BeamTrace`] of
/// its search: every candidate of every step and what became of it. The
/// outputs are [`beam_search`]'s, bit for bit.
///
/// See [`BeamTrace`] for an example.
pub fn beam_search_traced<M: EncoderDecoder>(
    model: &M,
    src: &Array2<usize>,
    src_lens: &[usize],
    max_len: usize,
    cfg: BeamConfig,
    with_attention: bool,
) -> Result<(Vec<Vec<Hypothesis>>, Vec<BeamTrace>)> {
    cfg.check()?;
    let searched =
        in_groups(src, src_lens, |src, src_lens| beam_group(model, src, src_lens, max_len, cfg, with_attention, true))?;
    Ok(searched.into_iter().map(|(outputs, trace)| (outputs, trace.unwrap_or_default())).unzip())
}

/// [`beam_search`] of one group of rows: each input's outputs, and its
/// trace when `traced`.
fn beam_group<M: EncoderDecoder>(
    model: &M,
    src: &Array2<usize>,
    src_lens: &[usize],
    max_len: usize,
    cfg: BeamConfig,
    with_attention: bool,
    traced: bool,
) -> Result<Vec<(Vec<Hypothesis>, Option<BeamTrace>)>> {
    if src.nrows() == 0 {
        return Ok(Vec::new());
    }
    no_grad(|| {
        let (batch, k) = (src.nrows(), cfg.beam_size);
        // The first step reads one row per input, its one empty beam; the step's
        // K continuations then become K rows: row b·K + j is beam j of input b.
        let (mut ctx, mut state) = model.start(src, src_lens, 1)?;
        let mut rows = 1;
        let empty = Beam { tokens: vec![], log_prob: 0.0, attention: vec![] };
        let mut inputs: Vec<Beams> = src_lens
            .iter()
            .map(|&src_len| Beams {
                live: vec![empty.clone()],
                finished: Vec::new(),
                src_len,
                max_len,
                trace: traced.then(BeamTrace::default),
            })
            .collect();
        // Rows i·rows .. (i + 1)·rows of a step belong to input active[i]; a done input's rows are dropped.
        let mut active: Vec<usize> = (0..batch).collect();
        for _ in 0..max_len {
            let (prev, bases) = step_inputs(&inputs, &active, rows);
            let step = model.step(&ctx, &state, &prev)?;
            // The K best of each row's (batch·rows, vocab) logits, as its beam's log p so far plus the token's.
            let best = best_continuations(step.logits.data(), &bases, k);
            // The coverage penalty reads the attention even when the output does not keep it.
            let weights = step.weights.as_ref().filter(|_| with_attention || cfg.beta > 0.0);
            let (parents, going) = advance(&mut inputs, &active, &best, rows, weights, cfg);
            if going.is_empty() {
                break;
            }
            // Each row of the next step goes on from the decoder state of the beam it continues.
            state = step.state.select_rows(&parents)?;
            if going.len() < active.len() || rows < k {
                ctx = regroup(&ctx, &mut active, &going, rows, k)?;
                rows = k;
            }
        }
        let mut outputs: Vec<(Vec<Hypothesis>, Option<BeamTrace>)> = inputs
            .into_iter()
            .map(|mut input| {
                let trace = input.trace.take();
                (input.n_best(cfg), trace)
            })
            .collect();
        if !with_attention {
            outputs.iter_mut().flat_map(|(hyps, _)| hyps).for_each(|hyp| hyp.attention = None);
        }
        Ok(outputs)
    })
}

/// What each of the step's `(batch·rows)` rows continues: its beam's last
/// token (`<sos>` before the first) and log-probability so far, or `<sos>`
/// and `None` for a row without a beam (an input may have fewer than K live).
fn step_inputs(inputs: &[Beams], active: &[usize], rows: usize) -> (Vec<usize>, Vec<Option<f32>>) {
    let beams: Vec<Option<&Beam>> =
        (0..active.len() * rows).map(|row| inputs[active[row / rows]].live.get(row % rows)).collect();
    let prev = beams.iter().map(|beam| beam.and_then(|beam| beam.tokens.last().copied()).unwrap_or(SOS)).collect();
    let bases = beams.iter().map(|beam| beam.map(|beam| beam.log_prob)).collect();
    (prev, bases)
}

/// One step of every active input: its beams expanded by their best
/// continuations `best` (`rows` rows of `(log p, token)` per input) and
/// pruned to K. Returns the row each row of the next step continues (K per
/// input still going) and the places in `active` of the inputs still going.
fn advance(
    inputs: &mut [Beams],
    active: &[usize],
    best: &[Vec<(f32, usize)>],
    rows: usize,
    weights: Option<&lingo_tensor::Tensor>,
    cfg: BeamConfig,
) -> (Vec<usize>, Vec<usize>) {
    let k = cfg.beam_size;
    let (mut parents, mut going) = (Vec::with_capacity(active.len() * k), Vec::with_capacity(active.len()));
    for (i, &b) in active.iter().enumerate() {
        let input = &mut inputs[b];
        let candidates = input.candidates(&best[i * rows..(i + 1) * rows]);
        let mut next_parents = input.prune(&candidates, i * rows, weights, cfg);
        if !input.done(cfg) {
            // Keep K rows per input: pad with the last parent (never read again).
            next_parents.resize(k, *next_parents.last().expect("a live input has a beam"));
            parents.extend(next_parents);
            going.push(i);
        }
    }
    (parents, going)
}

/// The source rows of the next step: K for each input still going (its
/// `rows` rows repeated, after the first step's one), none for the inputs
/// that are done, which so cost nothing more; `active` keeps their places.
fn regroup<C: SelectRows>(ctx: &C, active: &mut Vec<usize>, going: &[usize], rows: usize, k: usize) -> Result<C> {
    let next: Vec<usize> = going.iter().flat_map(|&i| (0..k).map(move |j| i * rows + j % rows)).collect();
    *active = going.iter().map(|&i| active[i]).collect();
    ctx.select_rows(&next)
}

impl Beams {
    /// Expansion: the K best continuations `best[j]` of each live beam `j`,
    /// as `(log p, j, token)`, then all of those best first: the K best
    /// continuations of the input are among them.
    fn candidates(&self, best: &[Vec<(f32, usize)>]) -> Vec<(f32, usize, usize)> {
        let mut candidates: Vec<(f32, usize, usize)> = best[..self.live.len()]
            .iter()
            .enumerate()
            .flat_map(|(j, row)| row.iter().map(move |&(log_prob, token)| (log_prob, j, token)))
            .collect();
        candidates.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
        candidates
    }

    /// Pruning: the candidates in order become live beams, or finished
    /// hypotheses when they end in `<eos>`, until there are K of either.
    /// Returns the step's row (`first_row + j`) each new live beam continues.
    fn prune(
        &mut self,
        candidates: &[(f32, usize, usize)],
        first_row: usize,
        weights: Option<&lingo_tensor::Tensor>,
        cfg: BeamConfig,
    ) -> Vec<usize> {
        let k = cfg.beam_size;
        let (mut next, mut parents) = (Vec::with_capacity(k), Vec::with_capacity(k));
        let mut fates = Vec::with_capacity(candidates.len());
        for &(log_prob, j, token) in candidates {
            if next.len() == k || (cfg.stopping == Stopping::KFinished && self.finished.len() == k) {
                break;
            }
            let beam = self.live[j].child(token, log_prob, weights.map(|w| row_of(w, first_row + j)));
            if token == EOS {
                let output = finish(beam, cfg, self.src_len);
                fates.push(Fate::Finished { score: output.score });
                self.finished.push(output);
            } else {
                fates.push(Fate::Kept(next.len()));
                parents.push(first_row + j);
                next.push(beam);
            }
        }
        if let Some(trace) = &mut self.trace {
            fates.resize(candidates.len(), Fate::Pruned);
            let step = candidates.iter().zip(fates);
            trace.steps.push(
                step.map(|(&(log_prob, parent, token), fate)| Candidate { parent, token, log_prob, fate }).collect(),
            );
        }
        self.live = next;
        if cfg.stopping == Stopping::Bound {
            // The K best by score, best first (a stable sort: ties keep the order they ended in).
            self.finished.sort_by(|x, y| y.score.total_cmp(&x.score));
            self.finished.truncate(k);
        }
        parents
    }

    /// Whether this input's search is over: no live beam, or what
    /// `cfg.stopping` asks for.
    fn done(&self, cfg: BeamConfig) -> bool {
        let Some(best_live) = self.live.first() else { return true };
        match cfg.stopping {
            Stopping::KFinished => self.finished.len() >= cfg.beam_size,
            Stopping::Bound if self.finished.len() < cfg.n_best => false,
            Stopping::Bound => {
                // A live beam's log p only falls and cp ≤ 0, so no output of
                // it scores above log p / lp(max_len) + γ·n at the best n.
                let n = best_live.tokens.len() + 1;
                let reward = (cfg.gamma * n as f32).max(cfg.gamma * self.max_len as f32);
                let best_possible = best_live.log_prob / length_penalty(self.max_len, cfg.alpha) + reward;
                best_possible <= self.finished[cfg.n_best - 1].score
            }
        }
    }

    /// The `n_best` outputs of a done input: its finished hypotheses and,
    /// when `max_len` cut it short, its live beams as unfinished ones.
    fn n_best(self, cfg: BeamConfig) -> Vec<Hypothesis> {
        let mut all = self.finished;
        all.extend(self.live.into_iter().map(|beam| finish(beam, cfg, self.src_len)));
        // Finished outputs rank above unfinished ones, then by score.
        all.sort_by(|x, y| y.finished().cmp(&x.finished()).then(y.score.total_cmp(&x.score)));
        all.truncate(cfg.n_best);
        all
    }
}

/// The `k` largest `base + (z - log_sum)` over a row of logits `z`, with
/// their tokens, best first (ties: the smaller token first): the order a
/// full sort of the row by `(value, token)` would give, in one pass that
/// keeps a sorted list of `k`.
fn top_k(row: &[f32], log_sum: f32, base: f32, k: usize) -> Vec<(f32, usize)> {
    let value = |z: f32| base + (z - log_sum); // the beam's log p plus this token's
    let mut best: Vec<(f32, usize)> = Vec::with_capacity(k + 1);
    for (chunk, zs) in row.chunks(16).enumerate() {
        // Once K are kept, most blocks of 16 hold nothing better than the
        // worst of them: one branch-free test per block skips those.
        if let (true, Some(&(worst, _))) = (best.len() == k, best.last())
            && zs.iter().fold(true, |below, &z| below & (value(z) < worst))
        {
            continue;
        }
        for (i, &z) in zs.iter().enumerate() {
            let (value, token) = (value(z), chunk * 16 + i);
            // Tokens come in increasing order, so a tie never displaces an earlier token.
            if best.len() == k && best.last().is_none_or(|&(worst, _)| value.total_cmp(&worst).is_le()) {
                continue;
            }
            let at = best.partition_point(|&(v, _)| v.total_cmp(&value).is_ge());
            best.insert(at, (value, token));
            best.truncate(k);
        }
    }
    best
}

/// A beam as an output, with its score `log p / lp(|tokens|) + cp + γ·|tokens|`.
fn finish(beam: Beam, cfg: BeamConfig, src_len: usize) -> Hypothesis {
    let attention = stack_rows(&beam.attention);
    let score = beam.log_prob / length_penalty(beam.tokens.len(), cfg.alpha)
        + coverage_penalty(attention.as_ref(), src_len, cfg.beta)
        + cfg.gamma * beam.tokens.len() as f32;
    Hypothesis { score, log_prob: beam.log_prob, attention, tokens: beam.tokens }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_cut_into_the_fewest_even_groups() {
        let sizes = |n: usize| {
            let src = Array2::<usize>::zeros((n, 3));
            in_groups(&src, &vec![3; n], |src, _| Ok(vec![src.nrows()])).unwrap()
        };
        assert_eq!(sizes(32), [32]);
        assert_eq!(sizes(33), [16, 17]);
        assert_eq!(sizes(51), [25, 26]);
        assert_eq!(sizes(64), [32, 32]);
        assert_eq!(sizes(256), [32; 8]);
    }
}
