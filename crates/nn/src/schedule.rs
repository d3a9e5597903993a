//! Learning-rate schedules.
//!
//! A [`Scheduler`] turns a base learning rate `η` and a [`Schedule`] into the
//! rate of each optimizer step `t = 1, 2, ...` (warm-up, decay), and, for
//! [`Schedule::ReduceOnPlateau`], into a rate that drops when the validation
//! loss stops improving. Its whole state serializes into a checkpoint.
//!
//! ```
//! use lingo_nn::{Algorithm, Optimizer, Schedule, Scheduler};
//! let mut opt = Optimizer::new(Algorithm::adam(), 1.0).unwrap();
//! let mut sched = Scheduler::new(Schedule::LinearWarmup { warmup_steps: 4 }, 1.0).unwrap();
//! let mut lrs = Vec::new();
//! for _ in 0..6 {
//!     opt.set_lr(sched.step());   // before every optimizer step
//!     lrs.push(opt.lr());
//!     // ... backward, opt.step(&mut model, &grads) ...
//! }
//! assert_eq!(lrs, [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]);   // η · min(1, t/4)
//! ```

use std::f64::consts::PI;

use serde::{Deserialize, Serialize};

use crate::error::{Result, config};

/// How the learning rate moves; `η` is the base rate, `t ≥ 1` the step, `w`
/// the warm-up steps.
///
/// ```
/// let s = lingo_nn::Schedule::WarmupCosine { warmup_steps: 100, total_steps: 1000, min_lr: 0.0 };
/// assert!(matches!(s, lingo_nn::Schedule::WarmupCosine { .. }));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Schedule {
    /// `η_t = η`.
    Constant,
    /// `η_t = η · min(1, t / w)`: a linear ramp from `η/w` to `η` over `w` steps, then flat.
    LinearWarmup {
        /// `w ≥ 1`.
        warmup_steps: u64,
    },
    /// The linear ramp, then half a cosine from `η` down to `η_min` at step `T`:
    /// `η_t = η_min + (η - η_min) · ½(1 + cos(π · (t - w) / (T - w)))` for
    /// `w < t < T`, and `η_min` from `T` on.
    WarmupCosine {
        /// `w` (0 for no warm-up).
        warmup_steps: u64,
        /// `T > w`, where the decay ends.
        total_steps: u64,
        /// `η_min ≥ 0`.
        min_lr: f64,
    },
    /// The linear ramp, then inverse square-root decay (the "Noam" schedule of
    /// Vaswani et al., 2017, with `η` as the peak): `η_t = η · min(t / w, √(w / t))`.
    InverseSqrt {
        /// `w ≥ 1`, the step of the peak.
        warmup_steps: u64,
    },
    /// PyTorch's `ReduceLROnPlateau(mode="min", threshold_mode="rel")`: after
    /// each epoch's [`Scheduler::observe`] of the validation loss `L`, a loss
    /// below `best · (1 - threshold)` is an improvement; after more than
    /// `patience` epochs without one, `η ← max(η · factor, min_lr)`.
    ReduceOnPlateau {
        /// Multiplier in `(0, 1)`.
        factor: f64,
        /// Epochs without improvement tolerated before a cut.
        patience: u32,
        /// The floor.
        min_lr: f64,
        /// Relative improvement that counts (PyTorch's default is `1e-4`).
        threshold: f64,
    },
}

impl Schedule {
    /// PyTorch's `ReduceLROnPlateau` defaults: `factor` 0.1, `patience` 10,
    /// `min_lr` 0, `threshold` 1e-4.
    ///
    /// ```
    /// assert!(matches!(lingo_nn::Schedule::plateau(), lingo_nn::Schedule::ReduceOnPlateau { patience: 10, .. }));
    /// ```
    pub fn plateau() -> Schedule {
        Schedule::ReduceOnPlateau { factor: 0.1, patience: 10, min_lr: 0.0, threshold: 1e-4 }
    }

    fn validate(&self) -> Result<()> {
        let at_least_one =
            |w: u64| if w >= 1 { Ok(()) } else { Err(config("schedule warmup_steps", "must be at least 1")) };
        let floor = |m: f64| {
            if m.is_finite() && m >= 0.0 {
                Ok(())
            } else {
                Err(config("schedule min_lr", format!("must be finite and ≥ 0, got {m}")))
            }
        };
        match *self {
            Schedule::Constant => Ok(()),
            Schedule::LinearWarmup { warmup_steps } | Schedule::InverseSqrt { warmup_steps } => {
                at_least_one(warmup_steps)
            }
            Schedule::WarmupCosine { warmup_steps, total_steps, min_lr } => {
                if total_steps <= warmup_steps {
                    return Err(config(
                        "schedule total_steps",
                        format!("must exceed warmup_steps ({total_steps} ≤ {warmup_steps})"),
                    ));
                }
                floor(min_lr)
            }
            Schedule::ReduceOnPlateau { factor, min_lr, threshold, .. } => {
                if !(factor > 0.0 && factor < 1.0) {
                    return Err(config("plateau factor", format!("must be in (0, 1), got {factor}")));
                }
                if !(threshold.is_finite() && threshold >= 0.0) {
                    return Err(config("plateau threshold", format!("must be finite and ≥ 0, got {threshold}")));
                }
                floor(min_lr)
            }
        }
    }
}

/// A schedule in motion: the base rate, the step count, and the plateau
/// bookkeeping. See the [module docs](self) for the calling pattern.
///
/// ```
/// use lingo_nn::{Schedule, Scheduler};
/// let mut s = Scheduler::new(Schedule::InverseSqrt { warmup_steps: 4 }, 1.0).unwrap();
/// let lrs: Vec<f64> = (0..16).map(|_| s.step()).collect();
/// assert_eq!(lrs[3], 1.0);                 // the peak at t = w
/// assert_eq!(lrs[15], 0.5);                // √(4/16)
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scheduler {
    schedule: Schedule,
    base_lr: f64,
    /// Optimizer steps taken so far (`t` of the last [`Scheduler::step`]).
    steps: u64,
    /// The current rate.
    lr: f64,
    /// Plateau: the best loss so far and the epochs since it.
    best: Option<f64>,
    bad_epochs: u32,
}

impl Scheduler {
    /// A schedule for base rate `base_lr ≥ 0`, before its first step.
    ///
    /// ```
    /// use lingo_nn::{Schedule, Scheduler};
    /// assert!(Scheduler::new(Schedule::LinearWarmup { warmup_steps: 0 }, 1e-3).is_err());
    /// assert_eq!(Scheduler::new(Schedule::Constant, 1e-3).unwrap().lr(), 1e-3);
    /// ```
    pub fn new(schedule: Schedule, base_lr: f64) -> Result<Scheduler> {
        if !(base_lr.is_finite() && base_lr >= 0.0) {
            return Err(config("learning rate", format!("must be finite and ≥ 0, got {base_lr}")));
        }
        schedule.validate()?;
        let mut s = Scheduler { schedule, base_lr, steps: 0, lr: base_lr, best: None, bad_epochs: 0 };
        s.lr = s.lr_at(0);
        Ok(s)
    }

    /// Advances to the next optimizer step and returns its rate.
    ///
    /// ```
    /// use lingo_nn::{Schedule, Scheduler};
    /// let mut s = Scheduler::new(Schedule::LinearWarmup { warmup_steps: 2 }, 0.1).unwrap();
    /// assert_eq!((s.step(), s.step(), s.step()), (0.05, 0.1, 0.1));
    /// assert_eq!(s.steps(), 3);
    /// ```
    pub fn step(&mut self) -> f64 {
        self.steps += 1;
        self.lr = self.lr_at(self.steps);
        self.lr
    }

    /// Whether the schedule has an end for [`Scheduler::end_at`] to move
    /// (only [`Schedule::WarmupCosine`] does).
    ///
    /// ```
    /// use lingo_nn::{Schedule, Scheduler};
    /// assert!(!Scheduler::new(Schedule::LinearWarmup { warmup_steps: 5 }, 1.0).unwrap().has_end());
    /// ```
    pub fn has_end(&self) -> bool {
        matches!(self.schedule, Schedule::WarmupCosine { .. })
    }

    /// Moves the end of a schedule that has one ([`Schedule::WarmupCosine`])
    /// to `total_steps` (at least one step past the warm-up), so the decay
    /// fits a run whose length is known only once it has begun; the rate of
    /// the next step follows the new end. Other schedules are unchanged.
    ///
    /// ```
    /// use lingo_nn::{Schedule, Scheduler};
    /// let mut s = Scheduler::new(Schedule::WarmupCosine { warmup_steps: 0, total_steps: 100, min_lr: 0.0 }, 1.0).unwrap();
    /// s.step();
    /// s.end_at(2);
    /// assert_eq!(s.step(), 0.0);                  // step 2 is now the end
    /// assert_eq!(*s.schedule(), Schedule::WarmupCosine { warmup_steps: 0, total_steps: 2, min_lr: 0.0 });
    /// ```
    pub fn end_at(&mut self, total_steps: u64) {
        if let Schedule::WarmupCosine { warmup_steps, total_steps: end, .. } = &mut self.schedule {
            *end = total_steps.max(*warmup_steps + 1);
        }
    }

    /// Ends an epoch with its validation loss. Only
    /// [`Schedule::ReduceOnPlateau`] reacts; every schedule returns the
    /// current rate.
    ///
    /// ```
    /// use lingo_nn::{Schedule, Scheduler};
    /// let plateau = Schedule::ReduceOnPlateau { factor: 0.5, patience: 1, min_lr: 0.0, threshold: 0.0 };
    /// let mut s = Scheduler::new(plateau, 1.0).unwrap();
    /// let lrs: Vec<f64> = [3.0, 2.0, 2.0, 2.0, 1.0].iter().map(|&l| s.observe(l)).collect();
    /// assert_eq!(lrs, [1.0, 1.0, 1.0, 0.5, 0.5]);   // two epochs without improvement, then the cut
    /// ```
    pub fn observe(&mut self, val_loss: f64) -> f64 {
        if let Schedule::ReduceOnPlateau { factor, patience, min_lr, threshold } = self.schedule {
            // A NaN loss is never an improvement.
            if self.best.is_none_or(|best| val_loss < best * (1.0 - threshold)) {
                self.best = Some(val_loss);
                self.bad_epochs = 0;
            } else {
                self.bad_epochs += 1;
            }
            if self.bad_epochs > patience {
                let reduced = (self.lr * factor).max(min_lr);
                // PyTorch ignores cuts smaller than its eps = 1e-8.
                if self.lr - reduced > 1e-8 {
                    self.lr = reduced;
                }
                self.bad_epochs = 0;
            }
        }
        self.lr
    }

    /// The current rate (of the last step, or the initial one before any).
    ///
    /// ```
    /// let s = lingo_nn::Scheduler::new(lingo_nn::Schedule::LinearWarmup { warmup_steps: 10 }, 1.0).unwrap();
    /// assert_eq!(s.lr(), 0.0);   // t = 0: nothing warmed up yet
    /// ```
    pub fn lr(&self) -> f64 {
        self.lr
    }

    /// Optimizer steps taken so far.
    ///
    /// ```
    /// assert_eq!(lingo_nn::Scheduler::new(lingo_nn::Schedule::Constant, 1.0).unwrap().steps(), 0);
    /// ```
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The schedule.
    ///
    /// ```
    /// let s = lingo_nn::Scheduler::new(lingo_nn::Schedule::Constant, 1.0).unwrap();
    /// assert_eq!(s.schedule(), &lingo_nn::Schedule::Constant);
    /// ```
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The rate of step `t` as a pure function of `t` (for a plateau
    /// schedule: the current rate, which depends on losses, not steps).
    ///
    /// ```
    /// use lingo_nn::{Schedule, Scheduler};
    /// let s = Scheduler::new(Schedule::WarmupCosine { warmup_steps: 10, total_steps: 110, min_lr: 0.0 }, 1.0).unwrap();
    /// assert_eq!(s.lr_at(5), 0.5);
    /// assert!((s.lr_at(60) - 0.5).abs() < 1e-12);    // half way through the cosine
    /// assert_eq!(s.lr_at(500), 0.0);
    /// ```
    pub fn lr_at(&self, t: u64) -> f64 {
        let eta = self.base_lr;
        let ramp = |w: u64| eta * (t as f64 / w as f64).min(1.0); // η · min(1, t/w)
        match self.schedule {
            Schedule::Constant => eta,
            Schedule::LinearWarmup { warmup_steps } => ramp(warmup_steps),
            Schedule::WarmupCosine { warmup_steps: w, total_steps: total, min_lr } => {
                if t <= w {
                    if w == 0 { eta } else { ramp(w) }
                } else if t >= total {
                    min_lr
                } else {
                    let progress = (t - w) as f64 / (total - w) as f64;
                    min_lr + (eta - min_lr) * 0.5 * (1.0 + (PI * progress).cos())
                }
            }
            Schedule::InverseSqrt { warmup_steps: w } => {
                if t <= w {
                    ramp(w)
                } else {
                    eta * (w as f64 / t as f64).sqrt()
                }
            }
            Schedule::ReduceOnPlateau { .. } => self.lr,
        }
    }
}
