//! Inputs that crashed the fuzz targets of `fuzz/` (see `tools/fuzz.sh`),
//! kept byte for byte in `tests/fixtures/fuzz/` (named `<target>-<kind>-<hash>`
//! as libFuzzer saved them) and replayed the way each target read them.
//!
//! The first three were one bug: bincode allocates a string of the length the data
//! declares before reading it, so a few bytes declaring a string of 4 GB
//! (`bpe_load`, `checkpoint`) or 2⁶⁰ bytes (`vocab`, an abort) exhausted
//! memory. `decode_bounded` now checks each declared length against a budget
//! first, and the decoder stops with its limit error. The fourth is a
//! checkpoint whose tensor shape multiplies past `usize::MAX`: counting its
//! elements overflowed (a panic with overflow checks on).

use std::path::Path;

use lingo_data::{Bpe, Vocab};
use lingo_nn::{
    Checkpoint, CheckpointProblem, Error, FORMAT_VERSION, MAGIC, ParamProblem, TrainedModel, decode_bounded, fnv1a64,
};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz").join(name))
        .expect("the fixture is committed")
}

/// The decoder refused the input because of the limit, not for running out of bytes.
#[track_caller]
fn assert_limit_error<T: std::fmt::Debug>(result: lingo_nn::Result<T>) {
    match result {
        Err(Error::Checkpoint { problem: CheckpointProblem::Decode(message), .. }) => {
            assert!(message.contains("LimitExceeded"), "{message}")
        }
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[test]
fn a_vocabulary_declaring_a_huge_token_is_an_error() {
    assert_limit_error(decode_bounded::<Vocab>(&fixture("vocab-crash-553b5e42aa"), Path::new("fuzz")));
}

#[test]
fn a_bpe_model_declaring_a_huge_symbol_is_an_error() {
    assert_limit_error(decode_bounded::<Bpe>(&fixture("bpe_load-oom-d1e77bf30c06"), Path::new("fuzz")));
}

/// Loads a `checkpoint` target input: its first byte 1 means the rest is a
/// payload, to be put behind a valid header.
fn load_checkpoint_input<C: serde::de::DeserializeOwned>(name: &str) -> lingo_nn::Result<Checkpoint<C>> {
    let input = fixture(name);
    let (&mode, payload) = input.split_first().unwrap();
    assert_eq!(mode & 1, 1);
    let mut file = MAGIC.to_vec();
    file.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    file.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    file.extend_from_slice(&fnv1a64(payload).to_le_bytes());
    file.extend_from_slice(payload);
    Checkpoint::from_bytes(&file, Path::new("fuzz.ckpt"))
}

#[test]
fn a_checksummed_checkpoint_declaring_a_huge_string_is_an_error() {
    assert_limit_error(load_checkpoint_input::<TrainedModel>("checkpoint-oom-ba1865cde737"));
}

/// The configuration of format-1 training checkpoints, which the fuzzer's
/// input was made from (format 2 added the run's identity and settings).
#[derive(serde::Deserialize)]
#[allow(dead_code)] // decoded for its layout, never read
struct FormatOneRun {
    model: lingo_nn::Seq2SeqConfig,
    train_losses: Vec<f32>,
    val_losses: Vec<f32>,
    best_epoch: usize,
}

/// The old product panicked only where overflow is checked (a debug
/// `cargo test`, and the fuzz build); in release it wrapped silently.
#[test]
fn a_tensor_shape_past_usize_max_is_a_length_error() {
    let ckpt = load_checkpoint_input::<FormatOneRun>("checkpoint-crash-5787bc674a").expect("the file itself decodes");
    let overflowing = ckpt
        .params
        .tensors()
        .iter()
        .find(|t| t.shape.iter().try_fold(1_usize, |n, &d| n.checked_mul(d)).is_none())
        .expect("a shape that overflows");
    match overflowing.to_array() {
        // Past usize::MAX counts as usize::MAX, unless a 0 makes the true product 0.
        Err(Error::Param { problem: ParamProblem::Length { expected, .. }, .. }) => {
            assert_eq!(expected, if overflowing.shape.contains(&0) { 0 } else { usize::MAX });
        }
        other => panic!("expected a length error, got {other:?}"),
    }
}
