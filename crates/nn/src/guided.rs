//! Guided alignment: a second loss term that pulls attention towards given
//! alignments (Garg et al., 2019; OpenNMT's `-lambda_align`), so a model
//! learns to translate and to look where the gold links say.
//!
//! With `α (batch, tgt_len, src_len)` the attention under teacher forcing
//! and `G` the gold links, each output row's links sharing its weight
//! equally ([`lingo_data::Batch::gold_weights`]), the term is the cross-entropy from
//! the gold rows to the attention rows, averaged over the rows that have a
//! link:
//!
//! ```text
//! A = −(1/R) Σ_b Σ_t Σ_s G[b,t,s] · ln(α[b,t,s] + ε)     R = rows with a gold link, ε = 10⁻⁹
//! L = CE + λ · A
//! ```
//!
//! `A` is 0 exactly when every row puts all its weight on its links (and
//! spreads it as `G` does); a row without links (a filler word, `<eos>`)
//! adds nothing, and padding holds `G = 0`. `ε` keeps `ln` finite where
//! attention is exactly 0 (padding, masked positions) at no cost elsewhere.
//!
//! ```
//! use lingo_data::{AlignedExample, Batch};
//! use lingo_tensor::Tensor;
//! let ex = AlignedExample { src: vec![2, 5, 3], tgt: vec![2, 7, 3], gold: vec![vec![1], vec![]], sure: vec![vec![1], vec![]] };
//! let gold = Batch::from_examples(&[ex])?.gold_weights().unwrap();
//! let on_gold = Tensor::new(ndarray::arr3(&[[[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]]).into_dyn());
//! let uniform = Tensor::new(ndarray::Array3::from_elem((1, 2, 3), 1.0 / 3.0).into_dyn());
//! let a = lingo_nn::alignment_loss(&on_gold, &gold)?.item()?;
//! assert!(a.abs() < 1e-6);                                                  // all weight on the link
//! assert!((lingo_nn::alignment_loss(&uniform, &gold)?.item()? - 3f32.ln()).abs() < 1e-6);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use lingo_tensor::Tensor;
use ndarray::{Array3, Axis};
use serde::{Deserialize, Serialize};

use crate::error::{Result, config as invalid};

/// Keeps `ln α` finite where attention is exactly 0.
const EPSILON: f32 = 1e-9;

/// Guided alignment's setting: the weight `λ` of its term and which
/// attention it pulls.
///
/// ```
/// let guide = lingo_nn::GuidedAlignment::new(0.5);
/// assert_eq!((guide.weight, guide.head), (0.5, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GuidedAlignment {
    /// `λ`, the term's weight against the cross-entropy.
    pub weight: f32,
    /// For a Transformer, the head of the last decoder layer's
    /// cross-attention that is guided (the other heads stay free); a
    /// recurrent model's one attention is guided whatever this says.
    pub head: usize,
}

impl GuidedAlignment {
    /// Weight `weight` on the first head.
    ///
    /// ```
    /// assert_eq!(lingo_nn::GuidedAlignment::new(1.0).head, 0);
    /// ```
    pub fn new(weight: f32) -> GuidedAlignment {
        GuidedAlignment { weight, head: 0 }
    }
}

/// `A` of the [module docs](self): the cross-entropy from `gold (batch,
/// tgt_len, src_len)` to the attention `weights` of the same shape, over
/// the rows with a gold link (0 when there is none).
///
/// ```
/// use lingo_tensor::Tensor;
/// let weights = Tensor::new(ndarray::arr3(&[[[0.5, 0.5]]]).into_dyn());
/// let gold = ndarray::arr3(&[[[1.0, 0.0]]]);
/// assert!((lingo_nn::alignment_loss(&weights, &gold).unwrap().item().unwrap() - 2f32.ln()).abs() < 1e-6);
/// ```
pub fn alignment_loss(weights: &Tensor, gold: &Array3<f32>) -> Result<Tensor> {
    if weights.shape() != gold.shape() {
        let reason = format!("attention {:?} and gold links {:?} differ in shape", weights.shape(), gold.shape());
        return Err(invalid("guided alignment", reason));
    }
    let rows = gold.sum_axis(Axis(2)).iter().filter(|&&links| links > 0.0).count();
    let log_weights = weights.add_scalar(EPSILON).log();
    let cross = log_weights.mul(&Tensor::new(gold.clone().into_dyn()))?.sum_all();
    Ok(cross.mul_scalar(-1.0 / rows.max(1) as f32))
}
