//! Ops that equal a composition of the ops on the reading path, fused for
//! speed and kept apart from them (the tests hold each to its composition,
//! as candle keeps `softmax_last_dim` apart from its composed `softmax`):
//!
//! * [`Tensor::linear_cross_entropy`]: [`Tensor::linear`] then
//!   [`Tensor::cross_entropy`], the logits, probabilities and their gradient
//!   one buffer overwritten in place;
//! * [`Tensor::add_layer_norm`]: [`Tensor::add`] then [`Tensor::layer_norm`],
//!   the sum never stored;
//! * [`Tensor::select_cat`]: [`Tensor::index_select`] then [`Tensor::cat`],
//!   a decoder's cache copied once per step instead of twice.

use std::sync::Mutex;

use ndarray::{Array2, ArrayD, Axis, CowArray, Ix2};

use super::loss::CrossEntropy;
use super::norm;
use crate::error::{Result, bad_arg, mismatch};
use crate::tensor::{Tensor, will_record};
use lingo_kernels::gemm::gemm_new;
use lingo_kernels::{cpu, softmax};

impl Tensor {
    /// `(self + residual).layer_norm(gamma, beta, eps)` as one op: a
    /// post-norm Transformer's `LayerNorm(x + sublayer(x))`. The sum is
    /// never stored: the backward needs only `x̂` and `r`, and hands the
    /// same `dx` to both addends.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[1, 3]).unwrap();
    /// let sublayer = Tensor::from_vec(vec![0.5, -1.0, 4.0], &[1, 3]).unwrap();
    /// let (gamma, beta) = (Tensor::full(&[3], 2.0), Tensor::ones(&[3]));
    /// let fused = x.add_layer_norm(&sublayer, &gamma, &beta, 1e-5).unwrap();
    /// let composed = x.add(&sublayer).unwrap().layer_norm(&gamma, &beta, 1e-5).unwrap();
    /// assert_eq!(fused.to_vec(), composed.to_vec());
    /// assert!(x.add_layer_norm(&Tensor::ones(&[3]), &gamma, &beta, 1e-5).is_err());   // no broadcasting
    /// ```
    pub fn add_layer_norm(&self, residual: &Tensor, gamma: &Tensor, beta: &Tensor, eps: f32) -> Result<Tensor> {
        const OP: &str = "add_layer_norm";
        if self.shape() != residual.shape() {
            return Err(mismatch(OP, self.shape(), residual.shape(), "the two addends must have the same shape"));
        }
        norm::check(OP, self.shape(), gamma, beta, eps)?;
        let sum = self.data() + residual.data();
        Ok(norm::record(OP, &sum, vec![self.clone(), residual.clone(), gamma.clone(), beta.clone()], true, eps))
    }

    /// `cat([self.index_select(0, rows), tail], 1)` in one pass: row `i` of
    /// the result is row `rows[i]` of `self` followed by row `i` of `tail`.
    /// This is how a decoder's key/value cache `(batch, len, d)` follows its
    /// beams and grows by one position per step; reordering, then
    /// appending, would copy the whole cache twice.
    ///
    /// ```
    /// use lingo_tensor::Tensor;
    /// let cache = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 1, 2]).unwrap(); // 2 rows, 1 position
    /// let new = Tensor::from_vec(vec![5.0, 6.0, 7.0, 8.0], &[2, 1, 2]).unwrap();
    /// let grown = cache.select_cat(&[1, 1], &new).unwrap();
    /// assert_eq!(grown.shape(), &[2, 2, 2]);
    /// assert_eq!(grown.to_vec(), [3.0, 4.0, 5.0, 6.0, 3.0, 4.0, 7.0, 8.0]);
    /// assert!(cache.select_cat(&[0], &new).is_err()); // one tail row per picked row
    /// ```
    pub fn select_cat(&self, rows: &[usize], tail: &Tensor) -> Result<Tensor> {
        let (head_shape, tail_shape) = (self.shape().to_vec(), tail.shape().to_vec());
        let fits = head_shape.len() >= 2
            && tail_shape.len() == head_shape.len()
            && tail_shape[0] == rows.len()
            && head_shape[2..] == tail_shape[2..];
        if !fits {
            return Err(mismatch(
                "select_cat",
                &head_shape,
                &tail_shape,
                "tail must be (rows picked, len, ...) with the same trailing sizes",
            ));
        }
        let (head, tail_data) = (self.data(), tail.data());
        let (Some(head), Some(tail_all)) = (head.as_slice(), tail_data.as_slice()) else {
            return Tensor::cat(&[self.index_select(0, rows)?, tail.clone()], 1); // not contiguous: the plain way
        };
        if let Some(&bad) = rows.iter().find(|&&r| r >= head_shape[0]) {
            return Err(bad_arg("select_cat", format!("row {bad} is out of range for {} rows", head_shape[0])));
        }
        let inner: usize = head_shape[2..].iter().product();
        let (head_block, tail_block) = (head_shape[1] * inner, tail_shape[1] * inner);
        let mut out = Vec::with_capacity(rows.len() * (head_block + tail_block));
        for (i, &r) in rows.iter().enumerate() {
            out.extend_from_slice(&head[r * head_block..(r + 1) * head_block]);
            out.extend_from_slice(&tail_all[i * tail_block..(i + 1) * tail_block]);
        }
        let mut shape = tail_shape;
        shape[1] += head_shape[1];
        let out = ArrayD::from_shape_vec(shape, out).expect("one head and one tail block per row");
        let (rows, head_len) = (rows.to_vec(), head_shape[1]);
        Ok(Tensor::from_op("select_cat", out, vec![self.clone(), tail.clone()], move |b| {
            // Scatter-add each row's head part back to the row it was read from.
            let mut g_head = ArrayD::zeros(b.input(0).raw_dim());
            for (i, &r) in rows.iter().enumerate() {
                let mut row = g_head.index_axis_mut(Axis(0), r);
                row += &b.grad.index_axis(Axis(0), i).slice_axis(Axis(0), (..head_len).into());
            }
            let g_tail = b.grad.slice_axis(Axis(1), (head_len..).into()).to_owned();
            vec![Some(g_head), Some(g_tail)]
        }))
    }

    /// The output layer and its loss as one op: the same value as
    /// `x.linear(weight, bias)?.cross_entropy(targets, opts)`, for
    /// `x (rows, in)`, `weight (classes, in)`, `bias (classes)`.
    ///
    /// With a vocabulary of thousands, the `(rows, classes)` logits are most
    /// of a translation model's memory traffic. Here they live in one
    /// buffer that is never copied: the product writes the logits, a pass
    /// per row (rows shared between threads in blocks)
    /// turns them into probabilities in place and takes each row's loss,
    /// and backward turns the probabilities into the gradient `(p - q) / n`
    /// in place before the two products
    ///
    /// ```text
    /// dx = G·W      dW = Gᵀ·x      db = Σ_rows G
    /// ```
    ///
    /// Rows whose target is `ignore_index` (padding) get no logits at all:
    /// they are left out before the product, and their `dx` rows are 0.
    /// Each row's loss is computed by one thread and the losses are summed
    /// in row order, so the bits do not depend on the thread count. The
    /// exponentials are the vectorized ones of [`math`](lingo_kernels::math)
    /// (about 2·10⁻⁷ relative error), so the result may differ from the
    /// composed ops in the last bits.
    ///
    /// ```
    /// use lingo_tensor::{CrossEntropy, Tensor};
    /// let x = Tensor::from_vec(vec![0.5, -1.0, 2.0, 0.0, 1.0, 1.0], &[3, 2]).unwrap();
    /// let w = Tensor::from_vec(vec![1.0, 0.0, 0.0, 1.0, -1.0, 1.0, 0.5, 0.5], &[4, 2]).unwrap();
    /// let b = Tensor::from_vec(vec![0.0, 0.1, 0.2, 0.3], &[4]).unwrap();
    /// let opts = CrossEntropy { ignore_index: Some(0), label_smoothing: 0.1 };
    /// let fused = x.linear_cross_entropy(&w, Some(&b), &[2, 0, 3], opts).unwrap().item().unwrap();
    /// let composed = x.linear(&w, Some(&b)).unwrap().cross_entropy(&[2, 0, 3], opts).unwrap().item().unwrap();
    /// assert!((fused - composed).abs() < 1e-6);
    /// ```
    pub fn linear_cross_entropy(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        targets: &[usize],
        opts: CrossEntropy,
    ) -> Result<Tensor> {
        let (sx, sw) = (self.shape(), weight.shape());
        if sx.len() != 2 || sw.len() != 2 || sx[1] != sw[1] {
            return Err(mismatch("linear_cross_entropy", sx, sw, "expected x (rows, in) and weight (classes, in)"));
        }
        if sx[0] != targets.len() {
            return Err(mismatch("linear_cross_entropy", sx, &[targets.len()], "expected one target per row of x"));
        }
        let classes = sw[0];
        if let Some(b) = bias.filter(|b| b.shape() != [classes]) {
            return Err(mismatch("linear_cross_entropy", sw, b.shape(), format!("bias must have shape [{classes}]")));
        }
        let eps = opts.label_smoothing;
        opts.check("linear_cross_entropy", targets, classes)?;
        let plan = OutputRows {
            // The rows that count, and their targets: padding never reaches the product.
            kept: (0..targets.len()).filter(|&r| Some(targets[r]) != opts.ignore_index).collect(),
            targets: targets.iter().copied().filter(|&t| Some(t) != opts.ignore_index).collect(),
            bias: bias.map(Tensor::to_vec),
            eps,
        };
        let (probs, losses) = plan.probabilities(self.data(), weight.data());
        let counted = plan.kept.len();
        let loss = if counted == 0 { 0.0 } else { (losses.iter().sum::<f64>() / counted as f64) as f32 };
        let mut inputs = vec![self.clone(), weight.clone()];
        inputs.extend(bias.cloned());
        if !will_record(&inputs) {
            return Ok(Tensor::new(ArrayD::from_elem(vec![], loss)));
        }
        // Backward takes the probabilities to overwrite them; a second walk
        // of the same graph (rare) computes them again.
        let saved = Mutex::new(Some(probs));
        let (rows, n_in) = (sx[0], sx[1]);
        Ok(Tensor::from_op("linear_cross_entropy", ArrayD::from_elem(vec![], loss), inputs, move |bw| {
            let taken = saved.lock().map(|mut s| s.take()).unwrap_or(None);
            let mut g = taken.unwrap_or_else(|| plan.probabilities(bw.input(0), bw.input(1)).0);
            // G = (p - q) · dL / n, row by row in place
            let scale = bw.grad.iter().next().copied().unwrap_or(0.0) / counted.max(1) as f32;
            let g_rows = g.as_slice_mut().expect("probabilities are row-major");
            cpu::map_rows(g_rows, classes, |i, row| softmax::cross_entropy_grad(row, plan.targets[i], eps, scale));
            let w = bw.input(1).view().into_dimensionality::<Ix2>().expect("rank checked before");
            let dx = bw.needs(0).then(|| {
                let dx_kept = gemm_new(1.0, g.view(), w); // dx = G·W
                if counted == rows {
                    return dx_kept.into_dyn();
                }
                let mut dx = Array2::<f32>::zeros((rows, n_in)); // ignored rows: no gradient
                for (&r, row) in plan.kept.iter().zip(dx_kept.outer_iter()) {
                    dx.row_mut(r).assign(&row);
                }
                dx.into_dyn()
            });
            let dw = bw.needs(1).then(|| gemm_new(1.0, g.t(), kept_rows(bw.input(0), &plan.kept).view()).into_dyn()); // dW = Gᵀ·x
            let mut grads = vec![dx, dw];
            if bw.inputs.len() == 3 {
                grads.push(bw.needs(2).then(|| g.sum_axis(Axis(0)).into_dyn())); // db = Σ_rows G
            }
            grads
        }))
    }
}

/// What [`Tensor::linear_cross_entropy`] needs to compute its probabilities
/// (again, in backward, when the graph is walked twice).
struct OutputRows {
    /// The rows of `x` whose target is not ignored, in order.
    kept: Vec<usize>,
    /// Their targets.
    targets: Vec<usize>,
    /// The bias, if any.
    bias: Option<Vec<f32>>,
    /// Label smoothing `ε`.
    eps: f32,
}

impl OutputRows {
    /// `softmax(x_kept·Wᵀ + b)` `(kept, classes)` and each kept row's loss.
    fn probabilities(&self, x: &ArrayD<f32>, w: &ArrayD<f32>) -> (Array2<f32>, Vec<f64>) {
        let w = w.view().into_dimensionality::<Ix2>().expect("linear_cross_entropy checked the weight");
        let mut probs = gemm_new(1.0, kept_rows(x, &self.kept).view(), w.t()); // logits (kept, classes)
        let losses = softmax_rows(&mut probs, self.bias.as_deref(), &self.targets, self.eps);
        (probs, losses)
    }
}

/// The rows `kept` of `x (rows, in)` as a matrix: `x` itself when every row is kept.
fn kept_rows<'a>(x: &'a ArrayD<f32>, kept: &[usize]) -> CowArray<'a, f32, Ix2> {
    let x = x.view().into_dimensionality::<Ix2>().expect("linear_cross_entropy checked x");
    if kept.len() == x.nrows() { CowArray::from(x) } else { CowArray::from(x.select(Axis(0), kept)) }
}

/// Turns each row of logits `z` (plus `bias`) into `softmax(z)` in place and
/// returns each row's loss ([`softmax::cross_entropy`]). Rows are shared
/// between threads in blocks ([`cpu::map_rows`]); each row is one thread's,
/// so its loss has the same bits for any thread count.
fn softmax_rows(z: &mut Array2<f32>, bias: Option<&[f32]>, targets: &[usize], eps: f32) -> Vec<f64> {
    let classes = z.ncols();
    let rows = z.as_slice_mut().expect("a fresh product is row-major");
    cpu::map_rows(rows, classes, |i, row| softmax::cross_entropy(row, bias, targets[i], eps))
}
