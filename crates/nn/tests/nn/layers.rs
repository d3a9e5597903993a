//! Layers: names, initialisation, and numerics against the fused ops composed by hand.

use lingo_nn::{Dropout, Embedding, Error, Init, Linear, Mode, Rnn, RnnConfig, RnnKind, RnnState};
use lingo_tensor::{
    Module, RnnWeights, Tensor,
    fused::{gru_sequence, lstm_sequence},
};
use ndarray::{Array2, Axis, Ix2};
use rand::SeedableRng;
use rand::rngs::StdRng;

fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// A seeded two-layer bidirectional stack and the RNG, ready for drawing inputs.
fn bidirectional_stack(kind: RnnKind, seed: u64, input: usize, hidden: usize) -> (Rnn, RnnConfig, StdRng) {
    let mut r = rng(seed);
    let config = RnnConfig { num_layers: 2, bidirectional: true, ..RnnConfig::new(kind, input, hidden) };
    let rnn = Rnn::new("encoder.rnn", config, Init::default(), &mut r).unwrap();
    (rnn, config, r)
}

fn names(m: &dyn Module) -> Vec<String> {
    m.params().iter().map(|p| p.name().to_owned()).collect()
}

#[test]
fn rnn_parameter_names_and_shapes_follow_pytorch_state_dict() {
    let config = RnnConfig { num_layers: 2, bidirectional: true, ..RnnConfig::new(RnnKind::Gru, 5, 3) };
    let rnn = Rnn::new("encoder.rnn", config, Init::default(), &mut rng(0)).unwrap();
    // torch.nn.GRU(5, 3, num_layers=2, bidirectional=True).state_dict() keys, in order.
    let mut expected = Vec::new();
    for layer in 0..2 {
        for suffix in ["", "_reverse"] {
            for what in ["weight_ih", "weight_hh", "bias_ih", "bias_hh"] {
                expected.push(format!("encoder.rnn.{what}_l{layer}{suffix}"));
            }
        }
    }
    assert_eq!(names(&rnn), expected);
    let shapes: Vec<Vec<usize>> = rnn.params().iter().map(|p| p.shape().to_vec()).collect();
    assert_eq!(shapes[0], [9, 5]); // weight_ih_l0 (3H, I)
    assert_eq!(shapes[1], [9, 3]); // weight_hh_l0 (3H, H)
    assert_eq!(shapes[8], [9, 6]); // weight_ih_l1 (3H, 2H): reads both directions
    assert_eq!(shapes[15], [9]); // bias_hh_l1_reverse
    assert_eq!(rnn.num_params(), 2 * (45 + 27 + 18) + 2 * (54 + 27 + 18));
}

#[test]
fn xavier_orthogonal_init_has_the_documented_distribution() {
    let config = RnnConfig::new(RnnKind::Lstm, 6, 5);
    let rnn = Rnn::new("r", config, Init::XavierOrthogonal, &mut rng(1)).unwrap();
    let w = rnn.weights(0, false).unwrap();
    let bound = (6.0_f32 / (6.0 + 20.0)).sqrt(); // fan_in 6, fan_out 4H = 20
    assert!(w.weight_ih.to_vec().iter().all(|v| v.abs() <= bound));
    assert!(w.weight_ih.to_vec().iter().any(|v| v.abs() > 0.5 * bound));
    let w_hh = w.weight_hh.data().view().into_dimensionality::<Ix2>().unwrap();
    for gate in 0..4 {
        let block = w_hh.slice(ndarray::s![gate * 5..(gate + 1) * 5, ..]);
        let qtq = block.t().dot(&block);
        let identity_err = (&qtq - &Array2::<f32>::eye(5)).mapv(f32::abs).fold(0.0_f32, |m, &v| m.max(v));
        assert!(identity_err < 1e-5, "gate block {gate} is not orthogonal: {identity_err}");
    }
    assert!(w.bias_ih.to_vec().iter().chain(&w.bias_hh.to_vec()).all(|&v| v == 0.0));
}

#[test]
fn pytorch_init_bounds() {
    let rnn = Rnn::new("r", RnnConfig::new(RnnKind::Gru, 7, 16), Init::PyTorch, &mut rng(2)).unwrap();
    for p in rnn.params() {
        assert!(p.tensor().to_vec().iter().all(|v| v.abs() <= 0.25), "{} outside U(±1/√16)", p.name());
        assert!(p.tensor().to_vec().iter().any(|&v| v != 0.0), "{} is all zero", p.name());
    }
    let lin = Linear::new("l", 25, 3, true, Init::PyTorch, &mut rng(3)).unwrap();
    for p in lin.params() {
        assert!(p.tensor().to_vec().iter().all(|v| v.abs() <= 0.2), "{} outside U(±1/√25)", p.name());
    }
    let xavier = Linear::new("l", 25, 3, true, Init::XavierOrthogonal, &mut rng(3)).unwrap();
    assert!(xavier.bias().unwrap().tensor().to_vec().iter().all(|&v| v == 0.0));
}

#[test]
fn same_seed_same_weights_different_seed_different_weights() {
    let config = RnnConfig { bidirectional: true, ..RnnConfig::new(RnnKind::Lstm, 3, 4) };
    let a = Rnn::new("r", config, Init::default(), &mut rng(7)).unwrap();
    let b = Rnn::new("r", config, Init::default(), &mut rng(7)).unwrap();
    let c = Rnn::new("r", config, Init::default(), &mut rng(8)).unwrap();
    let values = |m: &Rnn| m.params().iter().flat_map(|p| p.tensor().to_vec()).collect::<Vec<f32>>();
    assert_eq!(values(&a), values(&b));
    assert_ne!(values(&a), values(&c));
}

#[test]
fn embedding_padding_row_is_zero_and_never_learns() {
    for init in [Init::XavierOrthogonal, Init::PyTorch] {
        let emb = Embedding::new("decoder.embedding", 6, 3, Some(0), init, &mut rng(4)).unwrap();
        assert_eq!(names(&emb), ["decoder.embedding.weight"]);
        let table = emb.weight().tensor().data().clone();
        assert!(table.index_axis(Axis(0), 0).iter().all(|&v| v == 0.0));
        assert!(table.index_axis(Axis(0), 1).iter().any(|&v| v != 0.0));
        let ids = ndarray::arr2(&[[0_usize, 2, 0], [5, 0, 2]]);
        let x = emb.forward(ids.view()).unwrap();
        let grads = x.mul_scalar(3.0).sum_all().backward().unwrap();
        let g = grads.get(emb.weight().tensor()).unwrap();
        let row_sums: Vec<f32> = g.sum_axis(Axis(1)).iter().copied().collect();
        // row 2 read twice, row 5 once, each element with weight 3; the pad row nothing
        assert_eq!(row_sums, [0.0, 0.0, 18.0, 0.0, 0.0, 9.0]);
    }
}

#[test]
fn linear_is_x_wt_plus_b() {
    let lin = Linear::new("out", 3, 2, true, Init::PyTorch, &mut rng(5)).unwrap();
    let x = Tensor::randn(&[4, 3], 1.0, &mut rng(6)).unwrap();
    let y = lin.forward(&x).unwrap();
    let (w, b) = (lin.weight().tensor().data(), lin.bias().unwrap().tensor().data());
    for r in 0..4 {
        for o in 0..2 {
            let want: f32 = (0..3).map(|i| x.data()[[r, i]] * w[[o, i]]).sum::<f32>() + b[[o]];
            assert!((y.data()[[r, o]] - want).abs() < 1e-6);
        }
    }
    let no_bias = Linear::new("proj", 3, 2, false, Init::default(), &mut rng(5)).unwrap();
    assert_eq!(names(&no_bias), ["proj.weight"]);
}

#[test]
fn dropout_is_seeded_and_identity_in_eval() {
    let d = Dropout::new(0.5).unwrap();
    let x = Tensor::ones(&[64]);
    let a = d.forward(&x, Mode::Train(&mut rng(9))).unwrap().to_vec();
    let b = d.forward(&x, Mode::Train(&mut rng(9))).unwrap().to_vec();
    let c = d.forward(&x, Mode::Train(&mut rng(10))).unwrap().to_vec();
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(d.forward(&x, Mode::Eval).unwrap().to_vec(), x.to_vec());
    assert_eq!(Dropout::new(0.0).unwrap().forward(&x, Mode::Train(&mut rng(9))).unwrap().to_vec(), x.to_vec());
    assert!(d.params().is_empty());
    assert!(Dropout::new(-0.1).is_err());
}

/// The stack composed by hand from the fused ops: layer by layer, each
/// direction from its own initial state, directions concatenated on features.
fn by_hand(rnn: &Rnn, x: &Tensor, lengths: &[usize], init: &RnnState) -> (Tensor, Tensor, Option<Tensor>) {
    let c = rnn.config();
    let (batch, hidden) = (x.shape()[0], c.hidden_size);
    let entry = |t: &Tensor, k: usize| t.narrow(0, k, 1).unwrap().reshape(&[batch, hidden]).unwrap();
    let (mut input, mut hs, mut cs) = (x.clone(), Vec::new(), Vec::new());
    for layer in 0..c.num_layers {
        let mut outs = Vec::new();
        for (dir, reverse) in [false, true].into_iter().enumerate().take(c.num_directions()) {
            let k = layer * c.num_directions() + dir;
            let w: RnnWeights<'_> = rnn.weights(layer, reverse).unwrap();
            match c.kind {
                RnnKind::Lstm => {
                    let o = lstm_sequence(
                        &input,
                        &entry(&init.h, k),
                        &entry(init.c.as_ref().unwrap(), k),
                        lengths,
                        reverse,
                        w,
                    )
                    .unwrap();
                    outs.push(o.output);
                    hs.push(o.h_n);
                    cs.push(o.c_n);
                }
                RnnKind::Gru => {
                    let o = gru_sequence(&input, &entry(&init.h, k), lengths, reverse, w).unwrap();
                    outs.push(o.output);
                    hs.push(o.h_n);
                }
            }
        }
        input = Tensor::cat(&outs, 2).unwrap();
    }
    let c_n = (!cs.is_empty()).then(|| Tensor::stack(&cs, 0).unwrap());
    (input, Tensor::stack(&hs, 0).unwrap(), c_n)
}

fn random_state(config: &RnnConfig, batch: usize, rng: &mut StdRng) -> RnnState {
    let shape = [config.num_layers * config.num_directions(), batch, config.hidden_size];
    RnnState {
        h: Tensor::randn(&shape, 1.0, rng).unwrap(),
        c: (config.kind == RnnKind::Lstm).then(|| Tensor::randn(&shape, 1.0, rng).unwrap()),
    }
}

#[test]
fn two_layer_bidirectional_layer_equals_the_fused_ops_composed_by_hand() {
    for kind in [RnnKind::Lstm, RnnKind::Gru] {
        let (rnn, config, mut r) = bidirectional_stack(kind, 11, 3, 4);
        let x = Tensor::randn(&[3, 6, 3], 1.0, &mut r).unwrap();
        let lengths = [6, 2, 4];
        let init = random_state(&config, 3, &mut r);
        let out = rnn.forward(&x, &lengths, Some(&init), Mode::Eval).unwrap();
        let (output, h_n, c_n) = by_hand(&rnn, &x, &lengths, &init);
        assert_eq!(out.output.to_vec(), output.to_vec(), "{kind:?} output");
        assert_eq!(out.state.h.to_vec(), h_n.to_vec(), "{kind:?} h_n");
        assert_eq!(out.state.c.map(|c| c.to_vec()), c_n.map(|c| c.to_vec()), "{kind:?} c_n");
        // Without an initial state, the stack starts from zeros.
        let zero = rnn.forward(&x, &lengths, None, Mode::Eval).unwrap();
        let from_zeros = rnn.forward(&x, &lengths, Some(&RnnState::zeros(&config, 3)), Mode::Eval).unwrap();
        assert_eq!(zero.output.to_vec(), from_zeros.output.to_vec());
    }
}

#[test]
fn gradients_reach_every_parameter_and_the_initial_state() {
    for kind in [RnnKind::Lstm, RnnKind::Gru] {
        let mut r = rng(12);
        let config = RnnConfig { num_layers: 2, bidirectional: true, dropout: 0.2, ..RnnConfig::new(kind, 3, 4) };
        let rnn = Rnn::new("rnn", config, Init::default(), &mut r).unwrap();
        let x = Tensor::variable(Tensor::randn(&[2, 5, 3], 1.0, &mut r).unwrap().data().clone());
        let init = random_state(&config, 2, &mut r);
        let h0 = Tensor::variable(init.h.data().clone());
        let init = RnnState { h: h0.clone(), c: init.c };
        let out = rnn.forward(&x, &[5, 3], Some(&init), Mode::Train(&mut r)).unwrap();
        let loss = out.output.sum_all().add(&out.state.h.mul_scalar(0.5).sum_all()).unwrap();
        let grads = loss.backward().unwrap();
        for p in rnn.params() {
            let g = grads.get(p.tensor()).unwrap_or_else(|| panic!("{kind:?}: no gradient for {}", p.name()));
            assert!(g.iter().any(|&v| v != 0.0), "{kind:?}: zero gradient for {}", p.name());
        }
        assert!(grads.get(&x).unwrap().iter().any(|&v| v != 0.0));
        assert!(grads.get(&h0).unwrap().iter().any(|&v| v != 0.0));
    }
}

#[test]
fn padding_steps_change_nothing() {
    for kind in [RnnKind::Lstm, RnnKind::Gru] {
        let (rnn, _, mut r) = bidirectional_stack(kind, 13, 2, 3);
        let x = Tensor::randn(&[2, 4, 2], 1.0, &mut r).unwrap();
        let lengths = [4, 2];
        let short = rnn.forward(&x, &lengths, None, Mode::Eval).unwrap();
        // The same rows with three more padded steps of garbage appended.
        let garbage = Tensor::randn(&[2, 3, 2], 100.0, &mut r).unwrap();
        let long_x = Tensor::cat(&[x.clone(), garbage], 1).unwrap();
        let long = rnn.forward(&long_x, &lengths, None, Mode::Eval).unwrap();
        assert_eq!(short.state.h.to_vec(), long.state.h.to_vec(), "{kind:?}: final h changed");
        assert_eq!(short.state.c.map(|c| c.to_vec()), long.state.c.map(|c| c.to_vec()));
        assert_eq!(short.output.to_vec(), long.output.narrow(1, 0, 4).unwrap().to_vec());
        assert!(long.output.narrow(1, 4, 3).unwrap().to_vec().iter().all(|&v| v == 0.0));
        // Row 1 alone, without padding, has the same final state as in the batch.
        let alone = rnn.forward(&x.narrow(0, 1, 1).unwrap().narrow(1, 0, 2).unwrap(), &[2], None, Mode::Eval).unwrap();
        let in_batch = short.state.h.narrow(1, 1, 1).unwrap();
        let diff =
            alone.state.h.to_vec().iter().zip(in_batch.to_vec()).map(|(a, b)| (a - b).abs()).fold(0.0_f32, f32::max);
        assert!(diff < 1e-6, "{kind:?}: row alone differs by {diff}");
    }
}

#[test]
fn dropout_between_layers_only_in_training() {
    let mut r = rng(14);
    let config = RnnConfig { num_layers: 2, dropout: 0.5, ..RnnConfig::new(RnnKind::Lstm, 3, 4) };
    let rnn = Rnn::new("rnn", config, Init::default(), &mut r).unwrap();
    let x = Tensor::randn(&[2, 3, 3], 1.0, &mut r).unwrap();
    let eval = rnn.forward(&x, &[3, 3], None, Mode::Eval).unwrap().output.to_vec();
    let train_a = rnn.forward(&x, &[3, 3], None, Mode::Train(&mut rng(1))).unwrap().output.to_vec();
    let train_b = rnn.forward(&x, &[3, 3], None, Mode::Train(&mut rng(1))).unwrap().output.to_vec();
    assert_ne!(eval, train_a);
    assert_eq!(train_a, train_b);
    // One layer: no dropout anywhere, so training equals evaluation.
    let single =
        Rnn::new("rnn", RnnConfig { dropout: 0.5, ..RnnConfig::new(RnnKind::Lstm, 3, 4) }, Init::default(), &mut r)
            .unwrap();
    let e = single.forward(&x, &[3, 3], None, Mode::Eval).unwrap().output.to_vec();
    assert_eq!(e, single.forward(&x, &[3, 3], None, Mode::Train(&mut rng(1))).unwrap().output.to_vec());
}

#[test]
fn bad_inputs_and_states_are_errors() {
    let mut r = rng(15);
    let lstm = Rnn::new("rnn", RnnConfig::new(RnnKind::Lstm, 3, 4), Init::default(), &mut r).unwrap();
    let x = Tensor::zeros(&[2, 3, 3]);
    let err = lstm.forward(&Tensor::zeros(&[2, 3, 5]), &[3, 3], None, Mode::Eval).unwrap_err();
    assert!(matches!(err, Error::Config { what: "rnn input", .. }), "{err}");
    assert!(lstm.forward(&Tensor::zeros(&[2, 3]), &[3, 3], None, Mode::Eval).is_err());
    assert!(matches!(lstm.forward(&x, &[4, 3], None, Mode::Eval).unwrap_err(), Error::Tensor(_)));
    let no_c = RnnState { h: Tensor::zeros(&[1, 2, 4]), c: None };
    assert!(lstm.forward(&x, &[3, 3], Some(&no_c), Mode::Eval).unwrap_err().to_string().contains("cell state"));
    let wrong_batch = RnnState::zeros(lstm.config(), 3);
    assert!(lstm.forward(&x, &[3, 3], Some(&wrong_batch), Mode::Eval).is_err());
    let gru = Rnn::new("rnn", RnnConfig::new(RnnKind::Gru, 3, 4), Init::default(), &mut r).unwrap();
    let with_c = RnnState { h: Tensor::zeros(&[1, 2, 4]), c: Some(Tensor::zeros(&[1, 2, 4])) };
    assert!(gru.forward(&x, &[3, 3], Some(&with_c), Mode::Eval).is_err());
}

mod random_shapes {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngSeed};

    proptest! {
        #![proptest_config(Config { cases: 32, rng_seed: RngSeed::Fixed(0x6e6e), failure_persistence: None, ..Config::default() })]

        /// Any stack shape and any lengths: the layer equals the by-hand
        /// composition exactly, and its final state ignores what sits in
        /// padded steps.
        #[test]
        fn any_stack_equals_composition_and_ignores_padding(
            lstm in any::<bool>(),
            layers in 1_usize..4,
            bidirectional in any::<bool>(),
            (input, hidden) in (1_usize..5, 1_usize..5),
            lengths in proptest::collection::vec(0_usize..6, 1..4),
            seed in any::<u64>(),
        ) {
            let kind = if lstm { RnnKind::Lstm } else { RnnKind::Gru };
            let config = RnnConfig { num_layers: layers, bidirectional, ..RnnConfig::new(kind, input, hidden) };
            let mut r = rng(seed);
            let rnn = Rnn::new("rnn", config, Init::PyTorch, &mut r).unwrap();
            let (batch, time) = (lengths.len(), 6);
            let x = Tensor::randn(&[batch, time, input], 1.0, &mut r).unwrap();
            let init = random_state(&config, batch, &mut r);
            let out = rnn.forward(&x, &lengths, Some(&init), Mode::Eval).unwrap();
            let (output, h_n, c_n) = by_hand(&rnn, &x, &lengths, &init);
            prop_assert_eq!(out.output.to_vec(), output.to_vec());
            prop_assert_eq!(out.state.h.to_vec(), h_n.to_vec());
            prop_assert_eq!(out.state.c.map(|c| c.to_vec()), c_n.map(|c| c.to_vec()));

            // Overwrite every padded step with other values: nothing may change.
            let mut noisy = x.data().clone();
            let noise = Tensor::randn(&[batch, time, input], 50.0, &mut r).unwrap();
            for (b, &n) in lengths.iter().enumerate() {
                for t in n..time {
                    for i in 0..input {
                        noisy[[b, t, i]] = noise.data()[[b, t, i]];
                    }
                }
            }
            let again = rnn.forward(&Tensor::new(noisy), &lengths, Some(&init), Mode::Eval).unwrap();
            prop_assert_eq!(again.output.to_vec(), out.output.to_vec());
            prop_assert_eq!(again.state.h.to_vec(), out.state.h.to_vec());
        }
    }
}

#[test]
fn a_transformer_heads_row_worked_through_is_the_layers_own() {
    // Causal self-attention and padded cross-attention: explain each row and
    // each cell, and hold its heads' weights and its output to forward's.
    let mut rng = StdRng::seed_from_u64(21);
    let (d, heads, tgt_len, src_len) = (8, 2, 4, 5);
    let attn = lingo_nn::MultiheadAttention::new("attn", d, heads, 0.0, Init::default(), &mut rng).unwrap();
    // Biases are zero at the start, as PyTorch's: give them values, so the test reads them.
    let mut attn = attn;
    for p in attn.params_mut() {
        let shape = p.shape().to_vec();
        let values = Tensor::randn(&shape, 0.5, &mut rng).unwrap();
        p.update(|theta| theta.assign(values.data()));
    }
    let x = Tensor::randn(&[1, tgt_len, d], 1.0, &mut rng).unwrap();
    let memory = Tensor::randn(&[1, src_len, d], 1.0, &mut rng).unwrap();
    let pad = Array2::from_shape_fn((1, src_len), |(_, s)| s >= 3);
    let view = |t: &Tensor| {
        t.data().view().into_dimensionality::<ndarray::Ix3>().unwrap().index_axis_move(Axis(0), 0).to_owned()
    };
    for (name, keys, mask, causal) in [("self", &x, None, true), ("cross", &memory, Some(&pad), false)] {
        let out = attn.forward(&x, keys, mask, causal, Mode::Eval).unwrap();
        let (rows, memory_rows, outputs) = (view(&x), view(keys), view(&out.out));
        for t in 0..tgt_len {
            let hidden: Vec<bool> =
                (0..memory_rows.nrows()).map(|s| (causal && s > t) || mask.is_some_and(|m| m[[0, s]])).collect();
            for source in (0..memory_rows.nrows()).filter(|&s| !hidden[s]) {
                let steps = attn.explain(rows.row(t), memory_rows.view(), Some(&hidden), source).unwrap();
                for (h, head) in steps.heads.iter().enumerate() {
                    for (s, w) in head.weights.iter().enumerate() {
                        assert!((w - out.weights.data()[[0, h, t, s]]).abs() < 1e-6, "{name} head {h} ({t}, {s})");
                    }
                    let sum: f32 = head.terms.iter().sum();
                    assert!((sum * head.scale - head.scores[source]).abs() < 1e-5, "{name} head {h}");
                }
                for (o, y) in steps.context.iter().zip(outputs.row(t)) {
                    assert!((o - y).abs() < 1e-5, "{name} output ({t}): {o} vs {y}");
                }
            }
        }
    }
}

#[test]
fn the_plain_layer_norm_is_the_fused_ones_forward_and_every_gradient() {
    use rand::Rng;
    let mut r = rng(9);
    for shape in [vec![3, 7], vec![2, 4, 16], vec![1, 64]] {
        let d = *shape.last().unwrap();
        let n: usize = shape.iter().product();
        let mut draw =
            |len: usize, scale: f32| -> Vec<f32> { (0..len).map(|_| r.random_range(-scale..scale)).collect() };
        let x = Tensor::variable(ndarray::ArrayD::from_shape_vec(shape.clone(), draw(n, 3.0)).unwrap());
        let gamma = Tensor::variable(ndarray::ArrayD::from_shape_vec(vec![d], draw(d, 1.5)).unwrap());
        let beta = Tensor::variable(ndarray::ArrayD::from_shape_vec(vec![d], draw(d, 0.5)).unwrap());
        // A weighted sum of the outputs, so every gradient differs from position to position.
        let weights = Tensor::new(ndarray::ArrayD::from_shape_vec(shape.clone(), draw(n, 1.0)).unwrap());
        let plain = lingo_nn::layers::layer_norm(&x, &gamma, &beta, 1e-5).unwrap();
        let fused = x.layer_norm(&gamma, &beta, 1e-5).unwrap();
        let gap = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(gap(&plain.to_vec(), &fused.to_vec()) < 1e-5, "{shape:?} forward");
        let grads_plain = plain.mul(&weights).unwrap().sum_all().backward().unwrap();
        let grads_fused = fused.mul(&weights).unwrap().sum_all().backward().unwrap();
        for (name, t) in [("x", &x), ("gamma", &gamma), ("beta", &beta)] {
            let (p, f) = (grads_plain.get(t).unwrap(), grads_fused.get(t).unwrap());
            let (p, f): (Vec<f32>, Vec<f32>) = (p.iter().copied().collect(), f.iter().copied().collect());
            assert!(gap(&p, &f) < 1e-4, "{shape:?} d{name}: {}", gap(&p, &f));
        }
    }
}
