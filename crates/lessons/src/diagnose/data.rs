//! The checks that read the data and the training record: the gap between
//! training and validation loss (and where `metrics.jsonl` says it is
//! going), and held-out pairs leaking into the training data.

use std::collections::HashMap;

use lingo_data::Pair;
use serde::Serialize;

use super::Verdict;
use crate::metrics::RoundMetrics;

/// Validation loss this far above the best (relative) counts as risen.
const RISE: f32 = 0.02;
/// A validation loss this many nats above the training loss is a warning.
const GAP_WARN: f64 = 1.0;

/// Training against validation loss, measured now and over the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gap {
    /// Mean loss (no label smoothing, no dropout) on training pairs.
    pub train_loss: f64,
    /// The same on validation pairs.
    pub valid_loss: f64,
    /// `valid_loss - train_loss`, in nats per token.
    pub gap: f64,
    /// Where `metrics.jsonl` says the run went, when there is one.
    pub trend: Option<Trend>,
    /// Pass, or fail when validation loss rose while training loss fell;
    /// a warning for a gap of more than a nat.
    pub verdict: Verdict,
}

/// The validation loss over a run's rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    /// Rounds recorded.
    pub rounds: usize,
    /// The round of the lowest validation loss.
    pub best_round: usize,
    /// That loss, as training logged it (with its label smoothing, if any).
    pub best_valid: f32,
    /// The last round's validation loss.
    pub last_valid: f32,
    /// Training loss at the best round and at the last.
    pub train_at_best: f32,
    /// The last round's training loss.
    pub last_train: f32,
}

impl Trend {
    /// The trend of `rounds` (`None` when there are none).
    ///
    /// ```
    /// use lingo_lessons::{diagnose::Trend, metrics::RoundMetrics};
    /// let round = RoundMetrics::of_losses;
    /// let trend = Trend::of(&[round(1, 3.0, 3.1), round(2, 2.0, 2.5), round(3, 1.0, 2.9)]).unwrap();
    /// assert_eq!((trend.best_round, trend.last_valid), (2, 2.9));
    /// assert!(trend.overfitting());
    /// ```
    pub fn of(rounds: &[RoundMetrics]) -> Option<Trend> {
        let best = rounds.iter().min_by(|a, b| a.val_loss.total_cmp(&b.val_loss))?;
        let last = rounds.last()?;
        Some(Trend {
            rounds: rounds.len(),
            best_round: best.round,
            best_valid: best.val_loss,
            last_valid: last.val_loss,
            train_at_best: best.train_loss,
            last_train: last.train_loss,
        })
    }

    /// Validation loss risen more than 2 % above its best while training
    /// loss went on falling: the model learns its training pairs, not the
    /// language.
    ///
    /// ```
    /// use lingo_lessons::{diagnose::Trend, metrics::RoundMetrics};
    /// let round = RoundMetrics::of_losses;
    /// assert!(!Trend::of(&[round(1, 3.0, 3.1), round(2, 2.0, 2.5)]).unwrap().overfitting());
    /// ```
    pub fn overfitting(&self) -> bool {
        self.last_valid > self.best_valid * (1.0 + RISE) && self.last_train < self.train_at_best
    }
}

/// The gap check: `train_loss` and `valid_loss` measured on the model,
/// `rounds` from its `metrics.jsonl` (empty when there is none).
///
/// ```
/// let gap = lingo_lessons::diagnose::gap(1.2, 1.5, &[]);
/// assert_eq!(gap.verdict, lingo_lessons::diagnose::Verdict::Pass);
/// assert_eq!(lingo_lessons::diagnose::gap(0.2, 3.5, &[]).verdict, lingo_lessons::diagnose::Verdict::Warn);
/// ```
pub fn gap(train_loss: f64, valid_loss: f64, rounds: &[RoundMetrics]) -> Gap {
    let trend = Trend::of(rounds);
    let gap = valid_loss - train_loss;
    let verdict = if trend.as_ref().is_some_and(Trend::overfitting) {
        Verdict::Fail
    } else if gap > GAP_WARN {
        Verdict::Warn
    } else {
        Verdict::Pass
    };
    Gap { train_loss, valid_loss, gap, trend, verdict }
}

impl Gap {
    /// The check's line: the numbers behind the verdict.
    ///
    /// ```
    /// let line = lingo_lessons::diagnose::gap(1.2, 1.5, &[]).line();
    /// assert_eq!(line, "validation loss 1.500 against training 1.200: gap 0.300 nats per token");
    /// ```
    pub fn line(&self) -> String {
        let now = format!(
            "validation loss {:.3} against training {:.3}: gap {:.3} nats per token",
            self.valid_loss, self.train_loss, self.gap
        );
        match &self.trend {
            Some(t) if t.overfitting() => format!(
                "{now}; over training, validation loss rose from {:.3} (round {}) to {:.3} (round {}) while training loss fell {:.3} → {:.3}: overfitting",
                t.best_valid, t.best_round, t.last_valid, t.rounds, t.train_at_best, t.last_train
            ),
            Some(t) => format!(
                "{now}; over training, the best validation loss (as logged) was {:.3}, at round {} of {}",
                t.best_valid, t.best_round, t.rounds
            ),
            None => now,
        }
    }
}

/// Held-out pairs found in the training data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Leakage {
    /// Which held-out set (`test`, `valid`).
    pub set: String,
    /// Its pairs.
    pub pairs: usize,
    /// Held-out sources that are also a training source, as written.
    pub sources_exact: usize,
    /// Held-out pairs that are also a training pair, as written.
    pub pairs_exact: usize,
    /// Sources equal to a training source once both are normalized
    /// ([`normalize`]).
    pub sources_normalized: usize,
    /// Pairs equal to a training pair once normalized.
    pub pairs_normalized: usize,
    /// Up to five leaked pairs (normalized matches), each with the training
    /// pair it matches.
    pub examples: Vec<LeakedPair>,
    /// Fail for any pair leaked as written or 1 % leaked once normalized;
    /// a warning for any normalized pair or 5 % of sources.
    pub verdict: Verdict,
}

/// A held-out pair found in the training data, and the training pair it
/// matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeakedPair {
    /// The held-out pair's source.
    pub source: String,
    /// Its target.
    pub target: String,
    /// The training pair's source.
    pub train_source: String,
    /// The training pair's target.
    pub train_target: String,
}

/// A sentence as leakage compares it: lowercased, punctuation and symbols
/// dropped, words separated by single spaces ("Go!" and "go." are one
/// sentence to a reader, and to BLEU after lowercasing).
///
/// ```
/// assert_eq!(lingo_lessons::diagnose::normalize("  ¡Ve  ahora! "), "ve ahora");
/// assert_eq!(lingo_lessons::diagnose::normalize("It's 5 o'clock."), "its 5 oclock");
/// ```
pub fn normalize(sentence: &str) -> String {
    let kept: String = sentence.chars().filter(|c| c.is_alphanumeric() || c.is_whitespace()).collect();
    kept.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How many of `held_out`'s pairs (and sources) occur in `train`, exactly
/// and once normalized; `set` names the held-out set in the line.
///
/// ```
/// use lingo_data::Pair;
/// let pair = |s: &str, t: &str| Pair { src: s.into(), tgt: t.into() };
/// let train = [pair("Go.", "Ve."), pair("Run!", "¡Corre!")];
/// let test = [pair("Go!", "¡Ve!"), pair("Run!", "¡Corred!"), pair("Stop.", "Para.")];
/// let leak = lingo_lessons::diagnose::leakage("test", &train, &test);
/// assert_eq!((leak.sources_exact, leak.pairs_exact, leak.sources_normalized, leak.pairs_normalized), (1, 0, 2, 1));
/// assert_eq!(leak.verdict, lingo_lessons::diagnose::Verdict::Fail);
/// ```
pub fn leakage(set: &str, train: &[Pair], held_out: &[Pair]) -> Leakage {
    let key = |p: &Pair| (normalize(&p.src), normalize(&p.tgt));
    let exact_sources: std::collections::HashSet<&str> = train.iter().map(|p| p.src.as_str()).collect();
    let exact_pairs: std::collections::HashSet<(&str, &str)> =
        train.iter().map(|p| (p.src.as_str(), p.tgt.as_str())).collect();
    let mut sources: HashMap<String, usize> = HashMap::new();
    let mut pairs: HashMap<(String, String), usize> = HashMap::new();
    for (i, p) in train.iter().enumerate() {
        let (src, tgt) = key(p);
        sources.entry(src.clone()).or_insert(i);
        pairs.entry((src, tgt)).or_insert(i);
    }
    let (mut sources_exact, mut pairs_exact, mut sources_normalized, mut pairs_normalized) = (0, 0, 0, 0);
    let mut examples = Vec::new();
    for p in held_out {
        sources_exact += usize::from(exact_sources.contains(p.src.as_str()));
        pairs_exact += usize::from(exact_pairs.contains(&(p.src.as_str(), p.tgt.as_str())));
        let (src, tgt) = key(p);
        sources_normalized += usize::from(sources.contains_key(&src));
        if let Some(&i) = pairs.get(&(src, tgt)) {
            pairs_normalized += 1;
            if examples.len() < 5 {
                let (source, target) = (p.src.clone(), p.tgt.clone());
                let (train_source, train_target) = (train[i].src.clone(), train[i].tgt.clone());
                examples.push(LeakedPair { source, target, train_source, train_target });
            }
        }
    }
    let share = |n: usize| n as f64 / held_out.len().max(1) as f64;
    let verdict = if pairs_exact > 0 || share(pairs_normalized) >= 0.01 {
        Verdict::Fail
    } else if pairs_normalized > 0 || share(sources_normalized) >= 0.05 {
        Verdict::Warn
    } else {
        Verdict::Pass
    };
    Leakage {
        set: set.into(),
        pairs: held_out.len(),
        sources_exact,
        pairs_exact,
        sources_normalized,
        pairs_normalized,
        examples,
        verdict,
    }
}

impl Leakage {
    /// The check's line.
    ///
    /// ```
    /// use lingo_data::Pair;
    /// let train = [Pair { src: "Go.".into(), tgt: "Ve.".into() }];
    /// let line = lingo_lessons::diagnose::leakage("test", &train, &train).line();
    /// assert_eq!(line, "test: 1 of 1 pairs in training as written (1 sources); 1 pairs (1 sources) once lowercased without punctuation");
    /// ```
    pub fn line(&self) -> String {
        format!(
            "{}: {} of {} pairs in training as written ({} sources); {} pairs ({} sources) once lowercased without punctuation",
            self.set, self.pairs_exact, self.pairs, self.sources_exact, self.pairs_normalized, self.sources_normalized
        )
    }
}
