//! The fused kernels held to their plain forms (`lingo_attention::plain`,
//! composed from `lingo-tensor` ops and differentiated by the tape): the
//! same context, weights and heads' weights, and the same gradient for
//! every input, with a loss that reads every output.

use crate::common::{pad_mask, tensor, values};
use lingo_attention::{AttentionOutput, Result, additive_attention, bahdanau_recurrence, dot_product_attention, plain};
use lingo_tensor::RnnWeights;
use lingo_tensor::{FusedCheck, Tensor, check_fused};
use ndarray::ArrayD;

fn max_diff(a: &ArrayD<f32>, b: &ArrayD<f32>) -> f32 {
    assert_eq!(a.shape(), b.shape());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// Runs the fused kernel and its plain form on fresh variables holding
/// `inputs` ([`check_fused`]): the same context, weights and heads' weights,
/// and the same gradient for every input.
fn same(what: &str, inputs: &[ArrayD<f32>], run: impl Fn(bool, &[Tensor]) -> Result<AttentionOutput>) {
    let outputs = |fused, v: &[Tensor]| {
        let out = run(fused, v).unwrap_or_else(|e| panic!("{what}: {e}"));
        Ok([vec![out.context, out.weights], out.head_weights.into_iter().collect()].concat())
    };
    if let Err(e) = check_fused(outputs, inputs, FusedCheck::default()) {
        panic!("{what}: {e}");
    }
}

#[test]
fn dot_product_kernel_equals_its_plain_form() {
    let (b, t, s) = (3, 4, 5);
    let mask = pad_mask(&[5, 2, 0], s); // whole, padded, all padding
    for heads in [1, 3] {
        for (scale, causal, padded, shared) in
            [(1.0, false, false, false), (0.4, true, false, true), (0.7, false, true, false), (0.5, true, true, true)]
        {
            let (d, d_v) = (2 * heads, 3 * heads);
            let mut inputs = vec![values(&[b, t, d], 1).mapv(|x| 2.0 * x), values(&[b, s, d], 2).mapv(|x| 2.0 * x)];
            if !shared {
                inputs.push(values(&[b, s, d_v], 3));
            }
            let what = format!("heads={heads} scale={scale} causal={causal} padded={padded} shared={shared}");
            same(&what, &inputs, |fused, x| {
                let (q, k) = (&x[0], &x[1]);
                let v = x.get(2).unwrap_or(k); // one tensor as keys and values: dK + dV
                let mask = padded.then_some(&mask);
                if fused {
                    dot_product_attention(q, k, v, heads, scale, mask, causal)
                } else {
                    plain::dot_product_attention(q, k, v, heads, scale, mask, causal)
                }
            });
        }
    }
}

#[test]
fn additive_kernel_equals_its_plain_form() {
    let (b, t, s, a, d_v) = (3, 4, 5, 6, 2);
    let mask = pad_mask(&[5, 2, 0], s);
    for (causal, padded) in [(false, false), (true, false), (false, true), (true, true)] {
        let inputs = [values(&[b, t, a], 4), values(&[b, s, a], 5), values(&[a], 6), values(&[b, s, d_v], 7)];
        same(&format!("causal={causal} padded={padded}"), &inputs, |fused, x| {
            let mask = padded.then_some(&mask);
            if fused {
                additive_attention(&x[0], &x[1], &x[2], &x[3], mask, causal)
            } else {
                plain::additive_attention(&x[0], &x[1], &x[2], &x[3], mask, causal)
            }
        });
    }
}

#[test]
fn bahdanau_recurrence_equals_its_plain_form() {
    let (b, t, s, a, e, h, d_v) = (3, 4, 5, 3, 2, 4, 3);
    let mask = pad_mask(&[5, 2, 0], s);
    for padded in [false, true] {
        let inputs = [
            values(&[b, t, e], 10),
            values(&[b, h], 11),
            values(&[b, s, a], 12),
            values(&[b, s, d_v], 13),
            values(&[a, h], 14),
            values(&[a], 15),
            values(&[3 * h, e + d_v], 16).mapv(|w| w / 2.0),
            values(&[3 * h, h], 17).mapv(|w| w / 2.0),
            values(&[3 * h], 18),
            values(&[3 * h], 19),
        ];
        same(&format!("padded={padded}"), &inputs, |fused, x| {
            let gru = RnnWeights { weight_ih: &x[6], weight_hh: &x[7], bias_ih: &x[8], bias_hh: &x[9] };
            let (score, mask) = ((&x[4], &x[5]), padded.then_some(&mask));
            let out = if fused {
                bahdanau_recurrence(&x[0], &x[1], &x[2], &x[3], score, gru, mask)?
            } else {
                plain::bahdanau_recurrence(&x[0], &x[1], &x[2], &x[3], score, gru, mask)?
            };
            // The states stand in as the context: `same` compares outputs and every gradient.
            Ok(AttentionOutput { context: out.output, weights: out.weights, head_weights: None })
        });
    }
}

#[test]
fn plain_functions_refuse_what_the_kernels_refuse() {
    let (q, k) = (tensor(&[1, 2, 4], 1), tensor(&[1, 3, 4], 2));
    for heads in [0, 3] {
        let (fused, plain) = (
            dot_product_attention(&q, &k, &k, heads, 1.0, None, false).unwrap_err(),
            plain::dot_product_attention(&q, &k, &k, heads, 1.0, None, false).unwrap_err(),
        );
        assert!(plain.to_string().contains("heads must divide"), "{plain}");
        assert!(fused.to_string().contains("heads must divide"), "{fused}");
    }
    let wrong_mask = pad_mask(&[1, 1], 3); // two rows for a batch of one
    let err = plain::masked_softmax(&tensor(&[1, 2, 3], 3), Some(&wrong_mask), false).unwrap_err();
    assert!(err.to_string().contains("src_pad_mask"), "{err}");
    let err = plain::additive_attention(&q, &k, &tensor(&[3], 4), &k, None, false).unwrap_err();
    assert!(err.to_string().contains("v must be a vector"), "{err}");
}

/// Inverted dropout keeps the expectation: the mean context over many
/// masks is the context without dropout, and padding stays hidden.
#[test]
fn dropout_on_the_weights_keeps_the_expected_context() {
    use rand::SeedableRng;
    let (q, k, v) = (tensor(&[2, 3, 4], 1), tensor(&[2, 5, 4], 2), tensor(&[2, 5, 4], 3));
    let mask = pad_mask(&[5, 3], 5);
    let kept = plain::dot_product_attention(&q, &k, &v, 2, 0.5, Some(&mask), true).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    let draws = 4000;
    let mut sum = ArrayD::<f32>::zeros(kept.context.shape());
    for _ in 0..draws {
        let out = plain::dot_product_attention_dropout(&q, &k, &v, 2, 0.5, Some(&mask), true, 0.3, &mut rng).unwrap();
        assert_eq!(out.weights.to_vec(), kept.weights.to_vec(), "the returned weights are before dropout");
        sum += out.context.data();
    }
    let err = max_diff(&(sum / draws as f32), kept.context.data());
    assert!(err < 0.03, "the mean context is off by {err}");
}
