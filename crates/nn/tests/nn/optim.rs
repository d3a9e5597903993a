//! Optimizers against values computed by hand from the published update
//! equations, clipping, failure modes and state round trips.

use crate::common::Params;
use lingo_nn::{Algorithm, Error, Optimizer, ParamProblem, ParamState, clip_scale, grad_norm};
use lingo_tensor::{Gradients, Param, Tensor};
use ndarray::ArrayD;

fn model(values: &[(&str, &[f32])]) -> Params {
    Params(
        values
            .iter()
            .map(|(n, v)| Param::new(*n, ArrayD::from_shape_vec(vec![v.len()], v.to_vec()).unwrap()))
            .collect(),
    )
}

/// Gradients `g_p` for the listed parameters (others get none): backward of `Σ g·θ`.
fn grads(m: &Params, g: &[(&str, &[f32])]) -> Gradients {
    let terms: Vec<Tensor> = g
        .iter()
        .map(|(n, v)| {
            let p = m.0.iter().find(|p| p.name() == *n).unwrap();
            p.tensor().mul(&Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()).unwrap().sum_all()
        })
        .collect();
    terms[1..].iter().fold(terms[0].clone(), |a, t| a.add(t).unwrap()).backward().unwrap()
}

fn values(m: &Params, i: usize) -> Vec<f32> {
    m.0[i].tensor().to_vec()
}

fn close(a: &[f32], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((f64::from(*x) - y).abs() < 1e-6 * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

#[test]
fn sgd_plain_momentum_nesterov_weight_decay_by_hand() {
    // plain: θ - ηg
    let mut m = model(&[("w", &[1.0, 2.0])]);
    let g = grads(&m, &[("w", &[0.5, -1.0])]);
    Optimizer::new(Algorithm::sgd(0.0), 0.1).unwrap().step(&mut m, &g).unwrap();
    close(&values(&m, 0), &[1.0 - 0.05, 2.0 + 0.1]);

    // momentum 0.9, two steps with the same g = 1: b1 = 1, b2 = 0.9 + 1 = 1.9
    let mut m = model(&[("w", &[0.0])]);
    let mut opt = Optimizer::new(Algorithm::sgd(0.9), 0.1).unwrap();
    for _ in 0..2 {
        let g = grads(&m, &[("w", &[1.0])]);
        opt.step(&mut m, &g).unwrap();
    }
    close(&values(&m, 0), &[-(0.1 * 1.0) - 0.1 * 1.9]);
    assert_eq!(opt.param_state("w"), Some(&ParamState::Sgd { momentum_buffer: Some(vec![1.9]) }));

    // Nesterov: d = g + μb; first step b = g, so d = (1 + μ)g
    let mut m = model(&[("w", &[0.0])]);
    let nesterov = Algorithm::Sgd { momentum: 0.5, dampening: 0.0, nesterov: true, weight_decay: 0.0 };
    let g = grads(&m, &[("w", &[2.0])]);
    Optimizer::new(nesterov, 0.1).unwrap().step(&mut m, &g).unwrap();
    close(&values(&m, 0), &[-0.1 * 3.0]);

    // weight decay λ = 0.1 adds λθ to the gradient: θ = 2, g = 1 -> d = 1.2
    let mut m = model(&[("w", &[2.0])]);
    let decay = Algorithm::Sgd { momentum: 0.0, dampening: 0.0, nesterov: false, weight_decay: 0.1 };
    let g = grads(&m, &[("w", &[1.0])]);
    Optimizer::new(decay, 0.5).unwrap().step(&mut m, &g).unwrap();
    close(&values(&m, 0), &[2.0 - 0.5 * 1.2]);
}

#[test]
fn adam_first_step_moves_by_lr_times_the_sign() {
    // After one step m̂ = g and v̂ = g², so θ₁ = θ₀ - η·g/(|g| + ε).
    let (g, theta, lr, eps) = ([0.3_f64, -2.0, 1e-3], [1.0_f64, 1.0, -1.0], 0.01, 1e-8);
    let mut m = model(&[("w", &theta.map(|v| v as f32))]);
    let gr = grads(&m, &[("w", &g.map(|v| v as f32))]);
    let mut opt = Optimizer::new(Algorithm::adam(), lr).unwrap();
    opt.step(&mut m, &gr).unwrap();
    let want: Vec<f64> = theta.iter().zip(&g).map(|(t, g)| t - lr * g / (g.abs() + eps)).collect();
    close(&values(&m, 0), &want);
    match opt.param_state("w").unwrap() {
        ParamState::Adam { step, exp_avg, exp_avg_sq } => {
            assert_eq!(*step, 1);
            close(exp_avg, &g.map(|g| 0.1 * g)); // (1-β₁)g
            close(exp_avg_sq, &g.map(|g| 0.001 * g * g)); // (1-β₂)g²
        }
        other => panic!("unexpected state {other:?}"),
    }
}

#[test]
fn adam_second_step_by_hand() {
    let (b1, b2, eps, lr) = (0.9_f64, 0.999_f64, 1e-8, 0.1);
    let (g1, g2, theta0) = (1.0_f64, -0.5_f64, 0.2_f64);
    let mut m = model(&[("w", &[theta0 as f32])]);
    let mut opt = Optimizer::new(Algorithm::adam(), lr).unwrap();
    for g in [g1, g2] {
        let gr = grads(&m, &[("w", &[g as f32])]);
        opt.step(&mut m, &gr).unwrap();
    }
    let step = |theta: f64, m: f64, v: f64, t: i32| {
        theta - lr / (1.0 - b1.powi(t)) * m / (v.sqrt() / (1.0 - b2.powi(t)).sqrt() + eps)
    };
    let (m1, v1) = ((1.0 - b1) * g1, (1.0 - b2) * g1 * g1);
    let theta1 = step(theta0, m1, v1, 1);
    let (m2, v2) = (b1 * m1 + (1.0 - b1) * g2, b2 * v1 + (1.0 - b2) * g2 * g2);
    close(&values(&m, 0), &[step(theta1, m2, v2, 2)]);
}

#[test]
fn adam_and_adamw_differ_exactly_in_where_the_decay_goes() {
    let (theta, g, lr, wd, eps) = (2.0_f64, 0.5_f64, 0.1, 0.2, 1e-8);
    // Adam: d = g + λθ, then the sign step on d.
    let mut a = model(&[("w", &[theta as f32])]);
    let gr = grads(&a, &[("w", &[g as f32])]);
    let adam = Algorithm::Adam { beta1: 0.9, beta2: 0.999, eps, weight_decay: wd };
    Optimizer::new(adam, lr).unwrap().step(&mut a, &gr).unwrap();
    let d = g + wd * theta;
    close(&values(&a, 0), &[theta - lr * d / (d.abs() + eps)]);
    // AdamW: θ(1 - ηλ), then the sign step on g alone.
    let mut w = model(&[("w", &[theta as f32])]);
    let gr = grads(&w, &[("w", &[g as f32])]);
    Optimizer::new(Algorithm::adamw(wd), lr).unwrap().step(&mut w, &gr).unwrap();
    close(&values(&w, 0), &[theta * (1.0 - lr * wd) - lr * g / (g.abs() + eps)]);
}

#[test]
fn clipping_by_global_norm() {
    // g = ([3], [4]): ‖g‖ = 5; clip to 1 scales by 1/(5 + 1e-6).
    let mut m = model(&[("a", &[0.0]), ("b", &[0.0])]);
    let gr = grads(&m, &[("a", &[3.0]), ("b", &[4.0])]);
    assert!((grad_norm(&m, &gr) - 5.0).abs() < 1e-6);
    let mut opt = Optimizer::new(Algorithm::sgd(0.0), 1.0).unwrap().with_max_grad_norm(1.0).unwrap();
    let stats = opt.step(&mut m, &gr).unwrap();
    let scale = 1.0 / (5.0 + 1e-6);
    assert!((stats.grad_norm - 5.0).abs() < 1e-6);
    assert!((f64::from(stats.clip_scale) - scale).abs() < 1e-7);
    close(&values(&m, 0), &[-3.0 * scale]);
    close(&values(&m, 1), &[-4.0 * scale]);
    // Below the threshold nothing changes.
    assert_eq!(clip_scale(0.5, 1.0), 1.0);
}

#[test]
fn parameters_without_gradients_are_skipped() {
    let mut m = model(&[("used", &[1.0]), ("unused", &[1.0])]);
    let gr = grads(&m, &[("used", &[1.0])]);
    let mut opt = Optimizer::new(Algorithm::adamw(0.5), 0.1).unwrap();
    let stats = opt.step(&mut m, &gr).unwrap();
    assert_eq!(stats.updated, 1);
    assert_eq!(values(&m, 1), [1.0]); // not even decayed, as in PyTorch
    assert!(opt.param_state("unused").is_none());
}

#[test]
fn non_finite_gradients_are_an_error_and_change_nothing() {
    let mut m = model(&[("a", &[1.0]), ("b", &[2.0])]);
    let gr = grads(&m, &[("a", &[0.5]), ("b", &[f32::NAN])]);
    let mut opt = Optimizer::new(Algorithm::adam(), 0.1).unwrap();
    let err = opt.step(&mut m, &gr).unwrap_err();
    assert!(matches!(&err, Error::NonFiniteGradient { name, .. } if name == "b"), "{err}");
    assert_eq!((values(&m, 0), values(&m, 1)), (vec![1.0], vec![2.0]));
    assert!(opt.param_state("a").is_none());
}

#[test]
fn state_survives_serialization_and_resuming_is_bit_identical() {
    let run = |steps: usize, opt: &mut Optimizer, m: &mut Params| {
        for k in 0..steps {
            let g = [0.3 * k as f32 - 0.5, 1.0 / (k as f32 + 1.0)];
            let gr = grads(m, &[("w", &g)]);
            opt.step(m, &gr).unwrap();
        }
    };
    let algorithms = [
        Algorithm::adam(),
        Algorithm::adamw(0.1),
        Algorithm::Sgd { momentum: 0.9, dampening: 0.1, nesterov: false, weight_decay: 0.01 },
    ];
    for algorithm in algorithms {
        let mut straight = model(&[("w", &[0.5, -0.5])]);
        let mut opt = Optimizer::new(algorithm, 0.05).unwrap();
        run(4, &mut opt, &mut straight);

        let mut resumed = model(&[("w", &[0.5, -0.5])]);
        let mut first = Optimizer::new(algorithm, 0.05).unwrap();
        run(2, &mut first, &mut resumed);
        let bytes = bincode::serde::encode_to_vec(&first, bincode::config::standard()).unwrap();
        let (mut second, _): (Optimizer, usize) =
            bincode::serde::decode_from_slice(&bytes, bincode::config::standard()).unwrap();
        assert_eq!(second, first);
        // continue with steps 2 and 3 of the same gradient sequence
        for k in 2..4 {
            let g = [0.3 * k as f32 - 0.5, 1.0 / (k as f32 + 1.0)];
            let gr = grads(&resumed, &[("w", &g)]);
            second.step(&mut resumed, &gr).unwrap();
        }
        assert_eq!(values(&straight, 0), values(&resumed, 0), "{}", algorithm.name());
    }
}

#[test]
fn state_that_does_not_fit_names_the_parameter() {
    let mut small = model(&[("w", &[1.0])]);
    let mut opt = Optimizer::new(Algorithm::adam(), 0.1).unwrap();
    let gr = grads(&small, &[("w", &[1.0])]);
    opt.step(&mut small, &gr).unwrap();
    let mut big = model(&[("w", &[1.0, 2.0])]);
    let gr = grads(&big, &[("w", &[1.0, 1.0])]);
    let err = opt.step(&mut big, &gr).unwrap_err();
    assert!(
        matches!(&err, Error::Param { name, problem: ParamProblem::Length { expected: 2, found: 1 } } if name == "w"),
        "{err}"
    );
    assert_eq!(values(&big, 0), [1.0, 2.0]);

    let sgd_state = serde_json::to_value(Optimizer::new(Algorithm::sgd(0.9), 0.1).unwrap()).unwrap();
    let mut sgd: Optimizer = serde_json::from_value(sgd_state).unwrap();
    let gr = grads(&small, &[("w", &[1.0])]);
    sgd.step(&mut small, &gr).unwrap();
    let mut adam_with_sgd_state: Optimizer = serde_json::from_value({
        let mut v = serde_json::to_value(&sgd).unwrap();
        v["algorithm"] = serde_json::to_value(Algorithm::adam()).unwrap();
        v
    })
    .unwrap();
    let gr = grads(&small, &[("w", &[1.0])]);
    let err = adam_with_sgd_state.step(&mut small, &gr).unwrap_err();
    assert!(
        matches!(err, Error::Param { problem: ParamProblem::Algorithm { expected: "Adam", found: "SGD" }, .. }),
        "{err}"
    );
}

#[test]
fn duplicate_names_and_bad_settings_are_rejected() {
    let mut twice = model(&[("w", &[1.0]), ("w", &[2.0])]);
    let gr = grads(&twice, &[("w", &[1.0])]);
    let err = Optimizer::new(Algorithm::sgd(0.0), 0.1).unwrap().step(&mut twice, &gr).unwrap_err();
    assert!(matches!(err, Error::Param { problem: ParamProblem::Duplicate, .. }));
    assert!(Optimizer::new(Algorithm::Adam { beta1: 1.0, beta2: 0.999, eps: 1e-8, weight_decay: 0.0 }, 0.1).is_err());
    assert!(
        Optimizer::new(Algorithm::Sgd { momentum: 0.0, dampening: 0.0, nesterov: true, weight_decay: 0.0 }, 0.1)
            .is_err()
    );
    let mut opt = Optimizer::new(Algorithm::sgd(0.0), 0.1).unwrap();
    opt.set_lr(f64::NAN);
    let mut m = model(&[("w", &[1.0])]);
    let gr = grads(&m, &[("w", &[1.0])]);
    assert!(matches!(opt.step(&mut m, &gr).unwrap_err(), Error::Config { what: "learning rate", .. }));
}

#[test]
fn parameters_updated_side_by_side_get_the_bits_of_one_after_another() {
    // Outside rayon's pool the parameters are updated in parallel; on a pool
    // thread (a one-thread pool here) one after another. Several steps of
    // Adam over parameters of different sizes, one of them without a
    // gradient: the values and every state must agree bit for bit.
    let run = |parallel: bool| {
        let mut m = model(&[("a", &[0.5, -0.5, 0.25]), ("b", &[1.0; 40]), ("c", &[-1.0, 2.0]), ("d", &[0.1; 7])]);
        let mut opt = Optimizer::new(Algorithm::adam(), 0.05).unwrap();
        let mut step = |m: &mut Params| {
            for k in 0..3 {
                let f = k as f32 + 1.0;
                let gr = grads(m, &[("a", &[f, -f, 0.5]), ("b", &[0.01 * f; 40]), ("d", &[-0.3 * f; 7])]);
                opt.step(m, &gr).unwrap();
            }
        };
        if parallel {
            step(&mut m);
        } else {
            rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(|| step(&mut m));
        }
        let states: Vec<Option<ParamState>> =
            ["a", "b", "c", "d"].iter().map(|n| opt.param_state(n).cloned()).collect();
        ((0..4).map(|i| values(&m, i)).collect::<Vec<_>>(), states)
    };
    let (side_by_side, one_by_one) = (run(true), run(false));
    assert!(side_by_side.1[2].is_none(), "c has no gradient, so no state");
    assert_eq!(side_by_side, one_by_one);
}
