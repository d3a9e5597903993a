//! The fused kernels' hand-written backward rules against central finite
//! differences, on random shapes, masks and values (proptest, fixed seed),
//! and every layer's parameter gradients against finite differences of the
//! layer itself; the same for the fused Bahdanau recurrence.

use crate::common::{all_scorers, flat, layer, pad_mask, tensor, to_tensor, values};
use lingo_attention::{Attention, additive_attention, bahdanau_recurrence, dot_product_attention};
use lingo_tensor::{GradCheck, Module, RnnWeights, Tensor, check_gradients};
use ndarray::{Array2, ArrayD};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

fn lengths(batch: usize, src_len: usize, seed: u64) -> Vec<usize> {
    // 0 (all padding) .. src_len (no padding), varied per row
    (0..batch).map(|b| (seed as usize + 3 * b) % (src_len + 1)).collect()
}

fn check(f: impl Fn(&[Tensor]) -> lingo_tensor::Result<Tensor>, inputs: &[ArrayD<f32>]) -> Result<(), TestCaseError> {
    check_gradients(f, inputs, GradCheck::default()).map(|_| ()).map_err(|e| TestCaseError::fail(e.to_string()))
}

/// `mask` as the kernels take it, or none.
fn maybe(mask: &Array2<bool>, use_it: bool) -> Option<&Array2<bool>> {
    use_it.then_some(mask)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, rng_seed: RngSeed::Fixed(20261130), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn dot_product_kernel(b in 1usize..=2, t in 1usize..=3, s in 1usize..=4, heads in 1usize..=2, d in 1usize..=2, dv in 1usize..=2,
                          scaled in any::<bool>(), padded in any::<bool>(), causal in any::<bool>(), reads in 0usize..4, shared in any::<bool>(), seed in 0u64..1000) {
        let mask = pad_mask(&lengths(b, s, seed), s);
        let scale = if scaled { 0.7 } else { 1.0 };
        // `shared`: one tensor as keys and values (the kernel sums dK + dV itself).
        let mut inputs = vec![values(&[b, t, heads * d], seed), values(&[b, s, heads * d], seed + 1)];
        if !shared {
            inputs.push(values(&[b, s, heads * dv], seed + 2));
        }
        check(|x| {
            let out = dot_product_attention(&x[0], &x[1], x.get(2).unwrap_or(&x[1]), heads, scale, maybe(&mask, padded), causal).map_err(to_tensor)?;
            // What the loss reads besides the context: everything, nothing, the mean
            // weights or the heads' weights. A result the loss does not read gets no
            // gradient (absent, not zero), and each combination is its own path.
            let context = out.context.reshape(&[out.context.len()])?;
            let with = |w: &Tensor| Tensor::cat(&[context.clone(), w.reshape(&[w.len()])?], 0);
            match (reads, &out.head_weights) {
                (0, _) => flat(&out),
                (2, _) => with(&out.weights),
                (3, Some(h)) => with(h),
                _ => Ok(context),
            }
        }, &inputs)?;
    }

    #[test]
    fn additive_kernel(b in 1usize..=2, t in 1usize..=3, s in 1usize..=4, a in 1usize..=3, dv in 1usize..=2,
                       padded in any::<bool>(), causal in any::<bool>(), seed in 0u64..1000) {
        let mask = pad_mask(&lengths(b, s, seed), s);
        let inputs = [values(&[b, t, a], seed), values(&[b, s, a], seed + 1), values(&[a], seed + 2), values(&[b, s, dv], seed + 3)];
        check(|x| flat(&additive_attention(&x[0], &x[1], &x[2], &x[3], maybe(&mask, padded), causal).map_err(to_tensor)?), &inputs)?;
    }

    /// The fused Bahdanau recurrence, with respect to all ten of its inputs:
    /// the step inputs, the first state, keys, values, the scorer's W_q and v,
    /// and the GRU's four parameters.
    #[test]
    fn bahdanau_recurrence_kernel(b in 1usize..=2, t in 1usize..=3, s in 1usize..=3, a in 1usize..=3, e in 1usize..=2, h in 1usize..=3, dv in 1usize..=2,
                                  padded in any::<bool>(), states_only in any::<bool>(), seed in 0u64..1000) {
        let mask = pad_mask(&lengths(b, s, seed), s);
        let shapes = [vec![b, t, e], vec![b, h], vec![b, s, a], vec![b, s, dv], vec![a, h], vec![a], vec![3 * h, e + dv], vec![3 * h, h], vec![3 * h], vec![3 * h]];
        let inputs: Vec<ArrayD<f32>> = shapes.iter().zip(seed..).map(|(shape, k)| values(shape, k)).collect();
        check(|x| {
            let gru = RnnWeights { weight_ih: &x[6], weight_hh: &x[7], bias_ih: &x[8], bias_hh: &x[9] };
            let out = bahdanau_recurrence(&x[0], &x[1], &x[2], &x[3], (&x[4], &x[5]), gru, maybe(&mask, padded)).map_err(to_tensor)?;
            let states = out.output.reshape(&[out.output.len()])?;
            // Without the weights in the loss their gradient from outside is absent: the op's other path.
            if states_only { Ok(states) } else { Tensor::cat(&[states, out.weights.reshape(&[out.weights.len()])?], 0) }
        }, &inputs)?;
    }

    /// Whole layers, with respect to queries, keys and values.
    #[test]
    fn layers_wrt_inputs(scorer in 0usize..5, t in 1usize..=3, s in 1usize..=3, causal in any::<bool>(), seed in 0u64..1000) {
        let attn = layer(all_scorers(2)[scorer], 4, 4, 4, seed);
        let mask = pad_mask(&lengths(2, s, seed), s);
        let inputs = [values(&[2, t, 4], seed), values(&[2, s, 4], seed + 1), values(&[2, s, 4], seed + 2)];
        check(|x| flat(&attn.forward(&x[0], &x[1], &x[2], Some(&mask), causal).map_err(to_tensor)?), &inputs)?;
    }
}

/// `L = Σ w ⊙ flat(output)` for fixed inputs and projection `w`.
fn loss(attn: &Attention, inputs: &[Tensor; 3], mask: &Array2<bool>, w: &Tensor) -> Tensor {
    let out = attn.forward(&inputs[0], &inputs[1], &inputs[2], Some(mask), false).unwrap();
    flat(&out).unwrap().mul(w).unwrap().sum_all()
}

/// Every element of every parameter: the analytic gradient against
/// `(L(θ + ε) - L(θ - ε)) / 2ε`, perturbing the layer's own parameters.
#[test]
fn parameter_gradients_match_finite_differences() {
    let (b, t, s, dq, dk, a) = (2, 3, 4, 3, 5, 4);
    for (scorer, attn_dim) in [("general", 0), ("additive", a), ("multi_head:2", a)] {
        let mut attn = layer(scorer.parse().unwrap(), dq, dk, attn_dim, 7);
        let inputs = [tensor(&[b, t, dq], 1), tensor(&[b, s, dk], 2), tensor(&[b, s, dk], 3)];
        let mask = pad_mask(&[4, 2], s);
        let n_out = flat(&attn.forward(&inputs[0], &inputs[1], &inputs[2], Some(&mask), false).unwrap()).unwrap().len();
        let w = tensor(&[n_out], 4);
        let grads = loss(&attn, &inputs, &mask, &w).backward().unwrap();
        let analytic: Vec<ArrayD<f32>> = attn.params().iter().map(|p| grads.get(p.tensor()).unwrap().clone()).collect();
        let eps = 1e-2;
        for (k, g) in analytic.iter().enumerate() {
            for i in 0..g.len() {
                let mut at = |delta: f32| {
                    attn.params_mut()[k].update(|d| d.as_slice_mut().unwrap()[i] += delta);
                    let l = f64::from(loss(&attn, &inputs, &mask, &w).item().unwrap());
                    attn.params_mut()[k].update(|d| d.as_slice_mut().unwrap()[i] -= delta);
                    l
                };
                let numeric = ((at(eps) - at(-eps)) / (2.0 * f64::from(eps))) as f32;
                let a = g.as_slice().unwrap()[i];
                assert!(
                    (a - numeric).abs() <= 2e-3 + 2e-2 * a.abs().max(numeric.abs()),
                    "{scorer} param {k} element {i}: analytic {a}, numeric {numeric}"
                );
            }
        }
    }
}

/// A prepared source used for several decoder steps: the gradients reaching
/// the source and the parameters are those of one forward over all steps.
#[test]
fn gradients_through_a_prepared_source_add_up_over_steps() {
    for scorer in all_scorers(2) {
        let attn = layer(scorer, 4, 4, 4, 11);
        let enc_out = Tensor::variable(values(&[2, 5, 4], 12));
        let dec = values(&[2, 3, 4], 13);
        let mask = pad_mask(&[5, 3], 5);
        let w = tensor(&[2, 3, 4], 14);
        let all = attn.forward(&Tensor::new(dec.clone()), &enc_out, &enc_out, Some(&mask), false).unwrap();
        let g_all = all.context.mul(&w).unwrap().sum_all().backward().unwrap();

        let source = attn.prepare(&enc_out, &enc_out, Some(&mask)).unwrap();
        let mut total = Tensor::scalar(0.0);
        for step in 0..3 {
            let q = Tensor::new(dec.slice(ndarray::s![.., step..step + 1, ..]).to_owned().into_dyn());
            let out = source.attend(&q, false).unwrap();
            let w_step = w.narrow(1, step, 1).unwrap();
            total = total.add(&out.context.mul(&w_step).unwrap().sum_all()).unwrap();
        }
        let g_steps = total.backward().unwrap();
        let close =
            |a: &ArrayD<f32>, b: &ArrayD<f32>| a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-5 + 1e-4 * x.abs());
        assert!(
            close(g_all.get(&enc_out).unwrap(), g_steps.get(&enc_out).unwrap()),
            "{scorer}: source gradients differ"
        );
        for p in attn.params() {
            assert!(
                close(g_all.get(p.tensor()).unwrap(), g_steps.get(p.tensor()).unwrap()),
                "{scorer}: {} gradients differ",
                p.name()
            );
        }
    }
}
