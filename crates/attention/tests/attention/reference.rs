//! Every scorer's forward pass against a direct transcription of its formula
//! in plain loops over `f64` (independent of the kernels, the GEMM and the
//! packing), with padding and causal masks.

use crate::common::{all_scorers, layer, pad_mask, tensor};
use lingo_attention::{Attention, Scorer};
use lingo_tensor::Module;
use ndarray::{Array2, Array3, ArrayD, ArrayView1, ArrayView2, Axis, Ix2, Ix3};

fn mat(a: &ArrayD<f32>) -> Array2<f64> {
    a.view().into_dimensionality::<Ix2>().unwrap().mapv(f64::from)
}

fn dot(a: ArrayView1<'_, f64>, b: ArrayView1<'_, f64>) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `x · Wᵀ` row by row: `(n, in)` by `W (out, in)`.
fn project(x: ArrayView2<'_, f64>, w: &Array2<f64>) -> Array2<f64> {
    Array2::from_shape_fn((x.nrows(), w.nrows()), |(i, o)| dot(x.row(i), w.row(o)))
}

/// softmax over visible positions; uniform when none is visible.
fn softmax(scores: &[f64], visible: &[bool]) -> Vec<f64> {
    if !visible.iter().any(|&v| v) {
        return vec![1.0 / scores.len() as f64; scores.len()];
    }
    let max = scores.iter().zip(visible).filter(|p| *p.1).map(|p| *p.0).fold(f64::MIN, f64::max);
    let e: Vec<f64> = scores.iter().zip(visible).map(|(s, &v)| if v { (s - max).exp() } else { 0.0 }).collect();
    let sum: f64 = e.iter().sum();
    e.iter().map(|x| x / sum).collect()
}

/// (context, weights) of one batch entry and one head: scores from `score(t, s)`.
fn attend(
    t_len: usize,
    values: ArrayView2<'_, f64>,
    visible: impl Fn(usize, usize) -> bool,
    score: impl Fn(usize, usize) -> f64,
) -> (Array2<f64>, Array2<f64>) {
    let s_len = values.nrows();
    let mut weights = Array2::zeros((t_len, s_len));
    for t in 0..t_len {
        let scores: Vec<f64> = (0..s_len).map(|s| score(t, s)).collect();
        let vis: Vec<bool> = (0..s_len).map(|s| visible(t, s)).collect();
        weights.row_mut(t).assign(&ArrayView1::from(&softmax(&scores, &vis)));
    }
    (weights.dot(&values), weights)
}

fn reference(
    attn: &Attention,
    q: &Array3<f64>,
    kv: &Array3<f64>,
    mask: &Array2<bool>,
    causal: bool,
) -> (Array3<f64>, Array3<f64>) {
    let p: Vec<Array2<f64>> =
        attn.params().iter().filter(|p| p.shape().len() == 2).map(|p| mat(p.tensor().data())).collect();
    let (b_len, t_len, s_len) = (q.shape()[0], q.shape()[1], kv.shape()[1]);
    let mut context = Array3::zeros((b_len, t_len, attn.config().key_dim));
    let mut weights = Array3::zeros((b_len, t_len, s_len));
    for b in 0..b_len {
        let (qb, kb) = (q.index_axis(Axis(0), b), kv.index_axis(Axis(0), b));
        let visible = |t: usize, s: usize| !mask[[b, s]] && (!causal || s + t_len <= t + s_len);
        let (c, w) = match attn.config().scorer {
            Scorer::Dot => attend(t_len, kb, visible, |t, s| dot(qb.row(t), kb.row(s))),
            Scorer::ScaledDot => {
                attend(t_len, kb, visible, |t, s| dot(qb.row(t), kb.row(s)) / (kb.ncols() as f64).sqrt())
            }
            Scorer::General => {
                let wk = project(kb, &p[0]); // W k
                attend(t_len, kb, visible, |t, s| dot(qb.row(t), wk.row(s)))
            }
            Scorer::Additive => {
                let (qp, kp) = (project(qb, &p[0]), project(kb, &p[1]));
                let v = attn.params()[2].tensor().data().mapv(f64::from);
                attend(t_len, kb, visible, |t, s| (0..v.len()).map(|a| v[a] * (qp[[t, a]] + kp[[s, a]]).tanh()).sum())
            }
            Scorer::MultiHead { heads } => {
                let (qp, kp, vp) = (project(qb, &p[0]), project(kb, &p[1]), project(kb, &p[2]));
                let dh = qp.ncols() / heads;
                let mut concat = Array2::zeros((t_len, qp.ncols()));
                let mut mean = Array2::zeros((t_len, s_len));
                for h in 0..heads {
                    let cols = ndarray::s![.., h * dh..(h + 1) * dh];
                    let (qh, kh) = (qp.slice(cols), kp.slice(cols));
                    let (c, w) =
                        attend(t_len, vp.slice(cols), visible, |t, s| dot(qh.row(t), kh.row(s)) / (dh as f64).sqrt());
                    concat.slice_mut(cols).assign(&c);
                    mean = mean + w / heads as f64;
                }
                (project(concat.view(), &p[3]), mean)
            }
        };
        context.index_axis_mut(Axis(0), b).assign(&c);
        weights.index_axis_mut(Axis(0), b).assign(&w);
    }
    (context, weights)
}

#[test]
fn every_scorer_computes_its_formula() {
    let (b, t, s, d) = (3, 4, 5, 6);
    let mask = pad_mask(&[5, 2, 0], s);
    for scorer in all_scorers(3) {
        for causal in [false, true] {
            let attn = layer(scorer, d, d, 6, 9);
            let (q, kv) = (tensor(&[b, t, d], 1).mul_scalar(2.0), tensor(&[b, s, d], 2).mul_scalar(2.0));
            let out = attn.forward(&q, &kv, &kv, Some(&mask), causal).unwrap();
            let as3 = |a: &ArrayD<f32>| a.view().into_dimensionality::<Ix3>().unwrap().mapv(f64::from);
            let (context, weights) = reference(&attn, &as3(q.data()), &as3(kv.data()), &mask, causal);
            for (got, want, what) in
                [(as3(out.context.data()), context, "context"), (as3(out.weights.data()), weights, "weights")]
            {
                let err = (&got - &want).mapv(f64::abs).fold(0.0, |m: f64, &e| m.max(e));
                assert!(err < 1e-5, "{scorer} causal={causal}: {what} differs by {err}");
            }
        }
    }
}
