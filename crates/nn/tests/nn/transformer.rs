//! The Transformer's contracts: decoding with the cache equals the
//! teacher-forced forward pass, no position sees a later one, padding is
//! invisible, every parameter learns, a small set is learned by heart, and
//! the same seed gives the same bits on any number of threads; and the
//! shared training and decoding code serves it (beam 1 is greedy,
//! checkpoints resume to the same losses).

use lingo_data::{Batch, BatchConfig, Example, LexiconReverse, Task};
use lingo_nn::{
    Activation, Algorithm, BeamConfig, Checkpoint, CheckpointSpec, DecoderState, EncoderDecoder, Mode, NormPosition,
    Optimizer, PositionKind, Progress, TrainConfig, TrainedModel, Transformer, TransformerConfig, beam_search,
    greedy_decode, load_resumable, train_model,
};
use lingo_tensor::Module;
use ndarray::{Array2, s};
use rand::SeedableRng;
use rand::rngs::StdRng;

/// A small model of each kind the layout allows.
fn configs() -> Vec<(&'static str, TransformerConfig)> {
    let base = TransformerConfig {
        d_model: 16,
        heads: 4,
        encoder_layers: 2,
        decoder_layers: 2,
        ff_dim: 32,
        max_len: 32,
        ..TransformerConfig::new(20, 20)
    };
    vec![
        ("post-norm", base.clone()),
        (
            "pre-norm, GELU, learned positions, tied",
            TransformerConfig {
                norm: NormPosition::Pre,
                activation: Activation::Gelu,
                positions: PositionKind::Learned,
                tie_output: true,
                tie_source: true,
                ..base
            },
        ),
    ]
}

fn batch() -> Batch {
    let examples = [
        Example { src: vec![2, 5, 9, 11, 3], tgt: vec![2, 7, 8, 6, 12, 3] },
        Example { src: vec![2, 14, 3], tgt: vec![2, 15, 3] },
        Example { src: vec![2, 6, 7, 3], tgt: vec![2, 10, 11, 13, 3] },
    ];
    Batch::from_examples(&examples).unwrap()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn decoding_step_by_step_with_the_cache_equals_the_teacher_forced_pass() {
    for (name, config) in configs() {
        let model = Transformer::new(config, &mut StdRng::seed_from_u64(1)).unwrap();
        let b = batch();
        let (batch_size, tgt_len) = b.tgt_in.dim();
        // Every row decodes the full width: padded positions come after the real ones.
        let full = vec![tgt_len; batch_size];
        let whole = model.forward(&b.src, &b.src_lens, &b.tgt_in, &full, Mode::Eval).unwrap();
        let enc = model.encode_source(&b.src, &b.src_lens, Mode::Eval).unwrap();
        let ctx = model.decoder_context(&enc).unwrap();
        let mut state = DecoderState::default();
        for t in 0..tgt_len {
            let prev: Vec<usize> = b.tgt_in.column(t).to_vec();
            let step = model.decode_step(&ctx, &state, &prev, Mode::Eval).unwrap();
            let want = whole.logits.data().slice(s![.., t, ..]).to_owned();
            let err = max_diff(&step.logits.to_vec(), want.as_slice().unwrap());
            assert!(err < 1e-5, "{name}: step {t}'s logits differ by {err}");
            let want = whole.cross_weights.slice(s![.., .., .., t, ..]).to_owned();
            let err = max_diff(step.cross_weights.as_slice().unwrap(), want.as_slice().unwrap());
            assert!(err < 1e-5, "{name}: step {t}'s cross-attention differs by {err}");
            state = step.state;
            assert_eq!(state.len(), t + 1);
        }
    }
}

#[test]
fn no_position_sees_a_later_target_token() {
    for (name, config) in configs() {
        let model = Transformer::new(config, &mut StdRng::seed_from_u64(2)).unwrap();
        let b = batch();
        let logits = |tgt: &Array2<usize>| {
            model.forward(&b.src, &b.src_lens, tgt, &b.tgt_lens, Mode::Eval).unwrap().logits.data().clone()
        };
        let before = logits(&b.tgt_in);
        let mut changed = b.tgt_in.clone();
        changed[[0, 3]] = 19;
        let after = logits(&changed);
        for t in 0..b.tgt_in.ncols() {
            let (x, y) = (before.slice(s![0, t, ..]).to_owned(), after.slice(s![0, t, ..]).to_owned());
            let err = max_diff(x.as_slice().unwrap(), y.as_slice().unwrap());
            if t < 3 {
                assert_eq!(err, 0.0, "{name}: position {t} changed when token 3 did");
            } else {
                assert!(err > 1e-4, "{name}: position {t} ignores the token it reads");
            }
        }
    }
}

#[test]
fn padding_gets_no_weight_in_any_head_and_changes_nothing() {
    for (name, config) in configs() {
        let model = Transformer::new(config, &mut StdRng::seed_from_u64(3)).unwrap();
        let b = batch();
        let out = model.forward(&b.src, &b.src_lens, &b.tgt_in, &b.tgt_lens, Mode::Eval).unwrap();
        for ((_, _, row, _, s), &w) in out.cross_weights.indexed_iter() {
            if s >= b.src_lens[row] {
                assert!(w < 1e-6, "{name}: padded source position {s} of row {row} gets weight {w}");
            }
        }
        for ((_, _, row, _, s), &w) in out.encoder_weights.indexed_iter() {
            if s >= b.src_lens[row] {
                assert!(w < 1e-6, "{name}: the encoder attends to padding ({row}, {s}): {w}");
            }
        }
        // Other ids at the padded source positions: the real positions' logits do not move.
        let mut src = b.src.clone();
        for (row, &len) in b.src_lens.iter().enumerate() {
            src.slice_mut(s![row, len..]).fill(17);
        }
        let moved = model.forward(&src, &b.src_lens, &b.tgt_in, &b.tgt_lens, Mode::Eval).unwrap();
        for (row, &len) in b.tgt_lens.iter().enumerate() {
            let x = out.logits.data().slice(s![row, ..len, ..]).to_owned();
            let y = moved.logits.data().slice(s![row, ..len, ..]).to_owned();
            let err = max_diff(x.as_slice().unwrap(), y.as_slice().unwrap());
            assert!(err < 1e-6, "{name}: row {row}'s logits moved by {err} with its padding");
        }
    }
}

#[test]
fn every_parameter_gets_a_gradient_with_dropout_on() {
    for (name, config) in configs() {
        let config = TransformerConfig { dropout: 0.1, attention_dropout: 0.1, ..config };
        let model = Transformer::new(config, &mut StdRng::seed_from_u64(4)).unwrap();
        let loss = model.loss(&batch(), 0.1, Mode::Train(&mut StdRng::seed_from_u64(5))).unwrap();
        let grads = loss.backward().unwrap();
        for p in model.params() {
            let g = grads.get(p.tensor()).unwrap_or_else(|| panic!("{name}: no gradient for {}", p.name()));
            assert!(g.iter().any(|&v| v != 0.0), "{name}: {}'s gradient is all zeros", p.name());
        }
    }
}

#[test]
fn a_small_set_is_learned_by_heart() {
    // Reverse three-token sequences: every output position must read the source.
    let mut rng = StdRng::seed_from_u64(6);
    let examples: Vec<Example> = (0..8)
        .map(|i| {
            let words = [4 + i % 8, 4 + (i * 3 + 1) % 8, 4 + (i * 5 + 2) % 8];
            Example {
                src: [vec![2], words.to_vec(), vec![3]].concat(),
                tgt: [vec![2], words.iter().rev().copied().collect(), vec![3]].concat(),
            }
        })
        .collect();
    let b = Batch::from_examples(&examples).unwrap();
    let config = TransformerConfig { dropout: 0.0, attention_dropout: 0.0, ..configs()[0].1.clone() };
    let mut model = Transformer::new(config, &mut rng).unwrap();
    let mut opt = Optimizer::new(Algorithm::adam(), 3e-3).unwrap();
    let first = model.loss(&b, 0.0, Mode::Eval).unwrap().item().unwrap();
    for _ in 0..150 {
        let grads = model.loss(&b, 0.0, Mode::Eval).unwrap().backward().unwrap();
        opt.step(&mut model, &grads).unwrap();
    }
    let last = model.loss(&b, 0.0, Mode::Eval).unwrap().item().unwrap();
    assert!(last < 0.05 && last < first / 20.0, "loss {first} -> {last}");
}

#[test]
fn the_same_seed_gives_the_same_bits_on_any_number_of_threads() {
    for (name, config) in configs() {
        let config = TransformerConfig { dropout: 0.1, attention_dropout: 0.1, ..config };
        let run = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let model = Transformer::new(config.clone(), &mut StdRng::seed_from_u64(7)).unwrap();
                let loss = model.loss(&batch(), 0.1, Mode::Train(&mut StdRng::seed_from_u64(8))).unwrap();
                let grads = loss.backward().unwrap();
                let mut bits = vec![loss.item().unwrap().to_bits()];
                for p in model.params() {
                    bits.extend(grads.get(p.tensor()).unwrap().iter().map(|v| v.to_bits()));
                }
                bits
            })
        };
        assert_eq!(run(1), run(2), "{name}: one thread and two differ");
    }
}

#[test]
fn bad_configurations_and_inputs_are_refused() {
    let mut rng = StdRng::seed_from_u64(9);
    let base = configs()[0].1.clone();
    for (what, config) in [
        ("heads", TransformerConfig { heads: 3, ..base.clone() }),
        ("dropout", TransformerConfig { dropout: 1.0, ..base.clone() }),
        ("tie_source", TransformerConfig { tie_source: true, src_vocab: 19, ..base.clone() }),
        ("layers", TransformerConfig { decoder_layers: 0, ..base.clone() }),
    ] {
        assert!(Transformer::new(config, &mut rng).is_err(), "{what} accepted");
    }
    let model = Transformer::new(TransformerConfig { max_len: 4, ..base }, &mut rng).unwrap();
    let b = batch();
    let err = model.forward(&b.src, &b.src_lens, &b.tgt_in, &b.tgt_lens, Mode::Eval).err().unwrap();
    assert!(err.to_string().contains("exceed"), "{err}");
    assert!(model.encode_source(&b.src, &[1, 2], Mode::Eval).is_err(), "lengths for two rows of three");
}

#[test]
fn beam_search_of_size_one_is_greedy_decoding() {
    for (name, config) in configs() {
        let model = Transformer::new(config, &mut StdRng::seed_from_u64(10)).unwrap();
        let b = batch();
        let greedy = greedy_decode(&model, &b.src, &b.src_lens, 8, true).unwrap();
        let one = BeamConfig { beam_size: 1, n_best: 1, alpha: 0.0, ..BeamConfig::default() };
        let beam = beam_search(&model, &b.src, &b.src_lens, 8, one, true).unwrap();
        for (g, bm) in greedy.iter().zip(&beam) {
            assert_eq!(g.tokens, bm[0].tokens, "{name}");
            assert!((g.log_prob - bm[0].log_prob).abs() < 1e-5, "{name}: {} vs {}", g.log_prob, bm[0].log_prob);
            assert_eq!(g.attention.as_ref().unwrap().dim(), (g.tokens.len(), b.src.ncols()), "{name}");
        }
        // Wider beams find outputs at least as probable as greedy's, by their own ranking.
        let five = BeamConfig { alpha: 0.0, n_best: 5, ..BeamConfig::default() };
        let (five, traces) = lingo_nn::beam_search_traced(&model, &b.src, &b.src_lens, 8, five, false).unwrap();
        // Traced, the search is the same, and each output is found in its trace.
        assert_eq!(
            five,
            beam_search(
                &model,
                &b.src,
                &b.src_lens,
                8,
                BeamConfig { n_best: 5, alpha: 0.0, ..BeamConfig::default() },
                false
            )
            .unwrap()
        );
        for (n_best, trace) in five.iter().zip(&traces) {
            for output in n_best {
                let (step, at) = trace.find(output).unwrap_or_else(|| panic!("{name}: {output:?} not in its trace"));
                assert_eq!(trace.tokens(step, at), output.tokens, "{name}");
            }
        }
        for (g, bm) in greedy.iter().zip(&five) {
            if g.finished() {
                assert!(
                    bm[0].log_prob >= g.log_prob - 1e-5,
                    "{name}: beam {} below greedy {}",
                    bm[0].log_prob,
                    g.log_prob
                );
            }
        }
    }
}

#[test]
fn training_checkpoints_round_trip_and_resume_to_the_same_losses() {
    let task = LexiconReverse::default();
    let mut rng = StdRng::seed_from_u64(11);
    let (train, val) = (task.generate(64, &mut rng), task.generate(16, &mut rng));
    let (src_vocab, tgt_vocab) = (task.src_vocab().clone(), task.tgt_vocab().clone());
    let config = TransformerConfig {
        d_model: 16,
        heads: 2,
        encoder_layers: 1,
        decoder_layers: 1,
        ff_dim: 32,
        max_len: 32,
        ..TransformerConfig::new(src_vocab.len(), tgt_vocab.len())
    };
    let dir = tempfile::tempdir().unwrap();
    let settings = |epochs, sub: &str| {
        let path = dir.path().join(sub);
        std::fs::create_dir_all(&path).unwrap();
        let spec =
            CheckpointSpec { dir: path, src_vocab: src_vocab.clone(), tgt_vocab: tgt_vocab.clone(), keep_epochs: 0 };
        let batching = BatchConfig { batch_size: 16, bucket: false, shuffle: true, max_tokens: None };
        TrainConfig { batching, checkpoints: Some(spec), progress: Progress::Silent, ..TrainConfig::new(epochs, 3e-3) }
    };
    let mut whole = Transformer::new(config.clone(), &mut StdRng::seed_from_u64(12)).unwrap();
    let straight = train_model(&mut whole, &train, &val, &settings(3, "straight"), None).unwrap();
    assert!(straight.val_losses[2] < straight.val_losses[0], "{:?}", straight.val_losses);

    let mut first = Transformer::new(config.clone(), &mut StdRng::seed_from_u64(12)).unwrap();
    train_model(&mut first, &train, &val, &settings(1, "resumed"), None).unwrap();
    let path = dir.path().join("resumed/last.ckpt");
    let ckpt: Checkpoint<TrainedModel<TransformerConfig>> =
        load_resumable(&path, &config, &settings(3, "resumed"), &src_vocab, &tgt_vocab).unwrap();
    let mut resumed = Transformer::new(config.clone(), &mut StdRng::seed_from_u64(99)).unwrap();
    let rest = train_model(&mut resumed, &train, &val, &settings(3, "resumed"), Some(&ckpt)).unwrap();
    assert_eq!(rest.train_losses, straight.train_losses, "train losses after resuming");
    assert_eq!(rest.val_losses, straight.val_losses, "validation losses after resuming");

    // The last checkpoint rebuilds a model with the same bits, and a changed configuration is refused by name.
    let last: Checkpoint<TrainedModel<TransformerConfig>> =
        Checkpoint::load(dir.path().join("straight/last.ckpt")).unwrap();
    let rebuilt = Transformer::from_checkpoint(&last.config.model, &last, &path).unwrap();
    let b = Batch::from_examples(&val).unwrap();
    let loss = |m: &Transformer| m.loss(&b, 0.0, Mode::Eval).unwrap().item().unwrap();
    assert_eq!(loss(&rebuilt).to_bits(), loss(&whole).to_bits());
    let wider = TransformerConfig { ff_dim: 64, ..config };
    let err = load_resumable(&path, &wider, &settings(3, "resumed"), &src_vocab, &tgt_vocab).unwrap_err().to_string();
    assert!(err.contains("ff_dim 32 (saved) vs 64 (this run)"), "{err}");
}
