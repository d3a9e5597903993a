//! The five scorers by name: [`Scorer`], parsed from a config string.
//!
//! Every scorer does the same three things (score each source position,
//! softmax the scores into weights, average the values with them); they differ
//! only in the score. In the formulas `q` is one query `(d_q)`, `k` one key
//! `(d_k)`; `B, T, S` are batch, target and source lengths, `A` the
//! attention size ([`crate::AttentionConfig::attn_dim`]) and `d_v` the value
//! size. FLOPs count multiply-adds as two, a `tanh` or `exp` as one, and
//! leave out the `O(B·T·S)` softmax; backward costs about twice the
//! forward. [`crate::AttentionConfig::flops`] computes them.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Which attention score to compute.
///
/// ```
/// use lingo_attention::Scorer;
/// let s: Scorer = "multi_head:4".parse().unwrap();
/// assert_eq!(s, Scorer::MultiHead { heads: 4 });
/// assert_eq!(s.to_string(), "multi_head:4");
/// assert_eq!("multi_head".parse::<Scorer>().unwrap(), Scorer::MultiHead { heads: Scorer::DEFAULT_HEADS });
/// assert!("bahdanau".parse::<Scorer>().unwrap_err().to_string().contains("additive"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scorer {
    /// Luong's dot score, `score(q, k) = q · k` (Luong, Pham & Manning, 2015,
    /// *Effective Approaches to Attention-based Neural Machine Translation*).
    /// Needs `d_q = d_k`. Parameters: none. Forward FLOPs:
    /// `2·B·T·S·(d_k + d_v)` (scores `Q·Kᵀ`, context `W·V`).
    Dot,
    /// Luong's general score, `score(q, k) = q · W k` with `W (d_q, d_k)`
    /// (Luong et al., 2015). Sizes may differ. Parameters: `d_q·d_k`.
    /// Forward FLOPs: `2·B·S·d_k·d_q` (`W k`, once per source position, see
    /// [`crate::Attention::prepare`]) `+ 2·B·T·S·(d_q + d_v)`.
    General,
    /// Bahdanau's additive score, `score(q, k) = v · tanh(W_q q + W_k k)` with
    /// `W_q (A, d_q)`, `W_k (A, d_k)`, `v (A)` (Bahdanau, Cho & Bengio, 2015,
    /// *Neural Machine Translation by Jointly Learning to Align and
    /// Translate*). Sizes may differ. Parameters: `A·(d_q + d_k + 1)`.
    /// Forward FLOPs: `2·B·T·d_q·A + 2·B·S·d_k·A` (projections)
    /// `+ 4·B·T·S·A` (add, `tanh`, multiply-add per hidden unit)
    /// `+ 2·B·T·S·d_v`. The `B·T·S·A` term is not a matrix product, which
    /// makes this the expensive scorer.
    Additive,
    /// The Transformer's scaled dot score, `score(q, k) = q · k / √d_k`
    /// (Vaswani et al., 2017, *Attention Is All You Need*): dividing by `√d_k`
    /// keeps the softmax out of saturation at large sizes. Needs `d_q = d_k`.
    /// Parameters: none. Forward FLOPs: `2·B·T·S·(d_k + d_v)`.
    ScaledDot,
    /// Multi-head attention (Vaswani et al., 2017): `heads` copies of the
    /// scaled dot score in subspaces of size `A / heads`,
    /// `headᵢ = softmax(Q W_qᵢᵀ (K W_kᵢᵀ)ᵀ / √(A/heads)) · V W_vᵢᵀ`,
    /// `context = [head₁ … head_h] W_oᵀ`, with `W_q (A, d_q)`, `W_k, W_v (A, d_k)`,
    /// `W_o (d_k, A)`. Parameters: `A·(d_q + 3·d_k)`. Forward FLOPs:
    /// `2·B·T·d_q·A + 4·B·S·d_k·A + 2·B·T·A·d_k` (the four projections)
    /// `+ 4·B·T·S·A` (scores and context over all heads).
    MultiHead {
        /// The number of heads; must divide [`crate::AttentionConfig::attn_dim`].
        heads: usize,
    },
}

impl Scorer {
    /// The names [`FromStr`] accepts (`multi_head` also as `multi_head:<heads>`).
    ///
    /// ```
    /// assert_eq!(lingo_attention::Scorer::NAMES.len(), 5);
    /// ```
    pub const NAMES: [&'static str; 5] = ["dot", "general", "additive", "scaled_dot", "multi_head"];

    /// The number of heads of a bare `"multi_head"` (the Transformer's 8).
    ///
    /// ```
    /// assert_eq!(lingo_attention::Scorer::DEFAULT_HEADS, 8);
    /// ```
    pub const DEFAULT_HEADS: usize = 8;

    /// The scorer's name, without the number of heads.
    ///
    /// ```
    /// assert_eq!(lingo_attention::Scorer::MultiHead { heads: 2 }.name(), "multi_head");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Scorer::Dot => "dot",
            Scorer::General => "general",
            Scorer::Additive => "additive",
            Scorer::ScaledDot => "scaled_dot",
            Scorer::MultiHead { .. } => "multi_head",
        }
    }

    /// The number of heads: 1 for all but [`Scorer::MultiHead`].
    ///
    /// ```
    /// use lingo_attention::Scorer;
    /// assert_eq!(Scorer::Additive.heads(), 1);
    /// assert_eq!(Scorer::MultiHead { heads: 4 }.heads(), 4);
    /// ```
    pub fn heads(self) -> usize {
        match self {
            Scorer::MultiHead { heads } => heads,
            _ => 1,
        }
    }
}

impl fmt::Display for Scorer {
    /// The name [`FromStr`] reads back; multi-head always with its heads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scorer::MultiHead { heads } => write!(f, "multi_head:{heads}"),
            other => f.write_str(other.name()),
        }
    }
}

impl FromStr for Scorer {
    type Err = Error;

    /// Parses `dot`, `general`, `additive`, `scaled_dot`, `multi_head` or
    /// `multi_head:<heads>` (surrounding spaces ignored); anything else is an
    /// [`Error::UnknownScorer`] listing the valid names.
    fn from_str(s: &str) -> Result<Scorer> {
        let unknown = || Error::UnknownScorer {
            name: s.to_string(),
            valid: format!("{}, multi_head:<heads>", Scorer::NAMES.join(", ")),
        };
        match s.trim() {
            "dot" => Ok(Scorer::Dot),
            "general" => Ok(Scorer::General),
            "additive" => Ok(Scorer::Additive),
            "scaled_dot" => Ok(Scorer::ScaledDot),
            "multi_head" => Ok(Scorer::MultiHead { heads: Scorer::DEFAULT_HEADS }),
            other => match other.strip_prefix("multi_head:").map(|h| h.trim().parse::<usize>()) {
                Some(Ok(heads)) if heads > 0 => Ok(Scorer::MultiHead { heads }),
                _ => Err(unknown()),
            },
        }
    }
}
