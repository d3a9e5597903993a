//! One attention score worked through, for a learner: the query and key as
//! the score reads them, the terms that add up to it, the scaling, the
//! mask, the softmax over the row and the context it weighs. Plain loops
//! over the layer's own parameters, one row at a time, beside the fused
//! kernels that train; the tests hold the two to each other.

use lingo_tensor::Tensor;
use ndarray::{ArrayView1, ArrayView2, Ix2};

use crate::attention::{Attention, Weights};
use crate::error::{Result, invalid};
use crate::scorer::Scorer;

/// Every intermediate of one row of attention and of one cell of it
/// ([`Attention::explain`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreSteps {
    /// The scorer.
    pub scorer: Scorer,
    /// The source position whose score the `terms` add up to.
    pub source: usize,
    /// One per head: a single one for every scorer but `multi_head`.
    pub heads: Vec<HeadSteps>,
    /// The row's weights as the layer returns them: the head's, or for
    /// `multi_head` the mean over heads.
    pub weights: Vec<f32>,
    /// The context, `Σ_s w_s v_s` (for `multi_head`, each head's weighted
    /// sum of its projected values, concatenated and projected by `W_o`).
    pub context: Vec<f32>,
}

/// One head's score of the cell, step by step, and its row.
#[derive(Debug, Clone, PartialEq)]
pub struct HeadSteps {
    /// The query as the score reads it: `q` (dot, scaled dot, general),
    /// `W_q q` (additive), this head's slice of `W_q q` (multi_head).
    pub query: Vec<f32>,
    /// The cell's key as the score reads it: `k` (dot, scaled dot), `W k`
    /// (general), `W_k k` (additive), this head's slice of `W_k k`.
    pub key: Vec<f32>,
    /// Additive only: `W_q q + W_k k` before the `tanh`.
    pub hidden: Option<Vec<f32>>,
    /// What the raw score sums: `query_i · key_i`, or `v_i · tanh(hidden_i)`.
    pub terms: Vec<f32>,
    /// The factor on that sum: 1, or `1/√d` for the scaled scores.
    pub scale: f32,
    /// The row's scores, one per source position, scaled; `-∞` where the
    /// mask hides a position.
    pub scores: Vec<f32>,
    /// `softmax(scores)`: this head's weights over the row.
    pub weights: Vec<f32>,
    /// Each position's value as the head weighs it: `v_s`, or this head's
    /// slice of `W_v v_s` (multi_head).
    pub values: Vec<Vec<f32>>,
    /// `Σ_s w_s v_s`: this head's context (for multi_head, before the heads
    /// are concatenated and projected by `W_o`).
    pub context: Vec<f32>,
}

impl Attention {
    /// One row of attention worked through, and the score of its cell at
    /// `source`: `query (d_q)` is a decoder state, `keys (src_len, d_k)` and
    /// `values (src_len, d_v)` a sentence's encoder outputs, `padded` the
    /// positions its padding mask hides. The numbers are this layer's: the
    /// weights and context equal what [`forward`](Attention::forward)
    /// returns for the same row, to float rounding.
    ///
    /// # Errors
    /// Sizes that do not match the layer's, `source` outside the source, a
    /// mask of the wrong length, or a row with every position masked.
    ///
    /// ```
    /// use lingo_attention::{Attention, AttentionConfig, Scorer};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let config = AttentionConfig { scorer: Scorer::Additive, query_dim: 4, key_dim: 4, attn_dim: 3 };
    /// let attn = Attention::new("attn", &config, &mut rng).unwrap();
    /// let enc_out = ndarray::Array2::from_shape_fn((5, 4), |(s, i)| (s * 4 + i) as f32 / 20.0);
    /// let h_t = ndarray::arr1(&[0.5_f32, -0.25, 1.0, 0.0]);
    /// let steps = attn.explain(h_t.view(), enc_out.view(), enc_out.view(), None, 2).unwrap();
    /// let head = &steps.heads[0];
    /// // The terms add up to the cell's score, and the row's weights sum to 1.
    /// assert!((head.terms.iter().sum::<f32>() - head.scores[2]).abs() < 1e-6);
    /// assert!((steps.weights.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    /// ```
    pub fn explain(
        &self,
        query: ArrayView1<'_, f32>,
        keys: ArrayView2<'_, f32>,
        values: ArrayView2<'_, f32>,
        padded: Option<&[bool]>,
        source: usize,
    ) -> Result<ScoreSteps> {
        const OP: &str = "Attention::explain";
        let config = self.config();
        let src_len = keys.nrows();
        if query.len() != config.query_dim || keys.ncols() != config.key_dim || values.nrows() != src_len {
            return Err(invalid(
                OP,
                "query (query_dim), keys (src_len, key_dim) and values (src_len, d_v) must fit the layer",
            ));
        }
        if source >= src_len || padded.is_some_and(|p| p.len() != src_len) {
            return Err(invalid(
                OP,
                format!("source {source} and the mask must lie in the {src_len} source positions"),
            ));
        }
        let hidden = |s: usize| padded.is_some_and(|p| p[s]);
        if (0..src_len).all(hidden) {
            return Err(invalid(OP, "every source position is masked: the row has no weights"));
        }
        let rows = |t: &Tensor| t.data().view().into_dimensionality::<Ix2>().expect("a weight matrix").to_owned();
        // x ↦ W x for a weight W (out, in), as `linear` applies it.
        let apply = |w: &ndarray::Array2<f32>, x: ArrayView1<'_, f32>| w.dot(&x).to_vec();
        let q = query.to_vec();
        let key_rows: Vec<Vec<f32>> = keys.rows().into_iter().map(|k| k.to_vec()).collect();
        let value_rows: Vec<Vec<f32>> = values.rows().into_iter().map(|v| v.to_vec()).collect();
        let heads = match &self.weights {
            Weights::None => {
                let scale = if config.scorer == Scorer::ScaledDot { 1.0 / (config.key_dim as f32).sqrt() } else { 1.0 };
                vec![dot_head(&q, &key_rows, value_rows, source, scale, hidden)]
            }
            Weights::General { w } => {
                let w = rows(w.tensor());
                let projected: Vec<Vec<f32>> = keys.rows().into_iter().map(|k| apply(&w, k)).collect();
                vec![dot_head(&q, &projected, value_rows, source, 1.0, hidden)]
            }
            Weights::Additive { w_q, w_k, v } => {
                let (w_q, w_k) = (rows(w_q.tensor()), rows(w_k.tensor()));
                let v: Vec<f32> = v.tensor().data().iter().copied().collect();
                let q_proj = apply(&w_q, query);
                let k_proj: Vec<Vec<f32>> = keys.rows().into_iter().map(|k| apply(&w_k, k)).collect();
                // score(q, k) = v · tanh(W_q q + W_k k)
                let sum = |k: &[f32]| -> Vec<f32> { q_proj.iter().zip(k).map(|(a, b)| a + b).collect() };
                let terms = |h: &[f32]| -> Vec<f32> { v.iter().zip(h).map(|(v, h)| v * h.tanh()).collect() };
                let scores: Vec<f32> = (0..src_len)
                    .map(|s| if hidden(s) { f32::NEG_INFINITY } else { terms(&sum(&k_proj[s])).iter().sum() })
                    .collect();
                let weights = softmax(&scores);
                vec![HeadSteps {
                    key: k_proj[source].clone(),
                    hidden: Some(sum(&k_proj[source])),
                    terms: terms(&sum(&k_proj[source])),
                    scale: 1.0,
                    context: weigh(&weights, &value_rows),
                    weights,
                    scores,
                    query: q_proj,
                    values: value_rows,
                }]
            }
            Weights::MultiHead { w_q, w_k, w_v, w_o } => {
                let q_proj = apply(&rows(w_q.tensor()), query);
                let k_proj: Vec<Vec<f32>> = keys.rows().into_iter().map(|k| apply(&rows(w_k.tensor()), k)).collect();
                let v_proj: Vec<Vec<f32>> = values.rows().into_iter().map(|v| apply(&rows(w_v.tensor()), v)).collect();
                let w_o = rows(w_o.tensor());
                let project = |concat: &[f32]| apply(&w_o, ArrayView1::from(concat));
                let heads = config.scorer.heads();
                return Ok(ScoreSteps::multi_head(&q_proj, &k_proj, &v_proj, heads, padded, source, project));
            }
        };
        let (weights, context) = (heads[0].weights.clone(), heads[0].context.clone());
        Ok(ScoreSteps { scorer: config.scorer, source, weights, heads, context })
    }
}

impl ScoreSteps {
    /// Multi-head attention of one row from its projections: `query (A)`,
    /// the keys' and values' rows `(src_len, A)`, cut into `heads` heads of
    /// `d = A / heads` scored by `q_h · k_h / √d`; the heads' contexts,
    /// concatenated, go through `project` (`W_o`, and its bias if any).
    /// Positions where `padded` is true are hidden (for causal
    /// self-attention, mark the later positions too). Checked sizes are the
    /// caller's: [`Attention::explain`] and lingo-nn's Transformer layer.
    ///
    /// ```
    /// use lingo_attention::ScoreSteps;
    /// let keys = vec![vec![1.0, 0.0, 0.0, 1.0], vec![0.0, 1.0, 1.0, 0.0]];
    /// let steps = ScoreSteps::multi_head(&[1.0, 0.0, 0.0, 1.0], &keys, &keys, 2, None, 0, |c| c.to_vec());
    /// // Head 0 reads (1, 0): position 0 scores 1/√2, position 1 scores 0.
    /// assert!((steps.heads[0].scores[0] - 0.5_f32.sqrt()).abs() < 1e-6 && steps.heads[0].scores[1] == 0.0);
    /// assert_eq!(steps.context.len(), 4);
    /// ```
    pub fn multi_head(
        query: &[f32],
        keys: &[Vec<f32>],
        values: &[Vec<f32>],
        heads: usize,
        padded: Option<&[bool]>,
        source: usize,
        project: impl FnOnce(&[f32]) -> Vec<f32>,
    ) -> ScoreSteps {
        let d = query.len() / heads;
        let slice = |x: &[f32], h: usize| x[h * d..(h + 1) * d].to_vec();
        let hidden = |s: usize| padded.is_some_and(|p| p[s]);
        let mut concat = Vec::with_capacity(query.len());
        let heads: Vec<HeadSteps> = (0..heads)
            .map(|h| {
                let head_keys: Vec<Vec<f32>> = keys.iter().map(|k| slice(k, h)).collect();
                let head_values: Vec<Vec<f32>> = values.iter().map(|v| slice(v, h)).collect();
                let head = dot_head(&slice(query, h), &head_keys, head_values, source, 1.0 / (d as f32).sqrt(), hidden);
                concat.extend_from_slice(&head.context);
                head
            })
            .collect();
        let n = heads.len() as f32;
        let weights = (0..keys.len()).map(|s| heads.iter().map(|h| h.weights[s]).sum::<f32>() / n).collect();
        let scorer = Scorer::MultiHead { heads: heads.len() };
        ScoreSteps { scorer, source, heads, weights, context: project(&concat) }
    }
}

/// A dot-product head: `query · key_s · scale` for every position `s`,
/// and the weighted sum of `values`.
fn dot_head(
    query: &[f32],
    keys: &[Vec<f32>],
    values: Vec<Vec<f32>>,
    source: usize,
    scale: f32,
    hidden: impl Fn(usize) -> bool,
) -> HeadSteps {
    let terms = |k: &[f32]| -> Vec<f32> { query.iter().zip(k).map(|(q, k)| q * k).collect() };
    let scores: Vec<f32> = (0..keys.len())
        .map(|s| if hidden(s) { f32::NEG_INFINITY } else { terms(&keys[s]).iter().sum::<f32>() * scale })
        .collect();
    let weights = softmax(&scores);
    HeadSteps {
        query: query.to_vec(),
        key: keys[source].clone(),
        hidden: None,
        terms: terms(&keys[source]),
        scale,
        context: weigh(&weights, &values),
        weights,
        scores,
        values,
    }
}

/// `softmax(x)_s = e^{x_s - max x} / Σ_s' e^{x_s' - max x}`; `-∞` gets 0.
fn softmax(scores: &[f32]) -> Vec<f32> {
    let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exps: Vec<f32> = scores.iter().map(|&x| (x - max).exp()).collect();
    let total: f32 = exps.iter().sum();
    exps.iter().map(|e| e / total).collect()
}

/// `Σ_s w_s v_s` over the rows `v_s`.
fn weigh(weights: &[f32], values: &[Vec<f32>]) -> Vec<f32> {
    let mut out = vec![0.0; values.first().map_or(0, Vec::len)];
    for (w, v) in weights.iter().zip(values) {
        out.iter_mut().zip(v).for_each(|(o, x)| *o += w * x);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_ignores_masked_positions_and_sums_to_one() {
        let w = softmax(&[1.0, f32::NEG_INFINITY, 2.0]);
        assert_eq!(w[1], 0.0);
        assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-6 && w[2] > w[0]);
    }
}
