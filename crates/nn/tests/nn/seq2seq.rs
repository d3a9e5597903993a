//! The seq2seq model, its training loop and its decoders.

use lingo_attention::Scorer;
use lingo_data::{AlignedExample, Batch, DigitOp, DigitTask, SOS, Task};
use lingo_nn::{
    Algorithm, BeamConfig, Checkpoint, CheckpointSpec, Error, Fate, Hypothesis, Mode, Next, Optimizer, ParamProblem,
    Placement, Progress, RnnKind, Schedule, Seq2Seq, Seq2SeqConfig, StateDict, Stopping, TrainConfig, TrainedModel,
    beam_search, evaluate, greedy_decode, train_model, train_model_with,
};
use lingo_tensor::{Module, RnnWeights, Tensor, fused::lstm_sequence, no_grad};
use ndarray::{Array2, Axis};
use rand::SeedableRng;
use rand::rngs::StdRng;

fn reverse_task() -> DigitTask {
    DigitTask::new(DigitOp::Reverse, 6, 2, 4).expect("valid task")
}

fn tiny(task: &DigitTask, rnn: RnnKind, attention: Option<Scorer>, placement: Placement) -> Seq2SeqConfig {
    Seq2SeqConfig {
        rnn,
        emb_dim: 16,
        hidden_dim: 16,
        attn_dim: 16,
        attention,
        placement,
        ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len())
    }
}

/// Every attention setting: off, and each scorer in each placement.
fn all_attention() -> Vec<(Option<Scorer>, Placement)> {
    let scorers = [Scorer::Dot, Scorer::General, Scorer::Additive, Scorer::ScaledDot, Scorer::MultiHead { heads: 2 }];
    let mut all = vec![(None, Placement::Luong)];
    for placement in [Placement::Luong, Placement::Bahdanau] {
        all.extend(scorers.iter().map(|&s| (Some(s), placement)));
    }
    all
}

fn batch_of(examples: &[AlignedExample]) -> Batch {
    Batch::from_examples(examples).expect("examples batch")
}

#[test]
fn every_rnn_and_attention_configuration_overfits_a_small_set() {
    let task = reverse_task();
    let examples = task.generate(24, &mut StdRng::seed_from_u64(1));
    let batch = batch_of(&examples);
    for rnn in [RnnKind::Lstm, RnnKind::Gru] {
        for (attention, placement) in all_attention() {
            let mut model = Seq2Seq::new(tiny(&task, rnn, attention, placement), &mut StdRng::seed_from_u64(2))
                .expect("valid config");
            let mut opt = Optimizer::new(Algorithm::adam(), 2e-2).expect("valid optimizer");
            let first = model.loss(&batch, 0.0, Mode::Eval).unwrap().item().unwrap();
            let mut last = first;
            for _ in 0..150 {
                let loss = model.loss(&batch, 0.0, Mode::Eval).unwrap();
                last = loss.item().unwrap();
                let grads = loss.backward().unwrap();
                drop(loss);
                opt.step(&mut model, &grads).unwrap();
            }
            let name = format!("{rnn:?} / {attention:?} / {placement:?}");
            assert!(last < 0.1, "{name}: loss {first:.3} -> {last:.3}, expected below 0.1");
        }
    }
}

#[test]
fn gradients_reach_every_parameter() {
    let task = reverse_task();
    let batch = batch_of(&task.generate(8, &mut StdRng::seed_from_u64(3)));
    for rnn in [RnnKind::Lstm, RnnKind::Gru] {
        for (attention, placement) in all_attention() {
            let config = Seq2SeqConfig {
                num_layers: 2,
                bidirectional: attention != Some(Scorer::Dot) && attention != Some(Scorer::ScaledDot),
                ..tiny(&task, rnn, attention, placement)
            };
            let model = Seq2Seq::new(config, &mut StdRng::seed_from_u64(4)).expect("valid config");
            let grads = model.loss(&batch, 0.1, Mode::Eval).unwrap().backward().unwrap();
            for p in model.params() {
                let g = grads
                    .get(p.tensor())
                    .unwrap_or_else(|| panic!("{rnn:?}/{attention:?}/{placement:?}: {} got no gradient", p.name()));
                assert!(
                    g.iter().any(|&v| v != 0.0),
                    "{rnn:?}/{attention:?}/{placement:?}: {} has an all-zero gradient",
                    p.name()
                );
            }
        }
    }
}

/// The same values computed two ways, as `(rows, features)` matrices.
type TwoWays = (Array2<f32>, Array2<f32>);

/// Teacher-forced logits and weights, and the same computed one decoder step at a time.
fn whole_and_stepwise(model: &Seq2Seq, batch: &Batch) -> (TwoWays, Option<TwoWays>) {
    no_grad(|| {
        // Full lengths: step-by-step decoding has no notion of target padding.
        let full = vec![batch.tgt_in.ncols(); batch.len()];
        let whole = model.forward(&batch.src, &batch.src_lens, &batch.tgt_in, &full, Mode::Eval).unwrap();
        let enc = model.encode_source(&batch.src, &batch.src_lens, Mode::Eval).unwrap();
        let ctx = model.decoder_context(&enc).unwrap();
        let mut state = lingo_nn::Seq2SeqState::from(enc.state.clone());
        let (mut logits, mut weights) = (vec![], vec![]);
        for column in batch.tgt_in.columns() {
            let step = model.decode_step(&ctx, &state, &column.to_vec(), Mode::Eval).unwrap();
            logits.push(step.logits.data().clone());
            weights.extend(step.weights.map(|w| w.data().clone()));
            state = step.state;
        }
        let flat = |parts: &[ndarray::ArrayD<f32>], full: &Tensor| {
            let views: Vec<_> = parts.iter().map(|a| a.view()).collect();
            let stepwise = ndarray::stack(Axis(1), &views).unwrap();
            let n = full.len() / full.shape()[full.ndim() - 1];
            (
                full.data().to_shape((n, full.shape()[full.ndim() - 1])).unwrap().to_owned(),
                stepwise.to_shape((n, full.shape()[full.ndim() - 1])).unwrap().to_owned(),
            )
        };
        (flat(&logits, &whole.logits), whole.weights.as_ref().map(|w| flat(&weights, w)))
    })
}

fn rnn(w: &[Tensor; 4]) -> RnnWeights<'_> {
    RnnWeights { weight_ih: &w[0], weight_hh: &w[1], bias_ih: &w[2], bias_hh: &w[3] }
}

fn max_diff(a: &Array2<f32>, b: &Array2<f32>) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn step_by_step_decoding_equals_the_full_forward_pass() {
    let task = reverse_task();
    let batch = batch_of(&task.generate(5, &mut StdRng::seed_from_u64(5)));
    for rnn in [RnnKind::Lstm, RnnKind::Gru] {
        for (attention, placement) in all_attention() {
            let config = Seq2SeqConfig { num_layers: 2, ..tiny(&task, rnn, attention, placement) };
            let model = Seq2Seq::new(config, &mut StdRng::seed_from_u64(6)).unwrap();
            let ((whole, stepwise), weights) = whole_and_stepwise(&model, &batch);
            let name = format!("{rnn:?}/{attention:?}/{placement:?}");
            assert!(max_diff(&whole, &stepwise) < 1e-5, "{name}: logits differ by {}", max_diff(&whole, &stepwise));
            if let Some((w, s)) = weights {
                assert!(max_diff(&w, &s) < 1e-6, "{name}: attention differs by {}", max_diff(&w, &s));
            }
        }
    }
}

#[test]
fn attention_off_is_exactly_the_plain_encoder_decoder() {
    // Embed, run the encoder LSTM, hand its final state to the decoder LSTM,
    // project: composed by hand from the fused ops and the model's own weights.
    let task = reverse_task();
    let batch = batch_of(&task.generate(6, &mut StdRng::seed_from_u64(7)));
    let model =
        Seq2Seq::new(tiny(&task, RnnKind::Lstm, None, Placement::Luong), &mut StdRng::seed_from_u64(8)).unwrap();
    let p = |name: &str| {
        model
            .params()
            .into_iter()
            .find(|p| p.name() == name)
            .unwrap_or_else(|| panic!("no parameter {name}"))
            .tensor()
            .clone()
    };
    let weights = |side: &str| {
        [
            p(&format!("{side}.rnn.weight_ih_l0")),
            p(&format!("{side}.rnn.weight_hh_l0")),
            p(&format!("{side}.rnn.bias_ih_l0")),
            p(&format!("{side}.rnn.bias_hh_l0")),
        ]
    };
    let (enc_w, dec_w) = (weights("encoder"), weights("decoder"));
    let zeros = Tensor::zeros(&[batch.len(), 16]);
    let x = p("encoder.embedding.weight").embedding(batch.src.view().into_dyn(), None).unwrap();
    let enc = lstm_sequence(&x, &zeros, &zeros, &batch.src_lens, false, rnn(&enc_w)).unwrap();
    let y = p("decoder.embedding.weight").embedding(batch.tgt_in.view().into_dyn(), None).unwrap();
    let dec = lstm_sequence(&y, &enc.h_n, &enc.c_n, &batch.tgt_lens, false, rnn(&dec_w)).unwrap();
    let by_hand = dec.output.linear(&p("out.weight"), Some(&p("out.bias"))).unwrap();
    let out = model.forward(&batch.src, &batch.src_lens, &batch.tgt_in, &batch.tgt_lens, Mode::Eval).unwrap();
    assert_eq!(out.logits.to_vec(), by_hand.to_vec(), "bit for bit");
    assert!(out.weights.is_none());
    // ...and enc_out, computed, is never read: changing it changes nothing.
    let enc_out = model.encode_source(&batch.src, &batch.src_lens, Mode::Eval).unwrap().enc_out;
    assert_eq!(enc_out.shape(), &[batch.len(), batch.src.ncols(), 16]);
}

/// Checkpoints of `task`'s models into `dir`.
fn checkpoints_in(task: &DigitTask, dir: &std::path::Path) -> CheckpointSpec {
    CheckpointSpec {
        dir: dir.to_path_buf(),
        src_vocab: task.src_vocab().clone(),
        tgt_vocab: task.tgt_vocab().clone(),
        keep_epochs: 0,
    }
}

/// The reverse task with 96 training and 16 validation examples, and
/// batches of 16: a few quick steps per epoch.
fn small_training_set() -> (DigitTask, Vec<AlignedExample>, Vec<AlignedExample>) {
    let task = reverse_task();
    let mut rng = StdRng::seed_from_u64(9);
    let (train, val) = (task.generate(96, &mut rng), task.generate(16, &mut rng));
    (task, train, val)
}

/// Shuffled batches of 16, no bucketing.
const BATCHES_OF_16: lingo_data::BatchConfig =
    lingo_data::BatchConfig { batch_size: 16, bucket: false, shuffle: true, max_tokens: None };

fn quiet(epochs: usize) -> TrainConfig {
    TrainConfig { progress: Progress::Silent, label_smoothing: 0.1, ..TrainConfig::new(epochs, 1e-2) }
}

#[test]
fn the_same_seed_gives_bit_identical_losses() {
    let (task, train, val) = small_training_set();
    let config = tiny(&task, RnnKind::Gru, Some(Scorer::Additive), Placement::Bahdanau);
    let run = |seed| {
        let mut model = Seq2Seq::new(config.clone(), &mut StdRng::seed_from_u64(seed)).unwrap();
        let settings = TrainConfig { seed, batching: BATCHES_OF_16, ..quiet(2) };
        let r = train_model(&mut model, &train, &val, &settings, None).unwrap();
        (r.train_losses, r.val_losses)
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}

#[test]
fn sharded_training_is_the_same_training_and_the_same_bits_on_any_thread_count() {
    let (task, train, val) = small_training_set();
    let config = tiny(&task, RnnKind::Lstm, Some(Scorer::Dot), Placement::Luong);
    let run = |shards, threads| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut model = Seq2Seq::new(config.clone(), &mut StdRng::seed_from_u64(3)).unwrap();
            // Plain SGD: a wrongly scaled gradient shows (Adam would divide it away).
            let settings = TrainConfig {
                shards,
                batching: BATCHES_OF_16,
                algorithm: lingo_nn::Algorithm::sgd(0.0),
                lr: 0.5,
                ..quiet(2)
            };
            train_model(&mut model, &train, &val, &settings, None).unwrap().train_losses
        })
    };
    let (whole, sharded) = (run(1, 1), run(3, 2));
    // The same gradients up to rounding, so the same training up to rounding.
    for (a, b) in whole.iter().zip(&sharded) {
        assert!((a - b).abs() < 1e-4 * a.abs().max(1.0), "{whole:?} vs {sharded:?}");
    }
    assert_eq!(sharded, run(3, 1), "shards give the same bits on one thread or two");
}

#[test]
fn checkpoints_round_trip_and_resuming_gives_the_same_losses() {
    let task = reverse_task();
    let mut rng = StdRng::seed_from_u64(10);
    let (train, val) = (task.generate(96, &mut rng), task.generate(16, &mut rng));
    let config = Seq2SeqConfig { dropout: 0.1, ..tiny(&task, RnnKind::Lstm, Some(Scorer::Dot), Placement::Luong) };
    let dir = tempfile::tempdir().unwrap();
    let spec = |sub: &str| {
        let path = dir.path().join(sub);
        std::fs::create_dir_all(&path).unwrap();
        Some(checkpoints_in(&task, &path))
    };
    let batching = lingo_data::BatchConfig { batch_size: 16, bucket: false, shuffle: true, max_tokens: None };
    let settings = |epochs, sub| TrainConfig { batching, checkpoints: spec(sub), ..quiet(epochs) };

    let mut whole = Seq2Seq::new(config.clone(), &mut StdRng::seed_from_u64(11)).unwrap();
    let straight = train_model(&mut whole, &train, &val, &settings(4, "straight"), None).unwrap();

    let mut first = Seq2Seq::new(config.clone(), &mut StdRng::seed_from_u64(11)).unwrap();
    train_model(&mut first, &train, &val, &settings(2, "resumed"), None).unwrap();
    let ckpt: Checkpoint<TrainedModel> = Checkpoint::load(dir.path().join("resumed/last.ckpt")).unwrap();
    assert_eq!(ckpt.epoch, 2);
    // A fresh model with other weights picks everything up from the checkpoint.
    let mut resumed = Seq2Seq::new(ckpt.config.model.clone(), &mut StdRng::seed_from_u64(99)).unwrap();
    let rest = train_model(&mut resumed, &train, &val, &settings(4, "resumed"), Some(&ckpt)).unwrap();
    assert_eq!(rest.train_losses, straight.train_losses, "train losses after resuming");
    assert_eq!(rest.val_losses, straight.val_losses, "validation losses after resuming");
    assert_eq!(rest.steps, straight.steps);

    // The best checkpoint rebuilds a model that computes the same numbers.
    let best: Checkpoint<TrainedModel> = Checkpoint::load(straight.best_checkpoint.as_ref().unwrap()).unwrap();
    let mut rebuilt = Seq2Seq::new(best.config.model.clone(), &mut StdRng::seed_from_u64(12)).unwrap();
    best.restore(&mut rebuilt).unwrap();
    assert_eq!(best.epoch as usize, straight.best_epoch);
    assert_eq!(best.tgt_vocab, *task.tgt_vocab());
    if straight.best_epoch == 4 {
        let b = batch_of(&val);
        let loss = |m: &Seq2Seq| m.loss(&b, 0.1, Mode::Eval).unwrap().item().unwrap();
        assert_eq!(loss(&rebuilt), loss(&whole));
    }
}

#[test]
fn ending_at_an_epoch_stops_there_with_the_decay_finished() {
    let (task, train, val) = small_training_set();
    let config = tiny(&task, RnnKind::Gru, None, Placement::Luong);
    let dir = tempfile::tempdir().unwrap();
    let schedule = Schedule::WarmupCosine { warmup_steps: 2, total_steps: 1000, min_lr: 1e-4 };
    let settings = TrainConfig {
        batching: BATCHES_OF_16,
        schedule,
        checkpoints: Some(checkpoints_in(&task, dir.path())),
        ..quiet(10)
    };
    // `ends[e - 1]`: the end the hook asks for after epoch e.
    let run = |ends: &[usize]| {
        let mut model = Seq2Seq::new(config.clone(), &mut StdRng::seed_from_u64(4)).unwrap();
        let r = train_model_with(&mut model, &train, &val, &settings, None, |r, _| {
            Ok::<_, Error>(ends.get(r.epoch - 1).map_or(Next::Continue, |&e| Next::EndAt(e)))
        })
        .unwrap();
        let last: Checkpoint<TrainedModel> = Checkpoint::load(dir.path().join("last.ckpt")).unwrap();
        (r.val_losses.len(), r.steps, last.scheduler.unwrap())
    };
    let (epochs, steps, scheduler) = run(&[3]);
    assert_eq!((epochs, steps), (3, settings.steps_through(&train, 3).unwrap()));
    assert_eq!(steps, 18, "96 examples in batches of 16, three times");
    // The cosine now ends with epoch 3's last step: the rate is at its floor.
    assert_eq!(scheduler.lr(), 1e-4);
    assert_eq!(*scheduler.schedule(), Schedule::WarmupCosine { warmup_steps: 2, total_steps: 18, min_lr: 1e-4 });
    // A later end moves it again, later or earlier; one at or before the current epoch stops at once.
    let (epochs, _, scheduler) = run(&[2, 4]);
    assert_eq!((epochs, scheduler.lr()), (4, 1e-4));
    assert_eq!(run(&[5, 3]).0, 3);
    assert_eq!(run(&[0]).0, 1);
}

#[test]
fn the_last_epochs_weights_are_kept_for_averaging_and_older_ones_removed() {
    let (task, train, val) = small_training_set();
    let config = tiny(&task, RnnKind::Lstm, Some(Scorer::General), Placement::Luong);
    let dir = tempfile::tempdir().unwrap();
    let spec = CheckpointSpec { keep_epochs: 2, ..checkpoints_in(&task, dir.path()) };
    let settings = TrainConfig { batching: BATCHES_OF_16, checkpoints: Some(spec.clone()), ..quiet(4) };
    let mut model = Seq2Seq::new(config.clone(), &mut StdRng::seed_from_u64(3)).unwrap();
    let mut weights = Vec::new();
    train_model_with(&mut model, &train, &val, &settings, None, |_, m| {
        weights.push(StateDict::from_module(m).unwrap());
        Ok::<_, Error>(Next::Continue)
    })
    .unwrap();
    for epoch in 1..=2 {
        assert!(!spec.epoch_path(epoch).exists(), "epoch {epoch} outlived the window");
    }
    let kept: Vec<StateDict> =
        (3..=4).map(|e| Checkpoint::<TrainedModel>::load(spec.epoch_path(e)).unwrap().params).collect();
    assert_eq!(kept, weights[2..], "each file holds its epoch's weights");

    // The mean of the two is a model of its own, scored on the epochs' validation batches.
    let mean = StateDict::average(&kept).unwrap();
    let w = |dict: &StateDict| dict.get("out.weight").unwrap().data[5];
    assert_eq!(w(&mean), (w(&kept[0]) + w(&kept[1])) / 2.0);
    let averaged = Seq2Seq::from_state_dict(&config, &mean).unwrap();
    let loss = evaluate(&averaged, &settings.validation_batches(&val).unwrap(), settings.label_smoothing).unwrap();
    assert!(loss.is_finite() && loss > 0.0);
    // Dicts of different models do not average.
    let other =
        Seq2Seq::new(Seq2SeqConfig { hidden_dim: config.hidden_dim + 1, ..config }, &mut StdRng::seed_from_u64(3))
            .unwrap();
    let err = StateDict::average(&[mean, StateDict::from_module(&other).unwrap()]).unwrap_err();
    assert!(matches!(err, Error::Param { problem: ParamProblem::Shape { .. }, .. }), "{err}");
}

#[test]
fn an_exploding_learning_rate_stops_with_an_error_naming_the_step() {
    let task = reverse_task();
    let mut rng = StdRng::seed_from_u64(13);
    let (train, val) = (task.generate(64, &mut rng), task.generate(8, &mut rng));
    let mut model =
        Seq2Seq::new(tiny(&task, RnnKind::Gru, None, Placement::Luong), &mut StdRng::seed_from_u64(14)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = checkpoints_in(&task, dir.path());
    let batching = lingo_data::BatchConfig { batch_size: 8, bucket: false, shuffle: true, max_tokens: None };
    let settings =
        TrainConfig { algorithm: Algorithm::sgd(0.0), lr: 1e38, batching, checkpoints: Some(spec), ..quiet(5) };
    let err = train_model(&mut model, &train, &val, &settings, None).unwrap_err();
    assert!(matches!(err, Error::NonFiniteLoss { .. } | Error::Training { .. }), "{err}");
    assert!(err.to_string().contains("step"), "{err}");
    // Whatever was saved before the blow-up still loads.
    if dir.path().join("last.ckpt").exists() {
        Checkpoint::<TrainedModel>::load(dir.path().join("last.ckpt")).expect("the last good checkpoint loads");
    }
    // Adam's step is about the rate whatever the gradient: at 1e300 (infinite
    // in f32) the first update breaks every weight. The loss of that step was
    // still finite, so it is the validation after it that stops training,
    // before the broken weights are saved.
    let mut model =
        Seq2Seq::new(tiny(&task, RnnKind::Lstm, Some(Scorer::Dot), Placement::Luong), &mut StdRng::seed_from_u64(14))
            .unwrap();
    let fresh = tempfile::tempdir().unwrap();
    let settings = TrainConfig {
        lr: 1e300,
        batching,
        checkpoints: Some(checkpoints_in(&task, fresh.path())),
        epoch_size: Some(8),
        ..quiet(5)
    };
    let err = train_model(&mut model, &train, &val, &settings, None).unwrap_err();
    assert!(matches!(err, Error::NonFiniteLoss { what: "validation", epoch: 1, step: 1, .. }), "{err}");
    assert!(err.to_string().starts_with("validation loss is NaN at epoch 1, step 1: stopped"), "{err}");
    assert_eq!(std::fs::read_dir(fresh.path()).unwrap().count(), 0, "a NaN model was saved");
}

/// A batch whose second row is all padding (length 0), with `src_len` columns.
fn with_empty_row(task: &DigitTask, src_len: usize) -> (Array2<usize>, Vec<usize>) {
    let example = task.example(&vec![1; src_len - 2]).unwrap();
    let mut src = Array2::from_elem((2, src_len), lingo_data::PAD);
    src.row_mut(0).assign(&ndarray::Array1::from(example.src.clone()));
    (src, vec![src_len, 0])
}

fn all_finite<'a>(values: impl IntoIterator<Item = &'a f32>) -> bool {
    values.into_iter().all(|v| v.is_finite())
}

#[test]
fn an_all_padding_source_row_gives_finite_outputs_for_every_scorer() {
    let task = reverse_task();
    let (src, src_lens) = with_empty_row(&task, 5);
    let tgt_in = ndarray::arr2(&[[SOS, 5, 6], [SOS, 7, 0]]);
    for rnn in [RnnKind::Lstm, RnnKind::Gru] {
        for (attention, placement) in all_attention() {
            let name = format!("{rnn:?} {attention:?} {placement:?}");
            let model = Seq2Seq::new(tiny(&task, rnn, attention, placement), &mut StdRng::seed_from_u64(3)).unwrap();
            let out = no_grad(|| model.forward(&src, &src_lens, &tgt_in, &[3, 2], Mode::Eval)).unwrap();
            assert!(all_finite(out.logits.data()), "{name}: logits");
            if let Some(w) = out.weights_array() {
                assert!(all_finite(&w), "{name}: weights");
                // Nothing to attend to: the row is spread evenly, not NaN.
                let row = w.slice(ndarray::s![1, 0, ..]);
                assert!(row.iter().all(|&x| (x - 0.2).abs() < 1e-6), "{name}: {row}");
            }
            let greedy = greedy_decode(&model, &src, &src_lens, 6, true).unwrap();
            let three = BeamConfig { beam_size: 3, n_best: 2, ..BeamConfig::default() };
            let beam = beam_search(&model, &src, &src_lens, 6, three, true).unwrap();
            for hyp in greedy.iter().chain(beam.iter().flatten()) {
                assert!(hyp.log_prob.is_finite() && hyp.score.is_finite(), "{name}: {hyp:?}");
                assert!(hyp.attention.as_ref().is_none_or(all_finite), "{name}: attention");
            }
        }
    }
}

#[test]
fn an_empty_batch_decodes_to_no_hypotheses() {
    let task = reverse_task();
    let model =
        Seq2Seq::new(tiny(&task, RnnKind::Lstm, Some(Scorer::Dot), Placement::Luong), &mut StdRng::seed_from_u64(4))
            .unwrap();
    let src = Array2::<usize>::zeros((0, 5));
    assert!(greedy_decode(&model, &src, &[], 6, true).unwrap().is_empty());
    assert!(beam_search(&model, &src, &[], 6, BeamConfig::default(), true).unwrap().is_empty());
    // A bad beam is still an error, with or without sentences.
    assert!(beam_search(&model, &src, &[], 6, BeamConfig { beam_size: 0, ..BeamConfig::default() }, false).is_err());
}

#[test]
fn sources_five_times_longer_than_in_training_decode_within_the_cap() {
    // Trained on 2 to 4 digits, asked for 20.
    let task = reverse_task();
    let mut rng = StdRng::seed_from_u64(17);
    let (train, val) = (task.generate(64, &mut rng), task.generate(8, &mut rng));
    let long = DigitTask::new(DigitOp::Reverse, 6, 20, 20).unwrap().generate(3, &mut rng);
    let batch = batch_of(&long);
    for (attention, placement) in all_attention() {
        let mut model =
            Seq2Seq::new(tiny(&task, RnnKind::Gru, attention, placement), &mut StdRng::seed_from_u64(18)).unwrap();
        train_model(&mut model, &train, &val, &quiet(1), None).unwrap();
        for cap in [1, 25, 60] {
            let greedy = greedy_decode(&model, &batch.src, &batch.src_lens, cap, true).unwrap();
            let three = BeamConfig { beam_size: 3, ..BeamConfig::default() };
            let beam = beam_search(&model, &batch.src, &batch.src_lens, cap, three, true).unwrap();
            for hyp in greedy.iter().chain(beam.iter().flatten()) {
                assert!(
                    !hyp.tokens.is_empty() && hyp.tokens.len() <= cap,
                    "{attention:?}: {} tokens, cap {cap}",
                    hyp.tokens.len()
                );
                assert!(hyp.log_prob.is_finite(), "{attention:?}: {hyp:?}");
                if let Some(a) = &hyp.attention {
                    assert_eq!(a.dim(), (hyp.tokens.len(), batch.src.ncols()));
                    assert!(all_finite(a));
                }
            }
        }
    }
}

#[test]
fn beam_of_one_is_greedy_and_wider_beams_find_the_trained_answer() {
    let task = reverse_task();
    let mut rng = StdRng::seed_from_u64(15);
    let (train, val) = (task.generate(512, &mut rng), task.generate(32, &mut rng));
    let mut model = Seq2Seq::new(
        tiny(&task, RnnKind::Gru, Some(Scorer::Additive), Placement::Bahdanau),
        &mut StdRng::seed_from_u64(16),
    )
    .unwrap();
    train_model(&mut model, &train, &val, &TrainConfig { label_smoothing: 0.0, ..quiet(20) }, None).unwrap();
    let batch = batch_of(&val);
    let greedy = greedy_decode(&model, &batch.src, &batch.src_lens, 8, true).unwrap();
    let one = BeamConfig { beam_size: 1, n_best: 1, alpha: 0.0, ..BeamConfig::default() };
    let beam1 = beam_search(&model, &batch.src, &batch.src_lens, 8, one, true).unwrap();
    for (g, b) in greedy.iter().zip(&beam1) {
        assert_eq!(g.tokens, b[0].tokens);
        assert!((g.log_prob - b[0].log_prob).abs() < 1e-5);
    }
    let wide = BeamConfig { beam_size: 4, n_best: 3, alpha: 0.6, ..BeamConfig::default() };
    let beams = beam_search(&model, &batch.src, &batch.src_lens, 8, wide, false).unwrap();
    let mut correct = 0;
    for (ex, nbest) in val.iter().zip(&beams) {
        assert_eq!(nbest.len(), 3);
        assert!(nbest.windows(2).all(|w| w[0].finished() >= w[1].finished()), "finished first");
        correct += usize::from(nbest[0].tokens == ex.tgt[1..]);
    }
    assert!(correct * 10 >= val.len() * 9, "beam search got {correct}/{} right", val.len());
}

/// A dot-attention LSTM trained three epochs on the small set, and its
/// validation batch: half trained, so that its hypotheses differ in length
/// and in what they read.
fn half_trained() -> (Seq2Seq, Batch) {
    let (task, train, val) = small_training_set();
    let config = tiny(&task, RnnKind::Lstm, Some(Scorer::Dot), Placement::Luong);
    let mut model = Seq2Seq::new(config, &mut StdRng::seed_from_u64(32)).unwrap();
    train_model(&mut model, &train, &val, &quiet(3), None).unwrap();
    (model, batch_of(&val))
}

#[test]
fn a_beam_trace_holds_every_output_and_the_search_it_came_from() {
    let (model, batch) = half_trained();
    let (src, lens) = (&batch.src, &batch.src_lens);
    for stopping in [Stopping::KFinished, Stopping::Bound] {
        let cfg = BeamConfig { beam_size: 4, n_best: 4, alpha: 0.6, stopping, ..BeamConfig::default() };
        let (outputs, traces) = lingo_nn::beam_search_traced(&model, src, lens, 9, cfg, true).unwrap();
        // The outputs are beam search's, bit for bit.
        assert_eq!(outputs, beam_search(&model, src, lens, 9, cfg, true).unwrap(), "{stopping:?}");
        for (n_best, trace) in outputs.iter().zip(&traces) {
            for (t, step) in trace.steps.iter().enumerate() {
                // At most K live beams continue, the kept ones numbered in order,
                // and pruning went through the candidates best first.
                let kept: Vec<usize> =
                    step.iter().filter_map(|c| if let Fate::Kept(j) = c.fate { Some(j) } else { None }).collect();
                assert_eq!(kept, (0..kept.len()).collect::<Vec<_>>(), "{stopping:?} step {t}");
                assert!(kept.len() <= 4 && step.windows(2).all(|w| w[0].log_prob >= w[1].log_prob));
                // Nothing after the first pruned candidate was taken.
                let first_pruned = step.iter().position(|c| c.fate == Fate::Pruned).unwrap_or(step.len());
                assert!(step[first_pruned..].iter().all(|c| c.fate == Fate::Pruned));
                // A candidate's log p is its parent's plus the token's (which is below 0).
                if t > 0 {
                    for c in step {
                        let parent = trace.steps[t - 1].iter().find(|p| p.fate == Fate::Kept(c.parent)).unwrap();
                        assert!(c.log_prob <= parent.log_prob, "{stopping:?} step {t}");
                    }
                }
            }
            // Each output is a candidate of the trace: its tokens, log p and score exactly.
            for output in n_best {
                let (step, at) = trace.find(output).expect("every output is in its trace");
                assert_eq!(trace.tokens(step, at), output.tokens);
                assert_eq!(trace.steps[step][at].log_prob, output.log_prob);
            }
        }
    }
    // Beam 1's trace is the greedy path: one candidate a step, kept until it ends.
    let one = BeamConfig { beam_size: 1, n_best: 1, alpha: 0.0, ..BeamConfig::default() };
    let (outputs, traces) = lingo_nn::beam_search_traced(&model, src, lens, 9, one, false).unwrap();
    let greedy = greedy_decode(&model, src, lens, 9, false).unwrap();
    for ((output, trace), g) in outputs.iter().zip(&traces).zip(&greedy) {
        assert_eq!(output[0].tokens, g.tokens);
        let path: Vec<usize> = trace.steps.iter().map(|step| step[0].token).collect();
        assert_eq!(path, g.tokens);
        assert!(trace.steps.iter().all(|step| step.len() == 1));
    }
}

#[test]
fn the_coverage_penalty_reranks_what_the_search_found_by_the_attention_it_read() {
    // GNMT's cp only ranks the hypotheses the search finds (the search
    // follows log p), so with n_best = K every β returns the same ones, each
    // scored log p / lp + β Σ_i log min(Σ_j p_ij, 1) from its own attention;
    // and as β grows the best one's coverage term can only rise.
    let (model, batch) = half_trained();
    let search = |beta: f32, with_attention: bool| {
        let cfg = BeamConfig { beam_size: 4, n_best: 4, alpha: 0.6, beta, ..BeamConfig::default() };
        beam_search(&model, &batch.src, &batch.src_lens, 9, cfg, with_attention).unwrap()
    };
    let sorted = |n_best: &[Hypothesis]| {
        let mut tokens: Vec<Vec<usize>> = n_best.iter().map(|h| h.tokens.clone()).collect();
        tokens.sort();
        tokens
    };
    let plain = search(0.0, true);
    let mut best_coverage: Vec<Vec<f32>> = Vec::new();
    for beta in [0.0, 0.5, 2.0, 10.0] {
        let ranked = search(beta, true);
        let mut row = Vec::new();
        for (b, (n_best, base)) in ranked.iter().zip(&plain).enumerate() {
            assert_eq!(sorted(n_best), sorted(base), "β {beta}, row {b}: other hypotheses");
            let coverage = |h: &Hypothesis| -> f32 {
                let weights = h.attention.as_ref().expect("dot attention");
                weights.sum_axis(Axis(0)).iter().take(batch.src_lens[b]).map(|&c| c.min(1.0).ln()).sum()
            };
            for h in n_best {
                let lp = ((5.0 + h.tokens.len() as f32) / 6.0).powf(0.6);
                let want = h.log_prob / lp + beta * coverage(h);
                assert!((h.score - want).abs() < 1e-4, "β {beta}, row {b}: score {} vs {want}", h.score);
            }
            row.push(if n_best[0].finished() { coverage(&n_best[0]) } else { f32::NAN });
        }
        let without = search(beta, false);
        for (with, without) in ranked.iter().flatten().zip(without.iter().flatten()) {
            assert_eq!((&with.tokens, with.score), (&without.tokens, without.score), "β {beta}");
            assert!(without.attention.is_none());
        }
        best_coverage.push(row);
    }
    let mut changed = 0;
    for b in 0..batch.src_lens.len() {
        let column: Vec<f32> = best_coverage.iter().map(|row| row[b]).filter(|c| c.is_finite()).collect();
        assert!(column.windows(2).all(|w| w[1] >= w[0] - 1e-6), "row {b}: the best's coverage fell: {column:?}");
        changed += usize::from(column.first() != column.last());
    }
    assert!(changed > 0, "no row's best changed with β: the test exercises nothing");
}

#[test]
fn searching_to_the_bound_ends_no_worse_than_stopping_at_k_finished() {
    // Stopping::Bound keeps the live beams KFinished keeps and goes on where
    // it stops, so its best finished output scores at least as well; with
    // scores that favour longer outputs it finds a better one for some row.
    // Every score is log p / lp + γ·|tokens|; with K = 1 and α = γ = 0 the
    // bound stops where greedy does.
    let (model, batch) = half_trained();
    let search = |cfg: BeamConfig| beam_search(&model, &batch.src, &batch.src_lens, 9, cfg, false).unwrap();
    let mut better = 0;
    for (alpha, gamma) in [(0.0, 0.0), (1.0, 0.0), (2.0, 0.5), (0.6, -0.3)] {
        let k_finished = BeamConfig { beam_size: 3, n_best: 2, alpha, gamma, ..BeamConfig::default() };
        let bound = BeamConfig { stopping: Stopping::Bound, ..k_finished };
        for (b, (first, all)) in search(k_finished).iter().zip(&search(bound)).enumerate() {
            for h in first.iter().chain(all) {
                let lp = ((5.0 + h.tokens.len() as f32) / 6.0).powf(alpha);
                let want = h.log_prob / lp + gamma * h.tokens.len() as f32;
                assert!((h.score - want).abs() < 1e-4, "α {alpha} γ {gamma}, row {b}: score {} vs {want}", h.score);
            }
            if first[0].finished() {
                assert!(all[0].finished() && all[0].score >= first[0].score, "α {alpha} γ {gamma}, row {b}");
                better += usize::from(all[0].score > first[0].score);
            }
        }
    }
    assert!(better > 0, "the bound never found a better output: the test exercises nothing");
    let one = BeamConfig { beam_size: 1, alpha: 0.0, stopping: Stopping::Bound, ..BeamConfig::default() };
    let greedy = greedy_decode(&model, &batch.src, &batch.src_lens, 9, false).unwrap();
    for (g, b) in greedy.iter().zip(search(one)) {
        assert_eq!(g.tokens, b[0].tokens);
    }
}

#[test]
fn a_batch_decodes_as_each_row_alone_while_its_rows_finish_at_different_steps() {
    // Greedy and beam search drop the rows of finished inputs as they go:
    // what is left must be decoded as it would be alone.
    let task = reverse_task();
    let mut rng = StdRng::seed_from_u64(21);
    let (train, val) = (task.generate(256, &mut rng), task.generate(8, &mut rng));
    let batch = batch_of(&task.generate(6, &mut rng));
    for (attention, placement) in all_attention() {
        let mut model =
            Seq2Seq::new(tiny(&task, RnnKind::Lstm, attention, placement), &mut StdRng::seed_from_u64(22)).unwrap();
        train_model(&mut model, &train, &val, &quiet(8), None).unwrap();
        let beam = BeamConfig { beam_size: 3, n_best: 2, alpha: 0.6, ..BeamConfig::default() };
        let greedy = greedy_decode(&model, &batch.src, &batch.src_lens, 9, true).unwrap();
        let beams = beam_search(&model, &batch.src, &batch.src_lens, 9, beam, true).unwrap();
        let lengths: std::collections::BTreeSet<usize> = greedy.iter().map(|h| h.tokens.len()).collect();
        assert!(
            lengths.len() >= 2,
            "{attention:?}: every row finished at the same step {lengths:?}, so none was dropped"
        );
        for b in 0..batch.src.nrows() {
            let (src, lens) = (batch.src.select(Axis(0), &[b]), &batch.src_lens[b..=b]);
            let alone = greedy_decode(&model, &src, lens, 9, true).unwrap().remove(0);
            let beam_alone = beam_search(&model, &src, lens, 9, beam, true).unwrap().remove(0);
            for (batched, alone) in std::iter::once((&greedy[b], &alone)).chain(beams[b].iter().zip(&beam_alone)) {
                assert_eq!(batched.tokens, alone.tokens, "{attention:?} {placement:?}: row {b}");
                assert!(
                    (batched.log_prob - alone.log_prob).abs() <= 1e-5,
                    "{attention:?}: row {b}: {} vs {}",
                    batched.log_prob,
                    alone.log_prob
                );
                let (with, without) = (batched.attention.as_ref(), alone.attention.as_ref());
                assert_eq!(with.is_some(), without.is_some());
                if let (Some(w), Some(a)) = (with, without) {
                    // The batch's source is padded to its longest row.
                    let w = w.slice(ndarray::s![.., ..a.ncols()]).to_owned();
                    assert!(max_diff(&w, a) <= 1e-5, "{attention:?}: row {b}: attention moved by {}", max_diff(&w, a));
                }
            }
        }
    }
}

#[test]
fn a_teacher_forced_rerun_gives_the_attention_of_a_decoded_output() {
    let task = reverse_task();
    let batch = batch_of(&task.generate(4, &mut StdRng::seed_from_u64(17)));
    for placement in [Placement::Luong, Placement::Bahdanau] {
        let model =
            Seq2Seq::new(tiny(&task, RnnKind::Lstm, Some(Scorer::General), placement), &mut StdRng::seed_from_u64(18))
                .unwrap();
        let hyps = greedy_decode(&model, &batch.src, &batch.src_lens, 6, true).unwrap();
        for (b, hyp) in hyps.iter().enumerate() {
            let mut tgt_in = vec![SOS];
            tgt_in.extend(&hyp.tokens[..hyp.tokens.len() - 1]);
            let src = batch.src.select(Axis(0), &[b]);
            let tgt = Array2::from_shape_vec((1, tgt_in.len()), tgt_in.clone()).unwrap();
            let rerun =
                no_grad(|| model.forward(&src, &batch.src_lens[b..=b], &tgt, &[tgt_in.len()], Mode::Eval)).unwrap();
            let rerun = rerun.weights_array().unwrap().index_axis(Axis(0), 0).to_owned();
            let decoded = hyp.attention.as_ref().unwrap();
            assert_eq!(decoded.dim(), rerun.dim());
            assert!(max_diff(decoded, &rerun) <= 1e-6, "{placement:?}: {}", max_diff(decoded, &rerun));
        }
    }
}

#[test]
fn bad_configurations_are_rejected_at_construction() {
    let task = reverse_task();
    let rng = &mut StdRng::seed_from_u64(19);
    let dot_bidir =
        Seq2SeqConfig { bidirectional: true, ..tiny(&task, RnnKind::Lstm, Some(Scorer::Dot), Placement::Luong) };
    let err = Seq2Seq::new(dot_bidir, rng).expect_err("dot needs equal sizes").to_string();
    assert!(err.contains("general") && err.contains("additive"), "{err}");
    let heads = Seq2SeqConfig {
        attn_dim: 15,
        ..tiny(&task, RnnKind::Lstm, Some(Scorer::MultiHead { heads: 4 }), Placement::Luong)
    };
    assert!(Seq2Seq::new(heads, rng).is_err());
    let zero = Seq2SeqConfig { hidden_dim: 0, ..tiny(&task, RnnKind::Lstm, None, Placement::Luong) };
    assert!(Seq2Seq::new(zero, rng).is_err());
    let dropout = Seq2SeqConfig { dropout: 1.0, ..tiny(&task, RnnKind::Lstm, None, Placement::Luong) };
    assert!(Seq2Seq::new(dropout, rng).is_err());
}

#[test]
fn epochs_can_be_slices_of_the_data_and_a_hook_can_stop_training() {
    let task = reverse_task();
    let mut rng = StdRng::seed_from_u64(20);
    let (train, val) = (task.generate(40, &mut rng), task.generate(8, &mut rng));
    let mut model =
        Seq2Seq::new(tiny(&task, RnnKind::Gru, None, Placement::Luong), &mut StdRng::seed_from_u64(21)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = checkpoints_in(&task, dir.path());
    // 40 examples in slices of 16: 16, 16, 8; each slice is one batch of up to 64.
    let settings = TrainConfig { epoch_size: Some(16), checkpoints: Some(spec), ..quiet(10) };
    let mut steps = Vec::new();
    let result = lingo_nn::train_model_with(&mut model, &train, &val, &settings, None, |r, _| {
        steps.push(r.steps);
        Ok::<_, Error>(if r.epoch == 4 { lingo_nn::Next::Stop } else { lingo_nn::Next::Continue })
    })
    .unwrap();
    assert_eq!(steps, [1, 2, 3, 4], "one step per slice, the hook stopped after epoch 4");
    assert_eq!(result.val_losses.len(), 4);
    let ckpt: Checkpoint<TrainedModel> = Checkpoint::load(dir.path().join("last.ckpt")).unwrap();
    assert_eq!((ckpt.epoch, ckpt.step), (4, 4));
    // A hook's own error stops training and comes back unchanged.
    #[derive(Debug, PartialEq)]
    enum Mine {
        Enough,
        Lingo(String),
    }
    impl From<Error> for Mine {
        fn from(e: Error) -> Mine {
            Mine::Lingo(e.to_string())
        }
    }
    let err = lingo_nn::train_model_with(&mut model, &train, &val, &quiet(3), None, |_, _| {
        Err::<lingo_nn::Next, Mine>(Mine::Enough)
    })
    .unwrap_err();
    assert_eq!(err, Mine::Enough);
}

#[test]
fn a_stop_request_drops_the_epoch_in_progress_and_a_resume_redoes_it() {
    let task = reverse_task();
    let mut rng = StdRng::seed_from_u64(10);
    let (train, val) = (task.generate(64, &mut rng), task.generate(16, &mut rng));
    let config = tiny(&task, RnnKind::Gru, Some(Scorer::Additive), Placement::Bahdanau);
    let dir = tempfile::tempdir().unwrap();
    let control = lingo_nn::RunControl::new();
    let settings = TrainConfig {
        checkpoints: Some(checkpoints_in(&task, dir.path())),
        control: Some(control.clone()),
        ..quiet(4)
    };
    let straight = train_model(
        &mut Seq2Seq::new(config.clone(), &mut StdRng::seed_from_u64(11)).unwrap(),
        &train,
        &val,
        &quiet(4),
        None,
    )
    .unwrap();
    assert!(!straight.interrupted);

    let mut model = Seq2Seq::new(config, &mut StdRng::seed_from_u64(11)).unwrap();
    // Asked to stop as epoch 2 ends: epoch 3 takes no step.
    let stopped = train_model_with(&mut model, &train, &val, &settings, None, |report, _| {
        if report.epoch == 2 {
            control.stop();
        }
        Ok::<_, lingo_nn::Error>(lingo_nn::Next::Continue)
    })
    .unwrap();
    assert!(stopped.interrupted);
    assert_eq!(stopped.val_losses, straight.val_losses[..2]);
    let ckpt: Checkpoint<TrainedModel> = Checkpoint::load(dir.path().join("last.ckpt")).unwrap();
    assert_eq!(ckpt.epoch, 2);
    control.resume();
    let rest = train_model(&mut model, &train, &val, &settings, Some(&ckpt)).unwrap();
    assert_eq!(rest.val_losses, straight.val_losses);
    assert!(!rest.interrupted);
}

#[test]
fn an_epoch_report_says_whether_the_epoch_is_the_best_so_far() {
    let task = reverse_task();
    let mut rng = StdRng::seed_from_u64(10);
    let (train, val) = (task.generate(64, &mut rng), task.generate(16, &mut rng));
    let config = tiny(&task, RnnKind::Lstm, Some(Scorer::Dot), Placement::Luong);
    let mut model = Seq2Seq::new(config, &mut StdRng::seed_from_u64(11)).unwrap();
    let mut improved = Vec::new();
    let result = train_model_with(&mut model, &train, &val, &quiet(6), None, |report, _| {
        improved.push(report.improved);
        Ok::<_, lingo_nn::Error>(lingo_nn::Next::Continue)
    })
    .unwrap();
    // Each flag is the loss below every earlier one's, and the last flagged epoch is the best.
    for (e, &flag) in improved.iter().enumerate() {
        assert_eq!(flag, result.val_losses[..e].iter().all(|&l| result.val_losses[e] < l), "epoch {}", e + 1);
    }
    assert_eq!(improved.iter().rposition(|&f| f).map(|e| e + 1), Some(result.best_epoch));
}

/// A small run to steer: its data, its model, its settings (64 pairs in
/// batches of 16, two epochs), and its losses trained straight through.
struct Steered {
    train: Vec<lingo_data::AlignedExample>,
    val: Vec<lingo_data::AlignedExample>,
    config: Seq2SeqConfig,
    base: TrainConfig,
    straight: Vec<f32>,
}

impl Steered {
    fn new(rnn: RnnKind, scorer: Scorer, placement: Placement) -> Steered {
        let task = reverse_task();
        let mut rng = StdRng::seed_from_u64(10);
        let (train, val) = (task.generate(64, &mut rng), task.generate(16, &mut rng));
        let config = tiny(&task, rnn, Some(scorer), placement);
        let mut base = quiet(2);
        base.batching.batch_size = 16;
        let mut run = Steered { train, val, config, base, straight: Vec::new() };
        run.straight = train_model(&mut run.fresh(), &run.train, &run.val, &run.base, None).unwrap().val_losses;
        run
    }

    fn fresh(&self) -> Seq2Seq {
        Seq2Seq::new(self.config.clone(), &mut StdRng::seed_from_u64(11)).unwrap()
    }
}

/// Hooks that hear every `every` steps, keep the steps heard where
/// another thread sees them, and pause the run after step 4.
struct PauseAtFour {
    control: lingo_nn::RunControl,
    every: u64,
    heard: std::sync::Arc<std::sync::Mutex<Vec<u64>>>,
}

impl PauseAtFour {
    fn new(control: lingo_nn::RunControl, every: u64) -> PauseAtFour {
        PauseAtFour { control, every, heard: Default::default() }
    }

    fn heard(&self) -> Vec<u64> {
        self.heard.lock().unwrap().clone()
    }
}

impl lingo_nn::TrainHooks<Seq2Seq> for PauseAtFour {
    type Error = lingo_nn::Error;

    fn step_every(&self) -> u64 {
        self.every
    }

    fn after_step(&mut self, step: &lingo_nn::StepReport, _: &Seq2Seq) -> lingo_nn::Result<()> {
        assert!(step.loss.is_finite() && step.lr > 0.0 && step.pairs > 0);
        if step.step == 4 {
            self.control.pause();
        }
        self.heard.lock().unwrap().push(step.step);
        Ok(())
    }

    fn after_epoch(&mut self, _: &lingo_nn::EpochReport, _: &Seq2Seq) -> lingo_nn::Result<lingo_nn::Next> {
        Ok(lingo_nn::Next::Continue)
    }
}

#[test]
fn a_paused_run_waits_for_its_resume_and_trains_the_same_bits() {
    let run = Steered::new(RnnKind::Lstm, Scorer::Dot, Placement::Luong);
    let control = lingo_nn::RunControl::new();
    let settings = TrainConfig { control: Some(control.clone()), ..run.base.clone() };
    // A second thread plays the user: it sees the pause, then resumes.
    let waiter = control.clone();
    let user = std::thread::spawn(move || {
        while !waiter.is_paused() {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        waiter.resume();
    });
    let mut hooks = PauseAtFour::new(control, 2);
    let paused =
        lingo_nn::train_model_hooked(&mut run.fresh(), &run.train, &run.val, &settings, None, &mut hooks).unwrap();
    user.join().unwrap();
    assert_eq!(paused.val_losses, run.straight);
    assert!(!paused.interrupted);
    // 64 pairs in batches of 16: four steps an epoch, heard at 2, 4, 6, 8.
    assert_eq!(hooks.heard(), [2, 4, 6, 8]);
}

#[test]
fn a_paused_run_takes_one_step_per_step_asked_and_trains_the_same_bits() {
    let run = Steered::new(RnnKind::Gru, Scorer::Additive, Placement::Bahdanau);
    let control = lingo_nn::RunControl::new();
    let settings = TrainConfig { control: Some(control.clone()), ..run.base.clone() };
    let mut hooks = PauseAtFour::new(control.clone(), 1);
    let (button, heard) = (control, hooks.heard.clone());
    let last = move || heard.lock().unwrap().last().copied();
    // The user waits for the pause after step 4, steps twice, and sees the
    // run hold after each step before resuming it.
    let user = std::thread::spawn(move || {
        let wait_for = |step: u64| {
            while last() != Some(step) || !button.is_paused() {
                std::thread::yield_now();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            last().unwrap() // still there: the run holds
        };
        let held = [
            wait_for(4),
            {
                button.step();
                wait_for(5)
            },
            {
                button.step();
                wait_for(6)
            },
        ];
        button.resume();
        held
    });
    let stepped =
        lingo_nn::train_model_hooked(&mut run.fresh(), &run.train, &run.val, &settings, None, &mut hooks).unwrap();
    assert_eq!(user.join().unwrap(), [4, 5, 6]);
    assert_eq!(hooks.heard(), (1..=8).collect::<Vec<_>>());
    assert_eq!(stepped.val_losses, run.straight);
}

#[test]
fn training_inside_a_no_grad_scope_learns_the_same_bits() {
    // A thread waiting inside someone's no_grad for its rayon tasks can be
    // handed a training task meanwhile: training must record its graph anyway.
    let run = Steered::new(RnnKind::Gru, Scorer::Dot, Placement::Luong);
    let inside = no_grad(|| train_model(&mut run.fresh(), &run.train, &run.val, &run.base, None)).unwrap();
    assert_eq!(inside.val_losses, run.straight);
    let sharded = TrainConfig { shards: 2, ..run.base.clone() };
    let outside = train_model(&mut run.fresh(), &run.train, &run.val, &sharded, None).unwrap();
    let inside = no_grad(|| train_model(&mut run.fresh(), &run.train, &run.val, &sharded, None)).unwrap();
    assert_eq!(inside.val_losses, outside.val_losses);
}

/// Hooks that scale the learning rate by `factor` after step 4 and keep
/// the rate of every step.
struct ScaleAtFour {
    control: lingo_nn::RunControl,
    factor: f64,
    rates: Vec<f64>,
}

impl lingo_nn::TrainHooks<Seq2Seq> for ScaleAtFour {
    type Error = lingo_nn::Error;

    fn step_every(&self) -> u64 {
        1
    }

    fn after_step(&mut self, step: &lingo_nn::StepReport, _: &Seq2Seq) -> lingo_nn::Result<()> {
        if step.step == 4 {
            self.control.scale_lr(self.factor);
        }
        self.rates.push(step.lr);
        Ok(())
    }

    fn after_epoch(&mut self, _: &lingo_nn::EpochReport, _: &Seq2Seq) -> lingo_nn::Result<lingo_nn::Next> {
        Ok(lingo_nn::Next::Continue)
    }
}

#[test]
fn a_scaled_learning_rate_trains_as_that_rate_would_from_the_next_step() {
    let run = Steered::new(RnnKind::Gru, Scorer::Dot, Placement::Luong);
    let control = lingo_nn::RunControl::new();
    let settings = TrainConfig { control: Some(control.clone()), ..run.base.clone() };
    // Scaled from the start: the same bits as a run set up at the scaled rate.
    control.scale_lr(0.5);
    let halved = TrainConfig { lr: run.base.lr * 0.5, ..run.base.clone() };
    let expected = train_model(&mut run.fresh(), &run.train, &run.val, &halved, None).unwrap().val_losses;
    assert_eq!(train_model(&mut run.fresh(), &run.train, &run.val, &settings, None).unwrap().val_losses, expected);
    // Scaled after step 4 of 8: the rate changes from step 5 on, and so do the weights.
    control.scale_lr(1.0);
    let mut hooks = ScaleAtFour { control, factor: 0.25, rates: Vec::new() };
    let changed =
        lingo_nn::train_model_hooked(&mut run.fresh(), &run.train, &run.val, &settings, None, &mut hooks).unwrap();
    let lr = run.base.lr;
    assert_eq!(hooks.rates, [[lr; 4], [lr * 0.25; 4]].concat());
    assert_eq!(changed.val_losses[0], run.straight[0], "epoch 1 (steps 1 to 4) is untouched");
    assert_ne!(changed.val_losses[1], run.straight[1]);
}

#[test]
fn head_attention_holds_each_head_and_their_mean_is_the_attention() {
    let task = reverse_task();
    let batch = batch_of(&task.generate(3, &mut StdRng::seed_from_u64(8)));
    let (b, t, s) = (3, batch.tgt_in.ncols(), batch.src.ncols());
    for placement in [Placement::Luong, Placement::Bahdanau] {
        for (scorer, heads) in [(Some(Scorer::MultiHead { heads: 4 }), 4), (Some(Scorer::Dot), 1), (None, 0)] {
            let config = tiny(&task, RnnKind::Lstm, scorer, placement);
            let model = Seq2Seq::new(config, &mut StdRng::seed_from_u64(9)).unwrap();
            let got = lingo_nn::EncoderDecoder::head_attention(&model, &batch).unwrap();
            let mean = lingo_nn::EncoderDecoder::attention(&model, &batch).unwrap();
            let (Some(got), Some(mean)) = (got, mean) else {
                assert_eq!(heads, 0, "{scorer:?} {placement:?}: weights missing");
                continue;
            };
            assert_eq!(got.dim(), (1, heads, b, t, s), "{scorer:?} {placement:?}");
            let averaged = got.index_axis(Axis(0), 0).mean_axis(Axis(0)).unwrap();
            let diff = (&averaged - &mean).iter().fold(0f32, |m, d| m.max(d.abs()));
            assert!(diff < 1e-6, "{scorer:?} {placement:?}: mean of heads differs by {diff}");
            // The heads differ from one another: each is a head's own, not the mean repeated.
            if heads > 1 {
                let spread = (&got.slice(ndarray::s![0, 0, .., .., ..]) - &got.slice(ndarray::s![0, 1, .., .., ..]))
                    .iter()
                    .fold(0f32, |m, d| m.max(d.abs()));
                assert!(spread > 1e-4, "{placement:?}: heads 1 and 2 are the same");
            }
        }
    }
}
