//! Inverted dropout.

use lingo_tensor::Tensor;

use super::Mode;
use crate::error::{Result, config};

/// Inverted dropout with probability `p`: in [`Mode::Train`] each element
/// is zeroed with probability `p` and the survivors are scaled by
/// `1/(1-p)`, so `E[y] = x` and evaluation needs no rescaling; in
/// [`Mode::Eval`] it is the identity. It has no parameters.
///
/// ```
/// use lingo_nn::{Dropout, Mode};
/// use lingo_tensor::Tensor;
/// use rand::SeedableRng;
/// let drop = Dropout::new(0.5).unwrap();
/// let x = Tensor::ones(&[1000]);
/// assert_eq!(drop.forward(&x, Mode::Eval).unwrap().to_vec(), x.to_vec());
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let y = drop.forward(&x, Mode::Train(&mut rng)).unwrap().to_vec();
/// assert!(y.iter().all(|&v| v == 0.0 || v == 2.0));
/// let kept = y.iter().filter(|&&v| v == 2.0).count();
/// assert!((400..600).contains(&kept));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dropout {
    p: f32,
}

impl Dropout {
    /// Dropout with probability `p ∈ [0, 1)`.
    ///
    /// ```
    /// assert!(lingo_nn::Dropout::new(0.0).is_ok());
    /// assert!(lingo_nn::Dropout::new(1.0).is_err());
    /// ```
    pub fn new(p: f32) -> Result<Dropout> {
        if !(0.0..1.0).contains(&p) {
            return Err(config("dropout probability", format!("must be in [0, 1), got {p}")));
        }
        Ok(Dropout { p })
    }

    /// Applies dropout in training mode, the identity otherwise.
    ///
    /// ```
    /// use lingo_nn::{Dropout, Mode};
    /// use rand::SeedableRng;
    /// let x = lingo_tensor::Tensor::ones(&[4]);
    /// let (mut a, mut b) = (rand::rngs::StdRng::seed_from_u64(3), rand::rngs::StdRng::seed_from_u64(3));
    /// let d = Dropout::new(0.3).unwrap();
    /// // same seed, same mask
    /// assert_eq!(d.forward(&x, Mode::Train(&mut a)).unwrap().to_vec(), d.forward(&x, Mode::Train(&mut b)).unwrap().to_vec());
    /// ```
    pub fn forward(&self, x: &Tensor, mode: Mode<'_>) -> Result<Tensor> {
        match mode {
            Mode::Train(mut rng) if self.p > 0.0 => Ok(x.dropout(self.p, &mut rng)?),
            _ => Ok(x.clone()),
        }
    }

    /// The drop probability.
    ///
    /// ```
    /// assert_eq!(lingo_nn::Dropout::new(0.25).unwrap().p(), 0.25);
    /// ```
    pub fn p(&self) -> f32 {
        self.p
    }
}

lingo_tensor::module!(Dropout {});
