//! Token embeddings: `E[id]`, one learned row per vocabulary entry.

use lingo_tensor::{Param, Tensor};
use ndarray::{ArrayView, Dimension};
use rand::RngCore;

use super::{param_name, positive};
use crate::error::{Result, config};
use crate::init::{Init, Weights};

/// An embedding table `weight (num_embeddings, dim)`, named `{prefix}.weight`.
///
/// `forward(ids)` returns `weight[ids]`, shape `ids.shape() + [dim]`. The row
/// `padding_idx` starts at zero and never receives a gradient (its gradient
/// is dropped in the lookup's backward), so padding positions always embed
/// to the zero vector, as with PyTorch's `nn.Embedding(padding_idx=...)`.
///
/// ```
/// use lingo_nn::{Embedding, Init};
/// use lingo_tensor::Module;
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let emb = Embedding::new("decoder.embedding", 10, 4, Some(0), Init::default(), &mut rng).unwrap();
/// assert_eq!(emb.params()[0].name(), "decoder.embedding.weight");
/// let src = ndarray::arr2(&[[5_usize, 7, 0]]);                // (batch, src_len), 0 = <pad>
/// let x = emb.forward(src.view()).unwrap();                  // (batch, src_len, dim)
/// assert_eq!(x.shape(), &[1, 3, 4]);
/// assert_eq!(&x.to_vec()[8..], &[0.0; 4]);                   // the pad embeds to zero
/// ```
#[derive(Debug, Clone)]
pub struct Embedding {
    weight: Param,
    padding_idx: Option<usize>,
}

impl Embedding {
    /// A `(num_embeddings, dim)` table initialised by `init` from `rng`.
    /// Errors when a size is zero or `padding_idx ≥ num_embeddings`.
    ///
    /// ```
    /// use lingo_nn::{Embedding, Init};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// assert!(Embedding::new("emb", 4, 2, Some(4), Init::default(), &mut rng).is_err());
    /// ```
    pub fn new(
        prefix: &str,
        num_embeddings: usize,
        dim: usize,
        padding_idx: Option<usize>,
        init: Init,
        mut rng: &mut impl RngCore,
    ) -> Result<Embedding> {
        Embedding::build(prefix, num_embeddings, dim, padding_idx, &mut Weights::Fresh(init, &mut rng))
    }

    /// [`Embedding::new`] with its weight drawn or taken from saved ones.
    pub(crate) fn build(
        prefix: &str,
        num_embeddings: usize,
        dim: usize,
        padding_idx: Option<usize>,
        weights: &mut Weights<'_>,
    ) -> Result<Embedding> {
        Embedding::build_with(prefix, num_embeddings, dim, padding_idx, weights, |init, rng| {
            init.embedding(num_embeddings, dim, padding_idx, rng)
        })
    }

    /// [`Embedding::build`] for a Transformer ([`Init::transformer_embedding`]).
    pub(crate) fn build_transformer(
        prefix: &str,
        num_embeddings: usize,
        dim: usize,
        padding_idx: Option<usize>,
        weights: &mut Weights<'_>,
    ) -> Result<Embedding> {
        Embedding::build_with(prefix, num_embeddings, dim, padding_idx, weights, |init, rng| {
            init.transformer_embedding(num_embeddings, dim, padding_idx, rng)
        })
    }

    /// A table drawn by `draw(init, rng)` or taken from saved weights.
    fn build_with(
        prefix: &str,
        num_embeddings: usize,
        dim: usize,
        padding_idx: Option<usize>,
        weights: &mut Weights<'_>,
        draw: impl FnOnce(Init, &mut &mut dyn RngCore) -> Result<ndarray::ArrayD<f32>>,
    ) -> Result<Embedding> {
        positive("embedding vocabulary size", num_embeddings)?;
        positive("embedding dimension", dim)?;
        if let Some(pad) = padding_idx.filter(|&p| p >= num_embeddings) {
            return Err(config(
                "embedding padding_idx",
                format!("{pad} is not below the vocabulary size {num_embeddings}"),
            ));
        }
        let [weight] = weights
            .params([param_name(prefix, "weight")], [&[num_embeddings, dim]], |init, rng| Ok([draw(init, rng)?]))?;
        Ok(Embedding { weight, padding_idx })
    }

    /// Looks up `ids` (any shape, e.g. `(batch, time)`): `x[.., :] = weight[ids[..], :]`.
    /// Errors on an id `≥ num_embeddings`.
    ///
    /// ```
    /// use lingo_nn::{Embedding, Init};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let emb = Embedding::new("emb", 3, 2, None, Init::default(), &mut rng).unwrap();
    /// assert_eq!(emb.forward(ndarray::arr1(&[2_usize, 2]).view()).unwrap().shape(), &[2, 2]);
    /// assert!(emb.forward(ndarray::arr1(&[3_usize]).view()).is_err());
    /// ```
    pub fn forward<D: Dimension>(&self, ids: ArrayView<'_, usize, D>) -> Result<Tensor> {
        Ok(self.weight.tensor().embedding(ids.into_dyn(), self.padding_idx)?)
    }

    /// The table parameter `(num_embeddings, dim)`.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let emb = lingo_nn::Embedding::new("e", 3, 2, None, lingo_nn::Init::default(), &mut rng).unwrap();
    /// assert_eq!(emb.weight().shape(), &[3, 2]);
    /// ```
    pub fn weight(&self) -> &Param {
        &self.weight
    }

    /// The embedding dimension.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// assert_eq!(lingo_nn::Embedding::new("e", 3, 2, None, lingo_nn::Init::default(), &mut rng).unwrap().dim(), 2);
    /// ```
    pub fn dim(&self) -> usize {
        self.weight.shape()[1]
    }

    /// The row that never learns, if any.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let emb = lingo_nn::Embedding::new("e", 3, 2, Some(0), lingo_nn::Init::default(), &mut rng).unwrap();
    /// assert_eq!(emb.padding_idx(), Some(0));
    /// ```
    pub fn padding_idx(&self) -> Option<usize> {
        self.padding_idx
    }
}

lingo_tensor::module!(Embedding { weight });
