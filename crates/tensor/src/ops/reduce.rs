//! Sums and means over axes.
//!
//! Backward: every input element contributed once to its output element, so
//! `∂sum/∂x = 1` and `∂mean/∂x = 1/count`: the output gradient is broadcast
//! back over the reduced axes (and scaled, for the mean).

use ndarray::{ArrayD, Axis, IxDyn};

use super::check_axis;
use crate::error::{Result, bad_shape};
use crate::tensor::Tensor;

impl Tensor {
    /// Sum over `axes` (any order, no repeats); `keepdim` keeps them with size 1.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let t = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    /// assert_eq!(t.sum(&[1], false).unwrap().to_vec(), vec![6.0, 15.0]);
    /// assert_eq!(t.sum(&[0], true).unwrap().shape(), &[1, 3]);
    /// assert!(t.sum(&[2], false).is_err());
    /// ```
    pub fn sum(&self, axes: &[usize], keepdim: bool) -> Result<Tensor> {
        self.reduce("sum", axes, keepdim, false)
    }

    /// Mean over `axes` (any order, no repeats); `keepdim` keeps them with size 1.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let t = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    /// assert_eq!(t.mean(&[0, 1], false).unwrap().to_vec(), vec![3.5]);
    /// ```
    pub fn mean(&self, axes: &[usize], keepdim: bool) -> Result<Tensor> {
        self.reduce("mean", axes, keepdim, true)
    }

    /// Sum of all elements, as a 0-dimensional tensor (a loss, typically).
    ///
    /// ```
    /// let t = lingo_tensor::Tensor::ones(&[2, 3]);
    /// assert_eq!(t.sum_all().item().unwrap(), 6.0);
    /// ```
    pub fn sum_all(&self) -> Tensor {
        let all: Vec<usize> = (0..self.ndim()).collect();
        self.reduce("sum", &all, false, false).expect("every axis is valid")
    }

    /// Mean of all elements, as a 0-dimensional tensor.
    ///
    /// ```
    /// let t = lingo_tensor::Tensor::from_vec(vec![1.0, 3.0], &[2]).unwrap();
    /// assert_eq!(t.mean_all().item().unwrap(), 2.0);
    /// ```
    pub fn mean_all(&self) -> Tensor {
        let all: Vec<usize> = (0..self.ndim()).collect();
        self.reduce("mean", &all, false, true).expect("every axis is valid")
    }

    fn reduce(&self, op: &'static str, axes: &[usize], keepdim: bool, mean: bool) -> Result<Tensor> {
        let mut sorted = axes.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != axes.len() {
            return Err(bad_shape(op, self.shape(), format!("axes {axes:?} repeat an axis")));
        }
        for &a in &sorted {
            check_axis(op, self.shape(), a)?;
        }
        let count: usize = sorted.iter().map(|&a| self.shape()[a]).product();
        let scale = if mean { 1.0 / count.max(1) as f32 } else { 1.0 };
        // Reduce the highest axis first so the lower indices stay valid.
        let mut out = self.data().clone();
        for &a in sorted.iter().rev() {
            out = out.sum_axis(Axis(a));
        }
        // The shape with reduced axes kept as 1: the gradient broadcasts from it.
        let kept: Vec<usize> =
            self.shape().iter().enumerate().map(|(i, &d)| if sorted.contains(&i) { 1 } else { d }).collect();
        if keepdim {
            out = out.into_shape_with_order(IxDyn(&kept)).expect("same element count");
        }
        out.mapv_inplace(|v| v * scale);
        Ok(Tensor::from_op(op, out, vec![self.clone()], move |b| {
            let g = b.grad.view().into_shape_with_order(IxDyn(&kept)).expect("same element count");
            let full: ArrayD<f32> =
                g.broadcast(b.input(0).raw_dim()).expect("shapes checked before").mapv(|v| v * scale);
            vec![Some(full)]
        }))
    }
}
