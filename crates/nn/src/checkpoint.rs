//! Checkpoints: everything needed to resume training or to translate,
//! in one checksummed file written atomically.
//!
//! # File format (version 3)
//!
//! | bytes | content |
//! |---|---|
//! | 0..8 | magic `LINGOCKP` |
//! | 8..12 | format version, `u32` little-endian |
//! | 12..20 | payload length `n`, `u64` little-endian |
//! | 20..28 | FNV-1a 64 checksum of the payload, `u64` little-endian |
//! | 28..28+n | payload: the [`Checkpoint`], bincode 2 (standard config) via serde |
//!
//! Version 2 added the run's identity and settings to training checkpoints
//! ([`TrainedModel`](crate::TrainedModel)); version 3 stores `lingo
//! train`'s model as either kind ([`AnyConfig`](crate::AnyConfig)). Files
//! of other versions are refused with [`CheckpointProblem::Version`].
//!
//! Reading checks, in order: the magic (a foreign file), the version, the
//! length (a truncated file, or trailing bytes), the checksum (a corrupt
//! file), and only then decodes. FNV-1a catches *every* single changed byte
//! of the payload: each step `h ← (h ⊕ byte) · p` is a bijection of `h` for
//! the odd prime `p`, so two payloads differing in one byte reach different
//! states there and never meet again. A changed header byte is caught by the
//! magic, version, length or checksum check it falls in.
//!
//! # Atomic writes
//!
//! [`write_atomic`] writes a temporary file in the target's directory,
//! `fsync`s it, renames it over the target and `fsync`s the directory, so a
//! crash leaves either the old checkpoint or the new one, never half of one.
//!
//! A process killed between creating the temporary file and renaming it
//! leaves the temporary file behind. It is harmless: its name,
//! `.<name>.tmp-<pid>-<n>`, is hidden and is never the checkpoint's, so no
//! load reads it. It does take a checkpoint's space, so a training run with
//! checkpoints deletes the leftovers of its checkpoint files when it starts
//! ([`remove_stale_temp_files`]).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use lingo_data::Vocab;
use lingo_tensor::Module;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{CheckpointProblem, Error, Result};
use crate::optim::Optimizer;
use crate::schedule::Scheduler;
use crate::state_dict::StateDict;

/// The first eight bytes of every checkpoint file.
pub const MAGIC: &[u8; 8] = b"LINGOCKP";

/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 3;

/// Magic, version, payload length, checksum.
const HEADER_LEN: usize = 8 + 4 + 8 + 8;

/// A training snapshot: the model's configuration (any serde type `C`,
/// chosen by the model crate), its weights, the optimizer and schedule
/// state, the position in training, and both vocabularies.
///
/// ```
/// use lingo_nn::{Checkpoint, Init, Linear};
/// use lingo_data::Vocab;
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let model = Linear::new("out", 3, 2, true, Init::default(), &mut rng).unwrap();
/// let dir = std::env::temp_dir().join(format!("lingo-nn-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("best.ckpt");
///
/// let ckpt = Checkpoint::new((3_usize, 2_usize), &model, Vocab::new(), Vocab::new()).unwrap();
/// ckpt.save(&path).unwrap();
/// let back: Checkpoint<(usize, usize)> = Checkpoint::load(&path).unwrap();
/// assert_eq!(back, ckpt);
///
/// let mut fresh = Linear::new("out", 3, 2, true, Init::default(), &mut rng).unwrap();
/// back.restore(&mut fresh).unwrap();
/// assert_eq!(fresh.weight().tensor().to_vec(), model.weight().tensor().to_vec());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint<C> {
    /// The model configuration, enough to rebuild the model before [`Checkpoint::restore`].
    pub config: C,
    /// The weights by name.
    pub params: StateDict,
    /// The optimizer with its per-parameter state, if training is to resume.
    pub optimizer: Option<Optimizer>,
    /// The learning-rate schedule's state, if any.
    pub scheduler: Option<Scheduler>,
    /// Epochs completed.
    pub epoch: u64,
    /// Optimizer steps taken.
    pub step: u64,
    /// The source vocabulary.
    pub src_vocab: Vocab,
    /// The target vocabulary.
    pub tgt_vocab: Vocab,
}

impl<C> Checkpoint<C> {
    /// A checkpoint of `model`'s current weights at epoch 0, step 0, without
    /// optimizer or schedule state (set the public fields for those).
    /// Errors when two parameters share a name.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let emb = lingo_nn::Embedding::new("emb", 4, 2, None, lingo_nn::Init::default(), &mut rng).unwrap();
    /// let ckpt = lingo_nn::Checkpoint::new("tiny", &emb, lingo_data::Vocab::new(), lingo_data::Vocab::new()).unwrap();
    /// assert_eq!(ckpt.params.len(), 1);
    /// assert_eq!(ckpt.epoch, 0);
    /// ```
    pub fn new(config: C, model: &dyn Module, src_vocab: Vocab, tgt_vocab: Vocab) -> Result<Checkpoint<C>> {
        Ok(Checkpoint {
            config,
            params: StateDict::from_module(model)?,
            optimizer: None,
            scheduler: None,
            epoch: 0,
            step: 0,
            src_vocab,
            tgt_vocab,
        })
    }

    /// Copies the saved weights into `model` (strict; see [`StateDict::load_into`]).
    ///
    /// ```
    /// use lingo_nn::{Checkpoint, Init, Linear};
    /// use rand::SeedableRng;
    /// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    /// let a = Linear::new("out", 3, 2, true, Init::default(), &mut rng).unwrap();
    /// let ckpt = Checkpoint::new((), &a, lingo_data::Vocab::new(), lingo_data::Vocab::new()).unwrap();
    /// let mut renamed = Linear::new("proj", 3, 2, true, Init::default(), &mut rng).unwrap();
    /// assert_eq!(ckpt.restore(&mut renamed).unwrap_err().to_string(), "parameter proj.weight: missing from the saved state");
    /// ```
    pub fn restore(&self, model: &mut dyn Module) -> Result<()> {
        self.params.load_into(model)
    }
}

impl<C: Serialize> Checkpoint<C> {
    /// Writes the checkpoint to `path` atomically (see the [module docs](self)).
    ///
    /// ```
    /// use lingo_nn::Checkpoint;
    /// use lingo_data::Vocab;
    /// let ckpt = Checkpoint::<()> { config: (), params: Default::default(), optimizer: None, scheduler: None,
    ///                               epoch: 3, step: 120, src_vocab: Vocab::new(), tgt_vocab: Vocab::new() };
    /// let err = ckpt.save("/nonexistent-dir/x.ckpt").unwrap_err();
    /// assert!(err.to_string().starts_with("checkpoint /nonexistent-dir/x.ckpt: I/O error"));
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let payload = bincode::serde::encode_to_vec(self, bincode::config::standard())
            .map_err(|e| problem(path, CheckpointProblem::Encode(e.to_string())))?;
        write_atomic(path, &frame(&payload))
    }
}

impl<C: DeserializeOwned> Checkpoint<C> {
    /// Reads a checkpoint written by [`Checkpoint::save`]. A truncated,
    /// corrupt, foreign or version-mismatched file, or one saved with another
    /// configuration type, gives an [`Error::Checkpoint`] naming the path
    /// and the problem.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("lingo-nn-foreign-{}.ckpt", std::process::id()));
    /// std::fs::write(&path, b"PK\x03\x04 certainly not a checkpoint").unwrap();
    /// let err = lingo_nn::Checkpoint::<()>::load(&path).unwrap_err();
    /// assert!(matches!(err, lingo_nn::Error::Checkpoint { problem: lingo_nn::CheckpointProblem::Magic { .. }, .. }));
    /// assert!(err.to_string().contains("not a lingo checkpoint"));
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Checkpoint<C>> {
        let path = path.as_ref();
        Checkpoint::from_bytes(&read_bounded(path)?, path)
    }

    /// Decodes the bytes of a checkpoint file; `path` only labels errors.
    ///
    /// ```
    /// let err = lingo_nn::Checkpoint::<()>::from_bytes(b"LINGOCKP\x01", "mem".as_ref()).unwrap_err();
    /// assert_eq!(err.to_string(), "checkpoint mem: truncated: 9 bytes, but the header needs 28");
    /// ```
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Checkpoint<C>> {
        let payload = unframe(bytes, path)?;
        let (ckpt, used) = decode_bounded(payload, path)?;
        if used != payload.len() {
            return Err(problem(
                path,
                CheckpointProblem::Decode(format!("{} bytes left over after the checkpoint", payload.len() - used)),
            ));
        }
        Ok(ckpt)
    }
}

/// Decodes a value from the front of `bytes` with bincode's standard
/// configuration (the one [`Checkpoint::save`] writes); returns it and the
/// number of bytes used. Errors are [`Error::Checkpoint`] naming `path`.
///
/// bincode allocates a string of the length the data declares before it
/// reads a byte of it, so ten bytes declaring a 2⁶⁰-byte string would abort
/// the process (found by fuzzing, see `docs/reliability.md`). Under a limit
/// it checks every declared length against a budget first. The budget is 16
/// bytes of memory per input byte (a one-byte varint `usize` takes 8 in
/// memory), at least 1 MiB, rounded up to a power of four because bincode
/// takes it as a constant; input that would need more than 1 TiB is refused.
///
/// ```
/// use std::path::Path;
/// // A list of one string that claims to be 2^60 bytes long.
/// let hostile = [1, 253, 0, 0, 0, 0, 0, 0, 0, 16];
/// let err = lingo_nn::decode_bounded::<Vec<String>>(&hostile, Path::new("x.ckpt")).unwrap_err();
/// assert!(err.to_string().starts_with("checkpoint x.ckpt: "), "{err}");
/// let (ok, used) = lingo_nn::decode_bounded::<Vec<String>>(&[1, 2, b'h', b'i'], Path::new("x.ckpt")).unwrap();
/// assert_eq!((ok, used), (vec!["hi".to_string()], 4));
/// ```
pub fn decode_bounded<T: DeserializeOwned>(bytes: &[u8], path: &Path) -> Result<(T, usize)> {
    let budget = (bytes.len() as u64).saturating_mul(16);
    macro_rules! within {
        ($($shift:literal)*) => {
            $(
                if budget <= 1_u64 << $shift {
                    let config = bincode::config::standard().with_limit::<{ 1_usize << $shift }>();
                    return bincode::serde::decode_from_slice(bytes, config).map_err(|e| problem(path, CheckpointProblem::Decode(e.to_string())));
                }
            )*
        };
    }
    within!(20 22 24 26 28 30);
    #[cfg(target_pointer_width = "64")]
    within!(32 34 36 38 40);
    Err(problem(path, CheckpointProblem::Decode(format!("{} bytes are too many to decode", bytes.len()))))
}

/// FNV-1a, 64-bit: `h₀ = 0xcbf29ce484222325`, `h ← (h ⊕ byte) · 0x100000001b3`
/// for every byte (Fowler, Noll & Vo).
///
/// ```
/// assert_eq!(lingo_nn::fnv1a64(b""), 0xcbf29ce484222325);
/// assert_eq!(lingo_nn::fnv1a64(b"a"), 0xaf63dc4c8601ec8c);     // published test vector
/// assert_eq!(lingo_nn::fnv1a64(b"foobar"), 0x85944171f73967e8);
/// ```
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// Writes `bytes` to `path` so that a crash leaves either the old file or
/// the complete new one: temporary file in the same directory, write,
/// `fsync`, rename over `path`, `fsync` the directory. Errors are
/// [`Error::Checkpoint`] naming `path`.
///
/// ```
/// let path = std::env::temp_dir().join(format!("lingo-nn-atomic-{}.bin", std::process::id()));
/// lingo_nn::write_atomic(&path, b"old").unwrap();
/// lingo_nn::write_atomic(&path, b"new").unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"new");
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let io_error = |e| problem(path, CheckpointProblem::Io(e));
    let file_name = path
        .file_name()
        .ok_or_else(|| io_error(io::Error::new(io::ErrorKind::InvalidInput, "the path names no file")))?;
    let dir = parent_dir(path);
    // Unique per process and call, so concurrent writers never share a temporary file.
    let tmp = dir.join(format!(
        "{}{}-{}",
        temp_prefix(file_name),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| -> io::Result<()> {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?; // the data is on disk before the name points at it
        drop(file);
        fs::rename(&tmp, path)?;
        sync_dir(dir) // the rename itself is on disk
    })();
    if written.is_err() {
        // Best effort: the write already failed, and that is the error to report.
        let _ = fs::remove_file(&tmp);
    }
    written.map_err(io_error)
}

/// Deletes the temporary files that interrupted [`write_atomic`] calls for
/// `path` left behind (see the [module docs](self)) and returns how many.
/// Only for when no other process is writing `path` at the same time, such
/// as the start of a training run that owns its checkpoint directory: that
/// writer's temporary file would be deleted too, and its write would fail.
/// A missing directory has nothing to delete.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("lingo-nn-stale-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("last.ckpt");
/// std::fs::write(dir.join(".last.ckpt.tmp-4242-0"), b"half a checkpoint").unwrap(); // a killed writer's
/// lingo_nn::write_atomic(&path, b"whole").unwrap();
/// assert_eq!(lingo_nn::remove_stale_temp_files(&path).unwrap(), 1);
/// assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);     // last.ckpt alone
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn remove_stale_temp_files(path: &Path) -> Result<usize> {
    let io_error = |e| problem(path, CheckpointProblem::Io(e));
    let Some(file_name) = path.file_name() else { return Ok(0) };
    let prefix = temp_prefix(file_name);
    let entries = match fs::read_dir(parent_dir(path)) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io_error(e)),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(io_error)?;
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            match fs::remove_file(entry.path()) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {} // gone meanwhile
                Err(e) => return Err(io_error(e)),
            }
        }
    }
    Ok(removed)
}

/// The start of every temporary file name [`write_atomic`] uses for `file_name`.
fn temp_prefix(file_name: &std::ffi::OsStr) -> String {
    format!(".{}.tmp-", file_name.to_string_lossy())
}

/// The directory holding `path` (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// `fsync` of a directory, which makes a rename in it durable (Unix only;
/// elsewhere renames are durable once the call returns or cannot be synced).
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Header + payload, as laid out in the [module docs](self).
fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&fnv1a64(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// Checks the header of `bytes` and returns the payload.
fn unframe<'a>(bytes: &'a [u8], path: &Path) -> Result<&'a [u8]> {
    let stored = check_header(bytes, bytes.len() as u64, path)?;
    let payload = &bytes[HEADER_LEN..];
    check_payload(payload, stored, path)?;
    Ok(payload)
}

/// Checks the magic, version and payload length of a file of `found` bytes
/// that starts with `head` (its first [`HEADER_LEN`] bytes, or all of a
/// shorter file); returns the stored checksum.
fn check_header(head: &[u8], found: u64, path: &Path) -> Result<u64> {
    let fail = |p| Err(problem(path, p));
    let head = &head[..head.len().min(HEADER_LEN)];
    if !head.starts_with(MAGIC) && !MAGIC.starts_with(head) {
        let start = &head[..head.len().min(MAGIC.len())];
        return fail(CheckpointProblem::Magic { found: String::from_utf8_lossy(start).into_owned() });
    }
    if head.len() < HEADER_LEN {
        // The magic so far is right (or the file is shorter than it): cut short.
        return fail(CheckpointProblem::Truncated { found, needed: HEADER_LEN as u64, part: "header" });
    }
    let word =
        |range: std::ops::Range<usize>| head[range].iter().rev().fold(0_u64, |acc, &b| (acc << 8) | u64::from(b));
    let version = word(8..12) as u32;
    if version != FORMAT_VERSION {
        return fail(CheckpointProblem::Version { found: version, supported: FORMAT_VERSION });
    }
    let (len, stored) = (word(12..20), word(20..28));
    let available = found - HEADER_LEN as u64;
    if available < len {
        return fail(CheckpointProblem::Truncated {
            found,
            needed: (HEADER_LEN as u64).saturating_add(len),
            part: "payload",
        });
    }
    if available > len {
        return fail(CheckpointProblem::TrailingBytes { extra: available - len });
    }
    Ok(stored)
}

/// Compares the payload's checksum with the `stored` one.
fn check_payload(payload: &[u8], stored: u64, path: &Path) -> Result<()> {
    let computed = fnv1a64(payload);
    if computed != stored {
        return Err(problem(path, CheckpointProblem::Checksum { stored, computed }));
    }
    Ok(())
}

/// The bytes of the checkpoint file at `path`, read no further than its
/// header allows: the header first, checked against the file's size, then
/// exactly the payload it declares. A device, pipe or directory is refused
/// before a byte is read (its size says nothing, and `/dev/zero` never ends).
fn read_bounded(path: &Path) -> Result<Vec<u8>> {
    let io = |e| problem(path, CheckpointProblem::Io(e));
    // Asked before opening: opening a pipe waits for a writer.
    if !fs::metadata(path).map_err(io)?.is_file() {
        return Err(problem(path, CheckpointProblem::NotAFile));
    }
    let mut file = File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let mut bytes = Vec::with_capacity(HEADER_LEN);
    (&mut file).take(HEADER_LEN as u64).read_to_end(&mut bytes).map_err(io)?;
    check_header(&bytes, meta.len(), path)?;
    // The size was checked against the declared length: read that, and no more.
    (&mut file).take(meta.len() - HEADER_LEN as u64).read_to_end(&mut bytes).map_err(io)?;
    Ok(bytes)
}

/// Shorthand for [`Error::Checkpoint`].
pub(crate) fn problem(path: &Path, problem: CheckpointProblem) -> Error {
    Error::Checkpoint { path: PathBuf::from(path), problem }
}
