//! `Attention::explain` against the layer it explains: its weights,
//! per-head weights and context are `forward`'s to 1e-6 for every scorer,
//! and its terms add up to the cell's score.

use ndarray::{Axis, Ix3, Ix4, s};

use crate::common::{all_scorers, layer, pad_mask, tensor};

/// The largest absolute difference between two rows.
fn gap(a: &[f32], b: ndarray::ArrayView1<'_, f32>) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn every_number_of_a_row_is_the_layers_own() {
    let (tgt_len, src_len, d) = (3, 5, 8);
    let lengths = [5, 3];
    let mask = pad_mask(&lengths, src_len);
    let (queries, keys) = (tensor(&[lengths.len(), tgt_len, d], 1), tensor(&[lengths.len(), src_len, d], 2));
    for scorer in all_scorers(2) {
        let attn = layer(scorer, d, d, 6, 3);
        let out = attn.forward(&queries, &keys, &keys, Some(&mask), false).unwrap();
        let weights = out.weights.data().view().into_dimensionality::<Ix3>().unwrap().to_owned();
        let context = out.context.data().view().into_dimensionality::<Ix3>().unwrap().to_owned();
        let heads = out.head_weights.map(|h| h.data().view().into_dimensionality::<Ix4>().unwrap().to_owned());
        let (q, k) = (
            queries.data().view().into_dimensionality::<Ix3>().unwrap(),
            keys.data().view().into_dimensionality::<Ix3>().unwrap(),
        );
        for (b, &length) in lengths.iter().enumerate() {
            let padded: Vec<bool> = mask.row(b).to_vec();
            for t in 0..tgt_len {
                for source in 0..length {
                    let steps = attn
                        .explain(
                            q.slice(s![b, t, ..]),
                            k.slice(s![b, .., ..]),
                            k.slice(s![b, .., ..]),
                            Some(&padded),
                            source,
                        )
                        .unwrap();
                    assert!(gap(&steps.weights, weights.slice(s![b, t, ..])) < 1e-6, "{scorer} weights ({b}, {t})");
                    assert!(gap(&steps.context, context.slice(s![b, t, ..])) < 1e-6, "{scorer} context ({b}, {t})");
                    for (h, head) in steps.heads.iter().enumerate() {
                        if let Some(per_head) = &heads {
                            assert!(gap(&head.weights, per_head.slice(s![b, h, t, ..])) < 1e-6, "{scorer} head {h}");
                        }
                        // The cell's score is its terms' sum, scaled; the padding scores -∞ and weighs 0.
                        let sum: f32 = head.terms.iter().sum();
                        assert!((sum * head.scale - head.scores[source]).abs() < 1e-5, "{scorer} ({b}, {t}, {source})");
                        for s in length..src_len {
                            assert_eq!((head.scores[s], head.weights[s]), (f32::NEG_INFINITY, 0.0));
                        }
                        // The head's context is its weights on its values, position by position.
                        assert_eq!(head.values.len(), src_len);
                        for (i, &c) in head.context.iter().enumerate() {
                            let sum: f32 = head.weights.iter().zip(&head.values).map(|(w, v)| w * v[i]).sum();
                            assert!((sum - c).abs() < 1e-5, "{scorer} head {h} context {i}");
                        }
                    }
                    // One head's context is the layer's.
                    if steps.heads.len() == 1 {
                        assert_eq!(steps.heads[0].context, steps.context);
                    }
                    assert_eq!(steps.heads.len(), scorer.heads(), "{scorer}");
                }
            }
        }
        // Every source position the weights reach is a cell explain can show.
        assert!(weights.sum_axis(Axis(2)).iter().all(|w| (w - 1.0).abs() < 1e-5));
    }
}

#[test]
fn rows_that_do_not_fit_are_errors_not_panics() {
    let attn = layer(all_scorers(2)[0], 8, 8, 6, 3);
    let (q, k) = (ndarray::Array1::<f32>::zeros(8), ndarray::Array2::<f32>::zeros((4, 8)));
    assert!(attn.explain(q.view(), k.view(), k.view(), None, 4).is_err(), "source past the end");
    assert!(attn.explain(q.view(), k.view(), k.view(), Some(&[true; 4]), 0).is_err(), "every position masked");
    assert!(attn.explain(q.view(), k.view(), k.view(), Some(&[false; 3]), 0).is_err(), "a mask of the wrong length");
    let short = ndarray::Array1::<f32>::zeros(7);
    assert!(attn.explain(short.view(), k.view(), k.view(), None, 0).is_err(), "a query of the wrong size");
}
