//! Pausing, resuming and stopping a training run from outside it.
//!
//! A [`RunControl`] is a handle shared between the run (through
//! [`TrainConfig::control`](crate::TrainConfig::control)) and whoever
//! steers it: a Ctrl-C handler, a live view's "pause" button, a program's
//! own stopping rule. Training asks it before every optimizer step
//! ([`RunControl::proceed`]), so a pause or a stop takes effect between
//! two steps, never inside one, and a paused run holds its thread until it
//! is resumed, stepped or stopped. The same handle scales the learning
//! rate from the next step on ([`RunControl::scale_lr`]), the one setting a
//! live view lets its user change while a run trains.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

const RUNNING: u8 = 0;
const PAUSED: u8 = 1;
const STOPPED: u8 = 2;

/// A handle that pauses, resumes, steps or stops a run between its steps;
/// clones share one state. Give each run its own clone: a
/// [`step`](Self::step) lets every clone's run take one step.
///
/// ```
/// let control = lingo_nn::RunControl::new();
/// let button = control.clone();             // what a UI thread would hold
/// assert!(control.proceed());               // running: go on at once
/// button.pause();
/// assert!(control.is_paused());
/// let run = std::thread::spawn(move || control.proceed()); // blocks while paused
/// button.stop();                            // wakes it: the run ends before its next step
/// assert!(!run.join().unwrap());
/// ```
#[derive(Debug, Default)]
pub struct RunControl {
    shared: Arc<Shared>,
    /// [`Shared::granted`] as this handle's run last saw it: a paused run
    /// takes a step when more have been granted since.
    seen: AtomicU64,
}

#[derive(Debug, Default)]
struct Shared {
    /// Single steps granted to paused runs so far ([`RunControl::step`]).
    granted: AtomicU64,
    /// `RUNNING`, `PAUSED` or `STOPPED`; read at every step without a lock.
    state: AtomicU8,
    /// Held while the state changes, so a waiting run never misses a wake-up.
    lock: Mutex<()>,
    changed: Condvar,
    /// The learning-rate factor ([`RunControl::scale_lr`]) as `f64` bits; 0
    /// (the bits of `0.0`) stands for the default 1.
    lr_scale: AtomicU64,
}

/// A clone shares the state; its run owes nothing of the steps granted before.
impl Clone for RunControl {
    fn clone(&self) -> RunControl {
        let seen = AtomicU64::new(self.shared.granted.load(Ordering::Acquire));
        RunControl { shared: Arc::clone(&self.shared), seen }
    }
}

impl RunControl {
    /// A control in the running state.
    ///
    /// ```
    /// assert!(!lingo_nn::RunControl::new().is_stopped());
    /// ```
    pub fn new() -> RunControl {
        RunControl::default()
    }

    /// Holds the run before its next step, until [`resume`](Self::resume)
    /// or [`stop`](Self::stop). A stopped run stays stopped.
    ///
    /// ```
    /// let control = lingo_nn::RunControl::new();
    /// control.stop();
    /// control.pause();
    /// assert!(control.is_stopped());
    /// ```
    pub fn pause(&self) {
        self.set(|state| if state == STOPPED { STOPPED } else { PAUSED });
    }

    /// Lets a paused (or stopped) run go on from its next step.
    ///
    /// ```
    /// let control = lingo_nn::RunControl::new();
    /// control.pause();
    /// control.resume();
    /// assert!(control.proceed());
    /// ```
    pub fn resume(&self) {
        self.set(|_| RUNNING);
    }

    /// Ends the run before its next step (waking it if paused): the epoch
    /// in progress is dropped, as [`TrainResult::interrupted`](crate::TrainResult::interrupted) says.
    ///
    /// ```
    /// let control = lingo_nn::RunControl::new();
    /// control.stop();
    /// assert!(!control.proceed());
    /// ```
    pub fn stop(&self) {
        self.set(|_| STOPPED);
    }

    /// Lets a run take one more step and then hold: pauses a running run,
    /// and grants every run paused on this control's clones one step. A
    /// step asked before the run took the last one adds nothing; a stopped
    /// run stays stopped.
    ///
    /// ```
    /// let control = lingo_nn::RunControl::new();
    /// let (a, b) = (control.clone(), control.clone()); // two runs side by side
    /// control.step();
    /// assert!(control.is_paused());
    /// assert!(a.proceed() && b.proceed());             // one step each...
    /// control.stop();
    /// assert!(!a.proceed());                           // ...and no more
    /// ```
    pub fn step(&self) {
        self.set(|state| {
            if state != STOPPED {
                self.shared.granted.fetch_add(1, Ordering::AcqRel);
            }
            if state == STOPPED { STOPPED } else { PAUSED }
        });
    }

    /// Multiplies the learning rate of every later step by `factor` (a
    /// positive finite number, 1 to undo): the schedule still runs, so a
    /// warmup or a decay keeps its shape at the new height. A step already
    /// started keeps the rate it began with.
    ///
    /// # Panics
    /// If `factor` is not positive and finite: callers check what users type.
    ///
    /// ```
    /// let control = lingo_nn::RunControl::new();
    /// assert_eq!(control.lr_scale(), 1.0);
    /// control.scale_lr(0.25);                  // lr 0.01 trains on at 0.0025
    /// assert_eq!(control.lr_scale(), 0.25);
    /// ```
    pub fn scale_lr(&self, factor: f64) {
        assert!(factor.is_finite() && factor > 0.0, "learning-rate factor {factor} is not positive and finite");
        self.shared.lr_scale.store(factor.to_bits(), Ordering::Release);
    }

    /// The factor [`scale_lr`](Self::scale_lr) set, 1 until it is called.
    ///
    /// ```
    /// assert_eq!(lingo_nn::RunControl::new().lr_scale(), 1.0);
    /// ```
    pub fn lr_scale(&self) -> f64 {
        match self.shared.lr_scale.load(Ordering::Acquire) {
            0 => 1.0,
            bits => f64::from_bits(bits),
        }
    }

    /// Whether [`stop`](Self::stop) was asked (and not undone by a resume).
    ///
    /// ```
    /// assert!(!lingo_nn::RunControl::new().is_stopped());
    /// ```
    pub fn is_stopped(&self) -> bool {
        self.shared.state.load(Ordering::Acquire) == STOPPED
    }

    /// Whether the run is held by [`pause`](Self::pause).
    ///
    /// ```
    /// let control = lingo_nn::RunControl::new();
    /// control.pause();
    /// assert!(control.is_paused());
    /// ```
    pub fn is_paused(&self) -> bool {
        self.shared.state.load(Ordering::Acquire) == PAUSED
    }

    /// What a run calls before each step: returns at once while running,
    /// blocks while paused, and says whether to take the step (`false`:
    /// stopped).
    ///
    /// ```
    /// assert!(lingo_nn::RunControl::new().proceed());
    /// ```
    pub fn proceed(&self) -> bool {
        let granted = || self.shared.granted.load(Ordering::Acquire);
        if self.shared.state.load(Ordering::Acquire) == RUNNING {
            // A step granted while this run was running is not owed to it later.
            self.seen.store(granted(), Ordering::Relaxed);
            return true;
        }
        let mut guard = self.shared.lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            match self.shared.state.load(Ordering::Acquire) {
                PAUSED if granted() > self.seen.load(Ordering::Relaxed) => {
                    self.seen.store(granted(), Ordering::Relaxed);
                    return true;
                }
                PAUSED => guard = self.shared.changed.wait(guard).unwrap_or_else(PoisonError::into_inner),
                state => return state != STOPPED,
            }
        }
    }

    /// Moves the state by `next` and wakes a waiting run.
    fn set(&self, next: impl FnOnce(u8) -> u8) {
        let _guard = self.shared.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let state = next(self.shared.state.load(Ordering::Acquire));
        self.shared.state.store(state, Ordering::Release);
        self.shared.changed.notify_all();
    }
}
