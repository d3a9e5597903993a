//! The whole encoder–decoder against PyTorch: `benches/pytorch/engspa.py`'s
//! model with PyTorch's weights must give lingo's loss and every gradient,
//! and train step for step as `lingo train` trains (Adam, warm-up, clipping),
//! with the batch whole and cut into shards. The fixture comes from
//! `tools/gen_seq2seq_fixtures.py`.

use std::collections::BTreeMap;

use crate::common::assert_close;
use lingo_data::{Batch, Example};
use lingo_nn::{
    Algorithm, Mode, NamedTensor, Optimizer, Schedule, Scheduler, Seq2Seq, Seq2SeqConfig, StateDict, TrainConfig,
    batch_gradients,
};
use lingo_tensor::Module;
use rand::SeedableRng;
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    attention: String,
    bidirectional: bool,
    emb: usize,
    hidden: usize,
    src_vocab: usize,
    tgt_vocab: usize,
    params: Vec<NamedTensor>,
    batches: Vec<Vec<Pair>>,
    label_smoothing: f32,
    loss: f32,
    grads: BTreeMap<String, Vec<f32>>,
    lr: f64,
    warmup: u64,
    max_norm: f64,
    steps: Vec<StepCase>,
    params_after: BTreeMap<String, Vec<f32>>,
}

/// One sentence pair as ids, `<sos> .. <eos>` on both sides.
#[derive(Deserialize)]
struct Pair {
    src: Vec<usize>,
    tgt: Vec<usize>,
}

#[derive(Deserialize)]
struct StepCase {
    lr: f64,
    loss: f32,
    grad_norm: f32,
}

fn fixture() -> Fixture {
    serde_json::from_str(include_str!("../fixtures/seq2seq_pytorch.json")).expect("the committed fixture parses")
}

/// The case's model, built straight from PyTorch's weights.
fn model(case: &Case) -> Seq2Seq {
    let config = Seq2SeqConfig {
        emb_dim: case.emb,
        hidden_dim: case.hidden,
        attn_dim: case.hidden,
        bidirectional: case.bidirectional,
        attention: (case.attention != "none").then(|| case.attention.parse().unwrap()),
        ..Seq2SeqConfig::new(case.src_vocab, case.tgt_vocab)
    };
    Seq2Seq::from_state_dict(&config, &StateDict::from_tensors(case.params.clone()))
        .unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

/// Batch `i` of the case, padded as lingo pads.
fn batch(case: &Case, i: usize) -> Batch {
    let examples: Vec<Example> =
        case.batches[i].iter().map(|p| Example { src: p.src.clone(), tgt: p.tgt.clone() }).collect();
    Batch::from_examples(&examples).unwrap()
}

#[test]
fn loss_and_every_gradient_match_pytorch() {
    let fx = fixture();
    assert_eq!(fx.cases.len(), 3);
    for case in &fx.cases {
        let model = model(case);
        let batch = batch(case, 0);
        let loss = model.loss(&batch, case.label_smoothing, Mode::Eval).unwrap();
        assert_close(&case.name, "loss", &[loss.item().unwrap()], &[case.loss], 1e-6);
        let grads = loss.backward().unwrap();
        assert_eq!(model.params().len(), case.grads.len(), "{}: every parameter has a gradient", case.name);
        for p in model.params() {
            let got = grads.get(p.tensor()).unwrap_or_else(|| panic!("{}: no gradient for {}", case.name, p.name()));
            assert_close(
                &case.name,
                &format!("gradient of {}", p.name()),
                &got.iter().copied().collect::<Vec<_>>(),
                &case.grads[p.name()],
                1e-5,
            );
        }
    }
}

#[test]
fn training_steps_match_pytorch_whole_and_sharded() {
    for case in &fixture().cases {
        for shards in [1, 2] {
            let what = format!("{} with {shards} shard(s)", case.name);
            let mut model = model(case);
            let settings =
                TrainConfig { shards, label_smoothing: case.label_smoothing, ..TrainConfig::new(1, case.lr) };
            let mut optimizer =
                Optimizer::new(Algorithm::adam(), case.lr).unwrap().with_max_grad_norm(case.max_norm).unwrap();
            let mut schedule = Scheduler::new(Schedule::LinearWarmup { warmup_steps: case.warmup }, case.lr).unwrap();
            let rng = &mut rand::rngs::StdRng::seed_from_u64(0);
            for (k, step) in case.steps.iter().enumerate() {
                let batch = batch(case, k % 2);
                let lr = schedule.step();
                assert!((lr - step.lr).abs() < 1e-12, "{what}: learning rate at step {k}: {lr} vs PyTorch {}", step.lr);
                optimizer.set_lr(lr);
                let (loss, grads) = batch_gradients(&model, &batch, &settings, rng).unwrap();
                assert_close(&what, &format!("loss at step {k}"), &[loss], &[step.loss], 1e-5);
                let stats = optimizer.step(&mut model, &grads).unwrap();
                assert_close(&what, &format!("gradient norm at step {k}"), &[stats.grad_norm], &[step.grad_norm], 1e-5);
            }
            for p in model.params() {
                assert_close(
                    &what,
                    &format!("{} after the steps", p.name()),
                    &p.tensor().to_vec(),
                    &case.params_after[p.name()],
                    1e-4,
                );
            }
        }
    }
}
