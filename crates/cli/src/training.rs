//! Training one epoch at a time, so a command can measure the model after
//! every epoch (attention entropy) or stop before a time budget runs out.
//!
//! `lingo_nn::train_model` runs all its epochs in one call. Running it with
//! `epochs = e` and resuming from the checkpoint of epoch `e - 1` trains
//! exactly epoch `e`: the optimizer and schedule state come from the
//! checkpoint and each epoch's batch order is seeded by `(seed, e)`, so the
//! run is the same as one uninterrupted call.
//!
//! On a large corpus one pass over the data can outlast a time budget, so
//! a "round" may also cover one slice of the training data at a time
//! (`round_size`): round `r` trains on slice `(r - 1) mod k` of `k`, and the
//! optimizer state carries on from slice to slice exactly as within a pass.

use std::path::Path;

use lingo::data::{SeqPair, Vocab};
use lingo::nn::{Checkpoint, CheckpointSpec, Progress, Seq2Seq, TrainConfig, TrainedModel, train_model};

use crate::error::Result;

/// The numbers of one finished epoch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct EpochReport {
    /// 1-based.
    pub epoch: usize,
    /// Mean training loss over the epoch's batches.
    pub train_loss: f32,
    /// Validation loss after the epoch.
    pub val_loss: f32,
    /// Seconds spent training so far (all epochs up to this one).
    pub seconds: f64,
}

/// Whether to go on after an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    Continue,
    Stop,
}

/// Trains up to `config.epochs` rounds (whole passes when `round_size` is
/// at least the training set's size), calling `after_epoch` with the
/// round's numbers and the model after each; checkpoints (`last.ckpt`,
/// `best.ckpt`) go to `dir`.
pub(crate) fn train_by_epoch<E: SeqPair>(
    model: &mut Seq2Seq,
    data: (&[E], &[E]),
    round_size: usize,
    config: &TrainConfig,
    dir: &Path,
    vocabs: (&Vocab, &Vocab),
    mut after_epoch: impl FnMut(&EpochReport, &Seq2Seq) -> Result<Next>,
) -> Result<Vec<EpochReport>> {
    let spec = CheckpointSpec { dir: dir.to_path_buf(), src_vocab: vocabs.0.clone(), tgt_vocab: vocabs.1.clone() };
    let mut resume: Option<Checkpoint<TrainedModel>> = None;
    let mut reports = Vec::with_capacity(config.epochs);
    let mut seconds = 0.0;
    let slices: Vec<&[E]> = data.0.chunks(round_size.max(1)).collect();
    for epoch in 1..=config.epochs {
        let one = TrainConfig { epochs: epoch, checkpoints: Some(spec.clone()), progress: Progress::Silent, time_budget: None, ..config.clone() };
        let train = slices.get((epoch - 1) % slices.len().max(1)).copied().unwrap_or_default();
        let result = train_model(model, train, data.1, &one, resume.as_ref())?;
        seconds += result.seconds;
        let report = EpochReport {
            epoch,
            train_loss: result.train_losses.last().copied().unwrap_or(f32::NAN),
            val_loss: result.val_losses.last().copied().unwrap_or(f32::NAN),
            seconds,
        };
        reports.push(report);
        if after_epoch(&report, model)? == Next::Stop {
            break;
        }
        resume = Some(Checkpoint::load(dir.join("last.ckpt"))?);
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lingo::data::{AlignedExample, DigitOp, DigitTask, Task};
    use lingo::nn::Seq2SeqConfig;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    /// A small reversal task, its data and a tiny model configuration.
    fn setup(train_size: usize) -> (DigitTask, Vec<AlignedExample>, Vec<AlignedExample>, Seq2SeqConfig) {
        let task = DigitTask::new(DigitOp::Reverse, 6, 2, 4).unwrap();
        let mut rng = StdRng::seed_from_u64(5);
        let (train, val) = (task.generate(train_size, &mut rng), task.generate(32, &mut rng));
        let config = Seq2SeqConfig { emb_dim: 8, hidden_dim: 8, ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len()) };
        (task, train, val, config)
    }

    /// Epoch-by-epoch training gives the same losses as one call of `train_model`.
    #[test]
    fn epochs_one_at_a_time_match_one_call() {
        let (task, train, val, config) = setup(96);
        let fresh = || Seq2Seq::new(config.clone(), &mut StdRng::seed_from_u64(1)).unwrap();
        let train_config = TrainConfig { progress: Progress::Silent, ..TrainConfig::new(3, 1e-2) };

        let whole = train_model(&mut fresh(), &train, &val, &train_config, None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut seen = Vec::new();
        let reports = train_by_epoch(&mut fresh(), (&train, &val), train.len(), &train_config, dir.path(), (task.src_vocab(), task.tgt_vocab()), |r, _| {
            seen.push(r.epoch);
            Ok(Next::Continue)
        })
        .unwrap();
        assert_eq!(seen, [1, 2, 3]);
        let by_epoch: Vec<f32> = reports.iter().map(|r| r.val_loss).collect();
        assert_eq!(by_epoch, whole.val_losses);
    }

    /// A hook stops training; rounds of 16 pairs each take one slice of the data.
    #[test]
    fn a_hook_can_stop_training_and_rounds_take_slices() {
        let (task, train, val, config) = setup(32);
        let mut model = Seq2Seq::new(config, &mut StdRng::seed_from_u64(1)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let train_config = TrainConfig { progress: Progress::Silent, ..TrainConfig::new(5, 1e-2) };
        let reports = train_by_epoch(&mut model, (&train, &val), 16, &train_config, dir.path(), (task.src_vocab(), task.tgt_vocab()), |r, _| {
            Ok(if r.epoch == 3 { Next::Stop } else { Next::Continue })
        })
        .unwrap();
        assert_eq!(reports.len(), 3);
        let ckpt: Checkpoint<TrainedModel> = Checkpoint::load(dir.path().join("last.ckpt")).unwrap();
        // 16 pairs in one batch of 64: one optimizer step per round.
        assert_eq!((ckpt.epoch, ckpt.step), (3, 3));
    }
}
