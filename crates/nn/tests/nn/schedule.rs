//! Learning-rate schedules: exact values from their formulas, validation,
//! and resuming from serialized state.

use lingo_nn::{Schedule, Scheduler};

fn first_steps(schedule: Schedule, base: f64, n: usize) -> Vec<f64> {
    let mut s = Scheduler::new(schedule, base).unwrap();
    (0..n).map(|_| s.step()).collect()
}

#[test]
fn constant_and_linear_warmup() {
    assert_eq!(first_steps(Schedule::Constant, 0.3, 3), [0.3, 0.3, 0.3]);
    // η · min(1, t/w) with w = 8, η = 2: powers of two keep every value exact.
    let lrs = first_steps(Schedule::LinearWarmup { warmup_steps: 8 }, 2.0, 10);
    assert_eq!(lrs, [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.0, 2.0]);
}

#[test]
fn warmup_cosine_hits_its_landmarks() {
    let s = Scheduler::new(Schedule::WarmupCosine { warmup_steps: 4, total_steps: 12, min_lr: 0.1 }, 1.1).unwrap();
    assert_eq!(s.lr_at(2), 0.55); // ramp: 1.1 · 2/4
    assert_eq!(s.lr_at(4), 1.1); // peak
    // t = 6: a quarter through the decay, ½(1 + cos(π/4)) = ½ + √2/4
    let quarter = 0.1 + 1.0 * (0.5 + 2.0_f64.sqrt() / 4.0);
    assert!((s.lr_at(6) - quarter).abs() < 1e-15);
    assert!((s.lr_at(8) - 0.6).abs() < 1e-15); // half way: the mean of 1.1 and 0.1
    assert_eq!(s.lr_at(12), 0.1);
    assert_eq!(s.lr_at(1000), 0.1);
    // Without warm-up the decay starts at step 0 from the peak.
    let no_warmup =
        Scheduler::new(Schedule::WarmupCosine { warmup_steps: 0, total_steps: 10, min_lr: 0.0 }, 1.0).unwrap();
    assert_eq!(no_warmup.lr_at(0), 1.0);
    assert!((no_warmup.lr_at(5) - 0.5).abs() < 1e-15);
}

#[test]
fn inverse_sqrt_is_the_noam_shape_with_peak_at_warmup() {
    let lrs = first_steps(Schedule::InverseSqrt { warmup_steps: 4 }, 0.8, 64);
    assert_eq!(lrs[..4], [0.2, 0.4, 0.6000000000000001, 0.8]); // 0.8 · t/4 (0.8·0.75 rounds up in f64)
    assert_eq!(lrs[15], 0.4); // t = 16: 0.8 · √(4/16)
    assert_eq!(lrs[63], 0.2); // t = 64: 0.8 · √(4/64)
    // Noam: d^-½ · min(t^-½, t · w^-1.5) is the same curve scaled to peak d^-½ w^-½.
    let (d, w) = (512.0_f64, 4.0_f64);
    let peak = d.powf(-0.5) * w.powf(-0.5);
    let s = Scheduler::new(Schedule::InverseSqrt { warmup_steps: 4 }, peak).unwrap();
    for t in [1_u64, 3, 4, 9, 100] {
        let noam = d.powf(-0.5) * (t as f64).powf(-0.5).min(t as f64 * w.powf(-1.5));
        assert!((s.lr_at(t) - noam).abs() < 1e-15, "t = {t}");
    }
}

#[test]
fn plateau_cuts_after_patience_and_stops_at_the_floor() {
    let schedule = Schedule::ReduceOnPlateau { factor: 0.5, patience: 0, min_lr: 0.3, threshold: 0.0 };
    let mut s = Scheduler::new(schedule, 1.0).unwrap();
    assert_eq!(s.step(), 1.0); // steps do not move a plateau schedule
    let lrs: Vec<f64> = [2.0, 2.0, 1.0, 1.0, f64::NAN, 1.0].iter().map(|&l| s.observe(l)).collect();
    // best 2; no gain -> 0.5; better; no gain -> 0.3 (floor, not 0.25); NaN is no gain; floor stays
    assert_eq!(lrs, [1.0, 0.5, 0.5, 0.3, 0.3, 0.3]);
    assert_eq!(Scheduler::new(Schedule::plateau(), 1e-3).unwrap().observe(1.0), 1e-3);
}

#[test]
fn non_plateau_schedules_ignore_losses() {
    let mut s = Scheduler::new(Schedule::LinearWarmup { warmup_steps: 2 }, 1.0).unwrap();
    assert_eq!(s.step(), 0.5);
    assert_eq!(s.observe(10.0), 0.5);
    assert_eq!(s.observe(20.0), 0.5);
    assert_eq!(s.step(), 1.0);
}

#[test]
fn resuming_from_serialized_state_continues_the_curve() {
    let schedules = [
        Schedule::WarmupCosine { warmup_steps: 3, total_steps: 20, min_lr: 0.01 },
        Schedule::ReduceOnPlateau { factor: 0.5, patience: 1, min_lr: 0.0, threshold: 1e-4 },
    ];
    let losses = [3.0, 2.5, 2.6, 2.7, 2.4, 2.4, 2.4, 2.3];
    for schedule in schedules {
        let mut straight = Scheduler::new(schedule, 0.1).unwrap();
        let all: Vec<(f64, f64)> = losses.iter().map(|&l| (straight.step(), straight.observe(l))).collect();
        let mut first = Scheduler::new(schedule, 0.1).unwrap();
        let mut resumed: Vec<(f64, f64)> = losses[..4].iter().map(|&l| (first.step(), first.observe(l))).collect();
        let bytes = bincode::serde::encode_to_vec(&first, bincode::config::standard()).unwrap();
        let (mut second, _): (Scheduler, usize) =
            bincode::serde::decode_from_slice(&bytes, bincode::config::standard()).unwrap();
        assert_eq!(second, first);
        resumed.extend(losses[4..].iter().map(|&l| (second.step(), second.observe(l))));
        assert_eq!(all, resumed, "{schedule:?}");
    }
}

#[test]
fn invalid_settings_are_rejected() {
    let bad = [
        Schedule::LinearWarmup { warmup_steps: 0 },
        Schedule::InverseSqrt { warmup_steps: 0 },
        Schedule::WarmupCosine { warmup_steps: 10, total_steps: 10, min_lr: 0.0 },
        Schedule::WarmupCosine { warmup_steps: 1, total_steps: 10, min_lr: -1.0 },
        Schedule::ReduceOnPlateau { factor: 1.0, patience: 1, min_lr: 0.0, threshold: 0.0 },
        Schedule::ReduceOnPlateau { factor: 0.5, patience: 1, min_lr: 0.0, threshold: f64::NAN },
    ];
    for s in bad {
        assert!(Scheduler::new(s, 0.1).is_err(), "{s:?} accepted");
    }
    assert!(Scheduler::new(Schedule::Constant, -0.1).is_err());
}
