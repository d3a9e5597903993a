//! The LSTM and GRU cells composed from tensor ops: the version to read
//! first.
//!
//! Each function is the textbook equations, line for line, built from
//! `linear`, `split`, `sigmoid`, `tanh` and elementwise arithmetic, so the
//! tape differentiates it and there is no backward to derive. The fused
//! [`lstm_sequence`](super::lstm::lstm_sequence) and
//! [`gru_sequence`](super::gru::gru_sequence) (and the one-step
//! [`lstm_cell`](super::lstm::lstm_cell) and [`gru_cell`](super::gru::gru_cell)
//! built on them) compute the same numbers with hand-written backward
//! passes; `tests/tensor/sequences.rs` holds them to these cells, stepped over
//! every valid position, forward and every gradient.

use super::RnnWeights;
use crate::error::Result;
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
/// use lingo_tensor::{RnnWeights, Tensor, lstm_cell, rnn::plain};
/// let (w_ih, w_hh, b) = (Tensor::zeros(&[8, 3]), Tensor::zeros(&[8, 2]), Tensor::zeros(&[8]));
/// let w = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b, bias_hh: &b };
/// let (x, h, c) = (Tensor::ones(&[1, 3]), Tensor::zeros(&[1, 2]), Tensor::ones(&[1, 2]));
/// let (h1, c1) = plain::lstm_cell(&x, &h, &c, w).unwrap();
/// assert_eq!(c1.to_vec(), vec![0.5; 2]);                                // f = σ(0), g = 0
/// assert_eq!(h1.to_vec(), lstm_cell(&x, &h, &c, w).unwrap().0.to_vec()); // the fused cell agrees
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
/// use lingo_tensor::{RnnWeights, Tensor, rnn::plain};
/// let (w_ih, w_hh, b) = (Tensor::zeros(&[6, 3]), Tensor::zeros(&[6, 2]), Tensor::zeros(&[6]));
/// let w = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b, bias_hh: &b };
/// let h1 = plain::gru_cell(&Tensor::ones(&[1, 3]), &Tensor::ones(&[1, 2]), w).unwrap();
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
