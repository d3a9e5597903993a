//! Checkpoints: round trips with every part filled in, and rejection of
//! truncated, corrupt, foreign, version-mismatched and mismatching files.

use std::path::Path;

use lingo_attention::Scorer;
use lingo_data::Vocab;
use lingo_nn::{
    Algorithm, Checkpoint, CheckpointProblem, Embedding, Error, FORMAT_VERSION, Init, Linear, MAGIC, Optimizer,
    ParamProblem, Rnn, RnnConfig, RnnKind, Schedule, Scheduler, fnv1a64,
};
use lingo_nn::{EncoderDecoder, Seq2Seq, Seq2SeqConfig, TrainConfig, TrainedModel, load_resumable};
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
            embedding: Embedding::new(
                "encoder.embedding",
                config.vocab,
                config.rnn.input_size,
                Some(0),
                init,
                &mut rng,
            )
            .unwrap(),
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
    let loss =
        model.out.weight().tensor().sum_all().add(&model.rnn.params()[0].tensor().mul_scalar(2.0).sum_all()).unwrap();
    let grads = loss.backward().unwrap();
    drop(loss);
    let mut opt = Optimizer::new(Algorithm::adamw(0.01), 1e-3).unwrap().with_max_grad_norm(5.0).unwrap();
    let mut sched =
        Scheduler::new(Schedule::WarmupCosine { warmup_steps: 2, total_steps: 10, min_lr: 0.0 }, 1e-3).unwrap();
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

/// The problem of a rejected file, after checking that the message names
/// the file and says `words`.
#[track_caller]
fn rejected(bytes: &[u8], words: &str) -> CheckpointProblem {
    let err = load_bytes(bytes).unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("checkpoint test.ckpt: ") && msg.contains(words), "{msg:?} does not say {words:?}");
    problem(err)
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
        let p = rejected(&bytes[..cut], &format!("truncated: {cut} bytes"));
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
    println!("{} single-byte flips tried", bytes.len());
    for pos in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[pos] ^= 0x20;
        let words = match pos {
            0..8 => "not a lingo checkpoint",
            8..12 => "is not supported",
            12..20 => "",
            _ => "corrupt: payload checksum",
        };
        let p = rejected(&bad, words);
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
        let p = rejected(
            foreign,
            if MAGIC.starts_with(foreign) { "truncated" } else { "not a lingo checkpoint: the file starts with" },
        );
        let ok = if MAGIC.starts_with(foreign) {
            matches!(p, CheckpointProblem::Truncated { .. })
        } else {
            matches!(p, CheckpointProblem::Magic { .. })
        };
        assert!(ok, "{foreign:?}: {p}");
    }
    assert!(matches!(problem(load_bytes(b"").unwrap_err()), CheckpointProblem::Truncated { found: 0, .. }));
}

#[test]
fn another_format_version_is_rejected_even_with_a_valid_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut bytes) = saved_bytes(dir.path());
    bytes[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let p = rejected(
        &bytes,
        &format!("format version {} is not supported (this build reads version {FORMAT_VERSION})", FORMAT_VERSION + 1),
    );
    assert!(
        matches!(p, CheckpointProblem::Version { found, supported } if found == FORMAT_VERSION + 1 && supported == FORMAT_VERSION),
        "{p}"
    );
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
    assert!(
        matches!(&err, Error::Param { name, problem: ParamProblem::Shape { .. } } if name == "encoder.rnn.weight_ih_l0"),
        "{err}"
    );
    assert_eq!(values(&model), before, "a failed restore changed the model");
    // Unidirectional: the _reverse weights in the checkpoint are not the model's.
    let one_way = Config { rnn: RnnConfig { bidirectional: false, ..ckpt.config.rnn }, vocab: ckpt.config.vocab };
    let mut model = Model::new(&one_way, 2);
    let err = ckpt.restore(&mut model).unwrap_err();
    // out.weight (vocab, H) differs first, in model order
    assert!(matches!(&err, Error::Param { name, .. } if name == "out.weight"), "{err}");
    let mut no_out = Model::new(&ckpt.config, 2);
    no_out.out =
        Linear::new("proj", ckpt.config.rnn.output_size(), 9, true, Init::default(), &mut StdRng::seed_from_u64(0))
            .unwrap();
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
    assert!(
        matches!(&err, Error::Param { name, problem: ParamProblem::Unexpected } if name == "decoder.bridge.weight"),
        "{err}"
    );
}

/// A saved seq2seq checkpoint: its path, configuration and vocabularies.
fn saved_seq2seq(dir: &Path) -> (std::path::PathBuf, Seq2SeqConfig, Vocab, Vocab) {
    let (src, tgt) = (Vocab::from_tokens(["the", "cat"]), Vocab::from_tokens(["el", "gato", "sat"]));
    let config = Seq2SeqConfig {
        emb_dim: 4,
        hidden_dim: 6,
        attention: Some(Scorer::Additive),
        ..Seq2SeqConfig::new(src.len(), tgt.len())
    };
    let model = Seq2Seq::new(config.clone(), &mut StdRng::seed_from_u64(3)).unwrap();
    let mut ckpt = Checkpoint::new(
        TrainedModel::start(config.clone(), &TrainConfig::new(1, 1e-3), 1),
        &model,
        src.clone(),
        tgt.clone(),
    )
    .unwrap();
    ckpt.optimizer = Some(Optimizer::new(Algorithm::adam(), 1e-3).unwrap());
    let path = dir.join("last.ckpt");
    ckpt.save(&path).unwrap();
    (path, config, src, tgt)
}

/// The problem of an error about `path`, after checking that the message names it and says `words`.
#[track_caller]
fn problem_at(err: Error, path: &Path, words: &str) -> CheckpointProblem {
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("checkpoint {}: ", path.display())) && msg.contains(words),
        "{msg:?} does not say {words:?}"
    );
    match err {
        Error::Checkpoint { problem, .. } => problem,
        other => panic!("not a checkpoint error: {other}"),
    }
}

#[test]
fn a_model_config_that_disagrees_with_the_vocabularies_or_the_weights_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (path, config, ..) = saved_seq2seq(dir.path());
    let ckpt: Checkpoint<TrainedModel> = Checkpoint::load(&path).unwrap();
    assert!(Seq2Seq::from_checkpoint(&config, &ckpt, &path).is_ok());
    // The configuration's vocabulary sizes against the stored vocabularies.
    let bigger_src = Seq2SeqConfig { src_vocab: config.src_vocab + 3, ..config.clone() };
    let err = Seq2Seq::from_checkpoint(&bigger_src, &ckpt, &path).err().unwrap();
    let p = problem_at(err, &path, "source vocabulary of 9 tokens, the stored source vocabulary 6");
    assert!(matches!(p, CheckpointProblem::Inconsistent(_)), "{p}");
    let smaller_tgt = Seq2SeqConfig { tgt_vocab: 5, ..config.clone() };
    let err = Seq2Seq::from_checkpoint(&smaller_tgt, &ckpt, &path).err().unwrap();
    assert!(matches!(problem_at(err, &path, "target vocabulary of 5 tokens"), CheckpointProblem::Inconsistent(_)));
    // The saved parameters' shapes against the configuration.
    let wider = Seq2SeqConfig { hidden_dim: 8, ..config.clone() };
    let err = Seq2Seq::from_checkpoint(&wider, &ckpt, &path).err().unwrap();
    let p = problem_at(
        err,
        &path,
        "the saved parameters do not fit the model configuration: parameter encoder.rnn.weight_ih_l0: shape [24, 4]",
    );
    assert!(matches!(p, CheckpointProblem::Inconsistent(_)), "{p}");
    let other_scorer = Seq2SeqConfig { attention: Some(Scorer::General), ..config.clone() };
    let err = Seq2Seq::from_checkpoint(&other_scorer, &ckpt, &path).err().unwrap();
    assert!(matches!(problem_at(err, &path, "parameter attention."), CheckpointProblem::Inconsistent(_)));
    // A configuration no model can have.
    let invalid = Seq2SeqConfig { dropout: 2.0, ..config };
    let err = Seq2Seq::from_checkpoint(&invalid, &ckpt, &path).err().unwrap();
    assert!(matches!(
        problem_at(err, &path, "the model configuration is not valid: invalid dropout"),
        CheckpointProblem::Inconsistent(_)
    ));
}

#[test]
fn resuming_needs_the_same_model_and_vocabularies() {
    let dir = tempfile::tempdir().unwrap();
    let (path, config, src, tgt) = saved_seq2seq(dir.path());
    assert!(load_resumable(&path, &config, &TrainConfig::new(1, 1e-3), &src, &tgt).is_ok());
    let other_run = |config: &Seq2SeqConfig, src: &Vocab, tgt: &Vocab, words: &str| {
        let err = load_resumable(&path, config, &TrainConfig::new(1, 1e-3), src, tgt).unwrap_err();
        assert!(matches!(problem_at(err, &path, words), CheckpointProblem::OtherRun(_)));
    };
    other_run(
        &Seq2SeqConfig { emb_dim: 5, dropout: 0.5, ..config.clone() },
        &src,
        &tgt,
        "not from this run: emb_dim 4 (saved) vs 5 (this run), dropout 0.0 (saved) vs 0.5 (this run)",
    );
    let (swapped, other_tgt) = (Vocab::from_tokens(["cat", "the"]), Vocab::from_tokens(["el", "gato", "perro"]));
    other_run(&config, &swapped, &tgt, "the source vocabulary differs from this run's (6 tokens saved, 6 in this run)");
    other_run(&config, &src, &other_tgt, "the target vocabulary differs");
    // Training settings, and the caller's own, each named.
    let model_config = config.clone();
    let settings = |config: TrainConfig, words: &str| {
        let err = load_resumable(&path, &model_config, &config, &src, &tgt).unwrap_err();
        assert!(matches!(problem_at(err, &path, words), CheckpointProblem::OtherRun(_)));
    };
    settings(
        TrainConfig { shards: 3, ..TrainConfig::new(1, 1e-3) },
        "not from this run: shards 1 (saved) vs 3 (this run)",
    );
    settings(
        TrainConfig { label_smoothing: 0.1, seed: 4, ..TrainConfig::new(1, 1e-3) },
        "label_smoothing 0 (saved) vs 0.1 (this run), seed 0 (saved) vs 4 (this run)",
    );
    let flagged =
        TrainConfig { lr: 1.0, extra_settings: vec![("--lr".into(), "1".into())], ..TrainConfig::new(1, 1e-3) };
    settings(flagged, "not from this run: --lr (none) (saved) vs 1 (this run)");
    // A checkpoint without optimizer state cannot continue training identically.
    let mut ckpt: Checkpoint<TrainedModel> = Checkpoint::load(&path).unwrap();
    ckpt.optimizer = None;
    ckpt.save(&path).unwrap();
    other_run(&config, &src, &tgt, "no optimizer state");
    // And a damaged file is still reported as such.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&path, &bytes).unwrap();
    let err = load_resumable(&path, &config, &TrainConfig::new(1, 1e-3), &src, &tgt).unwrap_err();
    assert!(matches!(problem_at(err, &path, "truncated"), CheckpointProblem::Truncated { .. }));
}

#[test]
fn leftover_temporary_files_are_never_loaded_and_are_cleared_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ..) = saved_seq2seq(dir.path());
    let good = std::fs::read(&path).unwrap();
    // What a writer killed mid-write leaves: half a checkpoint under a temporary name.
    let leftover = dir.path().join(".last.ckpt.tmp-999999-0");
    std::fs::write(&leftover, &good[..good.len() / 2]).unwrap();
    let other = dir.path().join(".best.ckpt.tmp-999999-3");
    std::fs::write(&other, b"").unwrap();
    assert_eq!(Checkpoint::<TrainedModel>::load(&path).unwrap().epoch, 0, "the checkpoint, not the leftover, is read");
    assert_eq!(lingo_nn::remove_stale_temp_files(&path).unwrap(), 1);
    assert!(!leftover.exists() && other.exists() && path.exists());
    assert_eq!(lingo_nn::remove_stale_temp_files(&dir.path().join("best.ckpt")).unwrap(), 1);
    assert_eq!(lingo_nn::remove_stale_temp_files(&dir.path().join("missing/x.ckpt")).unwrap(), 0);
}

#[test]
fn a_loaded_model_gives_the_saved_models_logits_bit_for_bit() {
    use lingo_nn::{Mode, Placement, RnnKind};
    let dir = tempfile::tempdir().unwrap();
    let (src, tgt) = (Vocab::from_tokens(["the", "cat", "sat"]), Vocab::from_tokens(["el", "gato", "se", "sentó"]));
    let base = Seq2SeqConfig { emb_dim: 5, hidden_dim: 6, attn_dim: 7, ..Seq2SeqConfig::new(src.len(), tgt.len()) };
    let configs = [
        Seq2SeqConfig { attention: Some(Scorer::General), ..base.clone() },
        Seq2SeqConfig {
            attention: Some(Scorer::Additive),
            placement: Placement::Bahdanau,
            rnn: RnnKind::Gru,
            bidirectional: true,
            ..base.clone()
        },
        Seq2SeqConfig { attention: Some(Scorer::MultiHead { heads: 2 }), num_layers: 2, attn_dim: 6, ..base.clone() },
        Seq2SeqConfig { attention: None, bidirectional: true, ..base },
    ];
    let src_ids = ndarray::arr2(&[[2_usize, 4, 5, 6, 3], [2, 6, 3, 0, 0]]);
    let tgt_in = ndarray::arr2(&[[2_usize, 4, 5, 7], [2, 6, 0, 0]]);
    for (i, config) in configs.into_iter().enumerate() {
        let saved = Seq2Seq::new(config.clone(), &mut StdRng::seed_from_u64(i as u64)).unwrap();
        let path = dir.path().join(format!("model-{i}.ckpt"));
        Checkpoint::new(config.clone(), &saved, src.clone(), tgt.clone()).unwrap().save(&path).unwrap();
        let ckpt: Checkpoint<Seq2SeqConfig> = Checkpoint::load(&path).unwrap();
        let loaded = Seq2Seq::from_checkpoint(&ckpt.config, &ckpt, &path).unwrap();
        let logits = |m: &Seq2Seq| {
            m.forward(&src_ids, &[5, 3], &tgt_in, &[4, 2], Mode::Eval)
                .unwrap()
                .logits
                .to_vec()
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(logits(&loaded), logits(&saved), "config {i}");
    }
}

#[test]
fn building_from_a_state_dict_names_what_is_missing_or_misshapen() {
    let dir = tempfile::tempdir().unwrap();
    let (path, config, ..) = saved_seq2seq(dir.path());
    let ckpt: Checkpoint<TrainedModel> = Checkpoint::load(&path).unwrap();
    let mut tensors = ckpt.params.tensors().to_vec();
    let dropped = tensors.remove(3);
    let err = Seq2Seq::from_state_dict(&config, &lingo_nn::StateDict::from_tensors(tensors.clone())).err().unwrap();
    assert!(matches!(&err, Error::Param { name, problem: ParamProblem::Missing } if *name == dropped.name), "{err}");
    tensors.insert(3, dropped);
    let mut misshapen = tensors[0].clone(); // the source embedding (6, 4)
    misshapen.shape.reverse();
    tensors[0] = misshapen.clone();
    let err = Seq2Seq::from_state_dict(&config, &lingo_nn::StateDict::from_tensors(tensors)).err().unwrap();
    assert!(
        matches!(&err, Error::Param { name, problem: ParamProblem::Shape { .. } } if *name == misshapen.name),
        "{err}"
    );
}

#[test]
fn devices_and_directories_are_refused_before_a_byte_is_read() {
    let dir = tempfile::tempdir().unwrap();
    for path in [Path::new("/dev/zero"), dir.path()] {
        let err = Checkpoint::<TrainedModel>::load(path).unwrap_err();
        assert!(matches!(problem_at(err, path, "not a regular file"), CheckpointProblem::NotAFile));
    }
    // A regular file is read only as far as its header allows: a huge one
    // with a foreign header is refused on its first bytes.
    let big = dir.path().join("big.ckpt");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(1 << 40).unwrap(); // sparse: a terabyte of zeros, no disk used
    let err = Checkpoint::<TrainedModel>::load(&big).unwrap_err();
    assert!(matches!(problem_at(err, &big, "not a lingo checkpoint"), CheckpointProblem::Magic { .. }));
}
