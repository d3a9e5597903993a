//! Making tensors from values and reading values back: the constructors
//! and accessors every caller uses, apart from the engine in `tensor.rs`
//! (they build constants with [`Tensor::new`] and read [`Tensor::data`]).

use std::fmt;

use ndarray::{ArrayD, IxDyn};
use ndarray_rand::RandomExt;
use ndarray_rand::rand_distr::{Normal, Uniform};
use rand::Rng;

use crate::error::{Result, bad_arg, bad_shape};
use crate::tensor::Tensor;

impl Tensor {
    /// A constant from row-major values and a shape; errors when the counts differ.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let t = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    /// assert_eq!(t.to_vec(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    /// assert!(Tensor::from_vec(vec![1.0], &[2]).is_err());
    /// ```
    pub fn from_vec(values: Vec<f32>, shape: &[usize]) -> Result<Tensor> {
        let n = values.len();
        ArrayD::from_shape_vec(IxDyn(shape), values).map(Tensor::new).map_err(|_| {
            bad_shape("from_vec", shape, format!("needs {} values, got {n}", shape.iter().product::<usize>()))
        })
    }

    /// A 0-dimensional constant.
    ///
    /// ```
    /// assert_eq!(lingo_tensor::Tensor::scalar(2.5).item().unwrap(), 2.5);
    /// ```
    pub fn scalar(value: f32) -> Tensor {
        Tensor::new(ArrayD::from_elem(IxDyn(&[]), value))
    }

    /// A constant filled with zeros.
    ///
    /// ```
    /// assert_eq!(lingo_tensor::Tensor::zeros(&[2, 3]).to_vec(), vec![0.0; 6]);
    /// ```
    pub fn zeros(shape: &[usize]) -> Tensor {
        Tensor::full(shape, 0.0)
    }

    /// A constant filled with ones.
    ///
    /// ```
    /// assert_eq!(lingo_tensor::Tensor::ones(&[2]).to_vec(), vec![1.0, 1.0]);
    /// ```
    pub fn ones(shape: &[usize]) -> Tensor {
        Tensor::full(shape, 1.0)
    }

    /// A constant filled with `value`.
    ///
    /// ```
    /// assert_eq!(lingo_tensor::Tensor::full(&[3], 7.0).to_vec(), vec![7.0; 3]);
    /// ```
    pub fn full(shape: &[usize], value: f32) -> Tensor {
        Tensor::new(ArrayD::from_elem(IxDyn(shape), value))
    }

    /// A constant with values drawn uniformly from `[low, high)` by `rng`.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let t = lingo_tensor::Tensor::rand_uniform(&[100], -0.5, 0.5, &mut rng).unwrap();
    /// assert!(t.to_vec().iter().all(|v| (-0.5..0.5).contains(v)));
    /// ```
    pub fn rand_uniform(shape: &[usize], low: f32, high: f32, rng: &mut impl Rng) -> Result<Tensor> {
        let dist =
            Uniform::new(low, high).map_err(|e| bad_arg("rand_uniform", format!("range [{low}, {high}): {e}")))?;
        Ok(Tensor::new(ArrayD::random_using(IxDyn(shape), dist, rng)))
    }

    /// A constant with values drawn from a normal distribution `N(0, std²)` by `rng`.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let t = lingo_tensor::Tensor::randn(&[1000], 2.0, &mut rng).unwrap();
    /// let mean = t.to_vec().iter().sum::<f32>() / 1000.0;
    /// assert!(mean.abs() < 0.3);
    /// ```
    pub fn randn(shape: &[usize], std: f32, rng: &mut impl Rng) -> Result<Tensor> {
        let dist = Normal::new(0.0, std).map_err(|e| bad_arg("randn", format!("standard deviation {std}: {e}")))?;
        Ok(Tensor::new(ArrayD::random_using(IxDyn(shape), dist, rng)))
    }

    /// The shape, outermost axis first.
    ///
    /// ```
    /// assert_eq!(lingo_tensor::Tensor::zeros(&[4, 5]).shape(), &[4, 5]);
    /// ```
    pub fn shape(&self) -> &[usize] {
        self.data().shape()
    }

    /// The number of axes.
    ///
    /// ```
    /// assert_eq!(lingo_tensor::Tensor::zeros(&[4, 5]).ndim(), 2);
    /// ```
    pub fn ndim(&self) -> usize {
        self.data().ndim()
    }

    /// The number of elements.
    ///
    /// ```
    /// assert_eq!(lingo_tensor::Tensor::zeros(&[4, 5]).len(), 20);
    /// ```
    pub fn len(&self) -> usize {
        self.data().len()
    }

    /// Whether the tensor has no elements.
    ///
    /// ```
    /// assert!(lingo_tensor::Tensor::zeros(&[0, 5]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.data().is_empty()
    }

    /// The values in row-major order.
    ///
    /// ```
    /// let t = lingo_tensor::Tensor::from_vec(vec![1.0, 2.0], &[2, 1]).unwrap();
    /// assert_eq!(t.to_vec(), vec![1.0, 2.0]);
    /// ```
    pub fn to_vec(&self) -> Vec<f32> {
        flat_vec(self.data())
    }

    /// The single value of a one-element tensor.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// assert_eq!(Tensor::full(&[1, 1], 3.0).item().unwrap(), 3.0);
    /// assert!(Tensor::zeros(&[2]).item().is_err());
    /// ```
    pub fn item(&self) -> Result<f32> {
        match self.data().len() {
            1 => Ok(self.data().iter().copied().next().unwrap_or_default()),
            _ => Err(bad_shape("item", self.shape(), "needs exactly one element")),
        }
    }

    /// The same data cut loose from the graph: a constant.
    ///
    /// ```
    /// let w = lingo_tensor::Tensor::variable(ndarray::ArrayD::ones(vec![2]));
    /// let y = w.exp().detach();
    /// assert!(!y.requires_grad());
    /// ```
    pub fn detach(&self) -> Tensor {
        Tensor::new(self.data().clone())
    }

    /// The name of the op that made this tensor, `None` for a leaf or constant.
    ///
    /// ```
    /// let w = lingo_tensor::Tensor::variable(ndarray::ArrayD::ones(vec![2]));
    /// assert_eq!(w.op_name(), None);
    /// assert_eq!(w.exp().op_name(), Some("exp"));
    /// ```
    pub fn op_name(&self) -> Option<&'static str> {
        self.grad_fn().map(|f| f.name)
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("shape", &self.shape())
            .field("requires_grad", &self.requires_grad())
            .field("op", &self.op_name())
            .field("data", &self.data())
            .finish()
    }
}

/// The elements of `a` in row-major order: one copy of its memory when it is
/// laid out that way (as almost every array here is), else element by
/// element. (Iterating a dynamic-dimensional array steps through its index
/// one element at a time, many times slower than copying the slice.)
pub(crate) fn flat_vec(a: &ArrayD<f32>) -> Vec<f32> {
    a.as_slice().map_or_else(|| a.iter().copied().collect(), <[f32]>::to_vec)
}
