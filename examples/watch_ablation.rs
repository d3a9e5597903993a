//! The attention ablation, watched as it trains: an observer of
//! `lingo::lessons::ablation` prints the pinned sentence's attention as
//! text at the end of every epoch, so the anti-diagonal of
//! lexicon-translate-then-reverse can be seen forming under dot and
//! additive attention; the results table comes last.
//!
//! ```text
//! cargo run --release --example watch_ablation
//! ```

use lingo::lessons::observe::{Every, Observer};
use lingo::lessons::{AblationSettings, Event, ablation};
use lingo::viz::{TextOptions, format_attention};

/// Prints each attention model's snapshot of the pinned sentence.
struct Watcher {
    /// Optimizer steps in an epoch: one snapshot at the end of each.
    steps_per_epoch: u64,
}

impl Observer for Watcher {
    fn every(&self) -> Every {
        Every { steps: 0, snapshots: self.steps_per_epoch, measures: true }
    }

    fn event(&mut self, event: &Event) {
        match event {
            Event::Started(started) => {
                let runs: Vec<String> =
                    started.runs.iter().map(|r| format!("{} ({} weights)", r.label, r.params)).collect();
                println!("training side by side: {}", runs.join(", "));
            }
            Event::Snapshot(s) => {
                // The first layer's first head: a recurrent model has only that one.
                let weights = s.weights.slice(ndarray::s![0, 0, .., ..]);
                let text = format_attention(weights, &s.source, &s.target, &TextOptions::default().mark_peak(true));
                println!("\n{} after epoch {} (step {}):\n{}", s.run, s.epoch, s.step, text.expect("tokens fit"));
            }
            Event::Epoch(e) if e.alignment.is_some() => {
                let alignment = 100.0 * e.alignment.unwrap_or_default();
                println!(
                    "{}: epoch {}/{} | val {:.4} | on the anti-diagonal {alignment:.1}%",
                    e.run, e.epoch, e.epochs, e.val_loss
                );
            }
            _ => {}
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let settings = AblationSettings::default().check()?;
    let steps_per_epoch = settings.train_size.div_ceil(settings.training.batch_size) as u64;
    let results = ablation(&settings, &mut Watcher { steps_per_epoch })?;
    println!("\n{:<22} {:>9} {:>10} {:>7}", "configuration", "val loss", "alignment", "chance");
    for run in &results.runs {
        let percent = |x: Option<f64>| x.map_or("n/a".to_string(), |x| format!("{:.1}%", 100.0 * x));
        let (accuracy, chance) = (run.alignment.map(|a| a.accuracy), run.alignment.map(|a| a.chance));
        println!("{:<22} {:>9.4} {:>10} {:>7}", run.config.label(), run.val_loss(), percent(accuracy), percent(chance));
    }
    Ok(())
}
