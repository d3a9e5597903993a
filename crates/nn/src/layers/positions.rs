//! Position information for a model without recurrence: fixed sinusoids
//! (Vaswani et al., 2017, §3.5) or one learned vector per position.
//!
//! ```text
//! PE(pos, 2i)     = sin(pos / 10000^(2i/d))
//! PE(pos, 2i + 1) = cos(pos / 10000^(2i/d))
//! ```
//!
//! Each pair of features is a rotation at its own frequency, so
//! `PE(pos + k)` is a fixed linear map of `PE(pos)` for every offset `k`:
//! attention can learn relative positions from absolute ones.

use std::sync::{Arc, Mutex, PoisonError};

use lingo_tensor::Tensor;
use ndarray::{Array2, ArrayD, Axis, IxDyn, s};
use serde::{Deserialize, Serialize};

use super::{Embedding, positive};
use crate::error::{Result, config};
use crate::init::Weights;

/// Which positions a model adds to its embeddings; stored in checkpoints.
///
/// ```
/// assert_eq!(lingo_nn::PositionKind::default(), lingo_nn::PositionKind::Sinusoidal);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum PositionKind {
    /// The fixed table of the module docs: no parameters, any length.
    #[default]
    #[cfg_attr(feature = "clap", value(help = "Fixed sines and cosines (Vaswani et al., 2017)"))]
    Sinusoidal,
    /// A learned `(max_len, d)` table (`{prefix}.weight`), as BERT and GPT-2 use.
    #[cfg_attr(feature = "clap", value(help = "A learned embedding per position"))]
    Learned,
}

/// The `(len, d)` table of sinusoids in the [module docs](self), computed in
/// f64 and rounded once.
///
/// ```
/// let pe = lingo_nn::sinusoidal_positions(50, 4);
/// assert_eq!(pe.dim(), (50, 4));
/// assert_eq!((pe[[0, 0]], pe[[0, 1]]), (0.0, 1.0));                     // sin 0, cos 0
/// assert!((pe[[1, 0]] - 1_f32.sin()).abs() < 1e-7);                      // the fastest pair
/// assert!((pe[[1, 2]] - 0.01_f32.sin()).abs() < 1e-7);                   // 1 / 10000^(2/4)
/// ```
pub fn sinusoidal_positions(len: usize, d: usize) -> Array2<f32> {
    // Each feature's rate is the same in every row: computed once.
    let rates: Vec<f64> = (0..d).map(|j| 10000_f64.powf(-((j - j % 2) as f64) / d as f64)).collect();
    Array2::from_shape_fn((len, d), |(pos, j)| {
        let angle = pos as f64 * rates[j];
        (if j % 2 == 0 { angle.sin() } else { angle.cos() }) as f32
    })
}

/// Positions added to a sequence of embeddings; see the [module docs](self).
///
/// ```
/// use lingo_nn::{Init, PositionKind, Positions};
/// use lingo_tensor::Tensor;
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let pos = Positions::new("decoder.positions", PositionKind::Sinusoidal, 64, 4, Init::default(), &mut rng).unwrap();
/// let x = Tensor::zeros(&[2, 3, 4]);                               // (batch, len, d)
/// let whole = pos.forward(&x, 0).unwrap();
/// let third = pos.forward(&Tensor::zeros(&[2, 1, 4]), 2).unwrap(); // one decoding step at position 2
/// assert_eq!(whole.data().slice(ndarray::s![.., 2.., ..]).to_owned().into_raw_vec_and_offset().0, third.to_vec());
/// assert!(pos.forward(&x, 62).is_err());                           // past max_len
/// ```
#[derive(Debug, Clone)]
pub enum Positions {
    /// The fixed sinusoids of positions `0..max_len`, `d` features each
    /// ([`sinusoidal_positions`]): made for the rows calls have needed and
    /// kept (a decoding step would otherwise compute its row's `d` sines
    /// and cosines again), never for all `max_len` at once, since a saved
    /// configuration may name any number of positions. Not a parameter:
    /// no checkpoint stores them.
    Sinusoidal {
        /// The most positions a sequence may have.
        max_len: usize,
        /// Features per position.
        d: usize,
        /// The rows made so far, `(rows, d)`.
        made: Arc<Mutex<Array2<f32>>>,
    },
    /// A learned table.
    Learned(Embedding),
}

impl Positions {
    /// Positions `0..max_len` of `d` features, learned ones initialised by
    /// `init` from `rng` (as an embedding table).
    ///
    /// ```
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// use lingo_nn::{Init, PositionKind, Positions};
    /// use lingo_tensor::Module;
    /// let learned = Positions::new("encoder.positions", PositionKind::Learned, 16, 8, Init::default(), &mut rng).unwrap();
    /// assert_eq!(learned.params()[0].name(), "encoder.positions.weight");
    /// assert!(Positions::new("p", PositionKind::Sinusoidal, 16, 8, Init::default(), &mut rng).unwrap().params().is_empty());
    /// ```
    pub fn new(
        prefix: &str,
        kind: PositionKind,
        max_len: usize,
        d: usize,
        init: crate::Init,
        mut rng: &mut impl rand::RngCore,
    ) -> Result<Positions> {
        Positions::build(prefix, kind, max_len, d, &mut Weights::Fresh(init, &mut rng))
    }

    /// [`Positions::new`] with a learned table drawn or taken from saved weights.
    pub(crate) fn build(
        prefix: &str,
        kind: PositionKind,
        max_len: usize,
        d: usize,
        weights: &mut Weights<'_>,
    ) -> Result<Positions> {
        positive("maximum positions", max_len)?;
        positive("position dimension", d)?;
        Ok(match kind {
            PositionKind::Sinusoidal => Positions::Sinusoidal { max_len, d, made: Arc::default() },
            PositionKind::Learned => Positions::Learned(Embedding::build(prefix, max_len, d, None, weights)?),
        })
    }

    /// How many positions the table holds.
    ///
    /// ```
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let pos = lingo_nn::Positions::new("p", lingo_nn::PositionKind::Learned, 16, 8, lingo_nn::Init::default(), &mut rng).unwrap();
    /// assert_eq!(pos.max_len(), 16);
    /// ```
    pub fn max_len(&self) -> usize {
        match self {
            Positions::Sinusoidal { max_len, .. } => *max_len,
            Positions::Learned(embedding) => embedding.weight().shape()[0],
        }
    }

    /// `x + PE[start..start + len]` for `x (batch, len, d)`: the whole
    /// sequence (`start = 0`), or one decoding step at position `start`.
    ///
    /// ```
    /// # use rand::SeedableRng;
    /// # let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// use lingo_nn::{Init, PositionKind, Positions};
    /// let pos = Positions::new("p", PositionKind::Sinusoidal, 8, 2, Init::default(), &mut rng).unwrap();
    /// let y = pos.forward(&lingo_tensor::Tensor::ones(&[1, 1, 2]), 0).unwrap();
    /// assert_eq!(y.to_vec(), vec![1.0, 2.0]);                      // + (sin 0, cos 0)
    /// ```
    pub fn forward(&self, x: &Tensor, start: usize) -> Result<Tensor> {
        let len = x.shape().get(1).copied().unwrap_or(0);
        if x.ndim() != 3 || start + len > self.max_len() {
            return Err(config(
                "positions",
                format!(
                    "positions {start}..{} of a {:?} input exceed the table's {}",
                    start + len,
                    x.shape(),
                    self.max_len()
                ),
            ));
        }
        let table = match self {
            Positions::Sinusoidal { max_len, d, made } => {
                let mut made = made.lock().unwrap_or_else(PoisonError::into_inner);
                if made.nrows() < start + len {
                    // Twice the rows asked for, so a decoding's later steps seldom make more.
                    *made = sinusoidal_positions((2 * (start + len)).min(*max_len), *d);
                }
                Tensor::new(made.slice(s![start..start + len, ..]).insert_axis(Axis(0)).to_owned().into_dyn())
            }
            Positions::Learned(embedding) => {
                let ids = ArrayD::from_shape_fn(IxDyn(&[1, len]), |i| start + i[1]);
                embedding.forward(ids.view())?
            }
        };
        Ok(x.add(&table)?)
    }
}

lingo_tensor::module!(
    Positions,
    match self {
        Positions::Sinusoidal { .. } => [],
        Positions::Learned(embedding) => [embedding],
    }
);
