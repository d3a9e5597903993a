//! Token input through the product table: a speed-up of the sequence ops,
//! kept apart from the dense path it must equal (the tests compare the two).
//!
//! A first layer usually reads embeddings, `x_t = E[id_t]`, and its input
//! projection is `x_t·W_ihᵀ = E[id_t]·W_ihᵀ = (E·W_ihᵀ)[id_t]`. With
//! [`SeqInput::Tokens`](super::SeqInput::Tokens) and a vocabulary smaller
//! than `batch · time`, the op computes the product table
//! `P = E·W_ihᵀ (vocab, G·H)` once and looks rows up, instead of looking up
//! `batch · time` embeddings and projecting each. Backward mirrors it: the
//! step gradients are scatter-added into `dP (vocab, G·H)`, then
//! `dW_ih = dPᵀ·E` and `dE = dP·W_ih`. Each element of `P` is the same dot
//! product the dense path computes, in the same order, so the two give the
//! same bits. With a large vocabulary the op falls back to looking the
//! embeddings up and projecting them.
//!
//! A step may also read features after the token's embedding,
//! `x_t = [E[id_t]; f_t]` (a decoder in Bahdanau's placement reads the
//! context there). With `W_ih = [W_e | W_f]` split at the embedding's width,
//! `x_t·W_ihᵀ = P[id_t] + f_t·W_fᵀ` with `P = E·W_eᵀ`: the table covers the
//! tokens, one GEMM the features, and nothing is concatenated. Backward:
//! `dW_f = dGᵀ·F` and `dF = dG·W_f` beside the table's gradients. (Here the
//! sum over the input is split in two, so the bits differ slightly from the
//! concatenated dense input's.)

use ndarray::{Array2, ArrayD, ArrayView2, Axis};

use super::layout::{Dims, Source, matrix, rows};
use crate::cells::RnnWeights;
use crate::error::{Result, bad_arg, mismatch};
use crate::tensor::{BackwardMulti, Tensor};
use lingo_kernels::gemm::{gemm, gemm_new};

/// Token ids, with their table, padding token and optional features: what
/// [`SeqInput::Tokens`](super::SeqInput::Tokens) holds.
type Tokens<'a> = (&'a Tensor, &'a Array2<usize>, Option<usize>, Option<&'a Tensor>);

/// Checks token input and picks its projection: the product table when the
/// vocabulary is smaller than `batch · time` (it costs `vocab` rows of work
/// against `batch · time`), else the embeddings looked up (an ordinary
/// differentiable op), concatenated with the features, and projected.
pub(super) fn resolve(
    op: &'static str,
    (table, ids, padding_idx, features): Tokens<'_>,
    states: &[&Tensor],
    lengths: &[usize],
    w: &RnnWeights<'_>,
    gates: usize,
) -> Result<(Tensor, Source, Dims)> {
    let ts = table.shape();
    if ts.len() != 2 {
        return Err(mismatch(op, ts, ids.shape(), "the table must be (vocab, input) for ids (batch, time)"));
    }
    let (batch, time) = ids.dim();
    let extra = match features {
        Some(f) if f.shape().len() == 3 && f.shape()[..2] == [batch, time] => f.shape()[2],
        Some(f) => {
            return Err(mismatch(
                op,
                f.shape(),
                ids.shape(),
                "features must be (batch, time, F) for ids (batch, time)",
            ));
        }
        None => 0,
    };
    let d = Dims::check(op, &[batch, time, ts[1] + extra], states, lengths, w, gates)?;
    if let Some(&bad) = ids.iter().find(|&&id| id >= ts[0]) {
        return Err(bad_arg(op, format!("token id {bad} is out of range for a vocabulary of {}", ts[0])));
    }
    if ts[0] < batch * time {
        let source = Source::Table { ids: ids.iter().copied().collect(), padding_idx, features: features.cloned() };
        return Ok((table.clone(), source, d));
    }
    let embedded = table.embedding(ids.view().into_dyn(), padding_idx)?;
    let x = match features {
        Some(f) => Tensor::cat(&[embedded, f.clone()], 2)?,
        None => embedded,
    };
    Ok((x, Source::Dense, d))
}

/// `xp[r] = P[ids[r]] + f[r]·W_fᵀ` for every row `r = b·T + t`, with
/// `P = table·W_eᵀ + bias` and `W_ih = [W_e | W_f]`.
pub(super) fn projection(
    table: ArrayView2<'_, f32>,
    ids: &[usize],
    features: Option<&Tensor>,
    d: &Dims,
    w_ih: ArrayView2<'_, f32>,
    bias: &[f32],
) -> Array2<f32> {
    let (w_e, w_f) = w_ih.split_at(Axis(1), table.ncols());
    let mut p = Array2::from_shape_fn((table.nrows(), w_ih.nrows()), |(_, j)| bias[j]);
    gemm(1.0, table, w_e.t(), 1.0, p.view_mut()); // P = table·W_eᵀ + b
    let mut xp = p.select(Axis(0), ids);
    if let Some(f) = features {
        gemm(1.0, rows(f.data(), d.batch * d.time, w_f.ncols()).view(), w_f.t(), 1.0, xp.view_mut()); // + F·W_fᵀ
    }
    xp
}

/// `(d table, dW_ih, dF)`, each `None` where not needed; `dF` is `None`
/// outright without features.
type InputGrads = (Option<ArrayD<f32>>, Option<ArrayD<f32>>, Option<Option<ArrayD<f32>>>);

/// The input side's gradients through the table, `(d table, dW_ih, dF)`:
/// `dP[v] = Σ_{r: id_r = v} dG_x[r]` (a scatter-add), then
/// `dW_e = dPᵀ · table` and `d table = dP · W_e` (padding row zeroed), and,
/// with features `F`, `dW_f = dG_xᵀ · F` and `dF = dG_x · W_f`. `at` holds
/// the recorded positions of the table, `weight_ih` and the features.
pub(super) fn input_grads(
    b: &BackwardMulti<'_>,
    (at_table, at_w_ih, at_features): (usize, usize, usize),
    d: &Dims,
    (ids, padding_idx, features): (&[usize], Option<usize>, Option<&Tensor>),
    dg_x: ArrayView2<'_, f32>,
    w_ih: ArrayView2<'_, f32>,
) -> InputGrads {
    let table = matrix(&b.inputs[at_table]);
    let (w_e, w_f) = w_ih.split_at(Axis(1), table.ncols());
    let mut dp = Array2::<f32>::zeros((table.nrows(), dg_x.ncols()));
    for (&id, g) in ids.iter().zip(dg_x.rows()) {
        let mut row = dp.row_mut(id);
        row += &g;
    }
    let dtable = b.needs(at_table).then(|| {
        let mut dt = gemm_new(1.0, dp.view(), w_e);
        if let Some(pad) = padding_idx {
            dt.row_mut(pad).fill(0.0);
        }
        dt.into_dyn()
    });
    let f = features.map(|f| rows(f.data(), d.batch * d.time, w_f.ncols()));
    let dw_ih = b.needs(at_w_ih).then(|| {
        let mut dw = Array2::zeros(w_ih.raw_dim());
        let (dw_e, dw_f) = dw.view_mut().split_at(Axis(1), table.ncols());
        gemm(1.0, dp.t(), table, 0.0, dw_e);
        if let Some(f) = &f {
            gemm(1.0, dg_x.t(), f.view(), 0.0, dw_f);
        }
        dw.into_dyn()
    });
    let d_features = features.map(|f| {
        let df = || gemm_new(1.0, dg_x, w_f).into_shape_with_order(f.shape()).expect("(batch·time, F) rows");
        b.needs(at_features).then(df)
    });
    (dtable, dw_ih, d_features)
}
