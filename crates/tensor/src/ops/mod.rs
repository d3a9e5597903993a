//! The differentiable operations, grouped by kind. Every op is a method on
//! [`Tensor`](crate::Tensor) whose body is its forward computation followed by
//! its backward rule, so the two can be read (and checked) together.

mod elementwise;
mod fused;
mod index;
mod loss;
mod matmul;
mod norm;
mod reduce;
mod shape;
mod softmax;

pub(crate) use matmul::affine;

pub use loss::CrossEntropy;

use ndarray::{ArrayD, Axis};

use crate::error::{Result, bad_shape, mismatch};

/// The shape two operands broadcast to (NumPy rules: align on the right;
/// each pair of sizes must be equal or one of them 1).
pub(crate) fn broadcast_shape(op: &'static str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let size = |s: &[usize], i: usize| if i + s.len() >= n { s[i + s.len() - n] } else { 1 };
    (0..n)
        .map(|i| match (size(a, i), size(b, i)) {
            (x, y) if x == y || y == 1 => Ok(x),
            (1, y) => Ok(y),
            (x, y) => Err(mismatch(op, a, b, format!("cannot broadcast: axis {i} has sizes {x} and {y}"))),
        })
        .collect()
}

/// Sums a gradient back down to the shape of an operand that was broadcast
/// up to it: axes the operand lacked, and axes where it had size 1, were
/// copies of one value, so their gradients add up.
pub(crate) fn sum_to(grad: &ArrayD<f32>, shape: &[usize]) -> ArrayD<f32> {
    if grad.shape() == shape {
        return grad.clone();
    }
    let mut g = grad.clone();
    while g.ndim() > shape.len() {
        g = g.sum_axis(Axis(0));
    }
    for (axis, &size) in shape.iter().enumerate() {
        if size == 1 && g.shape()[axis] != 1 {
            g = g.sum_axis(Axis(axis)).insert_axis(Axis(axis));
        }
    }
    g
}

/// Checks that `axis` names an axis of `shape`.
pub(crate) fn check_axis(op: &'static str, shape: &[usize], axis: usize) -> Result<()> {
    if axis < shape.len() {
        Ok(())
    } else {
        Err(bad_shape(op, shape, format!("axis {axis} is out of range for {} axes", shape.len())))
    }
}
