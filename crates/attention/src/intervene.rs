//! Interventions: a trained model's attention weights replaced after the
//! softmax, to measure whether the model uses its attention and whether it
//! looks in the right place (what `lingo probe` reports).
//!
//! The model scores and normalizes as usual; then each query row's weights
//! over its visible source positions (not padding) are replaced, head by
//! head, and the context is computed again from the new weights:
//!
//! ```text
//! W'[t, ·] = replace(W[t, ·])      over the visible positions s
//! C'[t]    = Σ_s W'[t, s] · v_s     per head, side by side (then W_o for multi_head)
//! ```
//!
//! | intervention | `W'[t, ·]` | what it asks |
//! |---|---|---|
//! | [`Uniform`](Intervention::Uniform) | `1/n` on each of the `n` visible positions | does the model need to know where to look? |
//! | [`Shuffled`](Intervention::Shuffled) | the row's own weights, permuted among the visible positions | does it need the places, given the same sharpness? |
//! | [`OneHot`](Intervention::OneHot) | 1 on the row's largest weight | is the peak alone enough? |
//! | [`Gold`](Intervention::Gold) | uniform over the row's gold source positions | what would the right alignment give? |
//! | [`ZeroContext`](Intervention::ZeroContext) | `W` kept, `C' = 0` | what does the decoder do with no context at all? |
//!
//! Interventions are for evaluation: the new context is a constant, and no
//! gradient flows through it.

use std::fmt;
use std::sync::Arc;

use lingo_kernels::gemm_new;
use lingo_tensor::Tensor;
use ndarray::{Array3, Array4, ArrayView4, Axis, s};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use crate::error::{Error, Result};
use crate::mask::Masking;
use crate::output::AttentionOutput;

/// What replaces the attention weights; see the [module docs](self).
///
/// ```
/// use lingo_attention::Intervention;
/// let all: Vec<Intervention> = ["uniform", "shuffled", "one_hot", "zero_context"].iter().map(|s| s.parse().unwrap()).collect();
/// assert_eq!(all[1], Intervention::Shuffled { seed: 0 });
/// assert_eq!(all[2].to_string(), "one_hot");
/// assert!("gold".parse::<Intervention>().is_err()); // gold needs the task's links: Intervention::Gold(GoldLinks::new(..))
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Intervention {
    /// Equal weight on every visible source position.
    Uniform,
    /// The row's own weights in a random order among the visible positions,
    /// one permutation per row and head drawn from `seed`.
    Shuffled {
        /// Seeds the permutations.
        seed: u64,
    },
    /// All the weight on the row's largest weight (the first, on ties).
    OneHot,
    /// Equal weight on the row's gold source positions; a row without gold
    /// positions (`<eos>`) keeps the model's own weights.
    Gold(GoldLinks),
    /// The model's weights, but a context of zeros.
    ZeroContext,
}

impl fmt::Display for Intervention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Intervention::Uniform => "uniform",
            Intervention::Shuffled { .. } => "shuffled",
            Intervention::OneHot => "one_hot",
            Intervention::Gold(_) => "gold",
            Intervention::ZeroContext => "zero_context",
        })
    }
}

impl std::str::FromStr for Intervention {
    type Err = Error;

    /// `uniform`, `shuffled` (seed 0), `one_hot`, `zero_context`; `gold`
    /// needs the task's links, so it is built with [`GoldLinks::new`].
    fn from_str(s: &str) -> Result<Intervention> {
        match s {
            "uniform" => Ok(Intervention::Uniform),
            "shuffled" => Ok(Intervention::Shuffled { seed: 0 }),
            "one_hot" => Ok(Intervention::OneHot),
            "zero_context" => Ok(Intervention::ZeroContext),
            _ => Err(Error::Intervention {
                name: s.to_string(),
                why: "the names are uniform, shuffled, one_hot and zero_context (gold is built from a task's links)"
                    .into(),
            }),
        }
    }
}

/// The gold alignment of a batch: `links[b][t]`, the source positions
/// (indices into the source row, `<sos>` at 0) that target position `t` of
/// batch row `b` comes from. Rows and positions past the end, and empty
/// lists, have no gold.
///
/// ```
/// use lingo_attention::GoldLinks;
/// let gold = GoldLinks::new(vec![vec![vec![2], vec![1], vec![]], vec![vec![1]]]);
/// assert_eq!(gold.at(0, 1), &[1]);
/// assert!(gold.at(0, 2).is_empty() && gold.at(1, 5).is_empty());
/// assert_eq!(gold.select_rows(&[1, 1]).at(1, 0), &[1]);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GoldLinks(Arc<Vec<Vec<Vec<usize>>>>);

impl GoldLinks {
    /// Links by batch row, then target position.
    ///
    /// ```
    /// assert_eq!(lingo_attention::GoldLinks::new(vec![vec![vec![3]]]).at(0, 0), &[3]);
    /// ```
    pub fn new(links: Vec<Vec<Vec<usize>>>) -> GoldLinks {
        GoldLinks(Arc::new(links))
    }

    /// The gold source positions of target position `t` in batch row `b`
    /// (empty when there are none).
    ///
    /// ```
    /// assert!(lingo_attention::GoldLinks::default().at(0, 0).is_empty());
    /// ```
    pub fn at(&self, b: usize, t: usize) -> &[usize] {
        self.0.get(b).and_then(|row| row.get(t)).map_or(&[], Vec::as_slice)
    }

    /// The links of the given batch rows, in that order (repeats allowed):
    /// they follow a decoder that copies sources per beam or drops rows.
    ///
    /// ```
    /// let gold = lingo_attention::GoldLinks::new(vec![vec![vec![1]], vec![vec![2]]]);
    /// assert_eq!(gold.select_rows(&[1, 0]).at(0, 0), &[2]);
    /// ```
    pub fn select_rows(&self, rows: &[usize]) -> GoldLinks {
        GoldLinks::new(rows.iter().map(|&b| self.0.get(b).cloned().unwrap_or_default()).collect())
    }
}

impl Intervention {
    /// The same intervention for the given batch rows (see [`GoldLinks::select_rows`]).
    ///
    /// ```
    /// use lingo_attention::{GoldLinks, Intervention};
    /// let gold = Intervention::Gold(GoldLinks::new(vec![vec![vec![1]], vec![vec![2]]]));
    /// assert_eq!(gold.select_rows(&[1]), Intervention::Gold(GoldLinks::new(vec![vec![vec![2]]])));
    /// assert_eq!(Intervention::Uniform.select_rows(&[0, 0]), Intervention::Uniform);
    /// ```
    pub fn select_rows(&self, rows: &[usize]) -> Intervention {
        match self {
            Intervention::Gold(links) => Intervention::Gold(links.select_rows(rows)),
            other => other.clone(),
        }
    }

    /// Replaces the weights of an attention call's output and recomputes its
    /// context from `values (batch, src_len, heads·d_v)`: `out` as the fused
    /// ops return it (one head: `weights`; several: `head_weights`), for
    /// queries at target positions `first_position..` (a decoder step passes
    /// its own position; gold links are looked up by it). `src_pad_mask
    /// (batch, src_len)` is true at padding. Errors when a gold position lies
    /// outside its source.
    ///
    /// ```
    /// use lingo_attention::{Intervention, dot_product_attention};
    /// use lingo_tensor::Tensor;
    /// let q = Tensor::from_vec(vec![5.0, 0.0], &[1, 1, 2]).unwrap();
    /// let k = Tensor::from_vec(vec![1.0, 0.0, 0.0, 1.0, 1.0, 1.0], &[1, 3, 2]).unwrap();
    /// let pad = ndarray::arr2(&[[false, false, true]]);
    /// let out = dot_product_attention(&q, &k, &k, 1, 1.0, Some(&pad), false).unwrap();
    /// let uniform = Intervention::Uniform.replace(out, &k, 1, Some(&pad), 0).unwrap();
    /// assert_eq!(uniform.weights.to_vec(), vec![0.5, 0.5, 0.0]);   // padding stays at 0
    /// assert_eq!(uniform.context.to_vec(), vec![0.5, 0.5]);        // the mean of the two visible values
    /// ```
    pub fn replace(
        &self,
        out: AttentionOutput,
        values: &Tensor,
        heads: usize,
        src_pad_mask: Option<&ndarray::Array2<bool>>,
        first_position: usize,
    ) -> Result<AttentionOutput> {
        self.replace_masked(out, values, heads, &Masking::new(src_pad_mask, false), first_position)
    }

    /// [`replace`](Self::replace) with the mask the attention call used.
    pub(crate) fn replace_masked(
        &self,
        out: AttentionOutput,
        values: &Tensor,
        heads: usize,
        mask: &Masking,
        first_position: usize,
    ) -> Result<AttentionOutput> {
        // (batch, heads, tgt_len, src_len): one head's weights get a heads axis.
        let weights = match &out.head_weights {
            Some(w) => w.data().clone().into_dimensionality().map_err(|e| shape_error(&e))?,
            None => {
                out.weights.data().clone().insert_axis(Axis(1)).into_dimensionality().map_err(|e| shape_error(&e))?
            }
        };
        let new = self.weights(weights.view(), mask, first_position)?;
        let context = match self {
            Intervention::ZeroContext => Array3::zeros((weights.dim().0, weights.dim().2, values.shape()[2])),
            _ => weighted_sum(&new, values)?,
        };
        let mean = new.mean_axis(Axis(1)).expect("at least one head");
        Ok(AttentionOutput {
            context: Tensor::new(context.into_dyn()),
            weights: Tensor::new(mean.into_dyn()),
            head_weights: (heads > 1).then(|| Tensor::new(new.into_dyn())),
        })
    }

    /// The replaced weights `(batch, heads, tgt_len, src_len)`.
    fn weights(&self, w: ArrayView4<'_, f32>, mask: &Masking, first_position: usize) -> Result<Array4<f32>> {
        let (n_b, n_h, n_t, n_s) = w.dim();
        let mut new = w.to_owned();
        for b in 0..n_b {
            for t in 0..n_t {
                let row = mask.row(b, t, n_t, n_s);
                let visible: Vec<usize> = (0..n_s).filter(|&s| row.visible(s)).collect();
                if visible.is_empty() {
                    continue; // nothing to attend to: keep the uniform row the softmax gave
                }
                for h in 0..n_h {
                    let mut out = new.slice_mut(s![b, h, t, ..]);
                    let own = w.slice(s![b, h, t, ..]);
                    match self {
                        Intervention::Uniform => spread(&mut out, &visible),
                        Intervention::Shuffled { seed } => {
                            // A permutation per (row, position, head), the same on every run.
                            let key = seed ^ ((b as u64) << 40 ^ ((first_position + t) as u64) << 20 ^ h as u64);
                            let mut places = visible.clone();
                            places.shuffle(&mut StdRng::seed_from_u64(key));
                            out.fill(0.0);
                            for (&from, &to) in visible.iter().zip(&places) {
                                out[to] = own[from];
                            }
                        }
                        Intervention::OneHot => {
                            let peak =
                                visible.iter().copied().fold(visible[0], |m, s| if own[s] > own[m] { s } else { m });
                            spread(&mut out, &[peak]);
                        }
                        Intervention::Gold(links) => {
                            let gold = links.at(b, first_position + t);
                            if let Some(&bad) = gold.iter().find(|&&s| s >= n_s) {
                                return Err(Error::Intervention {
                                    name: "gold".into(),
                                    why: format!(
                                        "batch row {b}, target position {}: gold source position {bad} is outside a source of {n_s}",
                                        first_position + t
                                    ),
                                });
                            }
                            if !gold.is_empty() {
                                spread(&mut out, gold);
                            }
                        }
                        Intervention::ZeroContext => {}
                    }
                }
            }
        }
        Ok(new)
    }
}

/// Equal weight on `places`, zero elsewhere.
fn spread(row: &mut ndarray::ArrayViewMut1<'_, f32>, places: &[usize]) {
    row.fill(0.0);
    for &s in places {
        row[s] = 1.0 / places.len() as f32;
    }
}

/// `C[b, t, h·d_v..] = W[b, h, t, ·] · V[b, ·, h·d_v..]`, head by head.
fn weighted_sum(w: &Array4<f32>, values: &Tensor) -> Result<Array3<f32>> {
    let v = values.data().view().into_dimensionality::<ndarray::Ix3>().map_err(|e| shape_error(&e))?;
    let (n_b, n_h, n_t, _) = w.dim();
    let d_v = v.dim().2 / n_h;
    let mut context = Array3::zeros((n_b, n_t, n_h * d_v));
    for b in 0..n_b {
        for h in 0..n_h {
            let cols = h * d_v..(h + 1) * d_v;
            let c = gemm_new(1.0, w.slice(s![b, h, .., ..]), v.slice(s![b, .., cols.clone()]));
            context.slice_mut(s![b, .., cols]).assign(&c);
        }
    }
    Ok(context)
}

fn shape_error(e: &ndarray::ShapeError) -> Error {
    Error::Intervention { name: "any".into(), why: format!("attention output of an unexpected rank: {e}") }
}
