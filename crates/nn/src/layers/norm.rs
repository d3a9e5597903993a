//! Layer normalization over the last axis, with a learned scale and shift.

use lingo_tensor::{Param, Tensor};
use ndarray::{ArrayD, IxDyn};
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::{param_name, positive};
use crate::error::{Result, config};
use crate::init::{Init, Weights};

/// Layer normalization over the last axis, composed from tensor ops: the
/// version to read. For each row `x` of `d` features,
///
/// ```text
/// μ = (1/d) Σ_i x_i        σ² = (1/d) Σ_i (x_i − μ)²
/// y = γ ⊙ (x − μ) / √(σ² + ε) + β
/// ```
///
/// and the tape differentiates it. [`Tensor::layer_norm`] computes the same
/// numbers as one op with a hand-written backward, row-blocked; the tests
/// hold it to this, forward and every gradient.
///
/// ```
/// use lingo_tensor::Tensor;
/// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[1, 4]).unwrap();
/// let (gamma, beta) = (Tensor::ones(&[4]), Tensor::zeros(&[4]));
/// let plain = lingo_nn::layers::layer_norm(&x, &gamma, &beta, 1e-5).unwrap().to_vec();
/// let fused = x.layer_norm(&gamma, &beta, 1e-5).unwrap().to_vec();
/// assert!(plain.iter().zip(&fused).all(|(a, b)| (a - b).abs() < 1e-6));
/// ```
pub fn layer_norm(x: &Tensor, gamma: &Tensor, beta: &Tensor, eps: f32) -> Result<Tensor> {
    let features = [x.ndim() - 1];
    let mean = x.mean(&features, true)?;
    let centred = x.sub(&mean)?;
    let variance = centred.mul(&centred)?.mean(&features, true)?;
    let normalized = centred.div(&variance.add_scalar(eps).sqrt())?;
    Ok(normalized.mul(gamma)?.add(beta)?)
}

/// PyTorch's `nn.LayerNorm(dim, eps)`: `weight (dim)` (γ, initially 1) and
/// `bias (dim)` (β, initially 0), named `{prefix}.weight` and `{prefix}.bias`;
/// [`layer_norm`] gives the math, [`Tensor::layer_norm`] runs it.
///
/// ```
/// use lingo_nn::LayerNorm;
/// use lingo_tensor::{Module, Tensor};
/// let norm = LayerNorm::new("encoder.layers.0.norm1", 4, 1e-5).unwrap();
/// assert_eq!(norm.params()[0].name(), "encoder.layers.0.norm1.weight");
/// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[1, 4]).unwrap();
/// let y = norm.forward(&x).unwrap().to_vec();
/// assert!(y.iter().sum::<f32>().abs() < 1e-5);                      // mean 0
/// assert!((y.iter().map(|v| v * v).sum::<f32>() / 4.0 - 1.0).abs() < 1e-4);   // variance 1
/// ```
#[derive(Debug, Clone)]
pub struct LayerNorm {
    weight: Param,
    bias: Param,
    eps: f32,
}

impl LayerNorm {
    /// A layer over `dim` features with `γ = 1`, `β = 0`; `eps` must be
    /// positive (PyTorch's default is `1e-5`).
    ///
    /// ```
    /// assert!(lingo_nn::LayerNorm::new("norm", 8, 0.0).is_err());
    /// assert!(lingo_nn::LayerNorm::new("norm", 0, 1e-5).is_err());
    /// ```
    pub fn new(prefix: &str, dim: usize, eps: f32) -> Result<LayerNorm> {
        // γ and β start constant: the generator is never drawn from.
        let mut unused = StdRng::seed_from_u64(0);
        LayerNorm::build(prefix, dim, eps, &mut Weights::Fresh(Init::default(), &mut unused))
    }

    /// [`LayerNorm::new`] with its weights taken from saved ones, or the
    /// initial `γ = 1`, `β = 0` (the same for every [`Init`](crate::Init)).
    pub(crate) fn build(prefix: &str, dim: usize, eps: f32, weights: &mut Weights<'_>) -> Result<LayerNorm> {
        positive("layer norm dimension", dim)?;
        if !(eps > 0.0 && eps.is_finite()) {
            return Err(config("layer norm eps", format!("must be positive and finite, got {eps}")));
        }
        let names = [param_name(prefix, "weight"), param_name(prefix, "bias")];
        let [weight, bias] = weights
            .params(names, [&[dim], &[dim]], |_, _| Ok([ArrayD::ones(IxDyn(&[dim])), ArrayD::zeros(IxDyn(&[dim]))]))?;
        Ok(LayerNorm { weight, bias, eps })
    }

    /// `γ ⊙ x̂ + β` for `x (..., dim)`.
    ///
    /// ```
    /// let norm = lingo_nn::LayerNorm::new("norm", 3, 1e-5).unwrap();
    /// assert!(norm.forward(&lingo_tensor::Tensor::ones(&[2, 4])).is_err());
    /// ```
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.layer_norm(self.weight.tensor(), self.bias.tensor(), self.eps)?)
    }

    /// `LayerNorm(x + residual)` as one op ([`Tensor::add_layer_norm`]): the
    /// post-norm Transformer's `norm(x + sublayer(x))`.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let norm = lingo_nn::LayerNorm::new("norm", 2, 1e-5).unwrap();
    /// let (x, r) = (Tensor::from_vec(vec![1.0, 3.0], &[1, 2]).unwrap(), Tensor::ones(&[1, 2]));
    /// let fused = norm.forward_residual(&x, &r).unwrap();
    /// assert_eq!(fused.to_vec(), norm.forward(&x.add(&r).unwrap()).unwrap().to_vec());
    /// ```
    pub fn forward_residual(&self, x: &Tensor, residual: &Tensor) -> Result<Tensor> {
        Ok(x.add_layer_norm(residual, self.weight.tensor(), self.bias.tensor(), self.eps)?)
    }
}

lingo_tensor::module!(LayerNorm { weight, bias });
