//! Checkpoint loading on arbitrary bytes: always an error or a checkpoint,
//! never a panic, an abort or a huge allocation. Half the inputs are taken
//! as the whole file (header checks), half as a payload behind a valid
//! header, so that the bincode decoder itself is fuzzed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo_fuzz::{check_vocab, frame};
use lingo_nn::{Checkpoint, TrainedModel};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let file = if mode & 1 == 0 { rest.to_vec() } else { frame(rest) };
    let Ok(ckpt) = Checkpoint::<TrainedModel>::from_bytes(&file, Path::new("fuzz.ckpt")) else { return };
    // What restoring would do next: every tensor's values against its shape.
    for tensor in ckpt.params.tensors() {
        let _ = tensor.to_array();
    }
    check_vocab(&ckpt.src_vocab);
    check_vocab(&ckpt.tgt_vocab);
});
