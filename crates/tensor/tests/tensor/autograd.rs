//! The engine's behaviour: accumulation, no-grad mode, errors, deep graphs.

use lingo_tensor::{
    Error, Param, RnnWeights, Tensor,
    fused::{SeqInput, lstm_sequence},
    no_grad,
};
use ndarray::{ArrayD, arr1};

fn var(values: &[f32]) -> Tensor {
    Tensor::variable(arr1(values).into_dyn())
}

#[test]
fn gradients_accumulate_over_every_use_of_a_tensor() {
    // L = Σ (x·x + 3x + exp(x)): x is read four times.
    let x = var(&[0.5, -1.0]);
    let loss = x.mul(&x).unwrap().add(&x.mul_scalar(3.0)).unwrap().add(&x.exp()).unwrap().sum_all();
    let grads = loss.backward().unwrap();
    let g = grads.get(&x).unwrap();
    for (i, &v) in [0.5_f32, -1.0].iter().enumerate() {
        let want = 2.0 * v + 3.0 + v.exp();
        assert!((g[[i]] - want).abs() < 1e-6, "element {i}: {} vs {want}", g[[i]]);
    }
    assert_eq!(grads.len(), 1, "only the leaf keeps a gradient");
}

#[test]
fn a_shared_intermediate_receives_both_consumers_gradients() {
    let x = var(&[2.0]);
    let y = x.tanh(); // read by two ops below
    let loss = y.mul_scalar(2.0).add(&y.mul_scalar(5.0)).unwrap().sum_all();
    let g = loss.backward().unwrap().get(&x).unwrap()[[0]];
    let want = 7.0 * (1.0 - 2.0_f32.tanh().powi(2));
    assert!((g - want).abs() < 1e-6, "{g} vs {want}");
}

#[test]
fn no_grad_records_nothing_and_restores_the_mode() {
    let w = var(&[1.0, 2.0]);
    let y = no_grad(|| w.exp().mul(&w).unwrap().sum_all());
    assert!(!y.requires_grad());
    assert_eq!(y.op_name(), None);
    assert!(y.backward().unwrap().is_empty());
    // the mode comes back, even after a panic inside no_grad
    let _ = std::panic::catch_unwind(|| no_grad(|| panic!("inside no_grad")));
    assert!(lingo_tensor::is_grad_enabled());
    assert!(w.exp().requires_grad());
}

#[test]
fn constants_get_no_gradient() {
    let (w, c) = (var(&[1.0]), Tensor::from_vec(vec![3.0], &[1]).unwrap());
    let grads = w.mul(&c).unwrap().sum_all().backward().unwrap();
    assert!(grads.get(&c).is_none());
    assert_eq!(grads.get(&w).unwrap()[[0]], 3.0);
}

#[test]
fn shape_errors_name_both_shapes() {
    let a = Tensor::zeros(&[2, 3]);
    let cases: Vec<(Error, &str)> = vec![
        (a.matmul(&Tensor::zeros(&[4, 2])).unwrap_err(), "[2, 3] and [4, 2]"),
        (a.add(&Tensor::zeros(&[2, 4])).unwrap_err(), "[2, 3] and [2, 4]"),
        (a.mul(&Tensor::zeros(&[5])).unwrap_err(), "[2, 3] and [5]"),
        (Tensor::cat(&[a.clone(), Tensor::zeros(&[3, 3])], 1).unwrap_err(), "[2, 3] and [3, 3]"),
        (a.reshape(&[7]).unwrap_err(), "[2, 3] and [7]"),
        (a.linear(&Tensor::zeros(&[4, 5]), None).unwrap_err(), "[2, 3] and [4, 5]"),
    ];
    for (err, shapes) in cases {
        assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
        assert!(err.to_string().contains(shapes), "{err} should name {shapes}");
    }
}

#[test]
fn recurrent_shape_errors_name_both_shapes() {
    let (h, i) = (3, 2);
    let (w_ih, w_hh, b) = (Tensor::zeros(&[4 * h, i]), Tensor::zeros(&[4 * h, h]), Tensor::zeros(&[4 * h]));
    let w = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b, bias_hh: &b };
    let state = Tensor::zeros(&[2, h]);
    let err = lstm_sequence(&Tensor::zeros(&[2, 5, 7]), &state, &state, &[5, 5], false, w).unwrap_err();
    assert!(err.to_string().contains("[2, 5, 7] and [12, 2]"), "{err}");
    let err =
        lstm_sequence(&Tensor::zeros(&[2, 5, i]), &Tensor::zeros(&[3, h]), &state, &[5, 5], false, w).unwrap_err();
    assert!(err.to_string().contains("[3, 3] and [2, 3]"), "{err}");
    let err = lstm_sequence(&Tensor::zeros(&[2, 5, i]), &state, &state, &[5, 6], false, w).unwrap_err();
    assert!(err.to_string().contains("length 6 exceeds"), "{err}");
    // Tokens with features after their embeddings: the features must match the ids' (batch, time)...
    let (table, ids) = (Tensor::zeros(&[4, 1]), ndarray::Array2::<usize>::zeros((2, 5)));
    let (short, wide, fits) = (Tensor::zeros(&[2, 4, 1]), Tensor::zeros(&[2, 5, 3]), Tensor::zeros(&[2, 5, 1]));
    let tokens = |features| SeqInput::Tokens { table: &table, ids: &ids, padding_idx: None, features };
    let err = lstm_sequence(tokens(Some(&short)), &state, &state, &[5, 5], false, w).unwrap_err();
    assert!(err.to_string().contains("[2, 4, 1] and [2, 5]"), "{err}");
    // ...and the embedding and the features together must be as wide as weight_ih's input.
    let err = lstm_sequence(tokens(Some(&wide)), &state, &state, &[5, 5], false, w).unwrap_err();
    assert!(err.to_string().contains("[2, 5, 4] and [12, 2]"), "{err}");
    assert!(lstm_sequence(tokens(Some(&fits)), &state, &state, &[5, 5], false, w).is_ok());
}

#[test]
fn a_deep_graph_does_not_overflow_the_stack() {
    let x = var(&[0.1]);
    let mut y = x.clone();
    for _ in 0..50_000 {
        y = y.mul_scalar(1.0).add_scalar(0.0);
    }
    let g = y.sum_all().backward().unwrap().get(&x).unwrap()[[0]];
    assert_eq!(g, 1.0);
}

#[test]
fn param_updates_in_place_or_copies_when_a_graph_holds_it() {
    let mut p = Param::new("w", ArrayD::ones(vec![2]));
    let id = p.tensor().id();
    p.update(|d| d.fill(2.0));
    assert_eq!(p.tensor().id(), id, "no graph alive: updated in place");
    let y = p.tensor().mul_scalar(3.0); // the graph now shares the data
    p.update(|d| d.fill(5.0));
    assert_ne!(p.tensor().id(), id, "graph alive: a fresh tensor");
    assert_eq!(y.to_vec(), vec![6.0, 6.0], "the old graph keeps the old values");
    assert_eq!(p.tensor().to_vec(), vec![5.0, 5.0]);
}

#[test]
fn the_same_seed_gives_the_same_numbers() {
    use rand::SeedableRng;
    let run = |seed| {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let x = Tensor::randn(&[64, 32], 1.0, &mut rng).unwrap();
        x.dropout(0.3, &mut rng).unwrap().matmul(&x.transpose(0, 1).unwrap()).unwrap().to_vec()
    };
    assert_eq!(run(3), run(3));
    assert_ne!(run(3), run(4));
}

#[test]
fn cat_and_stack_give_row_major_results() {
    // The ops after them (GEMMs reading rows, the attention kernels) need
    // contiguous rows; a result with the joined axis outermost would be
    // copied by every one of them.
    let a = Tensor::from_vec((0..6).map(|i| i as f32).collect(), &[1, 2, 3]).unwrap();
    let b = Tensor::from_vec((6..10).map(|i| i as f32).collect(), &[1, 2, 2]).unwrap();
    let joined = Tensor::cat(&[a.clone(), b], 2).unwrap();
    assert!(joined.data().is_standard_layout(), "strides {:?}", joined.data().strides());
    assert_eq!(joined.to_vec(), vec![0.0, 1.0, 2.0, 6.0, 7.0, 3.0, 4.0, 5.0, 8.0, 9.0]);
    let stacked = Tensor::stack(&[a.clone(), a], 2).unwrap();
    assert!(stacked.data().is_standard_layout(), "strides {:?}", stacked.data().strides());
    assert_eq!(stacked.shape(), &[1, 2, 2, 3]);
    // Empty pieces, and a result with no elements at all, join and split back.
    let (x, empty) = (
        Tensor::variable(ndarray::ArrayD::ones(ndarray::IxDyn(&[2, 2, 3]))),
        Tensor::variable(ndarray::ArrayD::zeros(ndarray::IxDyn(&[2, 0, 3]))),
    );
    let joined = Tensor::cat(&[empty.clone(), x.clone()], 1).unwrap();
    let grads = joined.sum_all().backward().unwrap();
    assert_eq!((grads.get(&empty).unwrap().shape(), grads.get(&x).unwrap().sum()), (&[2, 0, 3][..], 12.0));
    let none = Tensor::cat(&[Tensor::zeros(&[0, 2]), Tensor::zeros(&[0, 3])], 1).unwrap();
    assert_eq!(none.shape(), &[0, 5]);
}

#[test]
fn cross_entropy_with_smoothing_stays_non_negative_for_logits_near_the_float_limit() {
    use lingo_tensor::CrossEntropy;
    let opts = CrossEntropy { ignore_index: None, label_smoothing: 0.1 };
    // Equal logits: p = 1/3 whatever their size, so the loss is ln 3 (the
    // sum of the logits overflows to inf, which made it -inf before).
    let equal = Tensor::from_vec(vec![3e38, 3e38, 3e38], &[1, 3]).unwrap();
    let loss = equal.cross_entropy(&[0], opts).unwrap().item().unwrap();
    assert!((loss - 3.0_f32.ln()).abs() < 1e-6, "{loss}");
    // Far apart: huge, but never negative and never NaN.
    let apart = Tensor::from_vec(vec![3e38, -3e38, 0.0, 1e30, -1e30, 2e30], &[2, 3]).unwrap();
    let loss = apart.cross_entropy(&[0, 1], opts).unwrap().item().unwrap();
    assert!(loss >= 0.0 && !loss.is_nan(), "{loss}");
}

/// Dropout's mask: about `p` of the elements dropped, independently of
/// their neighbours, fixed by one `u64` from the generator and nothing else.
#[test]
fn dropout_masks_come_from_one_key_and_drop_about_p() {
    use rand::rngs::StdRng;
    use rand::{RngCore, SeedableRng};
    let n = 200_000;
    let x = Tensor::ones(&[n]);
    for p in [0.1_f32, 0.5, 0.9] {
        let (mut rng, mut reference) = (StdRng::seed_from_u64(1), StdRng::seed_from_u64(1));
        let mask = x.dropout(p, &mut rng).unwrap().to_vec();
        reference.next_u64();
        assert_eq!(rng.next_u64(), reference.next_u64(), "the generator moved on by one u64");
        assert_eq!(mask, x.dropout(p, &mut StdRng::seed_from_u64(1)).unwrap().to_vec(), "the same key, the same mask");
        let dropped: Vec<bool> = mask.iter().map(|&v| v == 0.0).collect();
        let share = dropped.iter().filter(|&&d| d).count() as f64 / n as f64;
        let sigma = (f64::from(p) * (1.0 - f64::from(p)) / n as f64).sqrt();
        assert!((share - f64::from(p)).abs() < 5.0 * sigma, "p = {p}: dropped {share}");
        // Neighbours independent: both dropped as often as p².
        let both = dropped.windows(2).filter(|w| w[0] && w[1]).count() as f64 / (n - 1) as f64;
        assert!((both - f64::from(p * p)).abs() < 0.01, "p = {p}: pairs {both}");
        assert!(mask.iter().all(|&v| v == 0.0 || (v - 1.0 / (1.0 - p)).abs() < 1e-6));
    }
    let other = x.dropout(0.5, &mut StdRng::seed_from_u64(2)).unwrap().to_vec();
    assert_ne!(other, x.dropout(0.5, &mut StdRng::seed_from_u64(1)).unwrap().to_vec(), "another key, another mask");
}

#[test]
fn a_weight_used_for_inference_gives_the_bits_of_training_and_follows_updates() {
    // Products big enough for the packed path (where the CPU has it), with
    // and without a bias: under `no_grad` `Param::linear` keeps `Wᵀ` packed,
    // so the second call reads the kept panels (`linear_rows` those of its
    // rows); an update must drop them.
    let value = |i: usize| ((i * 37 % 101) as f32 / 50.0 - 1.0) * 0.3;
    let x = Tensor::new(ArrayD::from_shape_fn(vec![96, 160], |ix| value(ix[0] * 160 + ix[1] + 5)));
    let mut w = Param::new("w", ArrayD::from_shape_fn(vec![200, 160], |ix| value(ix[0] * 160 + ix[1])));
    let b = Tensor::new(ArrayD::from_shape_fn(vec![200], |ix| value(ix[0] + 11)));
    let bits = |t: Tensor| t.to_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    for bias in [Some(&b), None] {
        for round in 0..2 {
            let recorded = bits(x.linear(w.tensor(), bias).unwrap());
            for _ in 0..2 {
                let inferred = bits(no_grad(|| w.linear(&x, bias).unwrap()));
                assert!(inferred == recorded, "round {round}, bias {}: inference differs", bias.is_some());
            }
            // Blocks of rows (an attention's q, or k and v, of one stacked weight), packed apart.
            for rows in [32..96, 64..200] {
                let b_rows = bias.map(|b| b.narrow(0, rows.start, rows.len()).unwrap());
                let w_rows = w.tensor().narrow(0, rows.start, rows.len()).unwrap();
                let recorded = bits(x.linear(&w_rows, b_rows.as_ref()).unwrap());
                for _ in 0..2 {
                    let inferred = bits(no_grad(|| w.linear_rows(&x, rows.clone(), b_rows.as_ref()).unwrap()));
                    assert!(inferred == recorded, "rows {rows:?}, round {round}: inference differs");
                }
            }
            let kept = w.clone(); // shares the panels until one of them changes
            let kept_bits = bits(no_grad(|| kept.linear(&x, bias).unwrap()));
            w.update(|d| d.mapv_inplace(|v| v * 1.5 - 0.01)); // a copy: the clone holds the old values
            assert_eq!(bits(no_grad(|| kept.linear(&x, bias).unwrap())), kept_bits, "the clone kept its values");
            drop(kept);
            w.update(|d| d.mapv_inplace(|v| v * 1.5 - 0.01)); // in place: this handle is the only one
        }
    }
}
