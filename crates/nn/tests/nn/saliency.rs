//! Gradient × input saliency: against finite differences, normalized like
//! attention, blind to padding, the same on any thread count, and compared
//! with attention.

use lingo_data::{AlignedExample, AlignmentAccuracy, Batch, DigitOp, DigitTask, SaliencyAgreement, Task};
use lingo_nn::{
    Activation, AnyModel, EncoderDecoder, Placement, RnnKind, Seq2Seq, Seq2SeqConfig, Transformer, TransformerConfig,
    compare_saliency, gradient_times_input, saliency,
};
use lingo_tensor::{Module, Tensor, no_grad};
use ndarray::{Array3, Axis, Ix3, s};
use rand::SeedableRng;
use rand::rngs::StdRng;

fn task() -> DigitTask {
    DigitTask::new(DigitOp::Reverse, 6, 2, 5).expect("valid task")
}

/// Sources and targets of different lengths, so that both are padded.
fn examples(n: usize, seed: u64) -> Vec<AlignedExample> {
    task().generate(n, &mut StdRng::seed_from_u64(seed))
}

/// Every kind of model the gradient has to find its way through: the
/// bottleneck (only the final state reads the source), Luong and Bahdanau
/// attention (the latter through the fused GRU recurrence), a bidirectional
/// encoder with its bridge, and a Transformer.
fn models() -> Vec<(&'static str, AnyModel)> {
    let (src, tgt) = (task().src_vocab().len(), task().tgt_vocab().len());
    let mut rng = StdRng::seed_from_u64(0);
    let rnn = Seq2SeqConfig { emb_dim: 6, hidden_dim: 8, attn_dim: 8, ..Seq2SeqConfig::new(src, tgt) };
    let attention = |name: &str| Some(name.parse().unwrap());
    let configs = [
        ("bottleneck", rnn.clone()),
        ("dot", Seq2SeqConfig { attention: attention("dot"), ..rnn.clone() }),
        (
            "bahdanau",
            Seq2SeqConfig {
                rnn: RnnKind::Gru,
                attention: attention("additive"),
                placement: Placement::Bahdanau,
                ..rnn.clone()
            },
        ),
        (
            "bidirectional",
            Seq2SeqConfig { bidirectional: true, num_layers: 2, attention: attention("general"), ..rnn.clone() },
        ),
    ];
    let mut models: Vec<(&str, AnyModel)> = configs
        .into_iter()
        .map(|(name, c)| {
            // Larger weights than at initialisation, so that the outputs depend on the source clearly.
            let mut model = Seq2Seq::new(c, &mut rng).unwrap();
            for param in model.params_mut() {
                param.update(|w| *w *= 3.0);
            }
            (name, model.into())
        })
        .collect();
    let transformer = TransformerConfig {
        d_model: 8,
        heads: 2,
        ff_dim: 16,
        activation: Activation::Gelu,
        ..TransformerConfig::new(src, tgt)
    };
    models.push(("transformer", Transformer::new(transformer, &mut rng).unwrap().into()));
    models
}

/// `log p(y_t)` of every row and position, `(batch, tgt_len)`, with the
/// source embeddings passed through `change` on their way in.
fn gold_log_probs(model: &AnyModel, batch: &Batch, change: impl FnOnce(Tensor) -> Tensor) -> Array3<f32> {
    let logits = no_grad(|| model.logits_with_source(batch, |e| Ok(change(e)))).unwrap();
    let log_probs = logits.log_softmax(2).unwrap().data().clone().into_dimensionality::<Ix3>().unwrap();
    let (rows, len) = batch.tgt_out.dim();
    Array3::from_shape_fn((rows, len, 1), |(b, t, _)| log_probs[[b, t, batch.tgt_out[[b, t]]]])
}

#[test]
fn gradient_times_input_is_the_derivative_along_each_embedding_row() {
    let batch = Batch::from_examples(&examples(3, 1)).unwrap();
    let eps = 1e-2_f32;
    for (name, model) in models() {
        let raw = gradient_times_input(&model, &batch).unwrap();
        // Asked from inside a no_grad scope, it records its own graph.
        let inside = lingo_tensor::no_grad(|| gradient_times_input(&model, &batch)).unwrap();
        assert_eq!(inside, raw, "{name}");
        let mut largest = 0.0_f32;
        for b in 0..batch.len() {
            for s in 0..batch.src_lens[b] {
                // e[b, s] → e[b, s]·(1 ± ε): a central difference of log p along the row itself.
                let scaled = |factor: f32| {
                    move |e: Tensor| {
                        let mut data = e.data().clone();
                        data.slice_mut(s![b, s, ..]).mapv_inplace(|x| x * factor);
                        Tensor::new(data)
                    }
                };
                let (up, down) = (
                    gold_log_probs(&model, &batch, scaled(1.0 + eps)),
                    gold_log_probs(&model, &batch, scaled(1.0 - eps)),
                );
                for t in 0..batch.tgt_lens[b] {
                    let numeric = ((up[[b, t, 0]] - down[[b, t, 0]]) / (2.0 * eps)).abs();
                    let analytic = raw[[b, t, s]];
                    assert!(
                        (numeric - analytic).abs() <= 5e-4 + 0.01 * analytic,
                        "{name}: example {b}, output {t}, source {s}: finite difference {numeric}, gradient × input {analytic}"
                    );
                    largest = largest.max(analytic);
                }
            }
        }
        assert!(largest > 0.1, "{name}: the check needs gradients that are not all near 0 ({largest})");
    }
}

#[test]
fn saliency_rows_are_distributions_over_the_real_source_positions() {
    let batch = Batch::from_examples(&examples(6, 2)).unwrap();
    assert!(batch.src_lens.iter().any(|&n| n < batch.src.ncols()), "some source is padded");
    assert!(batch.tgt_lens.iter().any(|&n| n < batch.tgt_out.ncols()), "some target is padded");
    for (name, model) in models() {
        let map = saliency(&model, &batch).unwrap();
        assert_eq!(map.dim(), (batch.len(), batch.tgt_out.ncols(), batch.src.ncols()), "{name}");
        for b in 0..batch.len() {
            let (src_len, tgt_len) = (batch.src_lens[b], batch.tgt_lens[b]);
            for t in 0..tgt_len {
                let row = map.slice(s![b, t, ..]);
                assert!((row.sum() - 1.0).abs() < 1e-5, "{name}: example {b}, row {t} sums to {}", row.sum());
                assert!(row.iter().all(|&x| x >= 0.0), "{name}");
                assert!(row.slice(s![src_len..]).iter().all(|&x| x == 0.0), "{name}: source padding");
            }
            assert!(map.slice(s![b, tgt_len.., ..]).iter().all(|&x| x == 0.0), "{name}: target padding");
        }
    }
}

#[test]
fn what_the_padding_holds_changes_nothing() {
    let batch = Batch::from_examples(&examples(6, 3)).unwrap();
    // The same batch with real tokens where the source is padded.
    let mut noisy = batch.clone();
    for (b, mut row) in noisy.src.outer_iter_mut().enumerate() {
        row.slice_mut(s![batch.src_lens[b]..]).fill(5);
    }
    assert_ne!(noisy.src, batch.src);
    for (name, model) in models() {
        assert_eq!(saliency(&model, &noisy).unwrap(), saliency(&model, &batch).unwrap(), "{name}");
    }
}

#[test]
fn an_example_gets_the_same_saliency_alone_as_in_a_batch() {
    // One backward pass per position serves the whole batch because rows never mix.
    let examples = examples(4, 4);
    let batch = Batch::from_examples(&examples).unwrap();
    for (name, model) in models() {
        let together = saliency(&model, &batch).unwrap();
        for (b, example) in examples.iter().enumerate() {
            let alone = saliency(&model, &Batch::from_examples(std::slice::from_ref(example)).unwrap()).unwrap();
            let (_, tgt_len, src_len) = alone.dim();
            let part = together.slice(s![b, ..tgt_len, ..src_len]);
            for (x, y) in part.iter().zip(alone.index_axis(Axis(0), 0)) {
                assert!((x - y).abs() < 1e-5, "{name}: example {b}: {x} in the batch, {y} alone");
            }
        }
    }
}

#[test]
fn saliency_is_the_same_on_any_number_of_threads() {
    // More examples than one chunk, so that chunks run side by side.
    let examples = examples(40, 5);
    let batch = Batch::from_examples(&examples[..8]).unwrap();
    for (name, model) in models() {
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| (saliency(&model, &batch).unwrap(), compare_saliency(&model, &examples).unwrap()))
        };
        let (one, two) = (on(1), on(2));
        assert_eq!(one.0, two.0, "{name}: saliency");
        assert_eq!(one.1, two.1, "{name}: comparison");
    }
}

#[test]
fn the_comparison_adds_up_attention_and_saliency_example_by_example() {
    let examples = examples(10, 6);
    let batch = Batch::from_examples(&examples).unwrap();
    for (name, model) in models() {
        let report = compare_saliency(&model, &examples).unwrap();
        let map = saliency(&model, &batch).unwrap();
        let mut alignment = AlignmentAccuracy::new();
        for (b, example) in examples.iter().enumerate() {
            alignment.add(map.index_axis(Axis(0), b), &example.gold, batch.src_lens[b]).unwrap();
        }
        assert_eq!(report.saliency_alignment, alignment.score(), "{name}");
        assert!(report.saliency_alignment.scored > 0, "{name}: the task has gold links");
        let Some(attention) = model.attention(&batch).unwrap() else {
            assert_eq!((report.attention_alignment, report.agreement), (None, None), "{name}");
            continue;
        };
        let (mut alignment, mut agreement) = (AlignmentAccuracy::new(), SaliencyAgreement::new());
        for (b, example) in examples.iter().enumerate() {
            let (a, s) = (attention.index_axis(Axis(0), b), map.index_axis(Axis(0), b));
            alignment.add(a, &example.gold, batch.src_lens[b]).unwrap();
            agreement.add(a, s, batch.src_lens[b], batch.tgt_lens[b]).unwrap();
        }
        assert_eq!(report.attention_alignment, Some(alignment.score()), "{name}");
        assert_eq!(report.agreement, Some(agreement.score()), "{name}");
        assert_eq!(agreement.score().rows, batch.tgt_lens.iter().sum::<usize>(), "{name}");
    }
}

#[test]
fn the_source_hook_passes_through_the_model_as_it_is() {
    let batch = Batch::from_examples(&examples(5, 7)).unwrap();
    for (name, model) in models() {
        let own = model.logits(&batch).unwrap().to_vec();
        let hooked = model.logits_with_source(&batch, Ok).unwrap().to_vec();
        // The recurrent encoder reads the embeddings densely here, through its product table otherwise.
        for (x, y) in hooked.iter().zip(&own) {
            assert!((x - y).abs() < 1e-5, "{name}: {x} through the hook, {y} without");
        }
        let silenced = model.logits_with_source(&batch, |e| Ok(e.mul_scalar(0.0))).unwrap().to_vec();
        assert_ne!(silenced, own, "{name}: what the hook returns is what the encoder reads");
    }
}

#[test]
fn the_hook_hands_over_the_token_embeddings_without_positions() {
    let batch = Batch::from_examples(&examples(3, 8)).unwrap();
    for (name, model) in models() {
        let mut seen = None;
        model
            .logits_with_source(&batch, |e| {
                seen = Some(e.data().clone());
                Ok(e)
            })
            .unwrap();
        let seen = seen.expect("the hook ran").into_dimensionality::<Ix3>().unwrap();
        let params = model.params();
        let table = params.iter().find(|p| p.name() == "encoder.embedding.weight").unwrap().tensor().data();
        // The Transformer scales by √d (d = 8) and adds its positions after the hook.
        let scale = if name == "transformer" { 8f32.sqrt() } else { 1.0 };
        let want = Array3::from_shape_fn(seen.dim(), |(b, s, d)| table[[batch.src[[b, s]], d]] * scale);
        assert_eq!(seen, want, "{name}");
    }
}
