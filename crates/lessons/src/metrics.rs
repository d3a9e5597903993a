//! `metrics.jsonl`: one JSON object per finished round of a corpus run,
//! appended as training goes, so a run can be watched (`tail -f`) and
//! plotted while it runs or after it died.
//!
//! A line is `{"round", "pairs_seen", "steps", "train_loss", "val_loss",
//! "seconds"}`: `pairs_seen` counts training pairs since the run began,
//! `seconds` its training time (over every process of a resumed run).
//! A run killed while writing a line leaves half a line; `--resume` keeps
//! the whole lines of the rounds its checkpoint holds, fills any the
//! checkpoint holds but the file lost from the checkpoint's loss history
//! (with `null` for what it does not store), and goes on from there.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One round's figures, as a line of `metrics.jsonl`.
///
/// ```
/// let m = lingo_lessons::metrics::RoundMetrics { round: 2, pairs_seen: Some(32000), steps: Some(500), train_loss: 3.1, val_loss: 2.9, seconds: Some(21.5) };
/// let line = serde_json::to_string(&m).unwrap();
/// assert!(line.starts_with(r#"{"round":2,"pairs_seen":32000,"steps":500,"#));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundMetrics {
    /// The round, from 1.
    pub round: usize,
    /// Training pairs seen since the run began (`null` when lost and refilled).
    pub pairs_seen: Option<u64>,
    /// Optimizer steps since the run began.
    pub steps: Option<u64>,
    /// Mean training loss of the round.
    pub train_loss: f32,
    /// Validation loss after it.
    pub val_loss: f32,
    /// Seconds of training since the run began.
    pub seconds: Option<f64>,
}

/// The `metrics.jsonl` of one run, open for appending.
#[derive(Debug)]
pub(crate) struct MetricsLog {
    path: PathBuf,
    rounds: Vec<RoundMetrics>,
}

impl MetricsLog {
    /// A new log at `path` (a fresh run): an older one is removed, and the
    /// file appears with the first round.
    pub(crate) fn create(path: PathBuf) -> Result<MetricsLog> {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&path, e)),
            _ => Ok(MetricsLog { path, rounds: Vec::new() }),
        }
    }

    /// The log of a run resumed after `rounds` rounds whose losses were
    /// `train_losses` and `val_losses`: the file's whole lines for those
    /// rounds, the losses for rounds it lost, rewritten atomically.
    pub(crate) fn resume(path: PathBuf, train_losses: &[f32], val_losses: &[f32]) -> Result<MetricsLog> {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut kept: Vec<Option<RoundMetrics>> = vec![None; train_losses.len()];
        for line in text.lines() {
            if let Ok(m) = serde_json::from_str::<RoundMetrics>(line)
                && (1..=kept.len()).contains(&m.round)
            {
                let i = m.round - 1;
                kept[i] = Some(m);
            }
        }
        let rounds: Vec<RoundMetrics> = kept
            .into_iter()
            .zip(train_losses.iter().zip(val_losses))
            .enumerate()
            .map(|(i, (m, (&train_loss, &val_loss)))| m.unwrap_or(RoundMetrics::of_losses(i + 1, train_loss, val_loss)))
            .collect();
        let mut text = String::new();
        for m in &rounds {
            text.push_str(&line(m));
        }
        crate::run_dir::write_file(&path, text.as_bytes())?;
        Ok(MetricsLog { path, rounds })
    }

    /// The training seconds of the rounds before this process (0 for a fresh run).
    pub(crate) fn seconds_before(&self) -> f64 {
        self.rounds.iter().rev().find_map(|m| m.seconds).unwrap_or(0.0)
    }

    /// Appends one round's line (one write, so a kill leaves at most a
    /// partial last line).
    pub(crate) fn push(&mut self, m: RoundMetrics) -> Result<()> {
        let text = line(&m);
        let mut file =
            OpenOptions::new().append(true).create(true).open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        file.write_all(text.as_bytes()).map_err(|e| Error::io(&self.path, e))?;
        self.rounds.push(m);
        Ok(())
    }

    /// Every round so far.
    pub(crate) fn rounds(&self) -> &[RoundMetrics] {
        &self.rounds
    }

    /// Draws the training and validation loss over rounds to `path` (PNG).
    pub(crate) fn plot(&self, path: &Path) -> Result<()> {
        let curve = |label: &str, f: fn(&RoundMetrics) -> f32| {
            lingo_viz::Series::from_points(label, self.rounds.iter().map(|m| (m.round as f32, f(m))).collect())
        };
        let series = [curve("train", |m| m.train_loss), curve("validation", |m| m.val_loss)];
        let options = lingo_viz::LineOptions::default()
            .title("lingo train")
            .x_label("round")
            .y_label("loss (label-smoothed cross-entropy)");
        Ok(lingo_viz::plot_lines(&series, path, &options)?)
    }
}

/// The rounds of the `metrics.jsonl` at `path`: none when there is no
/// such file; blank lines, and a last line cut off without its newline (a
/// run killed while writing it), left out. Any other line that is not a
/// round is an error naming the file and the line.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("metrics.jsonl");
/// std::fs::write(&path, "{\"round\":1,\"pairs_seen\":9,\"steps\":1,\"train_loss\":2.0,\"val_loss\":2.5,\"seconds\":0.5}\n{\"round\":2,")?;
/// assert_eq!(lingo_lessons::metrics::read(&path)?.len(), 1);
/// std::fs::write(&path, "{}\n")?;
/// assert!(lingo_lessons::metrics::read(&path).unwrap_err().to_string().contains("metrics.jsonl:1: "));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read(path: &Path) -> Result<Vec<RoundMetrics>> {
    let text = match std::fs::read_to_string(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        other => other.map_err(|e| Error::io(path, e))?,
    };
    let whole = text.rfind('\n').map_or("", |end| &text[..end]);
    let mut rounds = Vec::new();
    for (i, line) in whole.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()) {
        let round = serde_json::from_str(line).map_err(|e| Error::File {
            path: path.to_path_buf(),
            line: Some(i + 1),
            message: format!("not a round of metrics.jsonl: {e}"),
        })?;
        rounds.push(round);
    }
    Ok(rounds)
}

/// `m` as one line of JSON and its newline.
fn line(m: &RoundMetrics) -> String {
    format!("{}\n", serde_json::to_string(m).expect("plain numbers serialize"))
}

impl RoundMetrics {
    /// A round known only by its losses (a line a resumed run lost, or a
    /// run trained outside `lingo train`).
    ///
    /// ```
    /// let m = lingo_lessons::metrics::RoundMetrics::of_losses(3, 2.5, 2.75);
    /// assert_eq!((m.round, m.steps, m.val_loss), (3, None, 2.75));
    /// ```
    pub fn of_losses(round: usize, train_loss: f32, val_loss: f32) -> RoundMetrics {
        RoundMetrics { round, pairs_seen: None, steps: None, train_loss, val_loss, seconds: None }
    }

    /// The round as its line of `metrics.jsonl` reads: each loss as the
    /// shortest decimal of its `f32`.
    ///
    /// ```
    /// let m = lingo_lessons::metrics::RoundMetrics { round: 1, pairs_seen: None, steps: Some(3), train_loss: 7.266144, val_loss: 7.2, seconds: None };
    /// assert_eq!(m.json()["train_loss"].to_string(), "7.266144");
    /// ```
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&line(self)).expect("a line this log writes")
    }
}
