//! The attention lab's probes over a lesson's trained models: each model
//! with its attention replaced after training ([`Probe`]), and how much of
//! what attention gave it each replacement takes away.

use lingo_data::SeqPair;
use lingo_nn::{EncoderDecoder, Probe, ProbeScore, probe};
use serde::Serialize;

use crate::error::Result;

/// One model under one probe: a line of `--probe`'s JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeRow {
    /// The model's name (`dot`).
    pub config: String,
    /// Its name in tables (`dot (Luong)`).
    #[serde(skip)]
    pub label: String,
    /// The probe.
    pub probe: Probe,
    /// What the model scored under it.
    #[serde(flatten)]
    pub score: ProbeScore,
    /// The share of attention's loss gain the probe takes away,
    /// `(L_probe − L_own) / (L_none − L_own)`: 0 loses nothing, 1 all that
    /// attention gave; `None` without a model trained without attention to
    /// compare with.
    pub gain_lost: Option<f64>,
}

/// `model` (named `config`, `label` in tables) under every probe that
/// applies: only as trained without attention, the gold probe only when
/// `examples` carry gold links. `baseline` is the loss of the same kind of
/// model trained without attention on the same examples, if there is one.
///
/// ```
/// use lingo_data::{DigitOp, DigitTask, Task};
/// use lingo_nn::{Probe, Seq2Seq, Seq2SeqConfig};
/// use rand::SeedableRng;
/// let task = DigitTask::new(DigitOp::Reverse, 5, 3, 3).unwrap();
/// let examples = task.generate(8, &mut rand::rngs::StdRng::seed_from_u64(0));
/// let config = Seq2SeqConfig { emb_dim: 8, hidden_dim: 8, attention: Some("dot".parse().unwrap()), ..Seq2SeqConfig::new(9, 9) };
/// let model = Seq2Seq::new(config, &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
/// let rows = lingo_lessons::probes::probe_model(("dot", "dot"), &model, true, &examples, Some(9.0)).unwrap();
/// assert_eq!(rows.len(), Probe::ALL.len());
/// assert_eq!(rows[0].gain_lost, Some(0.0)); // the model as trained loses nothing
/// ```
pub fn probe_model<M: EncoderDecoder, E: SeqPair + Sync>(
    (config, label): (&str, &str),
    model: &M,
    attention: bool,
    examples: &[E],
    baseline: Option<f64>,
) -> Result<Vec<ProbeRow>> {
    let gold = examples.first().is_some_and(|e| e.gold().is_some_and(|g| !g.is_empty()));
    let probes: Vec<Probe> = if attention {
        Probe::ALL.into_iter().filter(|&p| gold || p != Probe::Gold).collect()
    } else {
        vec![Probe::Unchanged]
    };
    let scores: Vec<(Probe, ProbeScore)> =
        probes.into_iter().map(|p| probe(model, examples, p).map(|s| (p, s))).collect::<lingo_nn::Result<_>>()?;
    let own = scores[0].1.loss;
    Ok(scores
        .into_iter()
        .map(|(which, score)| ProbeRow {
            config: config.to_owned(),
            label: label.to_owned(),
            probe: which,
            score,
            gain_lost: baseline.filter(|&b| b > own && attention).map(|b| (score.loss - own) / (b - own)),
        })
        .collect())
}

/// The loss of a model trained without attention on `examples`, which
/// [`probe_model`] measures the others against.
///
/// ```
/// use lingo_data::{DigitOp, DigitTask, Task};
/// use lingo_nn::{Seq2Seq, Seq2SeqConfig};
/// use rand::SeedableRng;
/// let task = DigitTask::new(DigitOp::Reverse, 5, 3, 3).unwrap();
/// let examples = task.generate(8, &mut rand::rngs::StdRng::seed_from_u64(0));
/// let plain = Seq2Seq::new(Seq2SeqConfig::new(9, 9), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
/// assert!(lingo_lessons::probes::baseline_loss(&plain, &examples).unwrap() > 0.0);
/// ```
pub fn baseline_loss<M: EncoderDecoder, E: SeqPair + Sync>(model: &M, examples: &[E]) -> Result<f64> {
    Ok(probe(model, examples, Probe::Unchanged)?.loss)
}
