//! The affine map `y = x·Wᵀ + b`.

use lingo_tensor::{Param, Tensor};
use rand::RngCore;

use super::{param_name, positive};
use crate::error::Result;
use crate::init::{Init, Weights};

/// A linear layer: `weight (out, in)` and an optional `bias (out)`, named
/// `{prefix}.weight` and `{prefix}.bias`.
///
/// `forward(x (..., in)) = x·Wᵀ + b`, shape `(..., out)`, through the fused
/// [`Tensor::linear`] (one GEMM over all leading axes).
///
/// ```
/// use lingo_nn::{Init, Linear};
/// use lingo_tensor::{Module, Tensor};
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let out = Linear::new("out", 4, 10, true, Init::default(), &mut rng).unwrap();
/// let names: Vec<_> = out.params().iter().map(|p| p.name().to_owned()).collect();
/// assert_eq!(names, ["out.weight", "out.bias"]);
/// let logits = out.forward(&Tensor::zeros(&[2, 3, 4])).unwrap();   // (batch, tgt_len, vocab)
/// assert_eq!(logits.shape(), &[2, 3, 10]);
/// assert_eq!(logits.to_vec(), vec![0.0; 60]);                      // x = 0, zero bias
/// ```
#[derive(Debug, Clone)]
pub struct Linear {
    weight: Param,
    bias: Option<Param>,
}

impl Linear {
    /// A layer from `in_features` to `out_features`, with or without bias,
    /// initialised by `init` from `rng` (weight first, then bias).
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let w_c = lingo_nn::Linear::new("attn.w_c", 8, 4, false, lingo_nn::Init::default(), &mut rng).unwrap();
    /// assert!(w_c.bias().is_none());
    /// assert!(lingo_nn::Linear::new("x", 0, 4, true, lingo_nn::Init::default(), &mut rng).is_err());
    /// ```
    pub fn new(
        prefix: &str,
        in_features: usize,
        out_features: usize,
        bias: bool,
        init: Init,
        mut rng: &mut impl RngCore,
    ) -> Result<Linear> {
        Linear::build(prefix, in_features, out_features, bias, &mut Weights::Fresh(init, &mut rng))
    }

    /// [`Linear::new`] with its weights drawn or taken from saved ones.
    pub(crate) fn build(
        prefix: &str,
        in_features: usize,
        out_features: usize,
        bias: bool,
        weights: &mut Weights<'_>,
    ) -> Result<Linear> {
        positive("linear in_features", in_features)?;
        positive("linear out_features", out_features)?;
        let [weight] =
            weights.params([param_name(prefix, "weight")], [&[out_features, in_features]], |init, rng| {
                Ok([init.linear_weight(out_features, in_features, rng)?])
            })?;
        let bias = match bias {
            true => {
                let [b] = weights.params([param_name(prefix, "bias")], [&[out_features]], |init, rng| {
                    Ok([init.linear_bias(out_features, in_features, rng)])
                })?;
                Some(b)
            }
            false => None,
        };
        Ok(Linear { weight, bias })
    }

    /// `y = x·Wᵀ + b` for `x (..., in)`; errors when the last axis is not `in`.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let lin = lingo_nn::Linear::new("l", 3, 2, true, lingo_nn::Init::default(), &mut rng).unwrap();
    /// assert_eq!(lin.forward(&Tensor::ones(&[5, 3])).unwrap().shape(), &[5, 2]);
    /// assert!(lin.forward(&Tensor::ones(&[5, 4])).is_err());
    /// ```
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.weight.linear(x, self.bias.as_ref().map(Param::tensor))?)
    }

    /// The weight `(out, in)`.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let lin = lingo_nn::Linear::new("l", 3, 2, true, lingo_nn::Init::default(), &mut rng).unwrap();
    /// assert_eq!(lin.weight().shape(), &[2, 3]);
    /// ```
    pub fn weight(&self) -> &Param {
        &self.weight
    }

    /// The bias `(out)`, if the layer has one.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let lin = lingo_nn::Linear::new("l", 3, 2, true, lingo_nn::Init::default(), &mut rng).unwrap();
    /// assert_eq!(lin.bias().unwrap().name(), "l.bias");
    /// ```
    pub fn bias(&self) -> Option<&Param> {
        self.bias.as_ref()
    }
}

lingo_tensor::module!(Linear { weight, bias });
