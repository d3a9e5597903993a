//! Softmax and log-softmax along one axis, computed stably by subtracting
//! each lane's maximum first (`softmax(x) = softmax(x - max x)`).

use ndarray::{ArrayD, Axis, Zip};

use super::check_axis;
use crate::error::Result;
use crate::tensor::Tensor;

/// `Σ_j a_j b_j` along `axis`, kept as an axis of size 1 so it broadcasts back.
fn dot_along(a: &ArrayD<f32>, b: &ArrayD<f32>, axis: usize) -> ArrayD<f32> {
    (a * b).sum_axis(Axis(axis)).insert_axis(Axis(axis))
}

impl Tensor {
    /// `softmax(x)_i = e^{x_i} / Σ_j e^{x_j}` along `axis`.
    ///
    /// Backward, with `y = softmax(x)`: `dx_i = y_i (dy_i - Σ_j dy_j y_j)`.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let t = Tensor::from_vec(vec![1.0, 1.0, 1000.0, 0.0], &[2, 2]).unwrap();
    /// let s = t.softmax(1).unwrap().to_vec();
    /// assert_eq!(&s[..2], &[0.5, 0.5]);
    /// assert_eq!(&s[2..], &[1.0, 0.0]);       // no overflow at 1000
    /// ```
    pub fn softmax(&self, axis: usize) -> Result<Tensor> {
        check_axis("softmax", self.shape(), axis)?;
        let mut out = self.data().clone();
        for mut lane in out.lanes_mut(Axis(axis)) {
            let max = lane.fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            lane.mapv_inplace(|v| (v - max).exp());
            let sum = lane.sum();
            lane.mapv_inplace(|v| v / sum);
        }
        Ok(Tensor::from_op("softmax", out, vec![self.clone()], move |b| {
            let inner = dot_along(b.grad, b.out, axis);
            vec![Some(b.out * &(b.grad - &inner))]
        }))
    }

    /// `log_softmax(x)_i = x_i - log Σ_j e^{x_j}` along `axis`.
    ///
    /// Backward: `dx_i = dy_i - softmax(x)_i Σ_j dy_j`, with `softmax = e^{out}`.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let t = Tensor::from_vec(vec![0.0, 0.0], &[2]).unwrap();
    /// let l = t.log_softmax(0).unwrap().to_vec();
    /// assert!((l[0] - 0.5_f32.ln()).abs() < 1e-6);
    /// ```
    pub fn log_softmax(&self, axis: usize) -> Result<Tensor> {
        check_axis("log_softmax", self.shape(), axis)?;
        let mut out = self.data().clone();
        for mut lane in out.lanes_mut(Axis(axis)) {
            let max = lane.fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            let log_sum = lane.fold(0.0, |s, &v| s + (v - max).exp()).ln() + max;
            lane.mapv_inplace(|v| v - log_sum);
        }
        Ok(Tensor::from_op("log_softmax", out, vec![self.clone()], move |b| {
            let grad_sum = b.grad.sum_axis(Axis(axis)).insert_axis(Axis(axis));
            vec![Some(Zip::from(b.grad).and(b.out).and_broadcast(&grad_sum).map_collect(|&g, &y, &s| g - y.exp() * s))]
        }))
    }
}
