//! The cross-entropy loss over logits, fused.
//!
//! Composing `log_softmax` and a gather would keep a `(rows, classes)` log-prob
//! array alive and walk it twice; fusing gives the short, stable gradient
//! `softmax(z) - q` directly. [`Tensor::cross_entropy`] reads logits made by
//! any op; `linear_cross_entropy.rs` (off the reading path) also makes them,
//! from the last layer's input.

use ndarray::{Array2, ArrayD, Ix2};

use crate::error::{Result, bad_arg, mismatch};
use crate::tensor::Tensor;

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
    pub(super) fn check(self, op: &'static str, targets: &[usize], classes: usize) -> Result<()> {
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
