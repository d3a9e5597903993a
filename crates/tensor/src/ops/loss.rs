//! The fused cross-entropy loss over logits, and the output layer fused
//! with it.
//!
//! Composing `log_softmax` and a gather would keep a `(rows, classes)` log-prob
//! array alive and walk it twice; fusing gives the short, stable gradient
//! `softmax(z) - q` directly. [`Tensor::cross_entropy`] reads logits made by
//! any op; [`Tensor::linear_cross_entropy`] also makes them, from the last
//! layer's input, so that the logits, the probabilities and their gradient
//! are one buffer overwritten in place.

use std::sync::Mutex;

use ndarray::{Array2, ArrayD, Axis, CowArray, Ix2};

use crate::error::{Result, bad_arg, mismatch};
use crate::tensor::{Tensor, will_record};
use lingo_kernels::gemm::gemm_new;
use lingo_kernels::{cpu, softmax};

/// Options of [`Tensor::cross_entropy`], as in PyTorch's `nn.CrossEntropyLoss`.
///
/// ```
/// let opts = lingo_tensor::CrossEntropy { ignore_index: Some(0), label_smoothing: 0.1 };
/// assert_eq!(lingo_tensor::CrossEntropy::default().label_smoothing, 0.0);
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CrossEntropy {
    /// Rows whose target is this class (padding, typically) count for nothing:
    /// no loss, no gradient, and they are left out of the mean.
    pub ignore_index: Option<usize>,
    /// `ε` in `[0, 1]`: the target distribution puts `1 - ε` on the true class
    /// and spreads `ε` evenly over all `C` classes.
    pub label_smoothing: f32,
}

impl CrossEntropy {
    /// Checks `ε ∈ [0, 1]` and that every target not ignored is a class.
    fn check(self, op: &'static str, targets: &[usize], classes: usize) -> Result<()> {
        let eps = self.label_smoothing;
        if !(0.0..=1.0).contains(&eps) {
            return Err(bad_arg(op, format!("label smoothing must be in [0, 1], got {eps}")));
        }
        match targets.iter().find(|&&t| t >= classes && Some(t) != self.ignore_index) {
            Some(&bad) => Err(bad_arg(op, format!("target {bad} is out of range for {classes} classes"))),
            None => Ok(()),
        }
    }
}

impl Tensor {
    /// Mean cross-entropy of `logits (rows, classes)` against integer `targets`.
    ///
    /// With `p = softmax(z)` and the smoothed target `q_c = (1-ε)[c = y] + ε/C`,
    /// each row's loss is `-Σ_c q_c log p_c = -(1-ε) log p_y - (ε/C) Σ_c log p_c`
    /// and its gradient is `p - q`, divided by the number of rows not ignored.
    /// The log-probabilities `log p_c = (z_c - max z) - log Σ_c' e^{z_c' - max z}`
    /// are all `≤ 0`, so the loss is never negative, even for logits near
    /// `f32::MAX` (where `logsumexp(z) - Σ_c q_c z_c` would subtract two
    /// overflowed sums).
    /// When every row is ignored the loss is 0 (not NaN), so an all-padding
    /// batch cannot poison training.
    ///
    /// ```
    /// use lingo_tensor::{CrossEntropy, Tensor};
    /// let logits = Tensor::from_vec(vec![0.0, 0.0, 5.0, 0.0], &[2, 2]).unwrap();
    /// let loss = logits.cross_entropy(&[1, 0], CrossEntropy::default()).unwrap();
    /// let expected = (2.0_f32.ln() + (1.0 + (-5.0_f32).exp()).ln()) / 2.0;
    /// assert!((loss.item().unwrap() - expected).abs() < 1e-6);
    /// let ignored = CrossEntropy { ignore_index: Some(0), label_smoothing: 0.0 };
    /// let only_first = logits.cross_entropy(&[1, 0], ignored).unwrap();
    /// assert!((only_first.item().unwrap() - 2.0_f32.ln()).abs() < 1e-6);
    /// assert!(logits.cross_entropy(&[2, 0], CrossEntropy::default()).is_err());
    /// ```
    pub fn cross_entropy(&self, targets: &[usize], opts: CrossEntropy) -> Result<Tensor> {
        let shape = self.shape();
        if shape.len() != 2 || shape[0] != targets.len() {
            return Err(mismatch(
                "cross_entropy",
                shape,
                &[targets.len()],
                "expected logits (rows, classes) and one target per row",
            ));
        }
        let (eps, classes) = (opts.label_smoothing, shape[1]);
        opts.check("cross_entropy", targets, classes)?;
        let logits = self.data().view().into_dimensionality::<Ix2>().expect("rank checked before");
        let mut probs = Array2::<f32>::zeros(logits.raw_dim());
        let mut total = 0.0_f64;
        let mut counted = 0_usize;
        for ((z, mut p), &y) in logits.outer_iter().zip(probs.outer_iter_mut()).zip(targets) {
            if Some(y) == opts.ignore_index {
                continue; // p stays 0: the row's gradient is 0
            }
            let max = z.fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            let sum: f32 = z.iter().map(|&v| (v - max).exp()).sum();
            let log_sum = sum.ln(); // once per row, not once per class
            let log_p = |v: f32| (v - max) - log_sum; // log p_c ≤ 0
            p.assign(&z.mapv(|v| (v - max).exp() / sum));
            // -(1-ε) log p_y - (ε/C) Σ_c log p_c
            let smoothed: f32 =
                if eps == 0.0 { 0.0 } else { z.iter().map(|&v| log_p(v)).sum::<f32>() * (eps / classes as f32) };
            total += f64::from(-(1.0 - eps) * log_p(z[y]) - smoothed);
            counted += 1;
        }
        let loss = if counted == 0 { 0.0 } else { (total / counted as f64) as f32 };
        let targets = targets.to_vec();
        let ignore = opts.ignore_index;
        Ok(Tensor::from_op("cross_entropy", ArrayD::from_elem(vec![], loss), vec![self.clone()], move |b| {
            let scale = b.grad.iter().next().copied().unwrap_or(0.0) / counted.max(1) as f32;
            let mut g = probs.clone();
            for (mut row, &y) in g.outer_iter_mut().zip(&targets) {
                if Some(y) == ignore {
                    continue;
                }
                row -= eps / classes as f32; // - q: the smoothed part ...
                row[y] -= 1.0 - eps; // ... and the true class
                row *= scale;
            }
            vec![Some(g.into_dyn())]
        }))
    }
}

impl Tensor {
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
