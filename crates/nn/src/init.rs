//! How layers initialise their weights: one switch, [`Init`], for a whole model.
//!
//! | parameter | [`Init::XavierOrthogonal`] (default) | [`Init::PyTorch`] |
//! |---|---|---|
//! | `Embedding.weight (V, D)` | Xavier-uniform | `N(0, 1)` |
//! | `Linear.weight (out, in)` | Xavier-uniform | `U(±1/√in)` |
//! | `Linear.bias (out)` | 0 | `U(±1/√in)` |
//! | RNN `weight_ih (G·H, I)` | Xavier-uniform | `U(±1/√H)` |
//! | RNN `weight_hh (G·H, H)` | orthogonal, each `H × H` gate block | `U(±1/√H)` |
//! | RNN `bias_ih`, `bias_hh` | 0 | `U(±1/√H)` |
//!
//! In both, an embedding's padding row is then set to zero (as PyTorch does).
//!
//! Why orthogonal *per gate block*: the recurrence of each gate is
//! `a_g = W_hh,g · h_{t-1} + ...`, one `H × H` block. Making each block
//! orthogonal gives every gate's recurrent map singular values of exactly 1
//! (Saxe et al., 2014), so repeated products over time neither explode nor
//! vanish. A whole `(G·H, H)` matrix with orthonormal columns would instead
//! spread the unit norm over the `G` blocks, leaving each gate's map with
//! singular values near `1/√G`.
//!
//! Weights are drawn in the order the parameters are listed, from the one
//! RNG the caller passes, so a seed fixes the whole model.

use lingo_attention::{Attention, AttentionConfig};
use lingo_tensor::init::{orthogonal, uniform, xavier_uniform};
use lingo_tensor::{Param, Tensor};
use ndarray::{ArrayD, Axis, IxDyn};
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::state_dict::StateDict;

/// The initialisation scheme; see the [module docs](self) for the table.
///
/// ```
/// use lingo_nn::Init;
/// assert_eq!(Init::default(), Init::XavierOrthogonal);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Init {
    /// Xavier-uniform input-side weights, orthogonal recurrent gate blocks, zero biases.
    #[default]
    #[cfg_attr(
        feature = "clap",
        value(help = "Xavier-uniform input weights, orthogonal recurrent blocks, zero biases")
    )]
    XavierOrthogonal,
    /// PyTorch's own defaults, to reproduce a PyTorch model's starting distribution.
    #[cfg_attr(
        feature = "clap",
        value(name = "pytorch", help = "PyTorch's layer defaults (uniform ±1/√fan-in, N(0, 1) embeddings)")
    )]
    PyTorch,
}

impl Init {
    /// An embedding table `(vocab, dim)`; row `padding_idx` is zero.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let table = lingo_nn::Init::PyTorch.embedding(5, 3, Some(0), &mut rng).unwrap();
    /// assert_eq!(table.shape(), &[5, 3]);
    /// assert!(table.index_axis(ndarray::Axis(0), 0).iter().all(|&v| v == 0.0));
    /// ```
    pub fn embedding(
        self,
        vocab: usize,
        dim: usize,
        padding_idx: Option<usize>,
        rng: &mut impl Rng,
    ) -> Result<ArrayD<f32>> {
        let table = match self {
            Init::XavierOrthogonal => xavier_uniform(&[vocab, dim], 1.0, rng)?,
            Init::PyTorch => Tensor::randn(&[vocab, dim], 1.0, rng)?.data().clone(),
        };
        Ok(zero_row(table, padding_idx))
    }

    /// A Transformer's embedding table `(vocab, dim)`, the same for both
    /// inits: `N(0, 1/dim)`, so that the model's `×√dim` gives its inputs
    /// unit variance (as fairseq initialises it); row `padding_idx` is zero.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let table = lingo_nn::Init::default().transformer_embedding(1000, 16, None, &mut rng).unwrap();
    /// let var = table.iter().map(|v| v * v).sum::<f32>() / table.len() as f32;
    /// assert!((var * 16.0 - 1.0).abs() < 0.05);
    /// ```
    pub fn transformer_embedding(
        self,
        vocab: usize,
        dim: usize,
        padding_idx: Option<usize>,
        rng: &mut impl Rng,
    ) -> Result<ArrayD<f32>> {
        let table = Tensor::randn(&[vocab, dim], 1.0 / (dim as f32).sqrt(), rng)?.data().clone();
        Ok(zero_row(table, padding_idx))
    }

    /// A linear layer's weight `(out, in)`.
    ///
    /// PyTorch's default is Kaiming-uniform with `a = √5`, whose bound
    /// `√(6 / ((1 + a²) · in)) = 1/√in`.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let w = lingo_nn::Init::PyTorch.linear_weight(8, 4, &mut rng).unwrap();
    /// assert!(w.iter().all(|v| v.abs() <= 0.5));   // 1/√4
    /// ```
    pub fn linear_weight(self, out_features: usize, in_features: usize, rng: &mut impl Rng) -> Result<ArrayD<f32>> {
        Ok(match self {
            Init::XavierOrthogonal => xavier_uniform(&[out_features, in_features], 1.0, rng)?,
            Init::PyTorch => uniform(&[out_features, in_features], inv_sqrt(in_features), rng),
        })
    }

    /// A linear layer's bias `(out)`: zero, or PyTorch's `U(±1/√in)`.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// assert_eq!(lingo_nn::Init::XavierOrthogonal.linear_bias(3, 4, &mut rng).sum(), 0.0);
    /// ```
    pub fn linear_bias(self, out_features: usize, in_features: usize, rng: &mut impl Rng) -> ArrayD<f32> {
        match self {
            Init::XavierOrthogonal => ArrayD::zeros(IxDyn(&[out_features])),
            Init::PyTorch => uniform(&[out_features], inv_sqrt(in_features), rng),
        }
    }

    /// The four weights of one direction of one recurrent layer with `gates`
    /// gate blocks (4 for an LSTM, 3 for a GRU), in PyTorch's order
    /// `[weight_ih (G·H, I), weight_hh (G·H, H), bias_ih (G·H), bias_hh (G·H)]`.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let [w_ih, w_hh, b_ih, _] = lingo_nn::Init::XavierOrthogonal.rnn_weights(4, 3, 2, &mut rng).unwrap();
    /// assert_eq!((w_ih.shape(), w_hh.shape(), b_ih.shape()), (&[8, 3][..], &[8, 2][..], &[8][..]));
    /// // each 2 x 2 gate block of W_hh is orthogonal: its rows have unit norm
    /// let row: f32 = w_hh.index_axis(ndarray::Axis(0), 5).iter().map(|v| v * v).sum();
    /// assert!((row - 1.0).abs() < 1e-5);
    /// ```
    pub fn rnn_weights(
        self,
        gates: usize,
        input_size: usize,
        hidden_size: usize,
        rng: &mut impl Rng,
    ) -> Result<[ArrayD<f32>; 4]> {
        let rows = gates * hidden_size;
        Ok(match self {
            Init::XavierOrthogonal => {
                let weight_ih = xavier_uniform(&[rows, input_size], 1.0, rng)?;
                let blocks = (0..gates)
                    .map(|_| orthogonal(&[hidden_size, hidden_size], 1.0, rng))
                    .collect::<lingo_tensor::Result<Vec<_>>>()?;
                let views: Vec<_> = blocks.iter().map(|b| b.view()).collect();
                let weight_hh = ndarray::concatenate(Axis(0), &views)
                    .map_err(|e| crate::error::config("rnn sizes", e.to_string()))?;
                let zeros = ArrayD::zeros(IxDyn(&[rows]));
                [weight_ih, weight_hh, zeros.clone(), zeros]
            }
            Init::PyTorch => {
                // nn.LSTM / nn.GRU: every parameter U(-k, k), k = 1/√H
                let k = inv_sqrt(hidden_size);
                [
                    uniform(&[rows, input_size], k, rng),
                    uniform(&[rows, hidden_size], k, rng),
                    uniform(&[rows], k, rng),
                    uniform(&[rows], k, rng),
                ]
            }
        })
    }
}

/// `table` with row `padding_idx` (if any, and in range) set to zero, as PyTorch does.
fn zero_row(mut table: ArrayD<f32>, padding_idx: Option<usize>) -> ArrayD<f32> {
    if let Some(pad) = padding_idx.filter(|&p| p < table.shape()[0]) {
        table.index_axis_mut(Axis(0), pad).fill(0.0);
    }
    table
}

/// `1/√n` (0 for an empty layer, so nothing is drawn).
fn inv_sqrt(n: usize) -> f32 {
    if n == 0 { 0.0 } else { 1.0 / (n as f32).sqrt() }
}

/// Where a model being built gets its weights: drawn fresh by an [`Init`]
/// scheme, or taken by name from saved ones, so that loading a checkpoint
/// draws nothing only to overwrite it (the orthogonal blocks alone took most
/// of a one-sentence `lingo translate`).
pub(crate) enum Weights<'a> {
    /// Drawn by the scheme from the RNG, in parameter order.
    Fresh(Init, &'a mut dyn RngCore),
    /// Taken from a state dict; each must have the shape the layer needs.
    Saved(&'a StateDict),
}

impl Weights<'_> {
    /// The parameters `names`, of `shapes`: drawn together by one call of
    /// `draw` (so the RNG is read in the order the scheme always read it),
    /// or each looked up by name and checked against its shape.
    pub(crate) fn params<const N: usize>(
        &mut self,
        names: [String; N],
        shapes: [&[usize]; N],
        draw: impl FnOnce(Init, &mut &mut dyn RngCore) -> Result<[ArrayD<f32>; N]>,
    ) -> Result<[Param; N]> {
        let arrays = match self {
            Weights::Fresh(init, rng) => draw(*init, rng)?,
            Weights::Saved(dict) => {
                let mut arrays = Vec::with_capacity(N);
                for (name, shape) in names.iter().zip(shapes) {
                    arrays.push(dict.array(name, shape)?);
                }
                arrays.try_into().expect("one array per name")
            }
        };
        let params: Vec<Param> = names.into_iter().zip(arrays).map(|(name, data)| Param::new(name, data)).collect();
        Ok(params.try_into().expect("one parameter per name"))
    }

    /// An attention layer: its own Xavier initialisation when fresh, the
    /// saved weights otherwise.
    pub(crate) fn attention(&mut self, prefix: &str, config: &AttentionConfig) -> Result<Attention> {
        match self {
            Weights::Fresh(_, rng) => Ok(Attention::new(prefix, config, rng)?),
            Weights::Saved(dict) => Attention::with_weights(prefix, config, |name, shape| dict.array(&name, shape)),
        }
    }
}
