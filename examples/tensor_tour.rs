//! A tour of lingo-tensor: an embedding, a fused LSTM and a linear read-out
//! learn to recall the token seen two steps earlier, trained by plain SGD
//! written out in three lines. Run with
//!
//! ```text
//! cargo run --release --example tensor_tour
//! ```
//!
//! Everything here (embedding lookup, the LSTM's backward pass through
//! time, the fused cross-entropy) is lingo-tensor's own code.

use std::time::Instant;

use lingo::tensor::{CrossEntropy, Module, Param, RnnWeights, Tensor, fused::lstm_sequence};
use ndarray::{Array2, ArrayD};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const VOCAB: usize = 10;
const DELAY: usize = 2;
/// Targets of the first `DELAY` steps: nothing to recall yet, so ignored.
const NOTHING: usize = VOCAB;

/// embedding → LSTM → linear, with PyTorch-style parameter names.
struct Recaller {
    params: Vec<Param>,
}

impl Recaller {
    fn new(emb: usize, hidden: usize, rng: &mut StdRng) -> Recaller {
        let mut p = |name: &str, shape: &[usize], scale: f32| {
            Param::new(name, Tensor::rand_uniform(shape, -scale, scale, rng).expect("valid range").data().clone())
        };
        let k = 1.0 / (hidden as f32).sqrt();
        let params = vec![
            p("embedding.weight", &[VOCAB, emb], 1.0),
            p("rnn.weight_ih_l0", &[4 * hidden, emb], k),
            p("rnn.weight_hh_l0", &[4 * hidden, hidden], k),
            p("rnn.bias_ih_l0", &[4 * hidden], k),
            p("rnn.bias_hh_l0", &[4 * hidden], k),
            p("out.weight", &[VOCAB, hidden], k),
            p("out.bias", &[VOCAB], k),
        ];
        Recaller { params }
    }

    /// Mean cross-entropy of predicting `tokens[t - DELAY]` at every step `t`.
    fn loss(&self, tokens: &Array2<usize>) -> Tensor {
        let [emb, w_ih, w_hh, b_ih, b_hh, out_w, out_b] = std::array::from_fn(|i| self.params[i].tensor());
        let (batch, time) = tokens.dim();
        let hidden = w_hh.shape()[1];
        let x = emb.embedding(tokens.view().into_dyn(), None).expect("ids are in the vocabulary"); // (batch, time, emb)
        let h0 = Tensor::zeros(&[batch, hidden]);
        let w = RnnWeights { weight_ih: w_ih, weight_hh: w_hh, bias_ih: b_ih, bias_hh: b_hh };
        let states = lstm_sequence(&x, &h0, &h0, &vec![time; batch], false, w).expect("shapes agree").output;
        let logits = states
            .linear(out_w, Some(out_b))
            .expect("shapes agree")
            .reshape(&[batch * time, VOCAB])
            .expect("same size");
        let targets: Vec<usize> = (0..batch)
            .flat_map(|b| (0..time).map(move |t| if t < DELAY { NOTHING } else { tokens[[b, t - DELAY]] }))
            .collect();
        logits
            .cross_entropy(&targets, CrossEntropy { ignore_index: Some(NOTHING), label_smoothing: 0.0 })
            .expect("targets in range")
    }
}

impl Module for Recaller {
    fn params(&self) -> Vec<&Param> {
        self.params.iter().collect()
    }
    fn params_mut(&mut self) -> Vec<&mut Param> {
        self.params.iter_mut().collect()
    }
}

fn main() {
    let mut rng = StdRng::seed_from_u64(0);
    let mut model = Recaller::new(16, 64, &mut rng);
    println!("parameters: {}", model.num_params());
    let (batch, time, lr) = (64, 12, 1.0);
    let start = Instant::now();
    for step in 1..=400 {
        let tokens = Array2::from_shape_fn((batch, time), |_| rng.random_range(0..VOCAB));
        let loss = model.loss(&tokens);
        let grads = loss.backward().expect("the loss is a scalar");
        let value = loss.item().expect("scalar");
        drop(loss); // free the graph, so the update below happens in place
        for p in model.params_mut() {
            let g: ArrayD<f32> = grads.get(p.tensor()).expect("every parameter is used").clone();
            p.update(|w| w.scaled_add(-lr, &g)); // w ← w - lr·∇w
        }
        if step % 50 == 0 {
            println!("step {step:>3} | loss {value:.4} (chance: ln 10 = {:.4})", (VOCAB as f32).ln());
        }
    }
    println!("400 steps in {:.2} s", start.elapsed().as_secs_f64());
}
