//! Reverse-mode differentiation: one topological sort, one walk backwards.
//!
//! For a loss `L` and every tensor `t` on the way to it, the chain rule says
//!
//! ```text
//! dL/dt = Σ over ops u = op(.., t, ..) that read t of  (dL/du) · (du/dt)
//! ```
//!
//! so once `dL/du` is complete for every consumer `u` of `t`, `dL/dt` is the
//! sum of what each consumer's backward rule hands back. Visiting tensors in
//! reverse topological order guarantees exactly that. Gradients live in a
//! [`Gradients`] store keyed by [`TensorId`]; the gradient of an intermediate
//! tensor is dropped as soon as it has been pushed to its inputs, so only the
//! leaves' gradients (the ones you asked for) remain at the end.

use std::collections::{HashMap, HashSet};

use ndarray::ArrayD;

use crate::error::{Result, bad_shape, mismatch};
use crate::tensor::{Backward, BackwardMulti, Rule, Tensor, TensorId};
use lingo_kernels::math;

/// The gradients of one backward pass, keyed by tensor identity.
///
/// Holds `dL/dt` for every leaf `t` that requires a gradient and was reached
/// from the loss. A leaf used several times gets the sum of its uses.
///
/// ```
/// use lingo_tensor::Tensor;
/// let x = Tensor::variable(ndarray::arr1(&[3.0_f32]).into_dyn());
/// let y = x.mul(&x).unwrap().add(&x).unwrap().sum_all(); // y = x² + x
/// let grads = y.backward().unwrap();
/// assert_eq!(grads.get(&x).unwrap()[[0]], 7.0);           // 2x + 1
/// ```
#[derive(Debug, Default, Clone)]
pub struct Gradients {
    map: HashMap<TensorId, ArrayD<f32>>,
}

impl Gradients {
    /// The gradient of `tensor`, if it was reached.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let x = Tensor::variable(ndarray::arr1(&[1.0_f32]).into_dyn());
    /// let unrelated = Tensor::variable(ndarray::arr1(&[1.0_f32]).into_dyn());
    /// let grads = x.exp().sum_all().backward().unwrap();
    /// assert!(grads.get(&x).is_some());
    /// assert!(grads.get(&unrelated).is_none());
    /// ```
    pub fn get(&self, tensor: &Tensor) -> Option<&ArrayD<f32>> {
        self.map.get(&tensor.id())
    }

    /// Takes the gradient of `tensor` out of the store.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let x = Tensor::variable(ndarray::arr1(&[1.0_f32]).into_dyn());
    /// let mut grads = x.sum_all().backward().unwrap();
    /// assert!(grads.remove(&x).is_some());
    /// assert!(grads.get(&x).is_none());
    /// ```
    pub fn remove(&mut self, tensor: &Tensor) -> Option<ArrayD<f32>> {
        self.map.remove(&tensor.id())
    }

    /// How many tensors have a gradient here.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let a = Tensor::variable(ndarray::arr1(&[1.0_f32]).into_dyn());
    /// let b = Tensor::variable(ndarray::arr1(&[2.0_f32]).into_dyn());
    /// assert_eq!(a.mul(&b).unwrap().sum_all().backward().unwrap().len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no gradient was produced.
    ///
    /// ```
    /// let c = lingo_tensor::Tensor::ones(&[1]);
    /// assert!(c.sum_all().backward().unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Adds every gradient of `other` into this store: the gradients of a
    /// sum of losses, each back-propagated on its own (data-parallel
    /// training merges the gradients of a batch's shards this way, in
    /// shard order, so the bits do not depend on which thread ran which).
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let x = Tensor::variable(ndarray::arr1(&[2.0_f32]).into_dyn());
    /// let mut grads = x.mul(&x).unwrap().sum_all().backward().unwrap(); // d(x²)/dx = 4
    /// grads.merge(x.exp().sum_all().backward().unwrap());               // + eˣ
    /// assert!((grads.get(&x).unwrap()[[0]] - (4.0 + 2.0_f32.exp())).abs() < 1e-5);
    /// ```
    pub fn merge(&mut self, other: Gradients) {
        // Sorted, so the additions happen in one order whatever the hash map's.
        let mut entries: Vec<_> = other.map.into_iter().collect();
        entries.sort_unstable_by_key(|(id, _)| *id);
        for (id, grad) in entries {
            self.accumulate(id, grad);
        }
    }

    /// Adds `grad` to the stored gradient of `id` (stores it if absent).
    fn accumulate(&mut self, id: TensorId, grad: ArrayD<f32>) {
        match self.map.get_mut(&id) {
            // Σ over the ops that read the tensor, one addition per element
            Some(sum) => {
                let same_layout = sum.strides() == grad.strides();
                match (sum.as_slice_memory_order_mut().filter(|_| same_layout), grad.as_slice_memory_order()) {
                    (Some(s), Some(g)) => math::add_into(s, g),
                    _ => *sum += &grad,
                }
            }
            None => {
                self.map.insert(id, grad);
            }
        }
    }
}

/// Every tensor with a backward rule that `root` depends on, inputs before
/// the ops that read them (an iterative depth-first post-order, so deep
/// unrolled RNN graphs do not overflow the stack).
fn topological_order(root: &Tensor) -> Vec<Tensor> {
    let mut order = Vec::new();
    let mut seen = HashSet::new();
    // (tensor, whether its inputs have been pushed already)
    let mut stack = vec![(root.clone(), false)];
    while let Some((t, expanded)) = stack.pop() {
        if expanded {
            order.push(t);
            continue;
        }
        if !seen.insert(t.id()) {
            continue;
        }
        if let Some(f) = t.grad_fn() {
            stack.push((t.clone(), true));
            for input in f.inputs.iter().filter(|i| i.grad_fn().is_some()) {
                if !seen.contains(&input.id()) {
                    stack.push((input.clone(), false));
                }
            }
        }
    }
    order
}

impl Tensor {
    /// Back-propagates from this one-element tensor (the loss, `dL/dL = 1`)
    /// and returns the gradient of every leaf that requires one.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let x = Tensor::variable(ndarray::arr1(&[0.0_f32, 1.0]).into_dyn());
    /// let grads = x.exp().sum_all().backward().unwrap();
    /// let g = grads.get(&x).unwrap();
    /// assert!((g[[1]] - 1.0_f32.exp()).abs() < 1e-6);
    /// assert!(x.exp().backward().is_err()); // not a scalar
    /// ```
    pub fn backward(&self) -> Result<Gradients> {
        if self.len() != 1 {
            return Err(bad_shape(
                "backward",
                self.shape(),
                "the loss must have exactly one element; use backward_with for others",
            ));
        }
        self.backward_with(ArrayD::ones(self.shape()))
    }

    /// Back-propagates a given output gradient `dL/dself` (any shape equal to
    /// this tensor's), as PyTorch's `backward(gradient)`.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let x = Tensor::variable(ndarray::arr1(&[1.0_f32, 2.0]).into_dyn());
    /// let y = x.mul(&x).unwrap();                       // y = x², dy/dx = 2x
    /// let seed = ndarray::arr1(&[10.0_f32, 1.0]).into_dyn();
    /// let grads = y.backward_with(seed).unwrap();
    /// assert_eq!(grads.get(&x).unwrap().as_slice().unwrap(), &[20.0, 4.0]);
    /// ```
    pub fn backward_with(&self, grad: ArrayD<f32>) -> Result<Gradients> {
        if grad.shape() != self.shape() {
            return Err(mismatch(
                "backward_with",
                self.shape(),
                grad.shape(),
                "the seed gradient must have the output's shape",
            ));
        }
        let mut grads = Gradients::default();
        if !self.requires_grad() {
            return Ok(grads);
        }
        grads.accumulate(self.id(), grad);
        // Gradients of the outputs of multi-output ops, gathered per op node.
        let mut parts: HashMap<TensorId, Vec<Option<ArrayD<f32>>>> = HashMap::new();
        for node in topological_order(self).iter().rev() {
            let Some(f) = node.grad_fn() else { continue };
            // Every consumer of `node` has run, so its gradient is complete;
            // it is an intermediate, so it can leave the store now.
            let input_grads = match &f.rule {
                Rule::One(backward) => {
                    let Some(grad) = grads.map.remove(&node.id()) else { continue };
                    backward(&Backward { grad: &grad, out: node.data(), inputs: &f.inputs })
                }
                Rule::Part(k) => {
                    // Hand the gradient to the op that made this output.
                    let Some(grad) = grads.map.remove(&node.id()) else { continue };
                    let op = &f.inputs[0];
                    let outputs = match op.grad_fn().map(|g| &g.rule) {
                        Some(Rule::Multi { outputs, .. }) => *outputs,
                        _ => unreachable!("a part's input is its multi-output op"),
                    };
                    parts.entry(op.id()).or_insert_with(|| vec![None; outputs])[*k] = Some(grad);
                    continue;
                }
                Rule::Multi { backward, .. } => {
                    let Some(output_grads) = parts.remove(&node.id()) else { continue };
                    backward(&BackwardMulti { grads: &output_grads, inputs: &f.inputs })
                }
            };
            debug_assert_eq!(input_grads.len(), f.inputs.len(), "op {} returned the wrong number of gradients", f.name);
            for (input, g) in f.inputs.iter().zip(input_grads) {
                if let Some(g) = g.filter(|_| input.requires_grad()) {
                    debug_assert_eq!(g.shape(), input.shape(), "op {} returned a gradient of the wrong shape", f.name);
                    grads.accumulate(input.id(), g);
                }
            }
        }
        Ok(grads)
    }
}
