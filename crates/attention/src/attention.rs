//! [`Attention`]: a scorer with its parameters, and [`Prepared`] sources for
//! step-by-step decoding.

use lingo_tensor::{Param, RnnWeights, Tensor, init};
use ndarray::{Array2, ArrayD, IxDyn};
use rand::Rng;

use crate::error::{Error, Result, mismatch};
use crate::intervene::Intervention;
use crate::kernel::{additive::additive, bahdanau::bahdanau_gru, dot::dot_product};
use crate::mask::Masking;
use crate::output::{AttentionOutput, Recurrence};
use crate::scorer::Scorer;

/// The sizes of an attention layer.
///
/// ```
/// use lingo_attention::{AttentionConfig, Scorer};
/// let config = AttentionConfig { scorer: "additive".parse().unwrap(), query_dim: 64, key_dim: 128, attn_dim: 32 };
/// assert_eq!(config.scorer, Scorer::Additive);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionConfig {
    /// Which score.
    pub scorer: Scorer,
    /// `d_q`: the size of a query (the decoder state).
    pub query_dim: usize,
    /// `d_k`: the size of a key (an encoder output); values have it too for
    /// `multi_head`, and any size otherwise.
    pub key_dim: usize,
    /// `A`: the hidden size of `additive` and the model size of `multi_head`
    /// (split between the heads); ignored by `dot`, `scaled_dot` and `general`.
    pub attn_dim: usize,
}

/// The cost of one call in FLOPs (see [`crate::scorer`] for what is counted).
///
/// ```
/// # use lingo_attention::{AttentionConfig, Flops, Scorer};
/// let config = AttentionConfig { scorer: Scorer::Dot, query_dim: 4, key_dim: 4, attn_dim: 0 };
/// // scores 2·B·T·S·d plus context 2·B·T·S·d_v, and twice that backward
/// assert_eq!(config.flops(1, 2, 3), Flops { forward: 2 * 6 * 8, backward: 4 * 6 * 8 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flops {
    /// The forward pass.
    pub forward: u64,
    /// The backward pass alone.
    pub backward: u64,
}

impl AttentionConfig {
    /// The FLOPs of `forward` and of its backward for a batch of `batch`
    /// queries sequences of `tgt_len` against sources of `src_len`, with
    /// values of `key_dim` features (the formulas are in [`Scorer`]'s docs).
    ///
    /// ```
    /// # use lingo_attention::{AttentionConfig, Scorer};
    /// let config = AttentionConfig { scorer: Scorer::Additive, query_dim: 8, key_dim: 8, attn_dim: 8 };
    /// let f = config.flops(2, 3, 5);
    /// assert!(f.backward > f.forward);
    /// ```
    pub fn flops(&self, batch: usize, tgt_len: usize, src_len: usize) -> Flops {
        let (b, t, s) = (batch as u64, tgt_len as u64, src_len as u64);
        let (dq, dk, a) = (self.query_dim as u64, self.key_dim as u64, self.attn_dim as u64);
        let dv = dk;
        let core = 2 * b * t * s * (dk + dv);
        let twice = |forward| Flops { forward, backward: 2 * forward };
        match self.scorer {
            Scorer::Dot | Scorer::ScaledDot => twice(core),
            Scorer::General => twice(2 * b * s * dk * dq + 2 * b * t * s * (dq + dv)),
            Scorer::MultiHead { .. } => {
                twice(2 * b * t * dq * a + 4 * b * s * dk * a + 2 * b * t * a * dk + 4 * b * t * s * a)
            }
            Scorer::Additive => {
                let projections = 2 * b * t * dq * a + 2 * b * s * dk * a;
                // per (t, s, a) forward: add, tanh, multiply-add; backward: add and tanh again,
                // 4 for G, and the three sums (2 + 2 for dv's multiply-add)
                Flops {
                    forward: projections + 4 * b * t * s * a + 2 * b * t * s * dv,
                    backward: 2 * projections + 10 * b * t * s * a + 4 * b * t * s * dv,
                }
            }
        }
    }

    /// Checks that the sizes fit the scorer.
    fn validate(&self) -> Result<()> {
        let bad = |why: String| Err(Error::BadConfig { scorer: self.scorer.to_string(), why });
        let (dq, dk, a) = (self.query_dim, self.key_dim, self.attn_dim);
        if dq == 0 || dk == 0 {
            return bad(format!("query_dim ({dq}) and key_dim ({dk}) must be positive"));
        }
        match self.scorer {
            Scorer::Dot | Scorer::ScaledDot if dq != dk => bad(format!(
                "a dot product needs query_dim == key_dim, got {dq} and {dk}; use `general` (q · W k) or `additive` (v · tanh(W_q q + W_k k)), which compare vectors of different sizes"
            )),
            Scorer::Additive if a == 0 => {
                bad("attn_dim (the hidden size of v · tanh(W_q q + W_k k)) must be positive".into())
            }
            Scorer::MultiHead { heads } if heads == 0 || a == 0 || !a.is_multiple_of(heads) => {
                bad(format!("attn_dim ({a}) must be a positive multiple of the number of heads ({heads})"))
            }
            _ => Ok(()),
        }
    }
}

/// The parameters of each scorer (PyTorch's `(out, in)` layout).
#[derive(Debug, Clone)]
pub(crate) enum Weights {
    None,
    General { w: Param },
    Additive { w_q: Param, w_k: Param, v: Param },
    MultiHead { w_q: Param, w_k: Param, w_v: Param, w_o: Param },
}

/// An attention layer: a [`Scorer`] and its parameters.
///
/// Parameters (Xavier-uniform initialised, no biases, as in the papers),
/// named `{prefix}.{name}`:
///
/// | scorer | parameters |
/// |---|---|
/// | `dot`, `scaled_dot` | none |
/// | `general` | `W (d_q, d_k)` |
/// | `additive` | `W_q (A, d_q)`, `W_k (A, d_k)`, `v (A)` |
/// | `multi_head` | `W_q (A, d_q)`, `W_k (A, d_k)`, `W_v (A, d_k)`, `W_o (d_k, A)` |
///
/// ```
/// use lingo_attention::{Attention, AttentionConfig, Scorer};
/// use lingo_tensor::{Module, Tensor};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let config = AttentionConfig { scorer: Scorer::Additive, query_dim: 6, key_dim: 4, attn_dim: 5 };
/// let attn = Attention::new("decoder.attn", &config, &mut rng).unwrap();
/// let names: Vec<&str> = attn.params().iter().map(|p| p.name()).collect();
/// assert_eq!(names, ["decoder.attn.W_q", "decoder.attn.W_k", "decoder.attn.v"]);
/// assert_eq!(attn.num_params(), 5 * (6 + 4 + 1));
///
/// let dec = Tensor::randn(&[2, 3, 6], 1.0, &mut rng).unwrap();     // (batch, tgt_len, d_q)
/// let enc_out = Tensor::randn(&[2, 7, 4], 1.0, &mut rng).unwrap(); // (batch, src_len, d_k)
/// let src_pad_mask = ndarray::Array2::from_shape_fn((2, 7), |(b, s)| b == 1 && s >= 5);
/// let out = attn.forward(&dec, &enc_out, &enc_out, Some(&src_pad_mask), false).unwrap();
/// assert_eq!(out.context.shape(), &[2, 3, 4]);
/// assert_eq!(out.weights.data()[[1, 0, 6]], 0.0);                  // padding gets no weight
/// ```
#[derive(Debug, Clone)]
pub struct Attention {
    config: AttentionConfig,
    pub(crate) weights: Weights,
}

/// `{prefix}.{name}`, or `name` alone for an empty prefix.
fn param_name(prefix: &str, name: &str) -> String {
    if prefix.is_empty() { name.to_string() } else { format!("{prefix}.{name}") }
}

impl Attention {
    /// A layer for `config`, its parameters drawn from `rng`; errors when the
    /// sizes do not fit the scorer (`dot` with `query_dim ≠ key_dim`, heads
    /// that do not divide `attn_dim`, ...).
    ///
    /// ```
    /// use lingo_attention::{Attention, AttentionConfig, Scorer};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let config = AttentionConfig { scorer: Scorer::Dot, query_dim: 8, key_dim: 16, attn_dim: 0 };
    /// let err = Attention::new("attn", &config, &mut rng).unwrap_err();
    /// assert!(err.to_string().contains("use `general`"));
    /// ```
    pub fn new(name_prefix: &str, config: &AttentionConfig, rng: &mut impl Rng) -> Result<Attention> {
        Attention::with_weights(name_prefix, config, |_, shape| {
            // A vector is initialised as the one-row matrix it multiplies as.
            let matrix = if shape.len() == 1 { vec![1, shape[0]] } else { shape.to_vec() };
            Ok(init::xavier_uniform(&matrix, 1.0, rng)?
                .into_shape_with_order(IxDyn(shape))
                .expect("same element count"))
        })
    }

    /// A layer for `config` whose parameters come from `make(name, shape)`,
    /// called once per parameter in the order of the table above with the
    /// full name and the shape the layer needs: how a saved model is rebuilt
    /// from its stored weights without drawing random ones first. The
    /// values `make` returns must have that shape; its errors pass through.
    ///
    /// ```
    /// use lingo_attention::{Attention, AttentionConfig, Scorer};
    /// use lingo_tensor::Module;
    /// let config = AttentionConfig { scorer: Scorer::General, query_dim: 3, key_dim: 2, attn_dim: 0 };
    /// let attn = Attention::with_weights("attn", &config, |name, shape| {
    ///     assert_eq!((name.as_str(), shape), ("attn.W", &[3, 2][..]));
    ///     Ok::<_, lingo_attention::Error>(ndarray::ArrayD::ones(shape))
    /// }).unwrap();
    /// assert_eq!(attn.params()[0].tensor().to_vec(), vec![1.0; 6]);
    /// ```
    pub fn with_weights<E: From<Error>>(
        name_prefix: &str,
        config: &AttentionConfig,
        mut make: impl FnMut(String, &[usize]) -> std::result::Result<ArrayD<f32>, E>,
    ) -> std::result::Result<Attention, E> {
        config.validate()?;
        let (dq, dk, a) = (config.query_dim, config.key_dim, config.attn_dim);
        let mut param = |name: &str, shape: &[usize]| -> std::result::Result<Param, E> {
            let full = param_name(name_prefix, name);
            let data = make(full.clone(), shape)?;
            if data.shape() != shape {
                return Err(mismatch(
                    "Attention::with_weights",
                    data.shape(),
                    shape,
                    format!("{full} must have the layer's shape"),
                )
                .into());
            }
            Ok(Param::new(full, data))
        };
        let weights = match config.scorer {
            Scorer::Dot | Scorer::ScaledDot => Weights::None,
            Scorer::General => Weights::General { w: param("W", &[dq, dk])? },
            Scorer::Additive => {
                Weights::Additive { w_q: param("W_q", &[a, dq])?, w_k: param("W_k", &[a, dk])?, v: param("v", &[a])? }
            }
            Scorer::MultiHead { .. } => Weights::MultiHead {
                w_q: param("W_q", &[a, dq])?,
                w_k: param("W_k", &[a, dk])?,
                w_v: param("W_v", &[a, dk])?,
                w_o: param("W_o", &[dk, a])?,
            },
        };
        Ok(Attention { config: *config, weights })
    }

    /// The configuration this layer was built from.
    ///
    /// ```
    /// # use lingo_attention::{Attention, AttentionConfig, Scorer};
    /// # use rand::SeedableRng;
    /// let config = AttentionConfig { scorer: Scorer::ScaledDot, query_dim: 8, key_dim: 8, attn_dim: 0 };
    /// let attn = Attention::new("attn", &config, &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// assert_eq!(attn.config(), &config);
    /// ```
    pub fn config(&self) -> &AttentionConfig {
        &self.config
    }

    /// Attends: `queries (batch, tgt_len, d_q)` to `keys (batch, src_len, d_k)`
    /// and `values (batch, src_len, d_v)`, hiding padding (`src_pad_mask
    /// (batch, src_len)`, true at padding) and, with `causal`, later
    /// positions. The same call serves cross-attention (queries from the
    /// target, keys and values from the source) and self-attention (all
    /// three the same sequence). It is [`Attention::prepare`] followed by
    /// [`Prepared::attend`].
    ///
    /// ```
    /// use lingo_attention::{Attention, AttentionConfig, Scorer};
    /// use lingo_tensor::Tensor;
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let config = AttentionConfig { scorer: Scorer::ScaledDot, query_dim: 4, key_dim: 4, attn_dim: 0 };
    /// let attn = Attention::new("self_attn", &config, &mut rng).unwrap();
    /// let x = Tensor::randn(&[1, 3, 4], 1.0, &mut rng).unwrap();
    /// let out = attn.forward(&x, &x, &x, None, true).unwrap();       // causal self-attention
    /// assert_eq!(out.weights.data()[[0, 0, 1]], 0.0);                  // position 0 cannot see 1
    /// assert!(out.weights.data()[[0, 2, 0]] > 0.0);                   // position 2 sees 0
    /// ```
    pub fn forward(
        &self,
        queries: &Tensor,
        keys: &Tensor,
        values: &Tensor,
        src_pad_mask: Option<&Array2<bool>>,
        causal: bool,
    ) -> Result<AttentionOutput> {
        self.prepare(keys, values, src_pad_mask)?.attend(queries, causal)
    }

    /// Does the work that depends only on the source, once: projects the keys
    /// (`W k` for `general`, `W_k k` for `additive`, `W_k k` and `W_v v` for
    /// `multi_head`) and stores them with the values and the padding mask.
    /// The projections are ordinary tensors in the graph, so gradients from
    /// every [`Prepared::attend`] call reach the parameters and the sources.
    ///
    /// ```
    /// use lingo_attention::{Attention, AttentionConfig, Scorer};
    /// use lingo_tensor::Tensor;
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let config = AttentionConfig { scorer: Scorer::General, query_dim: 3, key_dim: 5, attn_dim: 0 };
    /// let attn = Attention::new("attn", &config, &mut rng).unwrap();
    /// let enc_out = Tensor::randn(&[2, 6, 5], 1.0, &mut rng).unwrap();
    /// let source = attn.prepare(&enc_out, &enc_out, None).unwrap();
    /// for _step in 0..4 {                                     // one query per decoder step
    ///     let h_t = Tensor::randn(&[2, 1, 3], 1.0, &mut rng).unwrap();
    ///     let out = source.attend(&h_t, false).unwrap();
    ///     assert_eq!(out.weights.shape(), &[2, 1, 6]);
    /// }
    /// ```
    pub fn prepare(&self, keys: &Tensor, values: &Tensor, src_pad_mask: Option<&Array2<bool>>) -> Result<Prepared> {
        const OP: &str = "Attention::prepare";
        let (ks, vs) = (keys.shape(), values.shape());
        if ks.len() != 3 || ks[2] != self.config.key_dim {
            return Err(mismatch(OP, ks, &[self.config.key_dim], "keys must be (batch, src_len, key_dim)"));
        }
        if vs.len() != 3 || vs[..2] != ks[..2] {
            return Err(mismatch(OP, ks, vs, "values must be (batch, src_len, d_v) like the keys"));
        }
        let mask = Masking::new(src_pad_mask, false);
        mask.check(OP, ks)?;
        let scale = |d: usize| 1.0 / (d as f32).sqrt();
        let (keys, values, step) = match &self.weights {
            Weights::None if self.config.scorer == Scorer::ScaledDot => {
                (keys.clone(), values.clone(), Step::Dot { scale: scale(ks[2]) })
            }
            Weights::None => (keys.clone(), values.clone(), Step::Dot { scale: 1.0 }),
            Weights::General { w } => (w.linear(keys, None)?, values.clone(), Step::Dot { scale: 1.0 }),
            Weights::Additive { w_q, w_k, v } => {
                (w_k.linear(keys, None)?, values.clone(), Step::Additive { w_q: w_q.clone(), v: v.tensor().clone() })
            }
            Weights::MultiHead { w_q, w_k, w_v, w_o } => {
                if vs[2] != self.config.key_dim {
                    return Err(mismatch(
                        OP,
                        ks,
                        vs,
                        "multi_head projects the values with W_v (A, key_dim), so they need key_dim features",
                    ));
                }
                let heads = self.config.scorer.heads();
                let step = Step::MultiHead {
                    w_q: w_q.clone(),
                    w_o: w_o.clone(),
                    heads,
                    scale: scale(self.config.attn_dim / heads),
                };
                (w_k.linear(keys, None)?, w_v.linear(values, None)?, step)
            }
        };
        Ok(Prepared {
            scorer: self.config.scorer,
            query_dim: self.config.query_dim,
            keys,
            values,
            mask,
            step,
            intervention: None,
        })
    }
}

// The parameters in the order of the table in [`Attention`]'s docs.
lingo_tensor::module!(
    Attention,
    match self.weights {
        Weights::None => [],
        Weights::General { w } => [w],
        Weights::Additive { w_q, w_k, v } => [w_q, w_k, v],
        Weights::MultiHead { w_q, w_k, w_v, w_o } => [w_q, w_k, w_v, w_o],
    }
);

/// What [`Prepared::attend`] does with the queries.
#[derive(Debug, Clone)]
enum Step {
    /// Score against the (projected) keys directly, scaled by `scale`.
    Dot { scale: f32 },
    /// Project the queries with `W_q`, then the fused additive score with `v`.
    Additive { w_q: Param, v: Tensor },
    /// Project with `W_q`, run `heads` scaled heads, project the context with `W_o`.
    MultiHead { w_q: Param, w_o: Param, heads: usize, scale: f32 },
}

/// A source made ready by [`Attention::prepare`]: projected keys (and, for
/// `multi_head`, values) and the padding mask, for any number of
/// [`Prepared::attend`] calls, one per decoder step (Bahdanau's placement).
/// It holds the parameters it needs (clones, sharing their values), so it borrows nothing.
#[derive(Debug, Clone)]
pub struct Prepared {
    scorer: Scorer,
    query_dim: usize,
    /// What the score reads: `K`, `K Wᵀ`, `K W_kᵀ`, `(batch, src_len, ·)`.
    keys: Tensor,
    /// What the weights average: `V`, or `V W_vᵀ` for `multi_head`.
    values: Tensor,
    mask: Masking,
    step: Step,
    /// What replaces the weights, if anything ([`Prepared::intervene`]).
    intervention: Option<Intervention>,
}

impl Prepared {
    /// The prepared source of the given batch rows, in that order (repeats
    /// allowed): how a decoder drops the sentences it has finished, or
    /// copies a source once per beam, without projecting the keys again.
    ///
    /// ```
    /// use lingo_attention::{Attention, AttentionConfig, Scorer};
    /// use lingo_tensor::Tensor;
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let config = AttentionConfig { scorer: Scorer::General, query_dim: 4, key_dim: 4, attn_dim: 0 };
    /// let attn = Attention::new("attn", &config, &mut rng).unwrap();
    /// let enc_out = Tensor::randn(&[3, 5, 4], 1.0, &mut rng).unwrap();
    /// let query = Tensor::randn(&[1, 1, 4], 1.0, &mut rng).unwrap();
    /// let all = attn.prepare(&enc_out, &enc_out, None).unwrap();
    /// let third = all.select_rows(&[2]).unwrap();
    /// let alone = attn.prepare(&enc_out.index_select(0, &[2]).unwrap(), &enc_out.index_select(0, &[2]).unwrap(), None).unwrap();
    /// assert_eq!(third.attend(&query, false).unwrap().context.to_vec(), alone.attend(&query, false).unwrap().context.to_vec());
    /// ```
    pub fn select_rows(&self, rows: &[usize]) -> Result<Prepared> {
        Ok(Prepared {
            scorer: self.scorer,
            query_dim: self.query_dim,
            keys: self.keys.index_select(0, rows)?,
            values: self.values.index_select(0, rows)?,
            mask: self.mask.select_rows(rows),
            step: self.step.clone(),
            intervention: self.intervention.as_ref().map(|i| i.select_rows(rows)),
        })
    }

    /// The same source with its attention weights replaced by `intervention`
    /// at every [`attend`](Self::attend) (see [`crate::intervene`]); `None`
    /// restores the model's own.
    ///
    /// ```
    /// use lingo_attention::{Attention, AttentionConfig, Intervention, Scorer};
    /// use lingo_tensor::Tensor;
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let config = AttentionConfig { scorer: Scorer::Dot, query_dim: 4, key_dim: 4, attn_dim: 0 };
    /// let attn = Attention::new("attn", &config, &mut rng).unwrap();
    /// let enc_out = Tensor::randn(&[1, 4, 4], 1.0, &mut rng).unwrap();
    /// let query = Tensor::randn(&[1, 1, 4], 1.0, &mut rng).unwrap();
    /// let probed = attn.prepare(&enc_out, &enc_out, None).unwrap().intervene(Some(Intervention::Uniform));
    /// assert_eq!(probed.attend(&query, false).unwrap().weights.to_vec(), vec![0.25; 4]);
    /// ```
    pub fn intervene(self, intervention: Option<Intervention>) -> Prepared {
        Prepared { intervention, ..self }
    }

    /// Attends `queries (batch, tgt_len, d_q)` to the prepared source; see
    /// [`Attention::forward`]. `tgt_len` is often 1 (one decoder step).
    ///
    /// ```
    /// use lingo_attention::{Attention, AttentionConfig, Scorer};
    /// use lingo_tensor::Tensor;
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let config = AttentionConfig { scorer: Scorer::Dot, query_dim: 4, key_dim: 4, attn_dim: 0 };
    /// let attn = Attention::new("attn", &config, &mut rng).unwrap();
    /// let enc_out = Tensor::randn(&[1, 5, 4], 1.0, &mut rng).unwrap();
    /// let source = attn.prepare(&enc_out, &enc_out, None).unwrap();
    /// assert!(source.attend(&Tensor::zeros(&[1, 1, 3]), false).is_err()); // wrong query size
    /// let out = source.attend(&Tensor::zeros(&[1, 1, 4]), false).unwrap();
    /// assert!((out.weights.data()[[0, 0, 0]] - 0.2).abs() < 1e-6);          // a zero query: uniform
    /// ```
    pub fn attend(&self, queries: &Tensor, causal: bool) -> Result<AttentionOutput> {
        self.attend_at(queries, causal, 0)
    }

    /// [`attend`](Self::attend) for queries at target positions
    /// `first_position..`: a decoder step at position `t` passes `t`, so that
    /// a [`Gold`](Intervention::Gold) intervention finds its links. Without an
    /// intervention the position changes nothing.
    ///
    /// ```
    /// use lingo_attention::{Attention, AttentionConfig, GoldLinks, Intervention, Scorer};
    /// use lingo_tensor::Tensor;
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let config = AttentionConfig { scorer: Scorer::Dot, query_dim: 2, key_dim: 2, attn_dim: 0 };
    /// let attn = Attention::new("attn", &config, &mut rng).unwrap();
    /// let enc_out = Tensor::randn(&[1, 3, 2], 1.0, &mut rng).unwrap();
    /// let gold = Intervention::Gold(GoldLinks::new(vec![vec![vec![2], vec![1]]])); // position 0 → 2, 1 → 1
    /// let source = attn.prepare(&enc_out, &enc_out, None).unwrap().intervene(Some(gold));
    /// let step_1 = source.attend_at(&Tensor::zeros(&[1, 1, 2]), false, 1).unwrap();
    /// assert_eq!(step_1.weights.to_vec(), vec![0.0, 1.0, 0.0]);
    /// ```
    pub fn attend_at(&self, queries: &Tensor, causal: bool, first_position: usize) -> Result<AttentionOutput> {
        let (qs, ks) = (queries.shape(), self.keys.shape());
        if qs.len() != 3 || qs[0] != ks[0] || qs[2] != self.query_dim {
            return Err(mismatch(
                "Prepared::attend",
                qs,
                ks,
                format!("queries must be (batch, tgt_len, {}) for keys (batch, src_len, ·)", self.query_dim),
            ));
        }
        let mask = self.mask.with_causal(causal);
        let (out, heads) = match &self.step {
            Step::Dot { scale } => (dot_product(queries, &self.keys, &self.values, 1, *scale, &mask)?, 1),
            Step::Additive { w_q, v } => {
                (additive(&w_q.linear(queries, None)?, &self.keys, v, &self.values, &mask)?, 1)
            }
            Step::MultiHead { w_q, heads, scale, .. } => {
                (dot_product(&w_q.linear(queries, None)?, &self.keys, &self.values, *heads, *scale, &mask)?, *heads)
            }
        };
        let out = match &self.intervention {
            Some(intervention) => intervention.replace_masked(out, &self.values, heads, &mask, first_position)?,
            None => out,
        };
        match &self.step {
            Step::MultiHead { w_o, .. } => Ok(AttentionOutput { context: w_o.linear(&out.context, None)?, ..out }),
            _ => Ok(out),
        }
    }

    /// Bahdanau's decoder under teacher forcing, all target positions in one
    /// fused op: at step `t` it attends with the previous state `s_{t-1}` as
    /// the query (`s_0 = h0 (batch, H)`), then runs a GRU step with `w` on
    /// `[x_t; context_t]`, where `x (batch, tgt_len, E)` holds the step inputs
    /// (the target embeddings). Same numbers as stepping [`attend`](Self::attend)
    /// and a one-step GRU (up to rounding), without their per-step overhead;
    /// the math and its backward are in `src/kernel/bahdanau.rs`.
    ///
    /// For the `additive` scorer only (an error names it otherwise). Every
    /// row runs all `tgt_len` steps; a loss ignores what padded positions give.
    ///
    /// ```
    /// use lingo_attention::{Attention, AttentionConfig, Scorer};
    /// use lingo_tensor::{RnnWeights, Tensor};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let (batch, src_len, tgt_len, e, h) = (2, 5, 3, 4, 6);
    /// let config = AttentionConfig { scorer: Scorer::Additive, query_dim: h, key_dim: 8, attn_dim: 7 };
    /// let attn = Attention::new("attn", &config, &mut rng).unwrap();
    /// let enc_out = Tensor::randn(&[batch, src_len, 8], 1.0, &mut rng).unwrap();
    /// let prepared = attn.prepare(&enc_out, &enc_out, None).unwrap();
    ///
    /// let p = |shape: &[usize], rng: &mut _| Tensor::variable(Tensor::randn(shape, 0.3, rng).unwrap().data().clone());
    /// let (w_ih, w_hh) = (p(&[3 * h, e + 8], &mut rng), p(&[3 * h, h], &mut rng));
    /// let (b_ih, b_hh) = (p(&[3 * h], &mut rng), p(&[3 * h], &mut rng));
    /// let gru = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b_ih, bias_hh: &b_hh };
    /// let x = Tensor::randn(&[batch, tgt_len, e], 1.0, &mut rng).unwrap();
    /// let out = prepared.gru_recurrence(&x, &Tensor::zeros(&[batch, h]), gru).unwrap();
    /// assert_eq!(out.output.shape(), &[batch, tgt_len, h]);
    /// assert_eq!(out.weights.shape(), &[batch, tgt_len, src_len]);
    /// let grads = out.output.sum_all().backward().unwrap();
    /// assert_eq!(grads.get(&w_ih).unwrap().shape(), &[3 * h, e + 8]);
    /// ```
    pub fn gru_recurrence(&self, x: &Tensor, h0: &Tensor, w: RnnWeights<'_>) -> Result<Recurrence> {
        if let Some(intervention) = &self.intervention {
            return Err(Error::Intervention {
                name: intervention.to_string(),
                why: "the fused Bahdanau recurrence keeps its own weights; step with Prepared::attend_at instead"
                    .into(),
            });
        }
        match &self.step {
            Step::Additive { w_q, v } => bahdanau_gru(x, h0, &self.keys, &self.values, (w_q.tensor(), v), w, &self.mask),
            _ => Err(Error::BadConfig {
                scorer: self.scorer.to_string(),
                why: "the fused Bahdanau recurrence (Prepared::gru_recurrence) is written for the additive scorer; step with Prepared::attend instead".into(),
            }),
        }
    }

    /// The source length `S`.
    ///
    /// ```
    /// # use lingo_attention::{Attention, AttentionConfig, Scorer};
    /// # use rand::SeedableRng;
    /// let config = AttentionConfig { scorer: Scorer::Dot, query_dim: 2, key_dim: 2, attn_dim: 0 };
    /// let attn = Attention::new("attn", &config, &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let enc_out = lingo_tensor::Tensor::zeros(&[3, 7, 2]);
    /// assert_eq!(attn.prepare(&enc_out, &enc_out, None).unwrap().src_len(), 7);
    /// ```
    pub fn src_len(&self) -> usize {
        self.keys.shape()[1]
    }
}

/// The fused dot-product kernel on its own: `heads` heads of
/// `softmax(scale · Q Kᵀ) V` over equal column blocks of `queries (B, T, H·d)`,
/// `keys (B, S, H·d)` and `values (B, S, H·d_v)`, with padding and causal
/// masks. No parameters: projections are the caller's. The context is
/// `(B, T, H·d_v)` (heads side by side).
///
/// ```
/// use lingo_attention::dot_product_attention;
/// use lingo_tensor::Tensor;
/// let q = Tensor::from_vec(vec![1.0, 0.0], &[1, 1, 2]).unwrap();
/// let k = Tensor::from_vec(vec![1.0, 0.0, 0.0, 1.0], &[1, 2, 2]).unwrap();
/// let out = dot_product_attention(&q, &k, &k, 1, 1.0, None, false).unwrap();
/// let e = 1.0_f32.exp();
/// assert!((out.weights.data()[[0, 0, 0]] - e / (e + 1.0)).abs() < 1e-6);
/// ```
pub fn dot_product_attention(
    queries: &Tensor,
    keys: &Tensor,
    values: &Tensor,
    heads: usize,
    scale: f32,
    src_pad_mask: Option<&Array2<bool>>,
    causal: bool,
) -> Result<AttentionOutput> {
    dot_product(queries, keys, values, heads, scale, &Masking::new(src_pad_mask, causal))
}

/// The fused additive kernel on its own: `softmax(tanh(Q' + K') v) V` for
/// projected queries `q_proj (B, T, A)` and keys `k_proj (B, S, A)`, the
/// vector `v (A)` and `values (B, S, d_v)`, with padding and causal masks.
///
/// ```
/// use lingo_attention::additive_attention;
/// use lingo_tensor::Tensor;
/// let qp = Tensor::zeros(&[1, 1, 3]);
/// let kp = Tensor::zeros(&[1, 4, 3]);
/// let v = Tensor::ones(&[3]);
/// let values = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[1, 4, 1]).unwrap();
/// let out = additive_attention(&qp, &kp, &v, &values, None, false).unwrap();
/// assert_eq!(out.context.to_vec(), vec![2.5]);   // equal scores: the mean of the values
/// ```
pub fn additive_attention(
    q_proj: &Tensor,
    k_proj: &Tensor,
    v: &Tensor,
    values: &Tensor,
    src_pad_mask: Option<&Array2<bool>>,
    causal: bool,
) -> Result<AttentionOutput> {
    additive(q_proj, k_proj, v, values, &Masking::new(src_pad_mask, causal))
}

/// The fused Bahdanau recurrence on its own (see
/// [`Prepared::gru_recurrence`], which calls it with a layer's parameters):
/// `x (B, T, E)` the step inputs, `h0 (B, H)` the first query state,
/// `k_proj (B, S, A)` the projected keys, `values (B, S, d_v)`, the
/// scorer's `(W_q (A, H), v (A))`, and a GRU whose `weight_ih` reads
/// `E + d_v` features, `[x_t; context_t]`.
///
/// ```
/// use lingo_attention::bahdanau_recurrence;
/// use lingo_tensor::{RnnWeights, Tensor};
/// let (b, t, s, a, e, h, dv) = (1, 2, 3, 4, 2, 5, 6);
/// let (w_ih, w_hh, bias) = (Tensor::zeros(&[3 * h, e + dv]), Tensor::zeros(&[3 * h, h]), Tensor::zeros(&[3 * h]));
/// let gru = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &bias, bias_hh: &bias };
/// let (x, h0) = (Tensor::zeros(&[b, t, e]), Tensor::ones(&[b, h]));
/// let (k_proj, values) = (Tensor::zeros(&[b, s, a]), Tensor::zeros(&[b, s, dv]));
/// let score = (&Tensor::zeros(&[a, h]), &Tensor::ones(&[a]));
/// let out = bahdanau_recurrence(&x, &h0, &k_proj, &values, score, gru, None).unwrap();
/// // all-zero weights: z = ½ and n = 0 at every step, so the state halves each time
/// assert_eq!(out.output.to_vec(), [vec![0.5; h], vec![0.25; h]].concat());
/// assert!(out.weights.to_vec().iter().all(|&w| (w - 1.0 / 3.0).abs() < 1e-6)); // equal scores
/// ```
pub fn bahdanau_recurrence(
    x: &Tensor,
    h0: &Tensor,
    k_proj: &Tensor,
    values: &Tensor,
    score: (&Tensor, &Tensor),
    gru: RnnWeights<'_>,
    src_pad_mask: Option<&Array2<bool>>,
) -> Result<Recurrence> {
    bahdanau_gru(x, h0, k_proj, values, score, gru, &Masking::new(src_pad_mask, false))
}
