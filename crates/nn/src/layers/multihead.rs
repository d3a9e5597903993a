//! Multi-head attention with PyTorch's `nn.MultiheadAttention` parameters:
//! Luong's dot attention, scaled by `1/√d_head`, run in parallel heads, on
//! learned projections of the queries, keys and values.
//!
//! ```text
//! q = x·W_qᵀ + b_q    k = m·W_kᵀ + b_k    v = m·W_vᵀ + b_v          (batch, len, d)
//! head_h = softmax(q_h k_hᵀ / √d_head + mask) v_h                    d_head = d / heads
//! out = [head_1 | … | head_H]·W_oᵀ + b_o
//! ```
//!
//! `x = m` is self-attention, `m = enc_out` cross-attention. `W_q`, `W_k` and
//! `W_v` are the three row blocks of one `in_proj_weight (3d, d)`, as in
//! PyTorch, so self-attention projects all three with one product.

use lingo_attention::{AttentionOutput, Intervention, ScoreSteps, dot_product_attention, plain};
use lingo_tensor::init::xavier_uniform;
use lingo_tensor::{Param, Tensor};
use ndarray::{Array2, ArrayD, ArrayView1, ArrayView2, Ix2, IxDyn};

use super::{Linear, Mode, param_name, positive};
use crate::error::{Result, config};
use crate::init::Weights;

/// Queries, keys and values after the input projection, each `(batch, len, d)`.
#[derive(Debug, Clone)]
pub struct Projected {
    /// `x·W_qᵀ + b_q`.
    pub q: Tensor,
    /// `m·W_kᵀ + b_k`.
    pub k: Tensor,
    /// `m·W_vᵀ + b_v`.
    pub v: Tensor,
}

/// What [`MultiheadAttention::attend`] returns.
#[derive(Debug, Clone)]
pub struct HeadsOutput {
    /// `[head_1 | … | head_H]·W_oᵀ + b_o`, `(batch, tgt_len, d)`.
    pub out: Tensor,
    /// Each head's weights `(batch, heads, tgt_len, src_len)`, before
    /// dropout: a tensor, so a loss may pull on them (guided alignment);
    /// `.data()` gives the array.
    pub weights: Tensor,
}

/// `nn.MultiheadAttention(d, heads, dropout, batch_first=True)`: parameters
/// `{prefix}.in_proj_weight (3d, d)`, `{prefix}.in_proj_bias (3d)`,
/// `{prefix}.out_proj.weight (d, d)` and `{prefix}.out_proj.bias (d)`; see
/// the [module docs](self) for the math.
///
/// ```
/// use lingo_nn::{Init, Mode, MultiheadAttention};
/// use lingo_tensor::{Module, Tensor};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let attn = MultiheadAttention::new("decoder.layers.0.self_attn", 8, 2, 0.0, Init::default(), &mut rng).unwrap();
/// assert_eq!(attn.params()[0].name(), "decoder.layers.0.self_attn.in_proj_weight");
/// assert_eq!(attn.params()[0].shape(), &[24, 8]);
/// let x = Tensor::randn(&[3, 5, 8], 1.0, &mut rng).unwrap();        // (batch, tgt_len, d)
/// let out = attn.forward(&x, &x, None, true, Mode::Eval).unwrap();  // causal self-attention
/// assert_eq!(out.out.shape(), &[3, 5, 8]);
/// assert_eq!(out.weights.shape(), &[3, 2, 5, 5]);                  // (batch, heads, tgt_len, src_len)
/// assert_eq!(out.weights.data()[[0, 1, 0, 1]], 0.0);                // position 0 cannot see 1
/// ```
#[derive(Debug, Clone)]
pub struct MultiheadAttention {
    in_proj_weight: Param,
    in_proj_bias: Param,
    out_proj: Linear,
    heads: usize,
    dropout: f32,
}

impl MultiheadAttention {
    /// A layer of model size `d` and `heads` heads (which must divide `d`),
    /// with dropout `dropout` on the attention weights when training.
    /// Initialised as PyTorch does: `in_proj_weight` Xavier-uniform, its bias
    /// zero; `out_proj` is a [`Linear`] and initialised as one by `init`.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let err = lingo_nn::MultiheadAttention::new("attn", 10, 4, 0.0, lingo_nn::Init::default(), &mut rng);
    /// assert!(err.unwrap_err().to_string().contains("divide"));
    /// ```
    pub fn new(
        prefix: &str,
        d: usize,
        heads: usize,
        dropout: f32,
        init: crate::Init,
        mut rng: &mut impl rand::RngCore,
    ) -> Result<MultiheadAttention> {
        MultiheadAttention::build(prefix, d, heads, dropout, &mut Weights::Fresh(init, &mut rng))
    }

    /// [`MultiheadAttention::new`] with its weights drawn or taken from saved ones.
    pub(crate) fn build(
        prefix: &str,
        d: usize,
        heads: usize,
        dropout: f32,
        weights: &mut Weights<'_>,
    ) -> Result<MultiheadAttention> {
        positive("attention model dimension", d)?;
        positive("attention heads", heads)?;
        if !d.is_multiple_of(heads) {
            return Err(config("attention heads", format!("{heads} heads do not divide the model dimension {d}")));
        }
        if !(0.0..1.0).contains(&dropout) {
            return Err(config("attention dropout", format!("must be in [0, 1), got {dropout}")));
        }
        let names = [param_name(prefix, "in_proj_weight"), param_name(prefix, "in_proj_bias")];
        let [in_proj_weight, in_proj_bias] = weights.params(names, [&[3 * d, d], &[3 * d]], |_, rng| {
            Ok([xavier_uniform(&[3 * d, d], 1.0, rng)?, ArrayD::zeros(IxDyn(&[3 * d]))])
        })?;
        let out_proj = Linear::build(&param_name(prefix, "out_proj"), d, d, true, weights)?;
        Ok(MultiheadAttention { in_proj_weight, in_proj_bias, out_proj, heads, dropout })
    }

    /// The model dimension `d`.
    ///
    /// ```
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let attn = lingo_nn::MultiheadAttention::new("a", 8, 2, 0.0, lingo_nn::Init::default(), &mut rng).unwrap();
    /// assert_eq!((attn.dim(), attn.heads()), (8, 2));
    /// ```
    pub fn dim(&self) -> usize {
        self.in_proj_weight.shape()[1]
    }

    /// The number of heads.
    ///
    /// ```
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let attn = lingo_nn::MultiheadAttention::new("a", 8, 4, 0.0, lingo_nn::Init::default(), &mut rng).unwrap();
    /// assert_eq!(attn.heads(), 4);
    /// ```
    pub fn heads(&self) -> usize {
        self.heads
    }

    /// `x·W[rows]ᵀ + b[rows]` for parts `[start, start + len)` of the input
    /// projection (0: q, 1: k, 2: v); the weight's rows read in place when
    /// decoding ([`Param::linear_rows`](lingo_tensor::Param::linear_rows)).
    fn project_rows(&self, x: &Tensor, start: usize, len: usize) -> Result<Tensor> {
        let rows = start * self.dim()..(start + len) * self.dim();
        let b = self.in_proj_bias.tensor().narrow(0, rows.start, rows.len())?;
        Ok(self.in_proj_weight.linear_rows(x, rows, Some(&b))?)
    }

    /// `q`, `k` and `v` of self-attention over `x (batch, len, d)`, with one product.
    ///
    /// ```
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let attn = lingo_nn::MultiheadAttention::new("a", 4, 2, 0.0, lingo_nn::Init::default(), &mut rng).unwrap();
    /// let p = attn.project_self(&lingo_tensor::Tensor::ones(&[2, 3, 4])).unwrap();
    /// assert_eq!(p.q.shape(), p.v.shape());
    /// ```
    pub fn project_self(&self, x: &Tensor) -> Result<Projected> {
        let qkv = self.in_proj_weight.linear(x, Some(self.in_proj_bias.tensor()))?;
        let [q, k, v]: [Tensor; 3] = qkv.split(2, &[self.dim(); 3])?.try_into().expect("three parts");
        Ok(Projected { q, k, v })
    }

    /// `q` of `x (batch, tgt_len, d)` alone: a cross-attention query.
    ///
    /// ```
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let attn = lingo_nn::MultiheadAttention::new("a", 4, 2, 0.0, lingo_nn::Init::default(), &mut rng).unwrap();
    /// assert_eq!(attn.project_query(&lingo_tensor::Tensor::ones(&[2, 1, 4])).unwrap().shape(), &[2, 1, 4]);
    /// ```
    pub fn project_query(&self, x: &Tensor) -> Result<Tensor> {
        self.project_rows(x, 0, 1)
    }

    /// `(k, v)` of `memory (batch, src_len, d)` with one product: what every
    /// decoder step's cross-attention reads, computed once per source.
    ///
    /// ```
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let attn = lingo_nn::MultiheadAttention::new("a", 4, 2, 0.0, lingo_nn::Init::default(), &mut rng).unwrap();
    /// let (k, v) = attn.project_memory(&lingo_tensor::Tensor::ones(&[2, 7, 4])).unwrap();
    /// assert_eq!((k.shape(), v.shape()), (&[2, 7, 4][..], &[2, 7, 4][..]));
    /// ```
    pub fn project_memory(&self, memory: &Tensor) -> Result<(Tensor, Tensor)> {
        let kv = self.project_rows(memory, 1, 2)?;
        let [k, v]: [Tensor; 2] = kv.split(2, &[self.dim(); 2])?.try_into().expect("two parts");
        Ok((k, v))
    }

    /// The heads and the output projection on projected `q (batch, tgt_len, d)`,
    /// `k`, `v (batch, src_len, d)`, hiding keys at `key_pad_mask (batch,
    /// src_len)` (true at padding) and, with `causal`, later positions.
    ///
    /// Without dropout (evaluation, or `p = 0`) this is one call of the fused
    /// [`dot_product_attention`] kernel; with it, the weights are dropped out
    /// between the softmax and the weighted sum, which the kernel does not
    /// do, so the heads run as composed ops
    /// ([`plain::dot_product_attention_dropout`]).
    ///
    /// ```
    /// # use lingo_nn::Mode;
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let attn = lingo_nn::MultiheadAttention::new("a", 4, 2, 0.0, lingo_nn::Init::default(), &mut rng).unwrap();
    /// let enc_out = lingo_tensor::Tensor::randn(&[1, 3, 4], 1.0, &mut rng).unwrap();
    /// let (k, v) = attn.project_memory(&enc_out).unwrap();
    /// let q = attn.project_query(&lingo_tensor::Tensor::ones(&[1, 2, 4])).unwrap();
    /// let pad = ndarray::arr2(&[[false, false, true]]);
    /// let out = attn.attend(&q, &k, &v, Some(&pad), false, Mode::Eval).unwrap();
    /// assert_eq!(out.weights.data()[[0, 1, 1, 2]], 0.0);            // padding gets no weight
    /// ```
    pub fn attend(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        key_pad_mask: Option<&Array2<bool>>,
        causal: bool,
        mode: Mode<'_>,
    ) -> Result<HeadsOutput> {
        let scale = 1.0 / ((self.dim() / self.heads) as f32).sqrt();
        let heads = self.heads;
        let AttentionOutput { context, weights, head_weights } = match mode {
            Mode::Train(rng) if self.dropout > 0.0 => {
                plain::dot_product_attention_dropout(q, k, v, heads, scale, key_pad_mask, causal, self.dropout, rng)?
            }
            _ => dot_product_attention(q, k, v, heads, scale, key_pad_mask, causal)?,
        };
        self.finish(AttentionOutput { context, weights, head_weights })
    }

    /// [`attend`](Self::attend) in evaluation, with the weights replaced by
    /// `intervention` (queries at target positions `first_position..`) and
    /// the context computed from the new ones; see [`lingo_attention::intervene`].
    ///
    /// ```
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let attn = lingo_nn::MultiheadAttention::new("a", 4, 2, 0.0, lingo_nn::Init::default(), &mut rng).unwrap();
    /// let enc_out = lingo_tensor::Tensor::randn(&[1, 4, 4], 1.0, &mut rng).unwrap();
    /// let (k, v) = attn.project_memory(&enc_out).unwrap();
    /// let q = attn.project_query(&lingo_tensor::Tensor::ones(&[1, 1, 4])).unwrap();
    /// let uniform = lingo_attention::Intervention::Uniform;
    /// let out = attn.attend_intervened(&q, &k, &v, None, &uniform, 0).unwrap();
    /// assert!(out.weights.data().iter().all(|&w| w == 0.25));          // every head, every position
    /// ```
    pub fn attend_intervened(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        key_pad_mask: Option<&Array2<bool>>,
        intervention: &Intervention,
        first_position: usize,
    ) -> Result<HeadsOutput> {
        let scale = 1.0 / ((self.dim() / self.heads) as f32).sqrt();
        let out = dot_product_attention(q, k, v, self.heads, scale, key_pad_mask, false)?;
        self.finish(intervention.replace(out, v, self.heads, key_pad_mask, first_position)?)
    }

    /// One row of this layer worked through for a learner: `query (d)` one
    /// position's input, `memory (src_len, d)` what it attends to (the same
    /// sequence for self-attention), `padded` the positions hidden from it
    /// (padding, and for causal self-attention the later positions), the
    /// cell's score at `source` term by term. Every head's query, key,
    /// terms, scores and weights, and the output after `out_proj`
    /// ([`lingo_attention::ScoreSteps`]), from this layer's parameters
    /// (biases included), equal to [`forward`](Self::forward)'s in
    /// evaluation to float rounding.
    ///
    /// # Errors
    /// Sizes that do not fit the layer, `source` or a mask outside
    /// `memory`, or every position hidden.
    ///
    /// ```
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let attn = lingo_nn::MultiheadAttention::new("a", 4, 2, 0.0, lingo_nn::Init::default(), &mut rng).unwrap();
    /// let memory = ndarray::Array2::from_shape_fn((3, 4), |(s, i)| (s + i) as f32 / 4.0);
    /// let steps = attn.explain(memory.row(0), memory.view(), None, 1).unwrap();
    /// assert_eq!(steps.heads.len(), 2);
    /// assert_eq!(steps.context.len(), 4); // the layer's output for this position
    /// ```
    pub fn explain(
        &self,
        query: ArrayView1<'_, f32>,
        memory: ArrayView2<'_, f32>,
        padded: Option<&[bool]>,
        source: usize,
    ) -> Result<ScoreSteps> {
        let (d, src_len) = (self.dim(), memory.nrows());
        if query.len() != d || memory.ncols() != d {
            return Err(config("explain", format!("query and memory rows must have the layer's {d} features")));
        }
        if source >= src_len || padded.is_some_and(|p| p.len() != src_len || p.iter().all(|&h| h)) {
            return Err(config(
                "explain",
                format!("source {source} and the mask must fit {src_len} positions, not all hidden"),
            ));
        }
        let matrix = |t: &Tensor| t.data().view().into_dimensionality::<Ix2>().expect("a weight matrix").to_owned();
        let (w, b) = (
            matrix(self.in_proj_weight.tensor()),
            self.in_proj_bias.tensor().data().iter().copied().collect::<Vec<f32>>(),
        );
        // Block `part` (0: q, 1: k, 2: v) of the input projection on `x`: W_part x + b_part.
        let project = |part: usize, x: ArrayView1<'_, f32>| -> Vec<f32> {
            let y = w.slice(ndarray::s![part * d..(part + 1) * d, ..]).dot(&x);
            y.iter().zip(&b[part * d..(part + 1) * d]).map(|(y, b)| y + b).collect()
        };
        let keys: Vec<Vec<f32>> = memory.rows().into_iter().map(|m| project(1, m)).collect();
        let values: Vec<Vec<f32>> = memory.rows().into_iter().map(|m| project(2, m)).collect();
        let (w_o, b_o) =
            (matrix(self.out_proj.weight().tensor()), self.out_proj.bias().map(|b| b.tensor().data().clone()));
        let out = |concat: &[f32]| -> Vec<f32> {
            let y = w_o.dot(&ArrayView1::from(concat));
            match &b_o {
                Some(b) => y.iter().zip(b.iter()).map(|(y, b)| y + b).collect(),
                None => y.to_vec(),
            }
        };
        Ok(ScoreSteps::multi_head(&project(0, query), &keys, &values, self.heads, padded, source, out))
    }

    /// The heads' context through `out_proj`, and their weights `(batch, heads, tgt_len, src_len)`.
    fn finish(&self, AttentionOutput { context, weights, head_weights }: AttentionOutput) -> Result<HeadsOutput> {
        // One head: the ops return its weights alone, (batch, tgt_len, src_len).
        let weights = match head_weights {
            Some(heads) => heads,
            None => weights.unsqueeze(1)?,
        };
        Ok(HeadsOutput { out: self.out_proj.forward(&context)?, weights })
    }

    /// Projects and attends: `query (batch, tgt_len, d)` to `memory (batch,
    /// src_len, d)`; self-attention when both are the same tensor (then the
    /// input projection is one product).
    ///
    /// ```
    /// # use lingo_nn::Mode;
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let attn = lingo_nn::MultiheadAttention::new("a", 4, 1, 0.0, lingo_nn::Init::default(), &mut rng).unwrap();
    /// let (x, enc_out) = (lingo_tensor::Tensor::ones(&[2, 3, 4]), lingo_tensor::Tensor::ones(&[2, 5, 4]));
    /// let out = attn.forward(&x, &enc_out, None, false, Mode::Eval).unwrap();
    /// assert_eq!(out.weights.shape(), &[2, 1, 3, 5]);
    /// ```
    pub fn forward(
        &self,
        query: &Tensor,
        memory: &Tensor,
        key_pad_mask: Option<&Array2<bool>>,
        causal: bool,
        mode: Mode<'_>,
    ) -> Result<HeadsOutput> {
        let Projected { q, k, v } = if query.id() == memory.id() {
            self.project_self(query)?
        } else {
            let (k, v) = self.project_memory(memory)?;
            Projected { q: self.project_query(query)?, k, v }
        };
        self.attend(&q, &k, &v, key_pad_mask, causal, mode)
    }
}

lingo_tensor::module!(MultiheadAttention { in_proj_weight, in_proj_bias, out_proj });
