//! Parity with PyTorch's `nn.LSTM`, `nn.GRU`, `nn.LSTMCell` and `nn.GRUCell`.
//!
//! `fixtures/rnn_pytorch.json` is written by `tools/gen_rnn_fixtures.py`:
//! float32 inputs and weights, a float64 PyTorch reference for the outputs,
//! final states and every gradient of
//! `L = Σ w_output ⊙ output + Σ w_h_n ⊙ h_n (+ Σ w_c_n ⊙ c_n)`,
//! on padded batches with unsorted lengths (PyTorch's packed sequences).
//! Bidirectional cases run our forward and reverse directions and join them
//! as PyTorch does. Everything must agree to 1e-5.

use std::collections::HashMap;

use lingo_tensor::{
    Gradients, RnnWeights, Tensor,
    fused::{gru_cell, gru_sequence, lstm_cell, lstm_sequence},
};
use ndarray::{ArrayD, IxDyn};
use serde_json::Value;

const TOLERANCE: f32 = 1e-5;

struct Case {
    name: String,
    kind: String,
    bidirectional: bool,
    lengths: Vec<usize>,
    arrays: HashMap<String, ArrayD<f32>>,
}

impl Case {
    fn array(&self, name: &str) -> ArrayD<f32> {
        self.arrays.get(name).unwrap_or_else(|| panic!("{}: fixture has no tensor {name}", self.name)).clone()
    }

    /// Compares `got` with the fixture's `name`, element by element.
    fn expect(&self, name: &str, got: &ArrayD<f32>) {
        let want = self.array(name);
        assert_eq!(got.shape(), want.shape(), "{}: {name} has the wrong shape", self.name);
        for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
            assert!((g - w).abs() <= TOLERANCE, "{}: {name}[{i}] = {g}, PyTorch says {w}", self.name);
        }
    }
}

fn load_cases() -> Vec<Case> {
    let text = include_str!("../fixtures/rnn_pytorch.json");
    let root: Value = serde_json::from_str(text).expect("fixture is valid JSON");
    let cases = root["cases"].as_array().expect("fixture lists cases");
    cases
        .iter()
        .map(|c| {
            let arrays = c["tensors"]
                .as_object()
                .expect("tensors is an object")
                .iter()
                .map(|(name, t)| {
                    let shape: Vec<usize> = t["shape"]
                        .as_array()
                        .expect("shape")
                        .iter()
                        .map(|v| v.as_u64().expect("dim") as usize)
                        .collect();
                    let data: Vec<f32> = t["data"]
                        .as_array()
                        .expect("data")
                        .iter()
                        .map(|v| v.as_f64().expect("number") as f32)
                        .collect();
                    (name.clone(), ArrayD::from_shape_vec(IxDyn(&shape), data).expect("shape matches data"))
                })
                .collect();
            Case {
                name: c["name"].as_str().expect("name").to_string(),
                kind: c["kind"].as_str().expect("kind").to_string(),
                bidirectional: c["bidirectional"].as_bool().unwrap_or(false),
                lengths: c["lengths"]
                    .as_array()
                    .map(|l| l.iter().map(|v| v.as_u64().expect("length") as usize).collect())
                    .unwrap_or_default(),
                arrays,
            }
        })
        .collect()
}

/// The four weights of one direction, as variables, under PyTorch's names with `suffix`.
struct Direction {
    tensors: [Tensor; 4],
    names: [String; 4],
}

impl Direction {
    fn new(case: &Case, suffix: &str) -> Direction {
        let names = ["weight_ih", "weight_hh", "bias_ih", "bias_hh"].map(|n| format!("{n}{suffix}"));
        Direction { tensors: names.clone().map(|n| Tensor::variable(case.array(&n))), names }
    }

    fn weights(&self) -> RnnWeights<'_> {
        let [w_ih, w_hh, b_ih, b_hh] = &self.tensors;
        RnnWeights { weight_ih: w_ih, weight_hh: w_hh, bias_ih: b_ih, bias_hh: b_hh }
    }

    fn expect_grads(&self, case: &Case, grads: &Gradients) {
        for (t, n) in self.tensors.iter().zip(&self.names) {
            case.expect(&format!("grad_{n}"), grads.get(t).expect("weights get gradients"));
        }
    }
}

/// `Σ w ⊙ t` over pairs, the fixtures' loss.
fn weighted_sum(case: &Case, pairs: &[(&Tensor, &str)]) -> Tensor {
    pairs
        .iter()
        .map(|(t, w)| t.mul(&Tensor::new(case.array(w))).expect("same shapes").sum_all())
        .reduce(|a, b| a.add(&b).expect("scalars"))
        .expect("at least one term")
}

/// Direction `k` of a `(dirs, batch, hidden)` state.
fn direction_of(state: &Tensor, k: usize) -> Tensor {
    let (b, h) = (state.shape()[1], state.shape()[2]);
    state.narrow(0, k, 1).and_then(|s| s.reshape(&[b, h])).expect("state is (dirs, batch, hidden)")
}

fn run_sequence(case: &Case) {
    let is_lstm = case.kind == "lstm";
    let x = Tensor::variable(case.array("x"));
    let h0 = Tensor::variable(case.array("h0"));
    let c0 = is_lstm.then(|| Tensor::variable(case.array("c0")));
    let suffixes: &[&str] = if case.bidirectional { &["_l0", "_l0_reverse"] } else { &["_l0"] };
    let directions: Vec<Direction> = suffixes.iter().map(|s| Direction::new(case, s)).collect();
    let (mut outputs, mut h_n, mut c_n) = (vec![], vec![], vec![]);
    for (k, dir) in directions.iter().enumerate() {
        let reverse = k == 1;
        let h = direction_of(&h0, k);
        if let Some(c0) = &c0 {
            let out =
                lstm_sequence(&x, &h, &direction_of(c0, k), &case.lengths, reverse, dir.weights()).expect("lstm runs");
            outputs.push(out.output);
            h_n.push(out.h_n);
            c_n.push(out.c_n);
        } else {
            let out = gru_sequence(&x, &h, &case.lengths, reverse, dir.weights()).expect("gru runs");
            outputs.push(out.output);
            h_n.push(out.h_n);
        }
    }
    // PyTorch joins directions along features for the output and stacks the states.
    let output = Tensor::cat(&outputs, 2).expect("outputs join");
    let h_n = Tensor::stack(&h_n, 0).expect("states stack");
    case.expect("output", output.data());
    case.expect("h_n", h_n.data());
    let mut terms = vec![(&output, "w_output"), (&h_n, "w_h_n")];
    let c_n = (!c_n.is_empty()).then(|| Tensor::stack(&c_n, 0).expect("cell states stack"));
    if let Some(c_n) = &c_n {
        case.expect("c_n", c_n.data());
        terms.push((c_n, "w_c_n"));
    }
    let grads = weighted_sum(case, &terms).backward().expect("backward runs");
    case.expect("grad_x", grads.get(&x).expect("x gets a gradient"));
    case.expect("grad_h0", grads.get(&h0).expect("h0 gets a gradient"));
    if let Some(c0) = &c0 {
        case.expect("grad_c0", grads.get(c0).expect("c0 gets a gradient"));
    }
    for dir in &directions {
        dir.expect_grads(case, &grads);
    }
}

fn run_cell(case: &Case) {
    let x = Tensor::variable(case.array("x"));
    let h0 = Tensor::variable(case.array("h0"));
    let dir = Direction::new(case, "");
    let grads = if case.kind == "lstm_cell" {
        let c0 = Tensor::variable(case.array("c0"));
        let (h1, c1) = lstm_cell(&x, &h0, &c0, dir.weights()).expect("cell runs");
        case.expect("h1", h1.data());
        case.expect("c1", c1.data());
        let grads = weighted_sum(case, &[(&h1, "w_h1"), (&c1, "w_c1")]).backward().expect("backward runs");
        case.expect("grad_c0", grads.get(&c0).expect("c0 gets a gradient"));
        grads
    } else {
        let h1 = gru_cell(&x, &h0, dir.weights()).expect("cell runs");
        case.expect("h1", h1.data());
        weighted_sum(case, &[(&h1, "w_h1")]).backward().expect("backward runs")
    };
    case.expect("grad_x", grads.get(&x).expect("x gets a gradient"));
    case.expect("grad_h0", grads.get(&h0).expect("h0 gets a gradient"));
    dir.expect_grads(case, &grads);
}

#[test]
fn every_fixture_case_matches_pytorch() {
    let cases = load_cases();
    assert!(cases.len() >= 12, "the fixture should hold all twelve cases");
    for case in &cases {
        match case.kind.as_str() {
            "lstm" | "gru" => run_sequence(case),
            "lstm_cell" | "gru_cell" => run_cell(case),
            other => panic!("{}: unknown kind {other}", case.name),
        }
    }
}

#[test]
fn a_wrong_weight_is_noticed() {
    // The comparison itself can fail: perturb one weight and the outputs must disagree.
    let mut case = load_cases().into_iter().find(|c| c.name == "gru_padded").expect("gru_padded exists");
    case.arrays.get_mut("weight_hh_l0").expect("weight").iter_mut().for_each(|w| *w *= 1.01);
    let outcome = std::panic::catch_unwind(|| run_sequence(&case));
    assert!(outcome.is_err(), "a 1% change in W_hh went unnoticed");
}
