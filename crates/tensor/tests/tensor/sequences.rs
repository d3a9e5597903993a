//! The fused LSTM and GRU sequences held to their plain form: the cells
//! composed from tensor ops (differentiated by the tape)
//! stepped over each row's valid positions, forwards and backwards. Same outputs and final states, and the same
//! gradient for every input, with a loss that reads every output. And the
//! sequences given their weights' panels packed once (decoding) held to the
//! same sequences packing as they go: the same bits.

use lingo_tensor::{
    FusedCheck, Param, RnnWeights, Tensor, check_fused,
    fused::{WeightPanels, gru_sequence, gru_sequence_packed, lstm_sequence, lstm_sequence_packed},
    no_grad,
};
use lingo_tensor::{gru_cell, lstm_cell};
use ndarray::ArrayD;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const LENGTHS: [usize; 3] = [4, 2, 1]; // whole, padded, one step
const HIDDEN: usize = 3;

fn values(shape: &[usize], seed: u64) -> ArrayD<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    ArrayD::from_shape_simple_fn(shape, || rng.random_range(-1.0..1.0))
}

/// `x (B, T, E)`, the initial states and the four weights of an RNN with `gates` gates.
fn inputs(gates: usize, states: usize) -> Vec<ArrayD<f32>> {
    let (b, t, e, h) = (LENGTHS.len(), LENGTHS[0], 2, HIDDEN);
    let mut all = vec![values(&[b, t, e], 1)];
    all.extend((0..states).map(|i| values(&[b, h], 2 + i as u64)));
    all.extend([
        values(&[gates * h, e], 5),
        values(&[gates * h, h], 6),
        values(&[gates * h], 7),
        values(&[gates * h], 8),
    ]);
    all
}

fn weights(w: &[Tensor]) -> RnnWeights<'_> {
    RnnWeights { weight_ih: &w[0], weight_hh: &w[1], bias_ih: &w[2], bias_hh: &w[3] }
}

/// The valid steps of a row of `len`, in the order the RNN visits them.
fn steps(len: usize, reverse: bool) -> Vec<usize> {
    if reverse { (0..len).rev().collect() } else { (0..len).collect() }
}

/// Row by row, one cell per valid step: `(output (B, T, H), final states)`,
/// zeros at padded steps. `cell(x_t, states) -> states`, `states[0]` the output.
fn stepped(
    x: &Tensor,
    init: &[Tensor],
    reverse: bool,
    cell: impl Fn(&Tensor, &[Tensor]) -> Vec<Tensor>,
) -> Vec<Tensor> {
    let (t_len, e) = (x.shape()[1], x.shape()[2]);
    let (mut rows, mut finals) = (vec![], vec![vec![]; init.len()]);
    for (b, &len) in LENGTHS.iter().enumerate() {
        let mut states: Vec<Tensor> = init.iter().map(|s| s.narrow(0, b, 1).unwrap()).collect();
        let mut outputs = vec![Tensor::zeros(&[1, 1, HIDDEN]); t_len];
        for t in steps(len, reverse) {
            let x_t = x.narrow(0, b, 1).unwrap().narrow(1, t, 1).unwrap().reshape(&[1, e]).unwrap();
            states = cell(&x_t, &states);
            outputs[t] = states[0].reshape(&[1, 1, HIDDEN]).unwrap();
        }
        rows.push(Tensor::cat(&outputs, 1).unwrap());
        for (all, s) in finals.iter_mut().zip(states) {
            all.push(s);
        }
    }
    let mut out = vec![Tensor::cat(&rows, 0).unwrap()];
    out.extend(finals.iter().map(|f| Tensor::cat(f, 0).unwrap()));
    out
}

/// Runs `run(fused, variables)` both ways on fresh variables and compares
/// every output and every input's gradient ([`check_fused`]).
fn same(what: &str, inputs: &[ArrayD<f32>], run: impl Fn(bool, &[Tensor]) -> Vec<Tensor>) {
    if let Err(e) = check_fused(|fused, v| Ok(run(fused, v)), inputs, FusedCheck::default()) {
        panic!("{what}: {e}");
    }
}

#[test]
fn gru_sequence_equals_its_cells() {
    for reverse in [false, true] {
        same(&format!("gru reverse={reverse}"), &inputs(3, 1), |fused, v| {
            let w = weights(&v[2..]);
            if fused {
                let out = gru_sequence(&v[0], &v[1], &LENGTHS, reverse, w).unwrap();
                vec![out.output, out.h_n]
            } else {
                stepped(&v[0], &v[1..2], reverse, |x, s| vec![gru_cell(x, &s[0], w).unwrap()])
            }
        });
    }
}

#[test]
fn lstm_sequence_equals_its_cells() {
    for reverse in [false, true] {
        same(&format!("lstm reverse={reverse}"), &inputs(4, 2), |fused, v| {
            let w = weights(&v[3..]);
            if fused {
                let out = lstm_sequence(&v[0], &v[1], &v[2], &LENGTHS, reverse, w).unwrap();
                vec![out.output, out.h_n, out.c_n]
            } else {
                stepped(&v[0], &v[1..3], reverse, |x, s| {
                    let (h, c) = lstm_cell(x, &s[0], &s[1], w).unwrap();
                    vec![h, c]
                })
            }
        });
    }
}

/// Both sequences at a size whose products take the panel path (on CPUs
/// that have it), over padded rows, one step and several, both directions:
/// with the parameters' own panels and without, bit for bit.
#[test]
fn sequences_on_packed_weights_give_the_same_bits() {
    let (batch, input, hidden) = (40, 48, 32);
    let lengths: Vec<usize> = (0..batch).map(|b| 1 + b % 5).collect();
    for gates in [3, 4] {
        let param = |name, shape: &[usize], seed| Param::new(name, values(shape, seed));
        let (w_ih, w_hh) = (param("w_ih", &[gates * hidden, input], 11), param("w_hh", &[gates * hidden, hidden], 12));
        let (b_ih, b_hh) = (param("b_ih", &[gates * hidden], 13), param("b_hh", &[gates * hidden], 14));
        let w = RnnWeights {
            weight_ih: w_ih.tensor(),
            weight_hh: w_hh.tensor(),
            bias_ih: b_ih.tensor(),
            bias_hh: b_hh.tensor(),
        };
        let h0 = Tensor::new(values(&[batch, hidden], 15));
        for (time, reverse) in [(1, false), (5, false), (5, true)] {
            let x = Tensor::new(values(&[batch, time, input], 16));
            let lengths: Vec<usize> = lengths.iter().map(|&n| n.min(time)).collect();
            let run = |panels: WeightPanels<'_>| {
                let out = if gates == 4 {
                    let out = lstm_sequence_packed(&x, &h0, &h0, &lengths, reverse, w, panels).unwrap();
                    [out.output, out.h_n, out.c_n].map(|t| t.to_vec()).concat()
                } else {
                    let out = gru_sequence_packed(&x, &h0, &lengths, reverse, w, panels).unwrap();
                    [out.output, out.h_n].map(|t| t.to_vec()).concat()
                };
                out.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            };
            let (packed, plain) = no_grad(|| {
                (run(WeightPanels { weight_ih: w_ih.panels(), weight_hh: w_hh.panels() }), run(WeightPanels::default()))
            });
            assert_eq!(packed, plain, "gates {gates}, time {time}, reverse {reverse}");
        }
    }
}
