//! `lingo diagnose`: [`lingo::lessons::diagnose::diagnose()`] on a run
//! `lingo train` wrote, printed as one line per check (or one JSON object)
//! and the parameters the gradient check flags. See `docs/tutorials/diagnosing.md`.

use clap::Args;
use lingo::lessons::diagnose::{DiagnoseSettings, Diagnosis, Verdict};

use crate::error::Result;
use crate::output::Output;
use crate::report::Table;

/// Settings of `lingo diagnose`: the lesson's, and the shared compute flags.
#[derive(Args, Debug, Clone)]
pub struct DiagnoseArgs {
    /// The lesson's settings.
    #[command(flatten)]
    pub settings: DiagnoseSettings,
    /// Also list every parameter's gradient, not only the flagged ones
    #[arg(long)]
    pub all_params: bool,
    /// `--threads`, `--json`.
    #[command(flatten)]
    pub compute: crate::args::ComputeFlags,
}

/// `lingo diagnose`: checks the settings, diagnoses, prints.
pub(crate) fn run(args: &DiagnoseArgs, out: &Output) -> Result<()> {
    let settings = args.settings.clone().check()?;
    let diagnosis = lingo::lessons::diagnose::diagnose(&settings, &mut ())?;
    out.json(&serde_json::to_value(&diagnosis).expect("results serialize"));
    print(args, &diagnosis, out);
    Ok(())
}

/// The checks' table, then the gradients of the flagged parameters (every
/// parameter with `--all-params`), then the leaked pairs.
fn print(args: &DiagnoseArgs, diagnosis: &Diagnosis, out: &Output) {
    out.say(&format!("lingo diagnose {}", args.settings.run.display()));
    // Left-aligned by hand: the numbers column is a sentence, not a figure.
    out.say(&format!("{:<16} {:<7} numbers", "check", "verdict"));
    for check in diagnosis.checks() {
        out.say(&format!("{:<16} {:<7} {}", check.name, check.verdict, check.line));
    }
    let shown: Vec<_> = diagnosis.gradients.params.iter().filter(|p| args.all_params || p.flag.is_some()).collect();
    if !shown.is_empty() {
        let mut table = Table::new(&["parameter", "values", "‖grad‖", "‖weight‖", "unchanged", "flag"]);
        for p in shown {
            table.push(vec![
                p.name.clone(),
                p.numel.to_string(),
                format!("{:.3e}", p.grad_norm),
                format!("{:.3}", p.weight_norm),
                p.unchanged.map_or("-".into(), |u| format!("{:.1}%", 100.0 * u)),
                p.flag.map_or(String::new(), |f| f.to_string()),
            ]);
        }
        out.say(&format!(
            "\nGradients over {} training batches (dropout on, no label smoothing):",
            diagnosis.gradients.batches
        ));
        out.say(&table.text());
    }
    for leak in diagnosis.leakage.iter().filter(|l| !l.examples.is_empty()) {
        out.say(&format!("\n{} pairs found in training once lowercased without punctuation, the first:", leak.set));
        for pair in &leak.examples {
            out.say(&format!(
                "  {} → {}   (training: {} → {})",
                pair.source, pair.target, pair.train_source, pair.train_target
            ));
        }
    }
    let verdict = diagnosis.verdict();
    if verdict != Verdict::Pass {
        out.say(&format!(
            "\nworst verdict: {verdict}; docs/tutorials/diagnosing.md says what each check's failure means."
        ));
    }
}
