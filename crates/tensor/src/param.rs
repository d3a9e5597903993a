//! Named parameters and the [`Module`] trait: the one place optimizers,
//! checkpoints and gradient clipping find the weights of a model.

use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use lingo_kernels::gemm::Panels;
use ndarray::{ArrayD, ArrayView2, Axis, Ix2, Slice, s};

use crate::error::{Result, mismatch};
use crate::ops::affine;
use crate::tensor::{Tensor, is_grad_enabled};

/// A trainable tensor with a stable, unique name such as
/// `encoder.rnn.weight_hh_l0` (PyTorch's state-dict names, so weights map one to one).
///
/// Use [`Param::tensor`] in the forward pass; an optimizer changes the values
/// through [`Param::update`] once the step's graph is gone.
///
/// ```
/// use lingo_tensor::Param;
/// let mut w = Param::new("linear.weight", ndarray::ArrayD::zeros(vec![2, 3]));
/// assert_eq!(w.name(), "linear.weight");
/// assert!(w.tensor().requires_grad());
/// w.update(|data| data.fill(1.0));
/// assert_eq!(w.tensor().sum_all().item().unwrap(), 6.0);
/// ```
#[derive(Clone)]
pub struct Param {
    name: String,
    value: Tensor,
    /// `valueᵀ` packed for the products of inference ([`Param::linear`]),
    /// made on first use; a fresh one whenever the values change.
    packed: Arc<OnceLock<Option<Panels>>>,
    /// Blocks of rows packed likewise ([`Param::linear_rows`]).
    packed_rows: Arc<Mutex<Vec<RowsPacked>>>,
}

/// Rows of a parameter and their transpose packed (`None` where the panel path does not run).
type RowsPacked = (Range<usize>, Arc<Option<Panels>>);

impl Param {
    /// A parameter holding `data`.
    ///
    /// ```
    /// let p = lingo_tensor::Param::new("bias", ndarray::ArrayD::zeros(vec![4]));
    /// assert_eq!(p.shape(), &[4]);
    /// ```
    pub fn new(name: impl Into<String>, data: ArrayD<f32>) -> Param {
        Param { name: name.into(), value: Tensor::variable(data), packed: Arc::default(), packed_rows: Arc::default() }
    }

    /// The parameter's full name.
    ///
    /// ```
    /// assert_eq!(lingo_tensor::Param::new("w", ndarray::ArrayD::zeros(vec![1])).name(), "w");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tensor to compute with; gradients of a loss reach it.
    ///
    /// ```
    /// let p = lingo_tensor::Param::new("w", ndarray::ArrayD::ones(vec![2]));
    /// let grads = p.tensor().sum_all().backward().unwrap();
    /// assert_eq!(grads.get(p.tensor()).unwrap().sum(), 2.0);
    /// ```
    pub fn tensor(&self) -> &Tensor {
        &self.value
    }

    /// The same parameter as a constant, with a copy of its values: a
    /// backward pass through a model of frozen parameters computes no
    /// gradient for them, only for the inputs that want one (gradients
    /// with respect to a model's input, as saliency takes them). For
    /// reading only: no optimizer step ever has a gradient for it.
    ///
    /// ```
    /// use lingo_tensor::{Param, Tensor};
    /// let w = Param::new("w", ndarray::arr1(&[2.0_f32]).into_dyn()).frozen();
    /// assert_eq!((w.name(), w.tensor().requires_grad()), ("w", false));
    /// let x = Tensor::variable(ndarray::arr1(&[3.0_f32]).into_dyn());
    /// let grads = x.mul(w.tensor()).unwrap().sum_all().backward().unwrap();
    /// assert_eq!((grads.len(), grads.get(&x).unwrap()[[0]]), (1, 2.0));
    /// ```
    pub fn frozen(&self) -> Param {
        Param {
            name: self.name.clone(),
            value: self.value.detach(),
            packed: Arc::default(),
            packed_rows: Arc::default(),
        }
    }

    /// The parameter's shape.
    ///
    /// ```
    /// assert_eq!(lingo_tensor::Param::new("w", ndarray::ArrayD::zeros(vec![3, 2])).shape(), &[3, 2]);
    /// ```
    pub fn shape(&self) -> &[usize] {
        self.value.shape()
    }

    /// Changes the values in place. When no graph still holds the tensor (the
    /// usual case: the step's loss has been dropped) the data is updated
    /// without copying; otherwise the graph keeps the old values and the
    /// parameter gets a fresh copy.
    ///
    /// ```
    /// let mut p = lingo_tensor::Param::new("w", ndarray::ArrayD::ones(vec![2]));
    /// p.update(|w| *w *= 3.0);
    /// assert_eq!(p.tensor().to_vec(), vec![3.0, 3.0]);
    /// ```
    pub fn update(&mut self, f: impl FnOnce(&mut ArrayD<f32>)) {
        (self.packed, self.packed_rows) = (Arc::default(), Arc::default()); // packed from the old values
        match self.value.data_mut_if_unique() {
            Some(data) => f(data),
            None => {
                let mut data = self.value.data().clone();
                f(&mut data);
                self.value = Tensor::variable(data);
            }
        }
    }

    /// `x·Wᵀ + b` with this parameter as the weight `W (out, in)`:
    /// [`Tensor::linear`]. Where no graph is recorded (decoding), `Wᵀ` is
    /// packed for the products' panel path on first use and kept with the
    /// parameter, so that the many products of decoding do not pack it
    /// again; the same bits either way.
    ///
    /// ```
    /// use lingo_tensor::{Param, Tensor, no_grad};
    /// let w = Param::new("w", ndarray::arr2(&[[1.0_f32, 2.0], [0.0, -1.0]]).into_dyn());
    /// let x = Tensor::from_vec(vec![3.0, 4.0], &[1, 2]).unwrap();
    /// let y = no_grad(|| w.linear(&x, None)).unwrap();
    /// assert_eq!(y.to_vec(), vec![11.0, -4.0]);
    /// assert_eq!(y.to_vec(), x.linear(w.tensor(), None).unwrap().to_vec());
    /// ```
    pub fn linear(&self, x: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        if is_grad_enabled() || self.value.ndim() != 2 {
            return x.linear(&self.value, bias);
        }
        let panels = || self.packed_t();
        Ok(Tensor::new(affine(x, self.value.data().view(), bias, Some(&panels))?))
    }

    /// `x·W[rows]ᵀ + b`: [`Param::linear`] with rows `rows` of this
    /// parameter as the weight, one block of a stacked weight (an
    /// attention's `q` rows of `in_proj_weight`, or its `k` and `v` rows).
    /// Where no graph is recorded the rows are read in place and packed
    /// once, as [`Param::linear`] packs the whole; the bits of
    /// `x.linear(&w.narrow(0, rows.start, rows.len())?, b)` either way.
    ///
    /// ```
    /// use lingo_tensor::{Param, Tensor, no_grad};
    /// let w = Param::new("w", ndarray::arr2(&[[1.0_f32, 2.0], [0.0, -1.0], [3.0, 1.0]]).into_dyn());
    /// let x = Tensor::from_vec(vec![3.0, 4.0], &[1, 2]).unwrap();
    /// let rows = no_grad(|| w.linear_rows(&x, 1..3, None)).unwrap();
    /// assert_eq!(rows.to_vec(), vec![-4.0, 13.0]);
    /// assert_eq!(w.linear_rows(&x, 1..3, None).unwrap().to_vec(), rows.to_vec()); // recorded: the same
    /// assert!(w.linear_rows(&x, 2..4, None).is_err());
    /// ```
    pub fn linear_rows(&self, x: &Tensor, rows: Range<usize>, bias: Option<&Tensor>) -> Result<Tensor> {
        if is_grad_enabled() || self.value.ndim() != 2 || rows.start > rows.end || rows.end > self.shape()[0] {
            return x.linear(&self.value.narrow(0, rows.start, rows.len())?, bias);
        }
        let panels = self.packed_rows_t(rows.clone());
        let w = self.value.data().slice_axis(Axis(0), Slice::from(rows));
        Ok(Tensor::new(affine(x, w, bias, Some(&|| panels.as_ref().as_ref()))?))
    }

    /// `Wᵀ` packed for the products' panel path, for ops that multiply by
    /// `Wᵀ` themselves (the fused recurrences, `x·W_ihᵀ` and `h·W_hhᵀ`):
    /// made on first use and kept, as for [`Param::linear`]. `None` where a
    /// graph is recorded (training changes the values), for a parameter
    /// that is not a matrix, and where the panel path does not run (CPUs
    /// without AVX-512, the reference kernels).
    ///
    /// ```
    /// use lingo_tensor::{Param, no_grad};
    /// let w = Param::new("w", ndarray::Array2::<f32>::ones((4, 3)).into_dyn());
    /// assert!(w.panels().is_none()); // a graph would be recorded
    /// if let Some(p) = no_grad(|| w.panels().map(|p| p.dim())) {
    ///     assert_eq!(p, (3, 4)); // Wᵀ
    /// }
    /// ```
    pub fn panels(&self) -> Option<&Panels> {
        if is_grad_enabled() || self.value.ndim() != 2 {
            return None;
        }
        self.packed_t()
    }

    /// `valueᵀ` packed, made on first call (a rank-2 value only).
    fn packed_t(&self) -> Option<&Panels> {
        let pack = || Panels::new(self.matrix().t());
        self.packed.get_or_init(pack).as_ref()
    }

    /// `value[rows]ᵀ` packed, made on the first call for those rows.
    fn packed_rows_t(&self, rows: Range<usize>) -> Arc<Option<Panels>> {
        let mut kept = self.packed_rows.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, panels)) = kept.iter().find(|(r, _)| *r == rows) {
            return Arc::clone(panels);
        }
        let panels = Arc::new(Panels::new(self.matrix().slice(s![rows.clone(), ..]).t()));
        kept.push((rows, Arc::clone(&panels)));
        panels
    }

    /// The value as a matrix (a rank-2 value only).
    fn matrix(&self) -> ArrayView2<'_, f32> {
        self.value.data().view().into_dimensionality::<Ix2>().expect("rank 2, checked")
    }

    /// Replaces the values with `data` of the same shape (loading a checkpoint).
    ///
    /// ```
    /// let mut p = lingo_tensor::Param::new("w", ndarray::ArrayD::zeros(vec![2]));
    /// p.set(ndarray::arr1(&[1.0, 2.0]).into_dyn()).unwrap();
    /// assert_eq!(p.tensor().to_vec(), vec![1.0, 2.0]);
    /// assert!(p.set(ndarray::ArrayD::zeros(vec![3])).is_err());
    /// ```
    pub fn set(&mut self, data: ArrayD<f32>) -> Result<()> {
        if data.shape() != self.shape() {
            return Err(mismatch(
                "Param::set",
                self.shape(),
                data.shape(),
                format!("parameter {} keeps its shape", self.name),
            ));
        }
        self.update(|d| d.assign(&data));
        Ok(())
    }
}

impl fmt::Debug for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Param").field("name", &self.name).field("value", &self.value).finish()
    }
}

/// Anything that owns parameters: layers and whole models.
///
/// `params` lists every parameter exactly once, in a stable order (the order
/// a checkpoint stores them and an optimizer keeps its state in), and
/// `params_mut` the same ones in the same order. A struct lists the fields
/// that hold them once, with [`module!`](crate::module), which writes both.
///
/// ```
/// use lingo_tensor::{Module, Param};
/// struct Affine { weight: Param, bias: Option<Param> }
/// lingo_tensor::module!(Affine { weight, bias });
/// let m = Affine {
///     weight: Param::new("weight", ndarray::ArrayD::zeros(vec![3, 2])),
///     bias: Some(Param::new("bias", ndarray::ArrayD::zeros(vec![3]))),
/// };
/// assert_eq!(m.num_params(), 9);
/// assert_eq!(m.params().iter().map(|p| p.name()).collect::<Vec<_>>(), ["weight", "bias"]);
/// ```
pub trait Module {
    /// Every parameter, in a stable order.
    fn params(&self) -> Vec<&Param>;

    /// Every parameter, mutably, in the same order as [`Module::params`].
    fn params_mut(&mut self) -> Vec<&mut Param>;

    /// The total number of scalar weights.
    fn num_params(&self) -> usize {
        self.params().iter().map(|p| p.tensor().len()).sum()
    }
}

/// What a field of a [`Module`] can be to hold parameters: a [`Param`], a
/// module, or an `Option`, `Vec` or array of them. [`module!`](crate::module)
/// collects a struct's fields through it.
pub trait HasParams {
    /// Appends its parameters to `out`, in order.
    fn collect<'a>(&'a self, out: &mut Vec<&'a Param>);

    /// Appends them mutably, in the same order.
    fn collect_mut<'a>(&'a mut self, out: &mut Vec<&'a mut Param>);
}

impl HasParams for Param {
    fn collect<'a>(&'a self, out: &mut Vec<&'a Param>) {
        out.push(self);
    }

    fn collect_mut<'a>(&'a mut self, out: &mut Vec<&'a mut Param>) {
        out.push(self);
    }
}

impl<M: Module> HasParams for M {
    fn collect<'a>(&'a self, out: &mut Vec<&'a Param>) {
        out.extend(self.params());
    }

    fn collect_mut<'a>(&'a mut self, out: &mut Vec<&'a mut Param>) {
        out.extend(self.params_mut());
    }
}

impl<T: HasParams> HasParams for Option<T> {
    fn collect<'a>(&'a self, out: &mut Vec<&'a Param>) {
        self.iter().for_each(|x| x.collect(out));
    }

    fn collect_mut<'a>(&'a mut self, out: &mut Vec<&'a mut Param>) {
        self.iter_mut().for_each(|x| x.collect_mut(out));
    }
}

impl<T: HasParams> HasParams for Vec<T> {
    fn collect<'a>(&'a self, out: &mut Vec<&'a Param>) {
        self.iter().for_each(|x| x.collect(out));
    }

    fn collect_mut<'a>(&'a mut self, out: &mut Vec<&'a mut Param>) {
        self.iter_mut().for_each(|x| x.collect_mut(out));
    }
}

impl<T: HasParams, const N: usize> HasParams for [T; N] {
    fn collect<'a>(&'a self, out: &mut Vec<&'a Param>) {
        self.iter().for_each(|x| x.collect(out));
    }

    fn collect_mut<'a>(&'a mut self, out: &mut Vec<&'a mut Param>) {
        self.iter_mut().for_each(|x| x.collect_mut(out));
    }
}

/// [`Module`] for a struct from the fields that hold its parameters, in
/// the order listed (a field of a field as `ff.linear1`): each field a
/// [`Param`], a module, or an `Option`, `Vec` or array of them ([`HasParams`]).
/// Both `params` and `params_mut` come from the one list. A struct
/// without parameters lists none: `module!(Dropout {})`.
///
/// An enum (or a struct whose parameters sit in an enum field) lists
/// them per variant, matching `self` or one of its fields; each arm's
/// bindings are the holders, in order:
///
/// ```
/// use lingo_tensor::{Module, Param};
/// enum Scale { Fixed(f32), Learned { gain: Param, shift: Param } }
/// lingo_tensor::module!(Scale, match self {
///     Scale::Fixed(_) => [],
///     Scale::Learned { gain, shift } => [gain, shift],
/// });
/// let learned = Scale::Learned { gain: Param::new("g", ndarray::ArrayD::ones(vec![2])), shift: Param::new("s", ndarray::ArrayD::zeros(vec![2])) };
/// assert_eq!((learned.num_params(), Scale::Fixed(2.0).num_params()), (4, 0));
/// ```
///
/// See [`Module`] for a struct.
#[macro_export]
macro_rules! module {
    ($type:ty, match self $(. $field:ident)* { $($pattern:pat => [$($held:ident),* $(,)?]),* $(,)? }) => {
        impl $crate::Module for $type {
            fn params(&self) -> Vec<&$crate::Param> {
                let mut out = Vec::new();
                match &(*self) $(. $field)* {
                    $( $pattern => { $( $crate::HasParams::collect($held, &mut out); )* } )*
                }
                out
            }

            fn params_mut(&mut self) -> Vec<&mut $crate::Param> {
                let mut out = Vec::new();
                match &mut (*self) $(. $field)* {
                    $( $pattern => { $( $crate::HasParams::collect_mut($held, &mut out); )* } )*
                }
                out
            }
        }
    };
    ($type:ty { $($($field:ident).+),* $(,)? }) => {
        impl $crate::Module for $type {
            fn params(&self) -> Vec<&$crate::Param> {
                #[allow(unused_mut)]
                let mut out = Vec::new();
                $( $crate::HasParams::collect(&self.$($field).+, &mut out); )*
                out
            }

            fn params_mut(&mut self) -> Vec<&mut $crate::Param> {
                #[allow(unused_mut)]
                let mut out = Vec::new();
                $( $crate::HasParams::collect_mut(&mut self.$($field).+, &mut out); )*
                out
            }
        }
    };
}
