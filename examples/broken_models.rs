//! TorchLingo's tutorial 6: break a model on purpose, and see which check
//! catches it.
//!
//! A healthy LSTM and seven broken copies (weights initialised too large,
//! a frozen layer, a blown-up output layer, a starved encoder, a model
//! that overfits, held-out pairs leaked from training, dropout left on at
//! evaluation) each go through all five checks of `lingo diagnose`. The
//! table has one row per model and one column per check; the check meant
//! to catch a model's failure is marked `*`. Under it, each broken model's
//! own check says why.
//!
//! ```text
//! cargo run --release --example broken_models
//! ```

use lingo::lessons::diagnose::{Verdict, broken_models};

fn main() -> Result<(), lingo::lessons::Error> {
    let models = broken_models()?;
    let columns = ["initial loss", "gradients", "train/valid gap", "leakage", "eval mode"];
    println!("{:<17} {}", "model", columns.map(|c| format!("{c:<16}")).join(""));
    for model in &models {
        let cells: Vec<String> = model
            .diagnosis
            .checks()
            .iter()
            .map(|check| {
                let mark = if model.breakage.caught_by() == Some(check.name) { "*" } else { "" };
                format!("{:<16}", format!("{}{mark}", check.verdict))
            })
            .collect();
        println!("{:<17} {}", model.breakage, cells.join(""));
    }
    println!();
    for model in &models {
        for check in model.diagnosis.checks() {
            if model.breakage.caught_by() == Some(check.name)
                || (check.verdict != Verdict::Pass && model.breakage.caught_by().is_none())
            {
                println!("{}: {}", model.breakage, check.line);
            }
        }
    }
    Ok(())
}
