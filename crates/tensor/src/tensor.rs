//! The [`Tensor`] type: an `f32` array plus the record of how it was made.
//!
//! A tensor is an immutable, cheaply clonable handle (`Arc`) to
//!
//! * its data, an [`ArrayD<f32>`],
//! * whether gradients should flow to it (`requires_grad`), and
//! * for tensors made by an operation, a [`GradFn`]: the op's inputs and the
//!   closure that turns the gradient of the op's output into gradients of its
//!   inputs. That closure is written right next to the op's forward code, so
//!   every op reads as "forward, then backward" in a few lines.
//!
//! The graph is therefore built as you compute (define-by-run, like PyTorch
//! and micrograd) and walked backwards by [`Tensor::backward`] in
//! [`crate::backprop`].

use std::cell::Cell;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ndarray::{ArrayD, IxDyn};
use ndarray_rand::RandomExt;
use ndarray_rand::rand_distr::{Normal, Uniform};
use rand::Rng;

use crate::error::{Result, bad_arg, bad_shape};

/// A process-wide unique identity of a tensor; gradients are stored by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(u64);

impl TensorId {
    fn fresh() -> TensorId {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        TensorId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// What a backward rule is given: the gradient flowing into the op's output,
/// the output itself (many rules are cheapest in terms of it: `d exp(x) = exp(x) dx`)
/// and the op's inputs. See [`Tensor::from_op`].
pub struct Backward<'a> {
    /// dL/d(output), same shape as the output.
    pub grad: &'a ArrayD<f32>,
    /// The op's output data.
    pub out: &'a ArrayD<f32>,
    /// The op's inputs, in the order the op listed them.
    pub inputs: &'a [Tensor],
}

impl Backward<'_> {
    /// Whether input `i` wants a gradient; rules skip work for the others.
    ///
    /// ```
    /// # use lingo_tensor::Tensor;
    /// let w = Tensor::variable(ndarray::ArrayD::ones(vec![1]));
    /// let c = Tensor::ones(&[1]);
    /// let y = Tensor::from_op("probe", w.data() + c.data(), vec![w.clone(), c.clone()], |b| {
    ///     assert!(b.needs(0) && !b.needs(1));
    ///     vec![Some(b.grad.clone()), None]
    /// });
    /// y.sum_all().backward().unwrap();
    /// ```
    pub fn needs(&self, i: usize) -> bool {
        self.inputs[i].requires_grad()
    }

    /// The data of input `i`.
    ///
    /// ```
    /// # use lingo_tensor::Tensor;
    /// let x = Tensor::variable(ndarray::arr1(&[3.0_f32]).into_dyn());
    /// // y = x², dy/dx = 2x, read back from the input
    /// let y = Tensor::from_op("square", x.data().mapv(|v| v * v), vec![x.clone()], |b| vec![Some(b.grad * &b.input(0).mapv(|v| 2.0 * v))]);
    /// assert_eq!(y.sum_all().backward().unwrap().get(&x).unwrap()[[0]], 6.0);
    /// ```
    pub fn input(&self, i: usize) -> &ArrayD<f32> {
        self.inputs[i].data()
    }
}

/// A backward rule: gradients of the inputs (`None` where not needed), one per input.
type BackwardFn = Box<dyn Fn(&Backward<'_>) -> Vec<Option<ArrayD<f32>>> + Send + Sync>;

/// How a tensor was made: by which op, from which inputs, and how to push a
/// gradient back through it.
pub(crate) struct GradFn {
    pub name: &'static str,
    pub inputs: Vec<Tensor>,
    pub backward: BackwardFn,
}

struct Inner {
    id: TensorId,
    data: ArrayD<f32>,
    requires_grad: bool,
    grad_fn: Option<GradFn>,
}

impl Drop for Inner {
    /// Dropping the last handle to a long chain (an unrolled sequence, a
    /// training step) would otherwise drop each input inside its consumer's
    /// drop, one stack frame per op, and overflow the stack. Unlink the chain
    /// instead and drop it from a loop.
    fn drop(&mut self) {
        let Some(GradFn { inputs, .. }) = self.grad_fn.take() else { return };
        let mut pending = inputs;
        while let Some(t) = pending.pop() {
            // Only a tensor nobody else holds dies here; take its inputs first.
            if let Ok(mut inner) = Arc::try_unwrap(t.0)
                && let Some(GradFn { inputs, .. }) = inner.grad_fn.take()
            {
                pending.extend(inputs);
            }
        }
    }
}

/// An `f32` n-dimensional array that remembers how it was computed.
///
/// Cloning a `Tensor` clones a handle, not the data. Tensors are immutable;
/// optimizers change parameters through [`crate::Param::update`].
///
/// ```
/// use lingo_tensor::Tensor;
/// let w = Tensor::variable(ndarray::arr1(&[2.0_f32, -1.0]).into_dyn());
/// let x = Tensor::from_vec(vec![3.0, 4.0], &[2]).unwrap();
/// let loss = w.mul(&x).unwrap().sum_all();          // 2*3 - 1*4 = 2
/// assert_eq!(loss.item().unwrap(), 2.0);
/// let grads = loss.backward().unwrap();
/// assert_eq!(grads.get(&w).unwrap().as_slice().unwrap(), &[3.0, 4.0]); // dL/dw = x
/// ```
#[derive(Clone)]
pub struct Tensor(Arc<Inner>);

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Runs `f` with gradient recording switched off on this thread: ops inside
/// build no graph and keep no saved values (what decoding wants).
///
/// ```
/// use lingo_tensor::{Tensor, no_grad};
/// let w = Tensor::variable(ndarray::arr1(&[1.0_f32]).into_dyn());
/// let y = no_grad(|| w.exp());
/// assert!(!y.requires_grad());
/// assert!(w.exp().requires_grad());
/// ```
pub fn no_grad<R>(f: impl FnOnce() -> R) -> R {
    // Restore the previous state even if `f` panics, so a caught panic does
    // not leave the thread silently without gradients.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            GRAD_ENABLED.with(|g| g.set(self.0));
        }
    }
    let _restore = Restore(GRAD_ENABLED.with(|g| g.replace(false)));
    f()
}

/// Whether ops on this thread currently record a graph (false inside [`no_grad`]).
///
/// ```
/// assert!(lingo_tensor::is_grad_enabled());
/// assert!(!lingo_tensor::no_grad(lingo_tensor::is_grad_enabled));
/// ```
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

impl Tensor {
    fn wrap(data: ArrayD<f32>, requires_grad: bool, grad_fn: Option<GradFn>) -> Tensor {
        Tensor(Arc::new(Inner { id: TensorId::fresh(), data, requires_grad, grad_fn }))
    }

    /// A constant: no gradient flows to it.
    ///
    /// ```
    /// let t = lingo_tensor::Tensor::new(ndarray::ArrayD::zeros(vec![2, 2]));
    /// assert_eq!(t.shape(), &[2, 2]);
    /// assert!(!t.requires_grad());
    /// ```
    pub fn new(data: ArrayD<f32>) -> Tensor {
        Tensor::wrap(data, false, None)
    }

    /// A leaf that wants gradients (a parameter or an input under study).
    ///
    /// ```
    /// let t = lingo_tensor::Tensor::variable(ndarray::ArrayD::zeros(vec![3]));
    /// assert!(t.requires_grad());
    /// ```
    pub fn variable(data: ArrayD<f32>) -> Tensor {
        Tensor::wrap(data, true, None)
    }

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
        ArrayD::from_shape_vec(IxDyn(shape), values)
            .map(Tensor::new)
            .map_err(|_| bad_shape("from_vec", shape, format!("needs {} values, got {n}", shape.iter().product::<usize>())))
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
        let dist = Uniform::new(low, high).map_err(|e| bad_arg("rand_uniform", format!("range [{low}, {high}): {e}")))?;
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

    /// Records the result of an op: its `data`, its `inputs`, and its
    /// backward rule, which maps the gradient of the output to one gradient
    /// per input (`None` for inputs that need none, as [`Backward::needs`]
    /// tells). Every op in this crate is built this way, and so are fused
    /// ops in other crates (the attention kernels of `lingo-attention`).
    ///
    /// When gradients are off (see [`no_grad`]) or no input wants one, the
    /// rule is dropped on the spot and the result is a plain constant, so
    /// inference keeps nothing alive.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// // softplus(x) = ln(1 + eˣ), d/dx = σ(x)
    /// fn softplus(x: &Tensor) -> Tensor {
    ///     let out = x.data().mapv(|v| v.exp().ln_1p());
    ///     Tensor::from_op("softplus", out, vec![x.clone()], |b| {
    ///         vec![Some(b.grad * &b.input(0).mapv(|v| 1.0 / (1.0 + (-v).exp())))]
    ///     })
    /// }
    /// let x = Tensor::variable(ndarray::arr1(&[0.0_f32]).into_dyn());
    /// let grads = softplus(&x).sum_all().backward().unwrap();
    /// assert_eq!(grads.get(&x).unwrap()[[0]], 0.5);
    /// ```
    pub fn from_op(
        name: &'static str,
        data: ArrayD<f32>,
        inputs: Vec<Tensor>,
        backward: impl Fn(&Backward<'_>) -> Vec<Option<ArrayD<f32>>> + Send + Sync + 'static,
    ) -> Tensor {
        if is_grad_enabled() && inputs.iter().any(Tensor::requires_grad) {
            let grad_fn = GradFn { name, inputs, backward: Box::new(backward) };
            Tensor::wrap(data, true, Some(grad_fn))
        } else {
            Tensor::new(data)
        }
    }

    /// This tensor's identity (the key of its gradient in [`crate::Gradients`]).
    ///
    /// ```
    /// let a = lingo_tensor::Tensor::zeros(&[1]);
    /// assert_eq!(a.id(), a.clone().id());
    /// assert_ne!(a.id(), lingo_tensor::Tensor::zeros(&[1]).id());
    /// ```
    pub fn id(&self) -> TensorId {
        self.0.id
    }

    /// The data.
    ///
    /// ```
    /// let t = lingo_tensor::Tensor::ones(&[2]);
    /// assert_eq!(t.data().sum(), 2.0);
    /// ```
    pub fn data(&self) -> &ArrayD<f32> {
        &self.0.data
    }

    /// The shape, outermost axis first.
    ///
    /// ```
    /// assert_eq!(lingo_tensor::Tensor::zeros(&[4, 5]).shape(), &[4, 5]);
    /// ```
    pub fn shape(&self) -> &[usize] {
        self.0.data.shape()
    }

    /// The number of axes.
    ///
    /// ```
    /// assert_eq!(lingo_tensor::Tensor::zeros(&[4, 5]).ndim(), 2);
    /// ```
    pub fn ndim(&self) -> usize {
        self.0.data.ndim()
    }

    /// The number of elements.
    ///
    /// ```
    /// assert_eq!(lingo_tensor::Tensor::zeros(&[4, 5]).len(), 20);
    /// ```
    pub fn len(&self) -> usize {
        self.0.data.len()
    }

    /// Whether the tensor has no elements.
    ///
    /// ```
    /// assert!(lingo_tensor::Tensor::zeros(&[0, 5]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.0.data.is_empty()
    }

    /// The values in row-major order.
    ///
    /// ```
    /// let t = lingo_tensor::Tensor::from_vec(vec![1.0, 2.0], &[2, 1]).unwrap();
    /// assert_eq!(t.to_vec(), vec![1.0, 2.0]);
    /// ```
    pub fn to_vec(&self) -> Vec<f32> {
        self.0.data.iter().copied().collect()
    }

    /// The single value of a one-element tensor.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// assert_eq!(Tensor::full(&[1, 1], 3.0).item().unwrap(), 3.0);
    /// assert!(Tensor::zeros(&[2]).item().is_err());
    /// ```
    pub fn item(&self) -> Result<f32> {
        match self.0.data.len() {
            1 => Ok(self.0.data.iter().copied().next().unwrap_or_default()),
            _ => Err(bad_shape("item", self.shape(), "needs exactly one element")),
        }
    }

    /// Whether gradients flow to (or through) this tensor.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// assert!(!Tensor::zeros(&[1]).requires_grad());
    /// assert!(Tensor::variable(ndarray::ArrayD::zeros(vec![1])).requires_grad());
    /// ```
    pub fn requires_grad(&self) -> bool {
        self.0.requires_grad
    }

    /// The same data cut loose from the graph: a constant.
    ///
    /// ```
    /// let w = lingo_tensor::Tensor::variable(ndarray::ArrayD::ones(vec![2]));
    /// let y = w.exp().detach();
    /// assert!(!y.requires_grad());
    /// ```
    pub fn detach(&self) -> Tensor {
        Tensor::new(self.0.data.clone())
    }

    /// The name of the op that made this tensor, `None` for a leaf or constant.
    ///
    /// ```
    /// let w = lingo_tensor::Tensor::variable(ndarray::ArrayD::ones(vec![2]));
    /// assert_eq!(w.op_name(), None);
    /// assert_eq!(w.exp().op_name(), Some("exp"));
    /// ```
    pub fn op_name(&self) -> Option<&'static str> {
        self.0.grad_fn.as_ref().map(|f| f.name)
    }

    pub(crate) fn grad_fn(&self) -> Option<&GradFn> {
        self.0.grad_fn.as_ref()
    }

    /// Mutable access to a leaf's data when this handle is the only one;
    /// `None` when the data is shared (for instance by a live graph).
    pub(crate) fn data_mut_if_unique(&mut self) -> Option<&mut ArrayD<f32>> {
        Arc::get_mut(&mut self.0).map(|inner| &mut inner.data)
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("shape", &self.shape())
            .field("requires_grad", &self.requires_grad())
            .field("op", &self.op_name())
            .field("data", &self.0.data)
            .finish()
    }
}
