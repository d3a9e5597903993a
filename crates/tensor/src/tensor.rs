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
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ndarray::{ArrayD, IxDyn};

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

/// What the backward rule of an op with several outputs is given: the
/// gradient of each output (`None` for an output nothing downstream used)
/// and the op's inputs. See [`Tensor::from_op_multi`].
pub struct BackwardMulti<'a> {
    /// dL/d(output k), for each output `k`; `None` reads as all zeros.
    pub grads: &'a [Option<ArrayD<f32>>],
    /// The op's inputs, in the order the op listed them.
    pub inputs: &'a [Tensor],
}

impl BackwardMulti<'_> {
    /// Whether input `i` wants a gradient.
    ///
    /// ```
    /// # use lingo_tensor::Tensor;
    /// let x = Tensor::variable(ndarray::arr1(&[1.0_f32]).into_dyn());
    /// let outs = Tensor::from_op_multi("twice", vec![x.data().clone(), x.data().clone()], vec![x.clone()], |b| {
    ///     assert!(b.needs(0));
    ///     vec![Some(b.grad(0).cloned().unwrap_or_else(|| ndarray::ArrayD::zeros(vec![1])))]
    /// });
    /// outs[0].sum_all().backward().unwrap();
    /// ```
    pub fn needs(&self, i: usize) -> bool {
        self.inputs[i].requires_grad()
    }

    /// The data of input `i`.
    ///
    /// ```
    /// # use lingo_tensor::Tensor;
    /// let x = Tensor::variable(ndarray::arr1(&[2.0_f32]).into_dyn());
    /// // (x², x³): the rule reads x back
    /// let outs = Tensor::from_op_multi("powers", vec![x.data().mapv(|v| v * v), x.data().mapv(|v| v * v * v)], vec![x.clone()], |b| {
    ///     let x = b.input(0);
    ///     let mut g = ndarray::ArrayD::zeros(x.raw_dim());
    ///     if let Some(g0) = b.grad(0) { g = g + g0 * &x.mapv(|v| 2.0 * v); }
    ///     if let Some(g1) = b.grad(1) { g = g + g1 * &x.mapv(|v| 3.0 * v * v); }
    ///     vec![Some(g)]
    /// });
    /// let loss = outs[0].add(&outs[1]).unwrap().sum_all();
    /// assert_eq!(loss.backward().unwrap().get(&x).unwrap()[[0]], 16.0);   // 2x + 3x²
    /// ```
    pub fn input(&self, i: usize) -> &ArrayD<f32> {
        self.inputs[i].data()
    }

    /// The gradient of output `k`, `None` when no loss depends on it.
    ///
    /// ```
    /// # use lingo_tensor::Tensor;
    /// let x = Tensor::variable(ndarray::arr1(&[1.0_f32]).into_dyn());
    /// let outs = Tensor::from_op_multi("pair", vec![x.data().clone(), x.data().clone()], vec![x.clone()], |b| {
    ///     assert!(b.grad(0).is_none() && b.grad(1).is_some());   // only the second output was used
    ///     vec![b.grad(1).cloned()]
    /// });
    /// outs[1].sum_all().backward().unwrap();
    /// ```
    pub fn grad(&self, k: usize) -> Option<&ArrayD<f32>> {
        self.grads.get(k).and_then(Option::as_ref)
    }
}

/// A backward rule: gradients of the inputs (`None` where not needed), one per input.
type BackwardFn = Box<dyn Fn(&Backward<'_>) -> Vec<Option<ArrayD<f32>>> + Send + Sync>;
/// The backward rule of an op with several outputs.
type BackwardMultiFn = Box<dyn Fn(&BackwardMulti<'_>) -> Vec<Option<ArrayD<f32>>> + Send + Sync>;

/// How a gradient passes through the op that made a tensor.
pub(crate) enum Rule {
    /// A one-output op: output gradient in, input gradients out.
    One(BackwardFn),
    /// An op with `outputs` results. The tensor holding this rule is a hidden
    /// node (no data) whose consumers are the outputs, each a [`Rule::Part`];
    /// it runs once, after every output has handed it its gradient.
    Multi { outputs: usize, backward: BackwardMultiFn },
    /// Output `k` of the multi-output op that is this tensor's one input:
    /// its gradient is handed to that op rather than computed here.
    Part(usize),
}

/// How a tensor was made: by which op, from which inputs, and how to push a
/// gradient back through it.
pub(crate) struct GradFn {
    pub name: &'static str,
    pub inputs: Vec<Tensor>,
    pub rule: Rule,
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
/// The switch belongs to the thread, and a thread waiting inside `no_grad`
/// for its rayon tasks can be handed unrelated work meanwhile: so work that
/// needs gradients asks for them with [`enable_grad`], whatever scope its
/// thread is in.
///
/// ```
/// use lingo_tensor::{Tensor, no_grad};
/// let w = Tensor::variable(ndarray::arr1(&[1.0_f32]).into_dyn());
/// let y = no_grad(|| w.exp());
/// assert!(!y.requires_grad());
/// assert!(w.exp().requires_grad());
/// ```
pub fn no_grad<R>(f: impl FnOnce() -> R) -> R {
    with_grad(false, f)
}

/// Runs `f` with gradient recording switched on on this thread, inside a
/// [`no_grad`] scope or not (PyTorch's `enable_grad`). Training wraps each
/// forward and backward pass in it: a training task that rayon hands to a
/// thread waiting inside someone's `no_grad` would otherwise record nothing
/// and learn nothing.
///
/// ```
/// use lingo_tensor::{Tensor, enable_grad, no_grad};
/// let w = Tensor::variable(ndarray::arr1(&[1.0_f32]).into_dyn());
/// let y = no_grad(|| enable_grad(|| w.exp()));
/// assert!(y.requires_grad());
/// ```
pub fn enable_grad<R>(f: impl FnOnce() -> R) -> R {
    with_grad(true, f)
}

/// Runs `f` with recording `enabled` on this thread, then restores the
/// previous state, even if `f` panics (a caught panic must not leave the
/// thread silently without gradients, or with them).
fn with_grad<R>(enabled: bool, f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            GRAD_ENABLED.with(|g| g.set(self.0));
        }
    }
    let _restore = Restore(GRAD_ENABLED.with(|g| g.replace(enabled)));
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

/// Whether an op reading `inputs` is recorded for backward: a graph is being
/// recorded and some input needs a gradient. [`Tensor::from_op`] decides
/// with it; a fused kernel can ask first, to keep what only its backward
/// needs only when there will be a backward.
///
/// ```
/// use lingo_tensor::{Tensor, no_grad, will_record};
/// let (w, x) = (Tensor::variable(ndarray::arr1(&[1.0_f32]).into_dyn()), Tensor::zeros(&[1]));
/// assert!(will_record([&w, &x]) && !will_record([&x]));
/// assert!(!no_grad(|| will_record([&w])));
/// ```
pub fn will_record<'a>(inputs: impl IntoIterator<Item = &'a Tensor>) -> bool {
    is_grad_enabled() && inputs.into_iter().any(Tensor::requires_grad)
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
        if will_record(&inputs) {
            let grad_fn = GradFn { name, inputs, rule: Rule::One(Box::new(backward)) };
            Tensor::wrap(data, true, Some(grad_fn))
        } else {
            Tensor::new(data)
        }
    }

    /// Records an op with several results, such as a recurrent layer's
    /// outputs and final states, or attention's context and weights. Each
    /// output is an ordinary tensor; the backward rule runs once with the
    /// gradients of all of them (`None` for outputs no loss depends on).
    ///
    /// Why not one packed output cut into views: the views would copy, and
    /// each view's backward would hand back a zero-filled gradient of the
    /// whole packed shape, to be summed; here nothing is copied or zeroed.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// // (sum, product) of a pair
    /// let x = Tensor::variable(ndarray::arr1(&[2.0_f32, 5.0]).into_dyn());
    /// let (a, b) = (x.data()[[0]], x.data()[[1]]);
    /// let outs = Tensor::from_op_multi("sum_and_product", vec![
    ///     ndarray::arr0(a + b).into_dyn(),
    ///     ndarray::arr0(a * b).into_dyn(),
    /// ], vec![x.clone()], move |bw| {
    ///     let (gs, gp) = (bw.grad(0).map_or(0.0, |g| g[[]]), bw.grad(1).map_or(0.0, |g| g[[]]));
    ///     // d(a+b) = (1, 1), d(ab) = (b, a)
    ///     vec![Some(ndarray::arr1(&[gs + gp * b, gs + gp * a]).into_dyn())]
    /// });
    /// assert_eq!(outs[1].item().unwrap(), 10.0);
    /// let grads = outs[0].add(&outs[1]).unwrap().backward().unwrap();
    /// assert_eq!(grads.get(&x).unwrap().as_slice().unwrap(), &[6.0, 3.0]);
    /// ```
    pub fn from_op_multi(
        name: &'static str,
        outputs: Vec<ArrayD<f32>>,
        inputs: Vec<Tensor>,
        backward: impl Fn(&BackwardMulti<'_>) -> Vec<Option<ArrayD<f32>>> + Send + Sync + 'static,
    ) -> Vec<Tensor> {
        if !will_record(&inputs) {
            return outputs.into_iter().map(Tensor::new).collect();
        }
        let rule = Rule::Multi { outputs: outputs.len(), backward: Box::new(backward) };
        let node = Tensor::wrap(ArrayD::zeros(IxDyn(&[0])), true, Some(GradFn { name, inputs, rule }));
        outputs
            .into_iter()
            .enumerate()
            .map(|(k, data)| {
                Tensor::wrap(data, true, Some(GradFn { name, inputs: vec![node.clone()], rule: Rule::Part(k) }))
            })
            .collect()
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

    pub(crate) fn grad_fn(&self) -> Option<&GradFn> {
        self.0.grad_fn.as_ref()
    }

    /// Mutable access to a leaf's data when this handle is the only one;
    /// `None` when the data is shared (for instance by a live graph).
    pub(crate) fn data_mut_if_unique(&mut self) -> Option<&mut ArrayD<f32>> {
        Arc::get_mut(&mut self.0).map(|inner| &mut inner.data)
    }
}
