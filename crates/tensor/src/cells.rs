//! The LSTM and GRU cells composed from tensor ops: the version to read
//! first.
//!
//! Each function is the textbook equations, line for line, built from
//! `linear`, `split`, `sigmoid`, `tanh` and elementwise arithmetic, so the
//! tape differentiates it and there is no backward to derive. The fused
//! [`fused::lstm_sequence`](crate::fused::lstm_sequence) and
//! [`fused::gru_sequence`](crate::fused::gru_sequence) (and the one-step
//! [`fused::lstm_cell`](crate::fused::lstm_cell) and
//! [`fused::gru_cell`](crate::fused::gru_cell) built on them) compute the same numbers with hand-written backward
//! passes; `tests/tensor/sequences.rs` holds them to these cells, stepped over
//! every valid position, forward and every gradient.

use crate::error::{Result, mismatch};
use crate::tensor::Tensor;

/// One LSTM step from ops: `x (batch, input)`, `h`, `c (batch, hidden)` →
/// `(h', c')`, with PyTorch's gate order `i, f, g, o`:
///
/// ```text
/// [a_i, a_f, a_g, a_o] = x·W_ihᵀ + b_ih + h·W_hhᵀ + b_hh
/// i = σ(a_i)   f = σ(a_f)   g = tanh(a_g)   o = σ(a_o)
/// c' = f ⊙ c + i ⊙ g       h' = o ⊙ tanh(c')
/// ```
///
/// ```
/// use lingo_tensor::{RnnWeights, Tensor, fused, lstm_cell};
/// let (w_ih, w_hh, b) = (Tensor::zeros(&[8, 3]), Tensor::zeros(&[8, 2]), Tensor::zeros(&[8]));
/// let w = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b, bias_hh: &b };
/// let (x, h, c) = (Tensor::ones(&[1, 3]), Tensor::zeros(&[1, 2]), Tensor::ones(&[1, 2]));
/// let (h1, c1) = lstm_cell(&x, &h, &c, w).unwrap();
/// assert_eq!(c1.to_vec(), vec![0.5; 2]);                                // f = σ(0), g = 0
/// assert_eq!(h1.to_vec(), fused::lstm_cell(&x, &h, &c, w).unwrap().0.to_vec()); // the fused cell agrees
/// ```
pub fn lstm_cell(x: &Tensor, h: &Tensor, c: &Tensor, w: RnnWeights<'_>) -> Result<(Tensor, Tensor)> {
    let hidden = w.hidden_size(4)?;
    let a = x.linear(w.weight_ih, Some(w.bias_ih))?.add(&h.linear(w.weight_hh, Some(w.bias_hh))?)?;
    let [a_i, a_f, a_g, a_o] = four(a.split(1, &[hidden; 4])?);
    let (i, f, g, o) = (a_i.sigmoid(), a_f.sigmoid(), a_g.tanh(), a_o.sigmoid());
    let c_next = f.mul(c)?.add(&i.mul(&g)?)?;
    let h_next = o.mul(&c_next.tanh())?;
    Ok((h_next, c_next))
}

/// One GRU step from ops: `x (batch, input)`, `h (batch, hidden)` → `h'`,
/// with PyTorch's gate order `r, z, n` and its reset gate scaling `ĥ_n`:
///
/// ```text
/// [x̂_r, x̂_z, x̂_n] = x·W_ihᵀ + b_ih      [ĥ_r, ĥ_z, ĥ_n] = h·W_hhᵀ + b_hh
/// r = σ(x̂_r + ĥ_r)   z = σ(x̂_z + ĥ_z)   n = tanh(x̂_n + r ⊙ ĥ_n)
/// h' = (1 - z) ⊙ n + z ⊙ h
/// ```
///
/// ```
/// use lingo_tensor::{RnnWeights, Tensor, gru_cell};
/// let (w_ih, w_hh, b) = (Tensor::zeros(&[6, 3]), Tensor::zeros(&[6, 2]), Tensor::zeros(&[6]));
/// let w = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b, bias_hh: &b };
/// let h1 = gru_cell(&Tensor::ones(&[1, 3]), &Tensor::ones(&[1, 2]), w).unwrap();
/// assert_eq!(h1.to_vec(), vec![0.5; 2]);                   // z = σ(0), n = tanh(0): h' = h / 2
/// ```
pub fn gru_cell(x: &Tensor, h: &Tensor, w: RnnWeights<'_>) -> Result<Tensor> {
    let hidden = w.hidden_size(3)?;
    let [x_r, x_z, x_n] = three(x.linear(w.weight_ih, Some(w.bias_ih))?.split(1, &[hidden; 3])?);
    let [h_r, h_z, h_n] = three(h.linear(w.weight_hh, Some(w.bias_hh))?.split(1, &[hidden; 3])?);
    let (r, z) = (x_r.add(&h_r)?.sigmoid(), x_z.add(&h_z)?.sigmoid());
    let n = x_n.add(&r.mul(&h_n)?)?.tanh();
    let one_minus_z = z.neg().add_scalar(1.0);
    one_minus_z.mul(&n)?.add(&z.mul(h)?)
}

/// The four gate blocks of an LSTM's pre-activations.
fn four(parts: Vec<Tensor>) -> [Tensor; 4] {
    parts.try_into().expect("split into four")
}

/// The three gate blocks of a GRU's pre-activations.
fn three(parts: Vec<Tensor>) -> [Tensor; 3] {
    parts.try_into().expect("split into three")
}

/// The four parameters of one direction of one recurrent layer, in PyTorch's
/// layout: `weight_ih (G·H, I)`, `weight_hh (G·H, H)`, `bias_ih (G·H)`,
/// `bias_hh (G·H)`, with `G = 4` gates for an LSTM and `G = 3` for a GRU.
///
/// ```
/// use lingo_tensor::{RnnWeights, Tensor};
/// let (h, i) = (3, 2);
/// let w_ih = Tensor::zeros(&[4 * h, i]);
/// let w_hh = Tensor::zeros(&[4 * h, h]);
/// let b = Tensor::zeros(&[4 * h]);
/// let w = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b, bias_hh: &b };
/// assert_eq!(w.hidden_size(4).unwrap(), 3);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RnnWeights<'a> {
    /// Input-to-hidden weights `(G·H, I)`.
    pub weight_ih: &'a Tensor,
    /// Hidden-to-hidden weights `(G·H, H)`.
    pub weight_hh: &'a Tensor,
    /// Input-side bias `(G·H)`.
    pub bias_ih: &'a Tensor,
    /// Hidden-side bias `(G·H)`.
    pub bias_hh: &'a Tensor,
}

impl RnnWeights<'_> {
    /// The hidden size `H` implied by `weight_hh (gates·H, H)`, after
    /// checking that all four shapes agree with `gates` (4 for LSTM, 3 for GRU).
    ///
    /// ```
    /// use lingo_tensor::{RnnWeights, Tensor};
    /// let w_ih = Tensor::zeros(&[9, 2]);
    /// let w_hh = Tensor::zeros(&[9, 3]);
    /// let b = Tensor::zeros(&[9]);
    /// let w = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b, bias_hh: &b };
    /// assert_eq!(w.hidden_size(3).unwrap(), 3);   // a GRU
    /// assert!(w.hidden_size(4).is_err());         // not an LSTM
    /// ```
    pub fn hidden_size(&self, gates: usize) -> Result<usize> {
        let whh = self.weight_hh.shape();
        if whh.len() != 2 || whh[0] != gates * whh[1] {
            return Err(mismatch(
                "rnn",
                whh,
                &[gates * whh.get(1).copied().unwrap_or(0), whh.get(1).copied().unwrap_or(0)],
                format!("weight_hh must be ({gates}·H, H)"),
            ));
        }
        let (rows, h) = (whh[0], whh[1]);
        let wih = self.weight_ih.shape();
        if wih.len() != 2 || wih[0] != rows {
            return Err(mismatch(
                "rnn",
                wih,
                whh,
                format!("weight_ih must be ({gates}·H, I) with the rows of weight_hh"),
            ));
        }
        for bias in [self.bias_ih, self.bias_hh] {
            if bias.shape() != [rows] {
                return Err(mismatch("rnn", bias.shape(), whh, format!("biases must be ({gates}·H) = [{rows}]")));
            }
        }
        Ok(h)
    }

    pub(crate) fn input_size(&self) -> usize {
        self.weight_ih.shape()[1]
    }
}
