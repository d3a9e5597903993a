//! The fused output layer and loss, `linear_cross_entropy`, against the two
//! ops it replaces (`linear` then `cross_entropy`): the same loss and the
//! same gradients within 1e-6, with padding ignored and label smoothing, at
//! sizes where its row blocks and the products' blocked paths are all used;
//! and the same bits for any thread count.

use lingo_tensor::{CrossEntropy, Gradients, Tensor};
use ndarray::{ArrayD, IxDyn};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// `x (rows, input)`, `weight (classes, input)`, `bias (classes)` and targets,
/// about one in five of them the padding class 0.
fn problem(rows: usize, input: usize, classes: usize, seed: u64) -> (Tensor, Tensor, Tensor, Vec<usize>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut uniform = |shape: &[usize], scale: f32| {
        Tensor::variable(ArrayD::from_shape_simple_fn(IxDyn(shape), || rng.random_range(-scale..scale)))
    };
    let (x, w, b) = (uniform(&[rows, input], 1.0), uniform(&[classes, input], 0.5), uniform(&[classes], 0.5));
    let targets = (0..rows).map(|_| if rng.random_bool(0.2) { 0 } else { rng.random_range(1..classes) }).collect();
    (x, w, b, targets)
}

fn largest_difference(a: &Gradients, b: &Gradients, t: &Tensor) -> f32 {
    let (a, b) = (a.get(t).expect("a gradient"), b.get(t).expect("a gradient"));
    assert_eq!(a.shape(), b.shape());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn fused_output_layer_equals_linear_then_cross_entropy() {
    for (rows, input, classes, ignore, smoothing, seed) in [
        (37, 24, 50, Some(0), 0.0, 1),
        (200, 64, 700, Some(0), 0.1, 2),
        (130, 128, 1500, None, 0.1, 3),
        (64, 40, 333, Some(0), 0.3, 4),
    ] {
        let (x, w, b, targets) = problem(rows, input, classes, seed);
        let opts = CrossEntropy { ignore_index: ignore, label_smoothing: smoothing };
        let fused = x.linear_cross_entropy(&w, Some(&b), &targets, opts).unwrap();
        let composed = x.linear(&w, Some(&b)).unwrap().cross_entropy(&targets, opts).unwrap();
        let (lf, lc) = (fused.item().unwrap(), composed.item().unwrap());
        assert!((lf - lc).abs() <= 1e-6 * lc.abs().max(1.0), "loss {lf} vs {lc} at {rows}x{input}x{classes}");
        let (gf, gc) = (fused.backward().unwrap(), composed.backward().unwrap());
        for (name, t) in [("x", &x), ("weight", &w), ("bias", &b)] {
            let diff = largest_difference(&gf, &gc, t);
            assert!(diff <= 1e-6, "d{name} differs by {diff} at {rows}x{input}x{classes}");
        }
    }
}

#[test]
fn ignored_rows_get_no_gradient_and_no_loss() {
    let (x, w, b, mut targets) = problem(20, 8, 30, 5);
    targets[3] = 0;
    let opts = CrossEntropy { ignore_index: Some(0), label_smoothing: 0.1 };
    let loss = x.linear_cross_entropy(&w, Some(&b), &targets, opts).unwrap();
    let grads = loss.backward().unwrap();
    let dx = grads.get(&x).unwrap();
    assert!(dx.index_axis(ndarray::Axis(0), 3).iter().all(|&v| v == 0.0));
    // Every row ignored: loss 0, gradients 0, not NaN.
    let all_pad = vec![0; 20];
    let none = x.linear_cross_entropy(&w, Some(&b), &all_pad, opts).unwrap();
    assert_eq!(none.item().unwrap(), 0.0);
    assert!(none.backward().unwrap().get(&w).unwrap().iter().all(|&v| v == 0.0));
}

#[test]
fn the_same_bits_for_one_thread_or_two_and_for_a_second_backward() {
    let (x, w, b, targets) = problem(150, 32, 900, 6);
    let opts = CrossEntropy { ignore_index: Some(0), label_smoothing: 0.1 };
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let loss = x.linear_cross_entropy(&w, Some(&b), &targets, opts).unwrap();
            let (first, second) = (loss.backward().unwrap(), loss.backward().unwrap());
            let bits =
                |g: &Gradients| [&x, &w, &b].map(|t| g.get(t).unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            assert_eq!(bits(&first), bits(&second), "a second backward recomputes the same probabilities");
            (loss.item().unwrap().to_bits(), bits(&first))
        })
    };
    assert_eq!(run(1), run(2));
}

#[test]
fn shape_and_target_errors_name_the_op() {
    let (x, w, b, targets) = problem(4, 3, 5, 7);
    let opts = CrossEntropy::default();
    let err = x.linear_cross_entropy(&w, Some(&b), &targets[..3], opts).unwrap_err().to_string();
    assert!(err.contains("linear_cross_entropy") && err.contains("one target per row"), "{err}");
    let err = x.linear_cross_entropy(&w.transpose(0, 1).unwrap(), None, &targets, opts).unwrap_err().to_string();
    assert!(err.contains("[4, 3] and [3, 5]"), "{err}");
    let err = x.linear_cross_entropy(&w, Some(&x), &targets, opts).unwrap_err().to_string();
    assert!(err.contains("bias must have shape [5]"), "{err}");
    let err = x.linear_cross_entropy(&w, None, &[0, 1, 2, 5], opts).unwrap_err().to_string();
    assert!(err.contains("target 5 is out of range for 5 classes"), "{err}");
}

#[test]
fn broken_weights_give_a_nan_loss_not_zero() {
    let (x, _, b, targets) = problem(6, 4, 9, 8);
    let broken = Tensor::variable(ArrayD::from_elem(IxDyn(&[9, 4]), f32::INFINITY));
    let loss = x
        .linear_cross_entropy(&broken, Some(&b), &targets, CrossEntropy { ignore_index: Some(0), label_smoothing: 0.1 })
        .unwrap();
    assert!(loss.item().unwrap().is_nan());
}
