//! Checkpoints: round trips with every part filled in, and rejection of
//! truncated, corrupt, foreign, version-mismatched and mismatching files.

use std::path::Path;

use lingo_data::Vocab;
use lingo_nn::{
    Algorithm, Checkpoint, CheckpointProblem, Embedding, Error, FORMAT_VERSION, Init, Linear, MAGIC, Optimizer, ParamProblem, Rnn, RnnConfig, RnnKind,
    Schedule, Scheduler, fnv1a64,
};
use lingo_tensor::{Module, Param};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};

/// A small model configuration, as a model crate would define it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Config {
    rnn: RnnConfig,
    vocab: usize,
}

struct Model {
    embedding: Embedding,
    rnn: Rnn,
    out: Linear,
}

impl Model {
    fn new(config: &Config, seed: u64) -> Model {
        let mut rng = StdRng::seed_from_u64(seed);
        let init = Init::default();
        Model {
            embedding: Embedding::new("encoder.embedding", config.vocab, config.rnn.input_size, Some(0), init, &mut rng).unwrap(),
            rnn: Rnn::new("encoder.rnn", config.rnn, init, &mut rng).unwrap(),
            out: Linear::new("out", config.rnn.output_size(), config.vocab, true, init, &mut rng).unwrap(),
        }
    }
}

impl Module for Model {
    fn params(&self) -> Vec<&Param> {
        [self.embedding.params(), self.rnn.params(), self.out.params()].concat()
    }
    fn params_mut(&mut self) -> Vec<&mut Param> {
        let mut all = self.embedding.params_mut();
        all.extend(self.rnn.params_mut());
        all.extend(self.out.params_mut());
        all
    }
}

fn config() -> Config {
    Config { rnn: RnnConfig { bidirectional: true, ..RnnConfig::new(RnnKind::Gru, 3, 4) }, vocab: 9 }
}

fn values(m: &dyn Module) -> Vec<Vec<f32>> {
    m.params().iter().map(|p| p.tensor().to_vec()).collect()
}

/// A checkpoint with every field set, after one optimizer step.
fn full_checkpoint() -> (Checkpoint<Config>, Model) {
    let config = config();
    let mut model = Model::new(&config, 1);
    let loss = model.out.weight().tensor().sum_all().add(&model.rnn.params()[0].tensor().mul_scalar(2.0).sum_all()).unwrap();
    let grads = loss.backward().unwrap();
    drop(loss);
    let mut opt = Optimizer::new(Algorithm::adamw(0.01), 1e-3).unwrap().with_max_grad_norm(5.0).unwrap();
    let mut sched = Scheduler::new(Schedule::WarmupCosine { warmup_steps: 2, total_steps: 10, min_lr: 0.0 }, 1e-3).unwrap();
    opt.set_lr(sched.step());
    opt.step(&mut model, &grads).unwrap();
    let src_vocab = Vocab::from_tokens(["the", "cat", "sat"]);
    let tgt_vocab = Vocab::from_tokens(["el", "gato"]);
    let mut ckpt = Checkpoint::new(config, &model, src_vocab, tgt_vocab).unwrap();
    ckpt.optimizer = Some(opt);
    ckpt.scheduler = Some(sched);
    ckpt.epoch = 3;
    ckpt.step = 1;
    (ckpt, model)
}

fn saved_bytes(dir: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let (ckpt, _) = full_checkpoint();
    let path = dir.join("model.ckpt");
    ckpt.save(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

fn load_bytes(bytes: &[u8]) -> Result<Checkpoint<Config>, Error> {
    Checkpoint::from_bytes(bytes, Path::new("test.ckpt"))
}

fn problem(err: Error) -> CheckpointProblem {
    match err {
        Error::Checkpoint { path, problem } => {
            assert_eq!(path, Path::new("test.ckpt"));
            problem
        }
        other => panic!("not a checkpoint error: {other}"),
    }
}

#[test]
fn round_trip_restores_everything() {
    let dir = tempfile::tempdir().unwrap();
    let (ckpt, model) = full_checkpoint();
    let path = dir.path().join("best.ckpt");
    ckpt.save(&path).unwrap();
    let back: Checkpoint<Config> = Checkpoint::load(&path).unwrap();
    assert_eq!(back, ckpt);
    assert_eq!(back.src_vocab.tokens()[4..], ["the", "cat", "sat"]);
    assert_eq!(back.optimizer.as_ref().unwrap().max_grad_norm(), Some(5.0));

    let mut fresh = Model::new(&back.config, 99);
    assert_ne!(values(&fresh), values(&model));
    back.restore(&mut fresh).unwrap();
    assert_eq!(values(&fresh), values(&model));
    // Only the checkpoint is left in the directory: the temporary file was renamed.
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["best.ckpt"]);
}

#[test]
fn saving_again_replaces_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (mut ckpt, _) = full_checkpoint();
    let path = dir.path().join("last.ckpt");
    ckpt.save(&path).unwrap();
    ckpt.epoch = 4;
    ckpt.save(&path).unwrap();
    assert_eq!(Checkpoint::<Config>::load(&path).unwrap().epoch, 4);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn header_layout() {
    let dir = tempfile::tempdir().unwrap();
    let (_, bytes) = saved_bytes(dir.path());
    assert_eq!(&bytes[..8], MAGIC);
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), FORMAT_VERSION);
    let len = u64::from_le_bytes(bytes[12..20].try_into().unwrap());
    assert_eq!(len as usize, bytes.len() - 28);
    assert_eq!(u64::from_le_bytes(bytes[20..28].try_into().unwrap()), fnv1a64(&bytes[28..]));
}

#[test]
fn truncated_files_are_rejected_at_every_sixteenth() {
    let dir = tempfile::tempdir().unwrap();
    let (_, bytes) = saved_bytes(dir.path());
    for k in 0..16 {
        let cut = bytes.len() * k / 16;
        let p = problem(load_bytes(&bytes[..cut]).unwrap_err());
        assert!(matches!(p, CheckpointProblem::Truncated { found, .. } if found == cut as u64), "cut at {cut}: {p}");
    }
    // One byte short.
    let p = problem(load_bytes(&bytes[..bytes.len() - 1]).unwrap_err());
    assert!(matches!(p, CheckpointProblem::Truncated { part: "payload", .. }), "{p}");
}

#[test]
fn a_flipped_byte_anywhere_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (_, bytes) = saved_bytes(dir.path());
    // Every position (the file is a few kilobytes, each check is microseconds).
    for pos in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[pos] ^= 0x20;
        let p = problem(load_bytes(&bad).unwrap_err());
        let expected = match pos {
            0..8 => matches!(p, CheckpointProblem::Magic { .. }),
            8..12 => matches!(p, CheckpointProblem::Version { .. }),
            12..20 => matches!(p, CheckpointProblem::Truncated { .. } | CheckpointProblem::TrailingBytes { .. }),
            _ => matches!(p, CheckpointProblem::Checksum { .. }),
        };
        assert!(expected, "byte {pos}: {p}");
    }
}

#[test]
fn the_error_names_the_path_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut bytes) = saved_bytes(dir.path());
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let msg = Checkpoint::<Config>::load(&path).unwrap_err().to_string();
    assert!(msg.starts_with(&format!("checkpoint {}: corrupt: payload checksum", path.display())), "{msg}");

    let missing = dir.path().join("nope.ckpt");
    let msg = Checkpoint::<Config>::load(&missing).unwrap_err().to_string();
    assert!(msg.contains("nope.ckpt") && msg.contains("I/O error"), "{msg}");
}

#[test]
fn foreign_files_are_rejected() {
    for foreign in [&b"\x89PNG\r\n\x1a\n0000000000000000000000000000"[..], b"{\"json\": true}", b"LINGO", b"x"] {
        let p = problem(load_bytes(foreign).unwrap_err());
        let ok = if MAGIC.starts_with(foreign) { matches!(p, CheckpointProblem::Truncated { .. }) } else { matches!(p, CheckpointProblem::Magic { .. }) };
        assert!(ok, "{foreign:?}: {p}");
    }
    assert!(matches!(problem(load_bytes(b"").unwrap_err()), CheckpointProblem::Truncated { found: 0, .. }));
}

#[test]
fn another_format_version_is_rejected_even_with_a_valid_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut bytes) = saved_bytes(dir.path());
    bytes[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let p = problem(load_bytes(&bytes).unwrap_err());
    assert!(matches!(p, CheckpointProblem::Version { found, supported } if found == FORMAT_VERSION + 1 && supported == FORMAT_VERSION), "{p}");
}

#[test]
fn trailing_bytes_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut bytes) = saved_bytes(dir.path());
    bytes.extend_from_slice(b"junk");
    assert!(matches!(problem(load_bytes(&bytes).unwrap_err()), CheckpointProblem::TrailingBytes { extra: 4 }));
}

#[test]
fn an_intact_file_of_another_config_type_does_not_decode() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = saved_bytes(dir.path());
    let err = Checkpoint::<(String, Vec<String>)>::load(&path).unwrap_err();
    assert!(matches!(err, Error::Checkpoint { problem: CheckpointProblem::Decode(_), .. }), "{err}");
}

#[test]
fn restoring_into_a_different_model_names_the_parameter() {
    let (ckpt, _) = full_checkpoint();
    // Wider hidden state: the first RNN weight has another shape.
    let wider = Config { rnn: RnnConfig { hidden_size: 5, ..ckpt.config.rnn }, ..ckpt.config.clone() };
    let mut model = Model::new(&wider, 2);
    let before = values(&model);
    let err = ckpt.restore(&mut model).unwrap_err();
    assert!(matches!(&err, Error::Param { name, problem: ParamProblem::Shape { .. } } if name == "encoder.rnn.weight_ih_l0"), "{err}");
    assert_eq!(values(&model), before, "a failed restore changed the model");
    // Unidirectional: the _reverse weights in the checkpoint are not the model's.
    let one_way = Config { rnn: RnnConfig { bidirectional: false, ..ckpt.config.rnn }, vocab: ckpt.config.vocab };
    let mut model = Model::new(&one_way, 2);
    let err = ckpt.restore(&mut model).unwrap_err();
    // out.weight (vocab, H) differs first, in model order
    assert!(matches!(&err, Error::Param { name, .. } if name == "out.weight"), "{err}");
    let mut no_out = Model::new(&ckpt.config, 2);
    no_out.out = Linear::new("proj", ckpt.config.rnn.output_size(), 9, true, Init::default(), &mut StdRng::seed_from_u64(0)).unwrap();
    let err = ckpt.restore(&mut no_out).unwrap_err();
    assert!(matches!(&err, Error::Param { name, problem: ParamProblem::Missing } if name == "proj.weight"), "{err}");
}

#[test]
fn unexpected_saved_parameters_are_named() {
    let (mut ckpt, _) = full_checkpoint();
    let mut extra = ckpt.params.tensors().to_vec();
    extra.push(lingo_nn::NamedTensor { name: "decoder.bridge.weight".into(), shape: vec![1], data: vec![0.0] });
    ckpt.params = lingo_nn::StateDict::from_tensors(extra);
    let mut model = Model::new(&ckpt.config, 2);
    let err = ckpt.restore(&mut model).unwrap_err();
    assert!(matches!(&err, Error::Param { name, problem: ParamProblem::Unexpected } if name == "decoder.bridge.weight"), "{err}");
}
