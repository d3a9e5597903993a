//! Every op's backward rule against central finite differences, on random
//! shapes and values (proptest picks the shapes, axes, lengths and a seed
//! for the values).

// `&[x.clone()]` reads better here than `std::slice::from_ref(&x)`.
#![allow(clippy::cloned_ref_to_slice_refs)]

use lingo_tensor::{
    CrossEntropy, GradCheck, Result, RnnWeights, Tensor, check_gradients,
    fused::{SeqInput, gru_cell, gru_sequence, lstm_cell, lstm_sequence},
};
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Values uniform in `[low, high)`.
fn values(shape: &[usize], low: f32, high: f32, seed: u64) -> ArrayD<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    ArrayD::from_shape_simple_fn(IxDyn(shape), || rng.random_range(low..high))
}

/// Values in `[-1, 1)` kept at least 0.1 away from 0 (for ops with a kink there).
fn off_zero(shape: &[usize], seed: u64) -> ArrayD<f32> {
    values(shape, 0.1, 1.0, seed).mapv(|v| v) * &values(shape, -1.0, 1.0, seed ^ 1).mapv(|s| s.signum())
}

fn check(f: impl Fn(&[Tensor]) -> Result<Tensor>, inputs: &[ArrayD<f32>]) -> std::result::Result<(), TestCaseError> {
    check_gradients(f, inputs, GradCheck::default()).map(|_| ()).map_err(|e| TestCaseError::fail(e.to_string()))
}

fn dims(max: usize, n: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1..=max, n)
}

/// The shape of an operand that broadcasts against `shape`: some axes set to
/// 1 (`ones` is a bit mask) and the first `drop` axes removed.
fn broadcast_of(shape: &[usize], ones: u8, drop: usize) -> Vec<usize> {
    shape.iter().enumerate().skip(drop).map(|(i, &d)| if ones >> i & 1 == 1 { 1 } else { d }).collect()
}

proptest! {
    // A fixed seed keeps CI reproducible; 128 cases per property still cover
    // many shapes. Run with PROPTEST_CASES=5000 locally to search harder.
    #![proptest_config(ProptestConfig { cases: 128, rng_seed: RngSeed::Fixed(20261129), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arithmetic_with_broadcasting(shape in dims(3, 3), ones in 0u8..8, drop in 0usize..3, flip in any::<bool>(), seed in any::<u64>()) {
        let other = broadcast_of(&shape, ones, drop);
        let (sa, sb) = if flip { (other, shape) } else { (shape, other) };
        let (a, b) = (values(&sa, -1.0, 1.0, seed), values(&sb, -1.0, 1.0, seed + 1));
        check(|t| t[0].add(&t[1]), &[a.clone(), b.clone()])?;
        check(|t| t[0].sub(&t[1]), &[a.clone(), b.clone()])?;
        check(|t| t[0].mul(&t[1]), &[a.clone(), b.clone()])?;
        // keep the denominator away from zero
        check(|t| t[0].div(&t[1]), &[a, values(&sb, 0.5, 2.0, seed + 2)])?;
    }

    #[test]
    fn unary_and_scalar_ops(shape in dims(4, 2), seed in any::<u64>()) {
        let x = values(&shape, -2.0, 2.0, seed);
        check(|t| Ok(t[0].neg()), &[x.clone()])?;
        check(|t| Ok(t[0].exp()), &[x.clone()])?;
        check(|t| Ok(t[0].tanh()), &[x.clone()])?;
        check(|t| Ok(t[0].sigmoid()), &[x.clone()])?;
        check(|t| Ok(t[0].add_scalar(0.7)), &[x.clone()])?;
        check(|t| Ok(t[0].mul_scalar(-1.5)), &[x])?;
        check(|t| Ok(t[0].log()), &[values(&shape, 0.5, 3.0, seed)])?;
        check(|t| Ok(t[0].sqrt()), &[values(&shape, 0.5, 3.0, seed)])?;
        check(|t| Ok(t[0].relu()), &[off_zero(&shape, seed)])?;
        check(|t| Ok(t[0].gelu()), &[values(&shape, -3.0, 3.0, seed)])?;
        check(|t| Ok(t[0].gelu_tanh()), &[values(&shape, -3.0, 3.0, seed)])?;
    }

    #[test]
    fn layer_norm_alone_and_after_a_residual_add(rows in 1usize..4, extra in 1usize..3, d in 2usize..6, seed in any::<u64>()) {
        // Features spread over a ramp, so no row's variance is near 0, where x̂
        // turns sharply and finite differences stop being accurate; the
        // offset of 1.5 makes the mean matter too.
        let shape = [rows, extra, d];
        // Neighbours differ by at least 2 - 4 · 0.25 = 1, with the residual added.
        let ramp = ArrayD::from_shape_fn(IxDyn(&shape), |i| 2.0 * i[2] as f32 + 1.5);
        let x = values(&shape, -0.25, 0.25, seed) + ramp;
        let (gamma, beta) = (values(&[d], 0.5, 1.5, seed + 1), values(&[d], -1.0, 1.0, seed + 2));
        check(|t| t[0].layer_norm(&t[1], &t[2], 1e-5), &[x.clone(), gamma.clone(), beta.clone()])?;
        check(|t| t[0].add_layer_norm(&t[1], &t[2], &t[3], 1e-5), &[x, values(&shape, -0.25, 0.25, seed + 3), gamma, beta])?;
    }

    #[test]
    fn softmax_and_log_softmax(shape in dims(4, 3), axis in 0usize..3, seed in any::<u64>()) {
        let x = values(&shape, -2.0, 2.0, seed);
        check(|t| t[0].softmax(axis), &[x.clone()])?;
        check(|t| t[0].log_softmax(axis), &[x])?;
    }

    #[test]
    fn sums_and_means(shape in dims(3, 3), axes in prop::sample::subsequence(vec![0usize, 1, 2], 1..=3), keepdim in any::<bool>(), seed in any::<u64>()) {
        let x = values(&shape, -1.0, 1.0, seed);
        check(|t| t[0].sum(&axes, keepdim), &[x.clone()])?;
        check(|t| t[0].mean(&axes, keepdim), &[x.clone()])?;
        check(|t| Ok(t[0].sum_all()), &[x.clone()])?;
        check(|t| Ok(t[0].mean_all()), &[x])?;
    }

    #[test]
    fn shape_ops(shape in dims(3, 3), perm in Just(vec![0usize, 1, 2]).prop_shuffle(), axis in 0usize..3, seed in any::<u64>()) {
        let x = values(&shape, -1.0, 1.0, seed);
        let y = values(&shape, -1.0, 1.0, seed + 1);
        let n: usize = shape.iter().product();
        check(|t| t[0].reshape(&[n]), &[x.clone()])?;
        check(|t| t[0].unsqueeze(axis), &[x.clone()])?;
        check(|t| t[0].permute(&perm), &[x.clone()])?;
        check(|t| t[0].transpose(axis, (axis + 1) % 3), &[x.clone()])?;
        check(|t| Tensor::cat(&[t[0].clone(), t[1].clone()], axis), &[x.clone(), y.clone()])?;
        check(|t| Tensor::stack(&[t[0].clone(), t[1].clone()], axis), &[x.clone(), y])?;
        let size = shape[axis];
        check(|t| t[0].narrow(axis, size / 2, size - size / 2), &[x.clone()])?;
        // split, with the pieces weighted differently so a swapped piece would show
        check(|t| {
            let parts = t[0].split(axis, &[size / 2, size - size / 2])?;
            parts[0].sum_all().mul_scalar(2.0).add(&parts[1].sum_all().mul_scalar(-3.0))
        }, &[x])?;
    }

    #[test]
    fn indexing_and_masking(rows in 1usize..5, cols in 1usize..4, picks in prop::collection::vec(0usize..5, 1..7), pad in prop::option::of(0usize..5), seed in any::<u64>()) {
        let table = values(&[rows, cols], -1.0, 1.0, seed);
        let picks: Vec<usize> = picks.into_iter().map(|p| p % rows).collect();
        check(|t| t[0].index_select(0, &picks), &[table.clone()])?;
        // select_cat: the picked rows (repeats included) of a (rows, cols, 2) cache, a column appended
        let cache = values(&[rows, cols, 2], -1.0, 1.0, seed ^ 1);
        let appended = values(&[picks.len(), 1, 2], -1.0, 1.0, seed ^ 2);
        check(|t| t[0].select_cat(&picks, &t[1]), &[cache, appended])?;
        let ids = ArrayD::from_shape_vec(IxDyn(&[1, picks.len()]), picks.clone()).expect("shape");
        check(|t| t[0].embedding(ids.view(), None), &[table.clone()])?;
        // With a padding row, the gradient is the same except that row's, which is zero
        // (on purpose: finite differences would see the row, backward must not).
        if let Some(pad) = pad.filter(|&p| p < rows) {
            let grad_of = |padding| {
                let t = Tensor::variable(table.clone());
                let g = t.embedding(ids.view(), padding).and_then(|e| e.mul_scalar(1.5).sum_all().backward()).expect("runs");
                g.get(&t).expect("table gets a gradient").clone()
            };
            let (plain, padded) = (grad_of(None), grad_of(Some(pad)));
            for ((r, c), &g) in padded.view().into_dimensionality::<ndarray::Ix2>().expect("2-D").indexed_iter() {
                let want = if r == pad { 0.0 } else { plain[[r, c]] };
                prop_assert_eq!(g, want, "row {} column {}", r, c);
            }
        }
        let mask = values(&[cols], 0.0, 1.0, seed + 3).mapv(|v| v < 0.5);
        check(|t| t[0].masked_fill(&mask, -1e9), &[table])?;
    }

    #[test]
    fn matmul_and_linear(m in 1usize..4, k in 1usize..4, n in 1usize..4, batch in 1usize..3, seed in any::<u64>()) {
        check(|t| t[0].matmul(&t[1]), &[values(&[m, k], -1.0, 1.0, seed), values(&[k, n], -1.0, 1.0, seed + 1)])?;
        check(|t| t[0].matmul(&t[1]), &[values(&[batch, m, k], -1.0, 1.0, seed), values(&[batch, k, n], -1.0, 1.0, seed + 1)])?;
        check(|t| t[0].matmul(&t[1]), &[values(&[batch, m, k], -1.0, 1.0, seed), values(&[k, n], -1.0, 1.0, seed + 1)])?;
        let (x, w, b) = (values(&[batch, m, k], -1.0, 1.0, seed), values(&[n, k], -1.0, 1.0, seed + 1), values(&[n], -1.0, 1.0, seed + 2));
        check(|t| t[0].linear(&t[1], Some(&t[2])), &[x.clone(), w.clone(), b])?;
        check(|t| t[0].linear(&t[1], None), &[x, w])?;
    }

    #[test]
    fn dropout_with_a_fixed_mask(shape in dims(4, 2), p in 0.1f32..0.7, seed in any::<u64>()) {
        // The same seed gives the same mask on every call, as within one training step.
        check(|t| t[0].dropout(p, &mut StdRng::seed_from_u64(seed)), &[values(&shape, -1.0, 1.0, seed)])?;
    }

    #[test]
    fn cross_entropy_with_ignore_and_smoothing(rows in 1usize..6, classes in 2usize..6, smoothing in 0.0f32..0.3, ignore in any::<bool>(), seed in any::<u64>()) {
        let mut rng = StdRng::seed_from_u64(seed);
        let targets: Vec<usize> = (0..rows).map(|_| rng.random_range(0..classes)).collect();
        let opts = CrossEntropy { ignore_index: ignore.then_some(0), label_smoothing: smoothing };
        check(|t| t[0].cross_entropy(&targets, opts), &[values(&[rows, classes], -2.0, 2.0, seed)])?;
    }

    #[test]
    fn fused_output_layer_and_cross_entropy(rows in 1usize..6, input in 1usize..4, classes in 2usize..6, smoothing in 0.0f32..0.3, ignore in any::<bool>(), bias in any::<bool>(), seed in any::<u64>()) {
        let mut rng = StdRng::seed_from_u64(seed);
        let targets: Vec<usize> = (0..rows).map(|_| rng.random_range(0..classes)).collect();
        let opts = CrossEntropy { ignore_index: ignore.then_some(0), label_smoothing: smoothing };
        let mut inputs = vec![values(&[rows, input], -1.0, 1.0, seed), values(&[classes, input], -1.0, 1.0, seed + 1)];
        inputs.extend(bias.then(|| values(&[classes], -1.0, 1.0, seed + 2)));
        check(|t| t[0].linear_cross_entropy(&t[1], t.get(2), &targets, opts), &inputs)?;
    }

    #[test]
    fn recurrent_cells(batch in 1usize..4, input in 1usize..4, hidden in 1usize..4, seed in any::<u64>()) {
        let (x, h, c) = (values(&[batch, input], -1.0, 1.0, seed), values(&[batch, hidden], -1.0, 1.0, seed + 1), values(&[batch, hidden], -1.0, 1.0, seed + 2));
        let lstm = rnn_weights(4, input, hidden, seed + 3);
        let mut inputs = vec![x.clone(), h.clone(), c];
        inputs.extend(lstm);
        check(|t| {
            let (h1, c1) = lstm_cell(&t[0], &t[1], &t[2], weights(&t[3..]))?;
            Tensor::cat(&[h1, c1], 1)
        }, &inputs)?;
        let mut inputs = vec![x, h];
        inputs.extend(rnn_weights(3, input, hidden, seed + 4));
        check(|t| gru_cell(&t[0], &t[1], weights(&t[2..])), &inputs)?;
    }

    #[test]
    fn recurrent_sequences_with_padding(batch in 1usize..4, time in 1usize..5, input in 1usize..4, hidden in 1usize..4, reverse in any::<bool>(), seed in any::<u64>()) {
        let mut rng = StdRng::seed_from_u64(seed);
        // Any lengths from 0 (an all-padding row) to the full time.
        let lengths: Vec<usize> = (0..batch).map(|_| rng.random_range(0..=time)).collect();
        let (x, h0, c0) = (values(&[batch, time, input], -1.0, 1.0, seed), values(&[batch, hidden], -1.0, 1.0, seed + 1), values(&[batch, hidden], -1.0, 1.0, seed + 2));
        let mut inputs = vec![x.clone(), h0.clone(), c0];
        inputs.extend(rnn_weights(4, input, hidden, seed + 3));
        check(|t| {
            let out = lstm_sequence(&t[0], &t[1], &t[2], &lengths, reverse, weights(&t[3..]))?;
            // outputs and both final states, so every path of the gradient is checked
            Tensor::cat(&[out.output, out.h_n.unsqueeze(1)?, out.c_n.unsqueeze(1)?], 1)
        }, &inputs)?;
        // Only the final cell state: the other results get no gradient at all.
        check(|t| Ok(lstm_sequence(&t[0], &t[1], &t[2], &lengths, reverse, weights(&t[3..]))?.c_n), &inputs)?;
        let mut inputs = vec![x, h0];
        inputs.extend(rnn_weights(3, input, hidden, seed + 4));
        check(|t| {
            let out = gru_sequence(&t[0], &t[1], &lengths, reverse, weights(&t[2..]))?;
            Tensor::cat(&[out.output, out.h_n.unsqueeze(1)?], 1)
        }, &inputs)?;
        check(|t| Ok(gru_sequence(&t[0], &t[1], &lengths, reverse, weights(&t[2..]))?.output), &inputs)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, rng_seed: RngSeed::Fixed(20261130), failure_persistence: None, ..ProptestConfig::default() })]

    /// Token input through the product table (small vocabulary) or the
    /// lookup (large vocabulary), with or without features after each
    /// token's embedding, gives what looking the embeddings up, concatenating
    /// the features and running the dense op gives, for an LSTM and a GRU,
    /// and its own gradients pass the check.
    #[test]
    fn token_input_equals_lookup_then_dense(vocab in 2usize..12, batch in 1usize..4, time in 1usize..5, emb in 1usize..4, features in 0usize..3, hidden in 1usize..4, pad in any::<bool>(), reverse in any::<bool>(), seed in any::<u64>()) {
        let mut rng = StdRng::seed_from_u64(seed);
        let ids = ndarray::Array2::from_shape_fn((batch, time), |_| rng.random_range(0..vocab));
        let lengths: Vec<usize> = (0..batch).map(|_| rng.random_range(0..=time)).collect();
        let padding_idx = pad.then_some(0);
        let table = values(&[vocab, emb], -1.0, 1.0, seed);
        let h0 = values(&[batch, hidden], -1.0, 1.0, seed + 1);
        // Inputs: [table, h0, c0, LSTM weights (4), GRU weights (4), features (if any)].
        let mut inputs = vec![table, h0.clone(), h0];
        inputs.extend(rnn_weights(4, emb + features, hidden, seed + 2));
        inputs.extend(rnn_weights(3, emb + features, hidden, seed + 3));
        if features > 0 {
            inputs.push(values(&[batch, time, features], -1.0, 1.0, seed + 4));
        }
        let run_with = |t: &[Tensor], tokens: bool, padding_idx: Option<usize>| -> Result<Tensor> {
            let f = t.get(11);
            let x = if tokens {
                None
            } else {
                let embedded = t[0].embedding(ids.view().into_dyn(), padding_idx)?;
                Some(match f { Some(f) => Tensor::cat(&[embedded, f.clone()], 2)?, None => embedded })
            };
            let input = match &x {
                Some(x) => SeqInput::Dense(x),
                None => SeqInput::Tokens { table: &t[0], ids: &ids, padding_idx, features: f },
            };
            let lstm = lstm_sequence(input, &t[1], &t[2], &lengths, reverse, weights(&t[3..7]))?;
            let gru = gru_sequence(input, &t[1], &lengths, reverse, weights(&t[7..11]))?;
            Tensor::cat(&[lstm.output, lstm.h_n.unsqueeze(1)?, lstm.c_n.unsqueeze(1)?, gru.output, gru.h_n.unsqueeze(1)?], 1)
        };
        let run = |t: &[Tensor], tokens: bool| run_with(t, tokens, padding_idx);
        let vars: Vec<Tensor> = inputs.iter().cloned().map(Tensor::variable).collect();
        let (tok, dense) = (run(&vars, true).unwrap(), run(&vars, false).unwrap());
        for (a, b) in tok.to_vec().iter().zip(dense.to_vec()) {
            prop_assert!((a - b).abs() < 1e-5, "outputs differ: {} vs {}", a, b);
        }
        let (g_tok, g_dense) = (tok.sum_all().backward().unwrap(), dense.sum_all().backward().unwrap());
        for v in &vars {
            let (a, b) = (g_tok.get(v).unwrap(), g_dense.get(v).unwrap());
            for (x, y) in a.iter().zip(b.iter()) {
                prop_assert!((x - y).abs() < 1e-4, "gradients differ: {} vs {}", x, y);
            }
        }
        // Finite differences see the padding row, backward must not: check without one.
        check(|t| run_with(t, true, None), &inputs)?;
    }
}

/// Random `[weight_ih, weight_hh, bias_ih, bias_hh]` for `gates` gates.
fn rnn_weights(gates: usize, input: usize, hidden: usize, seed: u64) -> Vec<ArrayD<f32>> {
    let rows = gates * hidden;
    vec![
        values(&[rows, input], -0.8, 0.8, seed),
        values(&[rows, hidden], -0.8, 0.8, seed + 1),
        values(&[rows], -0.5, 0.5, seed + 2),
        values(&[rows], -0.5, 0.5, seed + 3),
    ]
}

fn weights(t: &[Tensor]) -> RnnWeights<'_> {
    RnnWeights { weight_ih: &t[0], weight_hh: &t[1], bias_ih: &t[2], bias_hh: &t[3] }
}
