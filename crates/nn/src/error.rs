//! The one error type of lingo-nn.

use std::path::PathBuf;

/// Everything that can go wrong in `lingo-nn`.
///
/// Errors from the tensor and data crates pass through unchanged
/// ([`Error::Tensor`], [`Error::Data`]); checkpoint errors name the file,
/// parameter errors name the parameter.
///
/// ```
/// use lingo_nn::{Error, Dropout};
/// let err = Dropout::new(1.5).unwrap_err();
/// assert!(matches!(err, Error::Config { .. }));
/// assert_eq!(err.to_string(), "invalid dropout probability: must be in [0, 1), got 1.5");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A tensor operation failed (shapes that do not fit, an id out of range, ...).
    #[error(transparent)]
    Tensor(#[from] lingo_tensor::Error),
    /// A data-crate operation failed.
    #[error(transparent)]
    Data(#[from] lingo_data::Error),
    /// An attention scorer refused its configuration or inputs.
    #[error(transparent)]
    Attention(#[from] lingo_attention::Error),
    /// The training loss (or the validation loss after an epoch) became NaN
    /// or infinite: training stopped there, and checkpoints of earlier epochs
    /// were left as they were.
    #[error(
        "{what} loss is {value} at epoch {epoch}, step {step}: stopped (lower the learning rate or clip gradients)"
    )]
    NonFiniteLoss {
        /// `"training"` (the loss of the step) or `"validation"` (after the epoch's last step).
        what: &'static str,
        /// The epoch (1-based) of the step.
        epoch: u64,
        /// The optimizer step (1-based, counted over the whole run).
        step: u64,
        /// The loss value seen.
        value: f32,
    },
    /// A layer, optimizer or schedule setting, or an argument, is out of range.
    #[error("invalid {what}: {reason}")]
    Config {
        /// Which setting or argument.
        what: &'static str,
        /// Why it is rejected.
        reason: String,
    },
    /// A model's parameters and saved (or optimizer) state disagree.
    #[error("parameter {name}: {problem}")]
    Param {
        /// The parameter's full name, e.g. `encoder.rnn.weight_hh_l0`.
        name: String,
        /// What does not match.
        problem: ParamProblem,
    },
    /// A training step failed; says where, and why in `source`.
    #[error("epoch {epoch}, step {step}: {source}")]
    Training {
        /// The epoch (1-based) of the step.
        epoch: u64,
        /// The optimizer step (1-based, counted over the whole run).
        step: u64,
        /// What went wrong (a non-finite gradient, say).
        source: Box<Error>,
    },
    /// A gradient holds NaN or infinity; the optimizer left every parameter unchanged.
    #[error("non-finite gradient (global norm {norm}) first seen in parameter {name}")]
    NonFiniteGradient {
        /// The first parameter, in module order, whose gradient is not finite.
        name: String,
        /// The global L2 norm of all gradients (NaN or infinite).
        norm: f32,
    },
    /// A checkpoint file could not be written or read back.
    #[error("checkpoint {}: {problem}", .path.display())]
    Checkpoint {
        /// The checkpoint file.
        path: PathBuf,
        /// What went wrong.
        problem: CheckpointProblem,
    },
    /// A file of an exported directory (`model.safetensors`, `config.json`)
    /// could not be written, or read back as a translator.
    #[error("{}: {problem}", .path.display())]
    Export {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        problem: ExportProblem,
    },
}

/// How a model's parameters and a state dict (or optimizer state) disagree.
///
/// ```
/// let p = lingo_nn::ParamProblem::Shape { expected: vec![4, 2], found: vec![2, 4] };
/// assert_eq!(p.to_string(), "shape [2, 4] does not fit the model's [4, 2]");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamProblem {
    /// The model has the parameter; the saved state does not.
    #[error("missing from the saved state")]
    Missing,
    /// The saved state has the parameter; the model does not.
    #[error("not a parameter of the model")]
    Unexpected,
    /// Shapes differ.
    #[error("shape {found:?} does not fit the model's {expected:?}")]
    Shape {
        /// The model's shape.
        expected: Vec<usize>,
        /// The saved (or gradient's) shape.
        found: Vec<usize>,
    },
    /// Two parameters of one model share this name.
    #[error("the name is used twice")]
    Duplicate,
    /// Saved data holds a different number of values than its shape says.
    #[error("{found} values stored for {expected} elements")]
    Length {
        /// Elements the shape (or parameter) needs.
        expected: usize,
        /// Values actually present.
        found: usize,
    },
    /// Optimizer state made by a different algorithm (e.g. SGD state given to Adam).
    #[error("optimizer state belongs to {found}, not {expected}")]
    Algorithm {
        /// The optimizer stepping now.
        expected: &'static str,
        /// The algorithm that made the state.
        found: &'static str,
    },
}

/// What is wrong with a checkpoint file (the path is in [`Error::Checkpoint`]).
///
/// ```
/// let p = lingo_nn::CheckpointProblem::Version { found: 7, supported: 1 };
/// assert_eq!(p.to_string(), "format version 7 is not supported (this build reads version 1)");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointProblem {
    /// Reading, writing, syncing or renaming failed.
    #[error("I/O error: {0}")]
    Io(#[source] std::io::Error),
    /// The path is a device, a pipe or a directory, not a file.
    #[error("not a regular file (a device, a pipe or a directory)")]
    NotAFile,
    /// The file ends before the header or the payload it announces.
    #[error("truncated: {found} bytes, but the {part} needs {needed}")]
    Truncated {
        /// Bytes in the file.
        found: u64,
        /// Bytes needed.
        needed: u64,
        /// `"header"` or `"payload"`.
        part: &'static str,
    },
    /// The first eight bytes are not `LINGOCKP`: not a lingo checkpoint.
    #[error("not a lingo checkpoint: the file starts with {found:?}, not \"LINGOCKP\"")]
    Magic {
        /// The first bytes of the file, lossily as text.
        found: String,
    },
    /// Written by a build with another format version (or the header is damaged).
    #[error("format version {found} is not supported (this build reads version {supported})")]
    Version {
        /// The version in the file.
        found: u32,
        /// The version this build reads and writes.
        supported: u32,
    },
    /// The payload's checksum differs from the stored one: the file is corrupt.
    #[error("corrupt: payload checksum {computed:#018x} differs from the stored {stored:#018x}")]
    Checksum {
        /// Checksum in the header.
        stored: u64,
        /// Checksum of the payload as read.
        computed: u64,
    },
    /// Bytes follow the payload the header announces.
    #[error("{extra} unexpected bytes after the payload")]
    TrailingBytes {
        /// How many.
        extra: u64,
    },
    /// The payload is intact but does not decode as this checkpoint type
    /// (e.g. saved with another model configuration type).
    #[error("cannot decode the payload: {0}")]
    Decode(String),
    /// The checkpoint could not be encoded.
    #[error("cannot encode: {0}")]
    Encode(String),
    /// The file is intact but its parts disagree: the model configuration
    /// with the stored vocabularies, or the saved parameters' shapes with the
    /// model the configuration describes (or the configuration is invalid).
    #[error("inconsistent: {0}")]
    Inconsistent(String),
    /// A training checkpoint (`best.ckpt`, `last.ckpt`) where a translator's
    /// was expected: it has no tokenizer.
    #[error("a training checkpoint, without the tokenizer translating needs; lingo train writes model.ckpt beside it")]
    NoTokenizer,
    /// The file is intact and consistent, but was written by a run with
    /// another model configuration or other vocabularies than the one
    /// resuming from it.
    #[error("not from this run: {0}")]
    OtherRun(String),
}

/// What is wrong with a file of an exported directory (the path is in
/// [`Error::Export`]).
///
/// ```
/// let p = lingo_nn::ExportProblem::Dtype { name: "out.weight".into(), dtype: "BF16".into() };
/// assert_eq!(p.to_string(), "tensor out.weight is BF16; lingo reads F32 only");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportProblem {
    /// Reading, writing, syncing or renaming failed.
    #[error("I/O error: {0}")]
    Io(#[source] std::io::Error),
    /// A device, a pipe or a directory where a file was expected: never
    /// read, as an endless device would never end.
    #[error("not a regular file (a device, a pipe or a directory)")]
    NotAFile,
    /// The safetensors header or its offsets are not valid (the safetensors
    /// crate's message: truncated, oversized, overlapping, out of bounds).
    #[error("not a valid safetensors file: {0}")]
    Safetensors(String),
    /// A tensor of another element type than `f32`.
    #[error("tensor {name} is {dtype}; lingo reads F32 only")]
    Dtype {
        /// The tensor's name.
        name: String,
        /// Its element type, as the safetensors header names it.
        dtype: String,
    },
    /// `config.json` is not valid JSON, or not of the expected form
    /// (serde_json's message, with the line and column).
    #[error("{0}")]
    Json(String),
    /// `config.json` describes something other than a lingo translator, or
    /// another version of the format.
    #[error("format {found:?} is not supported (this build reads {supported:?})")]
    Format {
        /// The `format` field found.
        found: String,
        /// The one this build reads.
        supported: String,
    },
    /// The weights do not fit the model `config.json` describes (a missing,
    /// extra or misnamed tensor, a shape that disagrees), or the
    /// configuration itself is not valid.
    #[error("{0}")]
    Model(Box<Error>),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Shorthand for [`Error::Config`].
pub(crate) fn config(what: &'static str, reason: impl Into<String>) -> Error {
    Error::Config { what, reason: reason.into() }
}

/// Shorthand for [`Error::Param`].
pub(crate) fn param(name: &str, problem: ParamProblem) -> Error {
    Error::Param { name: name.to_owned(), problem }
}
