//! Properties every scorer must have, on random shapes, padding and values
//! (proptest with a fixed seed), plus the identities between scorers.

use crate::common::{all_scorers, flat, layer, pad_mask, stepped_recurrence, tensor, values};
use lingo_attention::{Attention, AttentionConfig, Error, Scorer, additive_attention};
use lingo_tensor::{Module, RnnWeights, Tensor};
use ndarray::{Array2, ArrayD, Axis};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

/// Source lengths 0..=src_len per row, from a seed.
fn lengths(batch: usize, src_len: usize, seed: u64) -> Vec<usize> {
    (0..batch).map(|b| (seed as usize / 7 + 5 * b) % (src_len + 1)).collect()
}

fn forward(attn: &Attention, q: &Tensor, kv: &Tensor, mask: &Array2<bool>, causal: bool) -> (ArrayD<f32>, ArrayD<f32>) {
    let out = attn.forward(q, kv, kv, Some(mask), causal).unwrap();
    (out.context.data().clone(), out.weights.data().clone())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, rng_seed: RngSeed::Fixed(20261130), failure_persistence: None, ..ProptestConfig::default() })]

    /// Rows are distributions; padding gets (almost exactly) nothing; rows with
    /// nothing visible are finite; hidden positions of causal rows get nothing.
    #[test]
    fn weights_are_distributions_that_respect_the_masks(scorer in 0usize..5, b in 1usize..=3, t in 1usize..=5, s in 1usize..=6,
                                                        causal in any::<bool>(), seed in 0u64..10_000) {
        let attn = layer(all_scorers(2)[scorer], 4, 4, 6, seed);
        let lens = lengths(b, s, seed);
        let mask = pad_mask(&lens, s);
        let (context, weights) = forward(&attn, &tensor(&[b, t, 4], seed), &tensor(&[b, s, 4], seed + 1), &mask, causal);
        prop_assert!(context.iter().all(|v| v.is_finite()));
        for ((bi, ti), row) in weights.lanes(Axis(2)).into_iter().enumerate().map(|(i, r)| ((i / t, i % t), r)) {
            prop_assert!(row.iter().all(|&w| w.is_finite() && w >= 0.0));
            prop_assert!((row.sum() - 1.0).abs() < 1e-5, "row sums to {}", row.sum());
            let limit = if causal { (ti + 1 + s).saturating_sub(t) } else { s };
            if lens[bi] > 0 && limit > 0 {
                for si in (lens[bi]..s).chain(limit..s) {
                    prop_assert!(row[si] < 1e-6, "hidden position {si} of row ({bi}, {ti}) has weight {}", row[si]);
                }
            }
        }
    }

    /// Keys and values behind the padding change nothing, bit for bit.
    #[test]
    fn what_is_behind_the_mask_does_not_matter(scorer in 0usize..5, b in 1usize..=3, t in 1usize..=4, s in 2usize..=6, seed in 0u64..10_000) {
        let attn = layer(all_scorers(2)[scorer], 4, 4, 6, seed);
        let lens: Vec<usize> = lengths(b, s - 1, seed).iter().map(|l| l + 1).collect(); // at least one visible
        let mask = pad_mask(&lens, s);
        let source = tensor(&[b, s, 4], seed + 1);
        let noise = tensor(&[b, s, 4], seed + 2).data().mapv(|v| 100.0 * v);
        let mut changed = source.data().clone().into_dimensionality::<ndarray::Ix3>().unwrap();
        ndarray::Zip::indexed(&mut changed).and(&noise.into_dimensionality::<ndarray::Ix3>().unwrap()).for_each(|(bi, si, _), x, &n| if mask[[bi, si]] { *x = n });
        let changed = changed.into_dyn();
        let q = tensor(&[b, t, 4], seed);
        prop_assert_eq!(forward(&attn, &q, &source, &mask, false), forward(&attn, &q, &Tensor::new(changed), &mask, false));
    }

    /// Different target positions (queries) get different weights, and so does a different source.
    #[test]
    fn weights_change_with_the_target_position_and_the_source(scorer in 0usize..5, seed in 0u64..10_000) {
        let attn = layer(all_scorers(2)[scorer], 4, 4, 6, seed);
        let mask = pad_mask(&[5], 5);
        let q = tensor(&[1, 2, 4], seed).mul_scalar(3.0);
        let (_, w) = forward(&attn, &q, &tensor(&[1, 5, 4], seed + 1).mul_scalar(3.0), &mask, false);
        let (_, w_other) = forward(&attn, &q, &tensor(&[1, 5, 4], seed + 2).mul_scalar(3.0), &mask, false);
        let differ = |a: ArrayD<f32>, b: ArrayD<f32>| a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max) > 1e-4;
        prop_assert!(differ(w.index_axis(Axis(1), 0).to_owned(), w.index_axis(Axis(1), 1).to_owned()));
        prop_assert!(differ(w, w_other));
    }
}

#[test]
fn gradients_reach_every_parameter() {
    for scorer in ["general", "additive", "multi_head:2"] {
        let attn = layer(scorer.parse().unwrap(), 3, 5, 4, 1);
        let enc_out = tensor(&[2, 4, 5], 2);
        let out = attn.forward(&tensor(&[2, 3, 3], 3), &enc_out, &enc_out, Some(&pad_mask(&[4, 2], 4)), false).unwrap();
        let grads = out.context.mul(&tensor(&[2, 3, 5], 4)).unwrap().sum_all().backward().unwrap();
        assert!(!attn.params().is_empty());
        for p in attn.params() {
            let g = grads.get(p.tensor()).unwrap_or_else(|| panic!("{scorer}: no gradient for {}", p.name()));
            assert!(
                g.iter().all(|v| v.is_finite()) && g.iter().any(|&v| v != 0.0),
                "{scorer}: {} has a zero gradient",
                p.name()
            );
        }
    }
}

#[test]
fn scaled_dot_is_dot_with_scaled_queries() {
    let d = 16;
    let (q, kv) = (tensor(&[2, 3, d], 1).mul_scalar(4.0), tensor(&[2, 5, d], 2));
    let mask = pad_mask(&[5, 3], 5);
    let scaled = forward(&layer(Scorer::ScaledDot, d, d, 0, 0), &q, &kv, &mask, false);
    let dot = forward(&layer(Scorer::Dot, d, d, 0, 0), &q.mul_scalar(1.0 / (d as f32).sqrt()), &kv, &mask, false);
    for (a, b) in [(&scaled.0, &dot.0), (&scaled.1, &dot.1)] {
        assert!(a.iter().zip(b.iter()).all(|(x, y)| (x - y).abs() < 1e-6), "{a} vs {b}");
    }
}

#[test]
fn one_head_with_identity_projections_is_scaled_dot() {
    let d = 6;
    let mut multi = layer(Scorer::MultiHead { heads: 1 }, d, d, d, 0);
    for p in multi.params_mut() {
        p.set(Array2::<f32>::eye(d).into_dyn()).unwrap();
    }
    let (q, kv) = (tensor(&[2, 4, d], 1).mul_scalar(3.0), tensor(&[2, 5, d], 2));
    let mask = pad_mask(&[2, 5], 5);
    for causal in [false, true] {
        let a = forward(&multi, &q, &kv, &mask, causal);
        let b = forward(&layer(Scorer::ScaledDot, d, d, 0, 0), &q, &kv, &mask, causal);
        assert!(a.0.iter().zip(&b.0).chain(a.1.iter().zip(&b.1)).all(|(x, y)| (x - y).abs() < 1e-6));
    }
}

#[test]
fn multi_head_weights_are_the_mean_of_the_head_weights() {
    let attn = layer(Scorer::MultiHead { heads: 3 }, 5, 4, 6, 0);
    let enc_out = tensor(&[2, 4, 4], 1);
    let out = attn.forward(&tensor(&[2, 3, 5], 2), &enc_out, &enc_out, None, false).unwrap();
    let heads = out.head_weights.unwrap().data().clone();
    assert_eq!(heads.shape(), &[2, 3, 3, 4]);
    let mean = heads.mean_axis(Axis(1)).unwrap();
    assert!(mean.iter().zip(out.weights.data()).all(|(a, b)| (a - b).abs() < 1e-6));
    for row in heads.lanes(Axis(3)) {
        assert!((row.sum() - 1.0).abs() < 1e-5);
    }
}

/// The same bits whether the batch is shared between rayon's threads or
/// computed on one: called from a plain thread, a kernel this large shares
/// its batch; called from inside a rayon pool, it stays on that thread.
#[test]
fn results_do_not_depend_on_the_number_of_threads() {
    let compute = |scorer: Scorer| {
        // Large enough (16 × 64 × 64) to be shared between threads.
        let attn = layer(scorer, 32, 32, 32, 0);
        let enc_out = Tensor::variable(tensor(&[16, 64, 32], 1).data().clone());
        let lens = [64, 40, 5, 64, 1, 64, 64, 9, 33, 64, 2, 50, 64, 17, 64, 63];
        let out =
            attn.forward(&tensor(&[16, 64, 32], 2), &enc_out, &enc_out, Some(&pad_mask(&lens, 64)), false).unwrap();
        let all = flat(&out).unwrap();
        let grads = all.mul(&tensor(&[all.len()], 3)).unwrap().sum_all().backward().unwrap();
        (all.to_vec(), grads.get(&enc_out).unwrap().clone())
    };
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    for scorer in [Scorer::Dot, Scorer::Additive, Scorer::MultiHead { heads: 4 }] {
        let shared = compute(scorer); // from the test's own thread: the global pool
        assert_eq!(shared, one_thread.install(|| compute(scorer)), "{scorer}");
    }
}

#[test]
fn scorer_names_round_trip_and_unknown_names_list_the_valid_ones() {
    for scorer in all_scorers(4) {
        assert_eq!(scorer.to_string().parse::<Scorer>().unwrap(), scorer);
    }
    assert_eq!(" scaled_dot ".parse::<Scorer>().unwrap(), Scorer::ScaledDot);
    for bad in ["", "Dot", "multi_head:0", "multi_head:x", "multihead"] {
        let err = bad.parse::<Scorer>().unwrap_err();
        assert!(matches!(err, Error::UnknownScorer { .. }), "{bad}");
        for name in Scorer::NAMES {
            assert!(err.to_string().contains(name), "{err}");
        }
    }
}

#[test]
fn configs_that_cannot_work_are_refused_with_advice() {
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(0);
    let refuse = |scorer: Scorer, dq: usize, dk: usize, a: usize, rng: &mut rand::rngs::StdRng| {
        Attention::new("attn", &AttentionConfig { scorer, query_dim: dq, key_dim: dk, attn_dim: a }, rng)
            .unwrap_err()
            .to_string()
    };
    for scorer in [Scorer::Dot, Scorer::ScaledDot] {
        let err = refuse(scorer, 4, 6, 0, &mut rng);
        assert!(err.contains("`general`") && err.contains("`additive`"), "{err}");
    }
    assert!(refuse(Scorer::MultiHead { heads: 3 }, 4, 4, 8, &mut rng).contains("multiple of the number of heads"));
    assert!(refuse(Scorer::Additive, 4, 4, 0, &mut rng).contains("attn_dim"));
    assert!(refuse(Scorer::General, 0, 4, 0, &mut rng).contains("positive"));
}

#[test]
fn shape_errors_name_both_shapes() {
    let attn = layer(Scorer::General, 3, 5, 0, 0);
    let enc_out = tensor(&[2, 4, 5], 1);
    let err = attn.forward(&tensor(&[2, 1, 4], 2), &enc_out, &enc_out, None, false).unwrap_err().to_string();
    assert!(err.contains("[2, 1, 4]") && err.contains("[2, 4, 3]"), "{err}");
    let err = attn
        .forward(&tensor(&[2, 1, 3], 2), &enc_out, &enc_out, Some(&pad_mask(&[1, 1, 1], 4)), false)
        .unwrap_err()
        .to_string();
    assert!(err.contains("[2, 4, 5]") && err.contains("[3, 4]"), "{err}");
    let err = lingo_attention::dot_product_attention(&tensor(&[2, 2, 3], 0), &enc_out, &enc_out, 1, 1.0, None, false)
        .unwrap_err()
        .to_string();
    assert!(err.contains("`general` or `additive`"), "{err}");
}

/// The additive kernel's backward reads the hidden layer `tanh(Q' + K')`
/// that forward kept when it is small, and computes it again when it is not
/// (past 2^20 floats): both ways give the same gradients, bit for bit. A
/// batch of two entries just past the limit (recomputed) against each entry
/// alone (kept), with padding in the second entry.
#[test]
fn additive_gradients_are_the_same_whether_the_hidden_layer_was_kept_or_not() {
    let (t, s, a, d_v) = (17, 128, 256, 3); // 2·17·128·256 > 2^20 ≥ 17·128·256
    let inputs = [values(&[2, t, a], 1), values(&[2, s, a], 2), values(&[a], 3), values(&[2, s, d_v], 4)];
    let (mask, d_context) = (pad_mask(&[s, 90], s), tensor(&[2, t, d_v], 5));
    // Gradients of Σ context ⊙ dC + Σ weights² for entries `rows` on their own.
    let grads = |rows: std::ops::Range<usize>| {
        let batch = |x: &ArrayD<f32>| Tensor::variable(x.slice_axis(Axis(0), rows.clone().into()).to_owned());
        let vars = [batch(&inputs[0]), batch(&inputs[1]), Tensor::variable(inputs[2].clone()), batch(&inputs[3])];
        let mask = mask.slice_axis(Axis(0), rows.clone().into()).to_owned();
        let out = additive_attention(&vars[0], &vars[1], &vars[2], &vars[3], Some(&mask), false).unwrap();
        let d_context = d_context.data().slice_axis(Axis(0), rows.clone().into()).to_owned();
        let loss = out
            .context
            .mul(&Tensor::new(d_context))
            .unwrap()
            .sum_all()
            .add(&out.weights.mul(&out.weights).unwrap().sum_all())
            .unwrap();
        let g = loss.backward().unwrap();
        vars.map(|v| g.get(&v).unwrap().clone())
    };
    let (both, first, second) = (grads(0..2), grads(0..1), grads(1..2));
    for k in [0, 1, 3] {
        // dQ', dK', dV: per entry, the same arithmetic either way.
        let alone = ndarray::concatenate(Axis(0), &[first[k].view(), second[k].view()]).unwrap();
        assert_eq!(both[k], alone, "input {k}");
    }
    // dv sums over the batch, and the two entries' parts were added in another order.
    for ((x, y), z) in both[2].iter().zip(&first[2]).zip(&second[2]) {
        assert!((x - (y + z)).abs() <= 1e-6 * (1.0 + x.abs()), "dv: {x} vs {}", y + z);
    }
    assert!(both[0].iter().any(|&g| g != 0.0), "the queries get a gradient");
}

/// The fused Bahdanau recurrence computes what stepping [`Prepared::attend`]
/// and a GRU cell computes: the states, the weights and the gradients of
/// every input and parameter, with padding (one row all padding), both
/// where the hidden layer is kept for backward and where it is computed
/// again (the second size, past 2^20 floats).
///
/// [`Prepared::attend`]: lingo_attention::Prepared::attend
#[test]
fn gru_recurrence_is_attend_then_a_gru_step() {
    let (e, h, dv) = (3, 4, 5);
    for (b, t, s, a, lens) in [(3, 4, 5, 6, vec![5, 2, 0]), (2, 9, 128, 512, vec![128, 70])] {
        let attn = layer(Scorer::Additive, h, dv, a, 21);
        let var = |shape: &[usize], seed| Tensor::variable(values(shape, seed));
        let (enc_out, x, h0) = (var(&[b, s, dv], 22), var(&[b, t, e], 23), var(&[b, h], 24));
        let gru_params = [var(&[3 * h, e + dv], 25), var(&[3 * h, h], 26), var(&[3 * h], 27), var(&[3 * h], 28)];
        let gru = RnnWeights {
            weight_ih: &gru_params[0],
            weight_hh: &gru_params[1],
            bias_ih: &gru_params[2],
            bias_hh: &gru_params[3],
        };
        let prepared = attn.prepare(&enc_out, &enc_out, Some(&pad_mask(&lens, s))).unwrap();
        // L = Σ states ⊙ dS + Σ weights ⊙ dW, so both outputs send gradients back.
        let (d_states, d_weights) = (tensor(&[b, t, h], 30), tensor(&[b, t, s], 31));
        let run = |states: &Tensor, weights: &Tensor| {
            let loss =
                states.mul(&d_states).unwrap().sum_all().add(&weights.mul(&d_weights).unwrap().sum_all()).unwrap();
            let grads = loss.backward().unwrap();
            let mut wrt = vec![&enc_out, &x, &h0];
            wrt.extend(&gru_params);
            wrt.extend(attn.params().into_iter().map(|p| p.tensor()));
            let grads: Vec<ArrayD<f32>> = wrt.iter().map(|v| grads.get(v).unwrap().clone()).collect();
            (states.data().clone(), weights.data().clone(), grads)
        };

        let fused = prepared.gru_recurrence(&x, &h0, gru).unwrap();
        let fused = run(&fused.output, &fused.weights);

        let (states, weights) = stepped_recurrence(&prepared, &x, &h0, gru).unwrap();
        let stepped = run(&states, &weights);

        let close = |what: &str, x: &ArrayD<f32>, y: &ArrayD<f32>| {
            assert_eq!(x.shape(), y.shape(), "{what}");
            for (p, q) in x.iter().zip(y) {
                assert!(
                    (p - q).abs() <= 1e-5 + 1e-4 * p.abs().max(q.abs()),
                    "{what} (size {b}, {t}, {s}, {a}): {p} vs {q}"
                );
            }
        };
        close("states", &fused.0, &stepped.0);
        close("weights", &fused.1, &stepped.1);
        let names = ["enc_out", "x", "h0", "weight_ih", "weight_hh", "bias_ih", "bias_hh", "W_q", "W_k", "v"];
        for (name, (g_fused, g_stepped)) in names.iter().zip(fused.2.iter().zip(&stepped.2)) {
            close(name, g_fused, g_stepped);
        }
        assert!(fused.2[1].iter().any(|&g| g != 0.0), "the step inputs get a gradient");
    }
    // Other scorers step with `attend`; the fused op says so.
    let dot = layer(Scorer::Dot, h, h, 0, 1).prepare(&tensor(&[1, 2, h], 2), &tensor(&[1, 2, h], 3), None).unwrap();
    let (w_ih, w_hh, bias) = (tensor(&[3 * h, e + h], 4), tensor(&[3 * h, h], 5), tensor(&[3 * h], 6));
    let gru = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &bias, bias_hh: &bias };
    let err = dot.gru_recurrence(&tensor(&[1, 2, e], 7), &tensor(&[1, h], 8), gru).unwrap_err().to_string();
    assert!(err.contains("additive") && err.contains("attend"), "{err}");
}

#[test]
fn one_query_row_gets_the_bits_it_gets_among_several() {
    // A decoding step's single query runs on plain slices; the same row
    // inside a two-row call runs through the products: they must agree bit
    // for bit, with padding, one or four heads, and strided inputs too.
    let (batch, src_len) = (3, 5);
    let mask = pad_mask(&[5, 2, 4], src_len);
    for heads in [1, 4] {
        let (q2, kv) = (tensor(&[batch, 2, 8], 1), tensor(&[batch, src_len, 8], 2));
        let v = tensor(&[batch, src_len, 4 * heads], 3);
        let q1 = q2.narrow(1, 0, 1).unwrap();
        // The same keys, strided: every other position of a longer tensor's columns.
        let wide = Tensor::new(values(&[batch, src_len, 16], 4));
        for (keys, contiguous) in [(kv.clone(), true), (wide.narrow(2, 0, 8).unwrap(), false)] {
            let run = |q: &Tensor| {
                lingo_attention::dot_product_attention(q, &keys, &v, heads, 0.5, Some(&mask), false).unwrap()
            };
            let (one, two) = (run(&q1), run(&q2));
            let first = |a: &ArrayD<f32>| a.index_axis(Axis(1), 0).to_owned();
            assert_eq!(first(one.context.data()), first(two.context.data()), "{heads} heads, contiguous {contiguous}");
            assert_eq!(first(one.weights.data()), first(two.weights.data()));
            if let (Some(a), Some(b)) = (one.head_weights, two.head_weights) {
                assert_eq!(a.data().index_axis(Axis(2), 0), b.data().index_axis(Axis(2), 0));
            }
            // Padding gets exactly 0.
            assert!(one.weights.data().index_axis(Axis(0), 1).iter().skip(2).all(|&w| w == 0.0));
        }
    }
}
