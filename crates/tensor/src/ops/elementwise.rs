//! Elementwise ops: arithmetic with broadcasting, activations, dropout.
//!
//! Each backward rule is the derivative written beside it; for binary ops the
//! gradient of a broadcast operand is summed back to its shape ([`sum_to`]).

use ndarray::{ArrayD, IxDyn, Zip};
use rand::Rng;

use super::{broadcast_shape, sum_to};
use crate::error::{Result, bad_arg};
use crate::tensor::Tensor;
use lingo_kernels::{dropout, math};

/// `a` with `kernel` run over its elements in memory order; the result
/// keeps `a`'s layout when `a` is contiguous.
fn mapped(a: &ArrayD<f32>, kernel: fn(&mut [f32])) -> ArrayD<f32> {
    let mut out = if a.as_slice_memory_order().is_some() { a.clone() } else { a.as_standard_layout().into_owned() };
    kernel(out.as_slice_memory_order_mut().expect("contiguous, made so above"));
    out
}

/// `dy ← kernel(dy, x)` elementwise: a backward rule's gradient from its kernel.
fn zipped(dy: &ArrayD<f32>, x: &ArrayD<f32>, kernel: fn(&mut [f32], &[f32])) -> ArrayD<f32> {
    let (mut dx, x) = (dy.as_standard_layout().into_owned(), x.as_standard_layout());
    kernel(dx.as_slice_mut().expect("standard layout"), x.as_slice().expect("standard layout"));
    dx
}

/// `f(a, b)` elementwise over the broadcast shape of `a` and `b`.
fn zip_broadcast(
    op: &'static str,
    a: &ArrayD<f32>,
    b: &ArrayD<f32>,
    f: impl Fn(f32, f32) -> f32,
) -> Result<ArrayD<f32>> {
    let shape = IxDyn(&broadcast_shape(op, a.shape(), b.shape())?);
    // Both broadcasts succeed: `shape` was derived from the two shapes above.
    let (Some(a), Some(b)) = (a.broadcast(shape.clone()), b.broadcast(shape)) else {
        unreachable!("broadcast_shape accepted shapes that ndarray cannot broadcast")
    };
    Ok(Zip::from(a).and(b).map_collect(|&x, &y| f(x, y)))
}

impl Tensor {
    /// `self + other` with broadcasting. `∂/∂a = ∂/∂b = 1`.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    /// let b = Tensor::from_vec(vec![10.0, 20.0], &[2]).unwrap();   // broadcast over rows
    /// assert_eq!(a.add(&b).unwrap().to_vec(), vec![11.0, 22.0, 13.0, 24.0]);
    /// assert!(a.add(&Tensor::zeros(&[3])).is_err());
    /// ```
    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        let out = zip_broadcast("add", self.data(), other.data(), |x, y| x + y)?;
        Ok(Tensor::from_op("add", out, vec![self.clone(), other.clone()], |b| {
            vec![
                b.needs(0).then(|| sum_to(b.grad, b.input(0).shape())),
                b.needs(1).then(|| sum_to(b.grad, b.input(1).shape())),
            ]
        }))
    }

    /// `self - other` with broadcasting. `∂/∂a = 1`, `∂/∂b = -1`.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let a = Tensor::from_vec(vec![5.0, 7.0], &[2]).unwrap();
    /// assert_eq!(a.sub(&Tensor::scalar(1.0)).unwrap().to_vec(), vec![4.0, 6.0]);
    /// ```
    pub fn sub(&self, other: &Tensor) -> Result<Tensor> {
        let out = zip_broadcast("sub", self.data(), other.data(), |x, y| x - y)?;
        Ok(Tensor::from_op("sub", out, vec![self.clone(), other.clone()], |b| {
            vec![
                b.needs(0).then(|| sum_to(b.grad, b.input(0).shape())),
                b.needs(1).then(|| -sum_to(b.grad, b.input(1).shape())),
            ]
        }))
    }

    /// `self * other` elementwise with broadcasting. `∂/∂a = b`, `∂/∂b = a`.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let a = Tensor::from_vec(vec![1.0, 2.0], &[2]).unwrap();
    /// assert_eq!(a.mul(&Tensor::scalar(3.0)).unwrap().to_vec(), vec![3.0, 6.0]);
    /// ```
    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        let out = zip_broadcast("mul", self.data(), other.data(), |x, y| x * y)?;
        Ok(Tensor::from_op("mul", out, vec![self.clone(), other.clone()], |b| {
            vec![
                b.needs(0).then(|| sum_to(&(b.grad * b.input(1)), b.input(0).shape())),
                b.needs(1).then(|| sum_to(&(b.grad * b.input(0)), b.input(1).shape())),
            ]
        }))
    }

    /// `self / other` elementwise with broadcasting. `∂/∂a = 1/b`, `∂/∂b = -a/b² = -out/b`.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let a = Tensor::from_vec(vec![1.0, 3.0], &[2]).unwrap();
    /// assert_eq!(a.div(&Tensor::scalar(2.0)).unwrap().to_vec(), vec![0.5, 1.5]);
    /// ```
    pub fn div(&self, other: &Tensor) -> Result<Tensor> {
        let out = zip_broadcast("div", self.data(), other.data(), |x, y| x / y)?;
        Ok(Tensor::from_op("div", out, vec![self.clone(), other.clone()], |b| {
            let denom = b.input(1);
            vec![
                b.needs(0).then(|| sum_to(&(b.grad / denom), b.input(0).shape())),
                b.needs(1).then(|| sum_to(&(-(b.grad * b.out) / denom), denom.shape())),
            ]
        }))
    }

    /// `self + c` for a constant `c`. `∂/∂a = 1`.
    ///
    /// ```
    /// let a = lingo_tensor::Tensor::from_vec(vec![1.0, 2.0], &[2]).unwrap();
    /// assert_eq!(a.add_scalar(0.5).to_vec(), vec![1.5, 2.5]);
    /// ```
    pub fn add_scalar(&self, c: f32) -> Tensor {
        Tensor::from_op("add_scalar", self.data() + c, vec![self.clone()], |b| vec![Some(b.grad.clone())])
    }

    /// `c * self` for a constant `c`. `∂/∂a = c`.
    ///
    /// ```
    /// let a = lingo_tensor::Tensor::from_vec(vec![1.0, 2.0], &[2]).unwrap();
    /// assert_eq!(a.mul_scalar(3.0).to_vec(), vec![3.0, 6.0]);
    /// ```
    pub fn mul_scalar(&self, c: f32) -> Tensor {
        Tensor::from_op("mul_scalar", self.data() * c, vec![self.clone()], move |b| vec![Some(b.grad * c)])
    }

    /// `-self`. `∂/∂a = -1`.
    ///
    /// ```
    /// let a = lingo_tensor::Tensor::from_vec(vec![1.0, -2.0], &[2]).unwrap();
    /// assert_eq!(a.neg().to_vec(), vec![-1.0, 2.0]);
    /// ```
    pub fn neg(&self) -> Tensor {
        Tensor::from_op("neg", -self.data(), vec![self.clone()], |b| vec![Some(-b.grad)])
    }

    /// `eˣ` elementwise. `∂/∂x = eˣ = out`.
    ///
    /// ```
    /// let a = lingo_tensor::Tensor::from_vec(vec![0.0], &[1]).unwrap();
    /// assert_eq!(a.exp().to_vec(), vec![1.0]);
    /// ```
    pub fn exp(&self) -> Tensor {
        Tensor::from_op("exp", mapped(self.data(), math::exp_slice), vec![self.clone()], |b| vec![Some(b.grad * b.out)])
    }

    /// Natural logarithm elementwise. `∂/∂x = 1/x`.
    ///
    /// ```
    /// let a = lingo_tensor::Tensor::from_vec(vec![1.0], &[1]).unwrap();
    /// assert_eq!(a.log().to_vec(), vec![0.0]);
    /// ```
    pub fn log(&self) -> Tensor {
        Tensor::from_op("log", self.data().mapv(f32::ln), vec![self.clone()], |b| vec![Some(b.grad / b.input(0))])
    }

    /// Square root elementwise. `∂/∂x = 1/(2√x) = 1/(2·out)`.
    ///
    /// ```
    /// let a = lingo_tensor::Tensor::from_vec(vec![4.0], &[1]).unwrap();
    /// assert_eq!(a.sqrt().to_vec(), vec![2.0]);
    /// ```
    pub fn sqrt(&self) -> Tensor {
        Tensor::from_op("sqrt", self.data().mapv(f32::sqrt), vec![self.clone()], |b| {
            vec![Some(Zip::from(b.grad).and(b.out).map_collect(|&g, &y| g / (2.0 * y)))]
        })
    }

    /// Hyperbolic tangent elementwise. `∂/∂x = 1 - tanh²(x) = 1 - out²`.
    ///
    /// ```
    /// let a = lingo_tensor::Tensor::from_vec(vec![0.0], &[1]).unwrap();
    /// assert_eq!(a.tanh().to_vec(), vec![0.0]);
    /// ```
    pub fn tanh(&self) -> Tensor {
        Tensor::from_op("tanh", mapped(self.data(), math::tanh_slice), vec![self.clone()], |b| {
            vec![Some(Zip::from(b.grad).and(b.out).map_collect(|&g, &y| g * (1.0 - y * y)))]
        })
    }

    /// Logistic sigmoid `σ(x) = 1 / (1 + e⁻ˣ)` elementwise. `∂/∂x = σ(x)(1 - σ(x)) = out(1 - out)`.
    ///
    /// ```
    /// let a = lingo_tensor::Tensor::from_vec(vec![0.0], &[1]).unwrap();
    /// assert_eq!(a.sigmoid().to_vec(), vec![0.5]);
    /// ```
    pub fn sigmoid(&self) -> Tensor {
        Tensor::from_op("sigmoid", mapped(self.data(), math::sigmoid_slice), vec![self.clone()], |b| {
            vec![Some(Zip::from(b.grad).and(b.out).map_collect(|&g, &y| g * y * (1.0 - y)))]
        })
    }

    /// Rectified linear unit `max(x, 0)` elementwise. `∂/∂x = 1 if x > 0 else 0`.
    ///
    /// ```
    /// let a = lingo_tensor::Tensor::from_vec(vec![-1.0, 2.0], &[2]).unwrap();
    /// assert_eq!(a.relu().to_vec(), vec![0.0, 2.0]);
    /// ```
    pub fn relu(&self) -> Tensor {
        Tensor::from_op("relu", self.data().mapv(|x| x.max(0.0)), vec![self.clone()], |b| {
            vec![Some(Zip::from(b.grad).and(b.input(0)).map_collect(|&g, &x| if x > 0.0 { g } else { 0.0 }))]
        })
    }

    /// GELU, `x·Φ(x)` with `Φ(x) = (1 + erf(x/√2)) / 2` the standard normal
    /// CDF: PyTorch's `F.gelu(x)`. `∂/∂x = Φ(x) + x·φ(x)`, `φ(x) = e^{-x²/2} / √(2π)`.
    ///
    /// ```
    /// let a = lingo_tensor::Tensor::from_vec(vec![0.0, 1.0, -3.0], &[3]).unwrap();
    /// let y = a.gelu().to_vec();
    /// assert_eq!(y[0], 0.0);
    /// assert!((y[1] - 0.841_344_7).abs() < 1e-6 && (y[2] + 0.004_049_8).abs() < 1e-6);
    /// ```
    pub fn gelu(&self) -> Tensor {
        Tensor::from_op("gelu", mapped(self.data(), math::gelu_slice), vec![self.clone()], |b| {
            vec![Some(zipped(b.grad, b.input(0), math::gelu_backward))]
        })
    }

    /// GELU's tanh form, `x·(1 + tanh(u)) / 2` with `u = √(2/π)·(x + 0.044715·x³)`:
    /// PyTorch's `F.gelu(x, approximate="tanh")`.
    /// `∂/∂x = (1 + t)/2 + x·(1 - t²)/2 · √(2/π)·(1 + 3·0.044715·x²)`, `t = tanh(u)`.
    ///
    /// ```
    /// let a = lingo_tensor::Tensor::from_vec(vec![1.0, 0.5], &[2]).unwrap();
    /// let (exact, tanh) = (a.gelu().to_vec(), a.gelu_tanh().to_vec());
    /// assert!((tanh[0] - 0.841_192).abs() < 1e-6);
    /// assert!((exact[0] - tanh[0]).abs() < 2e-4 && (exact[1] - tanh[1]).abs() < 2e-4);
    /// ```
    pub fn gelu_tanh(&self) -> Tensor {
        Tensor::from_op("gelu_tanh", mapped(self.data(), math::gelu_tanh_slice), vec![self.clone()], |b| {
            vec![Some(zipped(b.grad, b.input(0), math::gelu_tanh_backward))]
        })
    }

    /// Inverted dropout: zeroes each element with probability `p` and scales
    /// the survivors by `1 / (1 - p)`, so the expected value is unchanged and
    /// evaluation needs no rescaling. The same mask gates the gradient.
    /// `p = 0` returns the input itself.
    ///
    /// The mask takes one `u64` key from `rng` and nothing else: element `i`
    /// (in logical order) is dropped when the top 24 bits of a keyed integer
    /// hash of `i` fall below `p·2²⁴`. Why a counter-based draw: it is a few
    /// vectorized integer operations per element, where one ChaCha draw per
    /// element made dropout the slowest op of a Transformer layer.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let x = lingo_tensor::Tensor::ones(&[1000]);
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    /// let y = x.dropout(0.5, &mut rng).unwrap();
    /// let kept = y.to_vec().iter().filter(|&&v| v == 2.0).count();
    /// assert!((400..600).contains(&kept));
    /// assert!(x.dropout(1.0, &mut rng).is_err());
    /// ```
    pub fn dropout(&self, p: f32, rng: &mut impl Rng) -> Result<Tensor> {
        if !(0.0..1.0).contains(&p) {
            return Err(bad_arg("dropout", format!("probability must be in [0, 1), got {p}")));
        }
        if p == 0.0 {
            return Ok(self.clone());
        }
        // Element i in logical order, whatever the memory layout.
        let mut mask = vec![0.0_f32; self.len()];
        dropout::mask(rng.next_u64(), p, &mut mask);
        let mask = ArrayD::from_shape_vec(self.data().raw_dim(), mask).expect("one value per element");
        let out = self.data() * &mask;
        Ok(Tensor::from_op("dropout", out, vec![self.clone()], move |b| vec![Some(b.grad * &mask)]))
    }
}
