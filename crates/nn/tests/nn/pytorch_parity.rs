//! lingo-nn against PyTorch: optimizers step for step, ReduceLROnPlateau,
//! and two-layer bidirectional LSTM/GRU layers (names, order and outputs).
//! The fixture comes from `tools/gen_nn_fixtures.py`.

use std::collections::BTreeMap;

use crate::common::{Params, assert_close};
use lingo_nn::{
    Algorithm, Init, Mode, NamedTensor, Optimizer, Rnn, RnnConfig, RnnKind, RnnState, Schedule, Scheduler, StateDict,
};
use lingo_tensor::{Gradients, Module, Param, Tensor};
use ndarray::{ArrayD, IxDyn};
use rand::SeedableRng;
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    optim: Vec<OptimCase>,
    plateau: PlateauCase,
    rnn: Vec<RnnCase>,
}

#[derive(Deserialize)]
struct OptimCase {
    name: String,
    config: BTreeMap<String, serde_json::Value>,
    shapes: BTreeMap<String, Vec<usize>>,
    params: BTreeMap<String, Vec<f32>>,
    steps: Vec<OptimStep>,
}

#[derive(Deserialize)]
struct OptimStep {
    lr: f64,
    grads: BTreeMap<String, Vec<f32>>,
    grad_norm: f32,
    params_after: BTreeMap<String, Vec<f32>>,
}

#[derive(Deserialize)]
struct PlateauCase {
    base_lr: f64,
    factor: f64,
    patience: u32,
    min_lr: f64,
    threshold: f64,
    losses: Vec<f64>,
    lrs: Vec<f64>,
}

#[derive(Deserialize)]
struct RnnCase {
    name: String,
    kind: String,
    batch: usize,
    time: usize,
    input: usize,
    hidden: usize,
    layers: usize,
    lengths: Vec<usize>,
    params: Vec<NamedTensor>,
    x: Vec<f32>,
    h0: Vec<f32>,
    c0: Option<Vec<f32>>,
    output: Vec<f32>,
    h_n: Vec<f32>,
    c_n: Option<Vec<f32>>,
}

fn fixture() -> Fixture {
    let text = include_str!("../fixtures/nn_pytorch.json");
    serde_json::from_str(text).expect("the committed fixture parses")
}

fn array(shape: &[usize], data: &[f32]) -> ArrayD<f32> {
    ArrayD::from_shape_vec(IxDyn(shape), data.to_vec()).expect("fixture shapes fit")
}

/// Gradients `g` for every parameter: the backward of `Σ_p Σ_i g_pi · θ_pi`.
fn gradients(model: &Params, grads: &BTreeMap<String, Vec<f32>>) -> Gradients {
    let terms: Vec<Tensor> = model
        .0
        .iter()
        .map(|p| p.tensor().mul(&Tensor::new(array(p.shape(), &grads[p.name()]))).unwrap().sum_all())
        .collect();
    let loss = terms[1..].iter().fold(terms[0].clone(), |acc, t| acc.add(t).unwrap());
    loss.backward().unwrap()
}

fn algorithm(config: &BTreeMap<String, serde_json::Value>) -> Algorithm {
    let f = |key: &str, default: f64| config.get(key).and_then(serde_json::Value::as_f64).unwrap_or(default);
    match config["algorithm"].as_str().unwrap() {
        "SGD" => Algorithm::Sgd {
            momentum: f("momentum", 0.0),
            dampening: f("dampening", 0.0),
            nesterov: config.get("nesterov").and_then(serde_json::Value::as_bool).unwrap_or(false),
            weight_decay: f("weight_decay", 0.0),
        },
        name @ ("Adam" | "AdamW") => {
            let (beta1, beta2, eps) = (f("beta1", 0.9), f("beta2", 0.999), f("eps", 1e-8));
            if name == "Adam" {
                Algorithm::Adam { beta1, beta2, eps, weight_decay: f("weight_decay", 0.0) }
            } else {
                Algorithm::AdamW { beta1, beta2, eps, weight_decay: f("weight_decay", 0.01) }
            }
        }
        other => panic!("unknown algorithm {other}"),
    }
}

#[test]
fn optimizers_match_pytorch_step_for_step() {
    let fx = fixture();
    assert_eq!(fx.optim.len(), 9);
    for case in &fx.optim {
        let mut model =
            Params(case.shapes.iter().map(|(n, s)| Param::new(n.clone(), array(s, &case.params[n]))).collect());
        let mut opt = Optimizer::new(algorithm(&case.config), case.steps[0].lr).unwrap();
        if let Some(max) = case.config.get("max_norm").and_then(serde_json::Value::as_f64) {
            opt = opt.with_max_grad_norm(max).unwrap();
        }
        for (k, step) in case.steps.iter().enumerate() {
            let grads = gradients(&model, &step.grads);
            opt.set_lr(step.lr);
            let stats = opt.step(&mut model, &grads).unwrap();
            assert_close(&case.name, &format!("grad norm at step {k}"), &[stats.grad_norm], &[step.grad_norm], 1e-6);
            for p in &model.0 {
                // f32 arithmetic in the same order as PyTorch's kernels: equal to rounding.
                assert_close(
                    &case.name,
                    &format!("{} after step {k}", p.name()),
                    &p.tensor().to_vec(),
                    &step.params_after[p.name()],
                    2e-6,
                );
            }
        }
    }
}

#[test]
fn reduce_on_plateau_matches_pytorch() {
    let p = fixture().plateau;
    let schedule =
        Schedule::ReduceOnPlateau { factor: p.factor, patience: p.patience, min_lr: p.min_lr, threshold: p.threshold };
    let mut s = Scheduler::new(schedule, p.base_lr).unwrap();
    let lrs: Vec<f64> = p.losses.iter().map(|&l| s.observe(l)).collect();
    for (i, (got, want)) in lrs.iter().zip(&p.lrs).enumerate() {
        assert!((got - want).abs() <= 1e-15, "epoch {i}: lr {got}, PyTorch {want}");
    }
}

#[test]
fn two_layer_bidirectional_rnns_match_pytorch() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    for case in fixture().rnn {
        let kind = if case.kind == "lstm" { RnnKind::Lstm } else { RnnKind::Gru };
        let config =
            RnnConfig { num_layers: case.layers, bidirectional: true, ..RnnConfig::new(kind, case.input, case.hidden) };
        let mut rnn = Rnn::new("", config, Init::default(), &mut rng).unwrap();
        // PyTorch's named_parameters() order and names, one to one.
        let ours: Vec<&str> = rnn.params().iter().map(|p| p.name()).collect();
        let theirs: Vec<&str> = case.params.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(ours, theirs, "{}", case.name);
        StateDict::from_tensors(case.params.clone()).load_into(&mut rnn).unwrap();

        let state_shape = [case.layers * 2, case.batch, case.hidden];
        let state = RnnState {
            h: Tensor::new(array(&state_shape, &case.h0)),
            c: case.c0.as_ref().map(|c0| Tensor::new(array(&state_shape, c0))),
        };
        let x = Tensor::new(array(&[case.batch, case.time, case.input], &case.x));
        let out = rnn.forward(&x, &case.lengths, Some(&state), Mode::Eval).unwrap();
        assert_eq!(out.output.shape(), &[case.batch, case.time, 2 * case.hidden]);
        assert_close(&case.name, "output", &out.output.to_vec(), &case.output, 2e-6);
        assert_close(&case.name, "h_n", &out.state.h.to_vec(), &case.h_n, 2e-6);
        match (&out.state.c, &case.c_n) {
            (Some(c), Some(c_n)) => assert_close(&case.name, "c_n", &c.to_vec(), c_n, 2e-6),
            (None, None) => {}
            _ => panic!("{}: cell state presence differs", case.name),
        }
    }
}
