//! Ctrl-C (SIGINT) and SIGTERM while `lingo train` runs.
//!
//! The first asks training to stop before its next step: the round in
//! progress is dropped, `model.ckpt` is written from the best round so far,
//! and the command reports what it kept and exits with status 130. A second
//! one ends the process at once; the atomic saves keep every file whole
//! either way. Outside training the signals end the process as usual.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use lingo::nn::RunControl;

use crate::error::{Error, INTERRUPTED, Result};
use crate::output::print_err;

/// Stopped by the first signal; asked by the training loop before every step.
static STOP: OnceLock<RunControl> = OnceLock::new();

/// Whether a signal now means "stop training" rather than "quit".
static TRAINING: AtomicBool = AtomicBool::new(false);

/// The control the signals stop, with the handler installed on the first
/// call; from now until [`training_done`] a signal stops training.
pub(crate) fn stop_control() -> Result<RunControl> {
    TRAINING.store(true, Ordering::SeqCst);
    if let Some(stop) = STOP.get() {
        return Ok(stop.clone());
    }
    let stop = RunControl::new();
    let seen = stop.clone();
    ctrlc::set_handler(move || {
        if seen.is_stopped() || !TRAINING.load(Ordering::SeqCst) {
            print_err("interrupted: quitting now (the files on disk are whole)");
            std::process::exit(i32::from(INTERRUPTED));
        }
        seen.stop();
        print_err("interrupted: stopping before the next step, then writing model.ckpt from the best round (Ctrl-C again to quit at once)");
    })
    .map_err(|e| Error::invalid("signal handler", e.to_string()))?;
    Ok(STOP.get_or_init(|| stop).clone())
}

/// Training is over and its model written: a signal now ends the process.
pub(crate) fn training_done() {
    TRAINING.store(false, Ordering::SeqCst);
}
