//! `lingo alignment-suite`: [`lingo::lessons::alignment_suite()`], printed
//! as a table per phenomenon with its misaligned cases and the AER matrix
//! (or its JSON lines). `docs/alignment-suite.md` describes the tasks, the
//! measures and a run.

use clap::Args;
use lingo::lessons::{SuiteResults, SuiteRun, SuiteSettings, SuiteSummary, TaskTraining, alignment_suite};
use lingo::viz::TextOptions;

use crate::error::Result;
use crate::output::Output;
use crate::report::percent;

/// Settings of `lingo alignment-suite`: the lesson's, and how it runs.
#[derive(Args, Debug, Clone)]
pub struct SuiteArgs {
    /// The lesson's settings.
    #[command(flatten)]
    pub settings: SuiteSettings,
    /// `--threads`, `--json`.
    #[command(flatten)]
    pub compute: crate::args::ComputeFlags,
}

/// Runs the suite: trains every configuration on every phenomenon, prints
/// a table per phenomenon with its misaligned cases and the AER matrix
/// (or JSON lines).
pub(crate) fn run(args: &SuiteArgs, out: Output) -> Result<()> {
    // Checked once the pool is set: the memory it weighs grows with it.
    let settings = &args.settings.clone().check()?;
    let (configs, phenomena) = (settings.configs.len(), settings.phenomena.len());
    let shape = format!("{configs} × {phenomena}");
    let out = &out;
    out.note(&format!("training configurations × phenomena: {shape} = {} runs", configs * phenomena));
    guided_note(&settings.training, out);
    let results = alignment_suite(settings, &mut ())?;
    for runs in results.runs.chunks(configs) {
        print_phenomenon(runs, out)?;
    }
    print_matrix(settings, &results, out);
    out.say(&format!("\ntotal: {:.1} s", results.seconds));
    Ok(())
}

/// Says, when guided alignment is on, what it pulls and that the losses
/// printed leave its term out.
pub(crate) fn guided_note(training: &TaskTraining, out: &Output) {
    if training.guided_alignment > 0.0 {
        out.note(&format!(
            "guided alignment: λ = {} on each model's attention (head {} of the Transformer's last decoder layer); \
             the losses shown are the cross-entropy alone",
            training.guided_alignment, training.guided_head
        ));
    }
}

/// One phenomenon's runs: their JSON lines, or its table and the misaligned cases.
fn print_phenomenon(runs: &[SuiteRun], out: &Output) -> Result<()> {
    let (phenomenon, tested) = (runs[0].phenomenon, runs[0].tested);
    let mut lines = vec![
        format!("\n== {phenomenon} ({tested} test sentences) =="),
        format!(
            "{:<26} {:>8} {:>8} {:>9} {:>6} {:>6} {:>6} {:>7} {:>10}  {}",
            "configuration",
            "val loss",
            "seq acc",
            "alignment",
            "chance",
            "AER",
            "recall",
            "AER≥0.3",
            "misaligned",
            "best head"
        ),
    ];
    let summaries: Vec<SuiteSummary> = runs.iter().map(SuiteRun::summary).collect();
    for (run, summary) in runs.iter().zip(&summaries) {
        out.json(&serde_json::to_value(summary).expect("a summary serializes"));
        // Precision is the alignment accuracy (one peak per scored row): the table has the accuracy alone.
        lines.push(
            format!(
                "{:<26} {:>8.4} {:>8} {:>9} {:>6} {:>6} {:>6} {:>7} {:>10}  {}",
                run.label.clone(),
                summary.val_loss,
                percent(Some(summary.sequence_accuracy)),
                percent(summary.alignment_accuracy),
                percent(summary.chance),
                summary.aer.map_or("n/a".into(), |aer| format!("{aer:.3}")),
                percent(summary.recall),
                summary.aer_split.map_or("n/a".into(), |aer| format!("{aer:.3}")),
                summary.misaligned.map_or("n/a".into(), |n| n.to_string()),
                run.best_head().map_or(String::new(), |(name, acc)| format!("{name} ({})", percent(Some(acc)))),
            )
            .trim_end()
            .to_owned(),
        );
    }
    for (run, summary) in runs.iter().zip(summaries) {
        let (Some(a), Some(shown)) = (&run.alignment, summary.misaligned_examples) else { continue };
        for (n, (case, summary)) in a.cases.iter().zip(shown).enumerate() {
            let which = if n == 0 { "the first" } else { "next" };
            lines.push(format!(
                "\n{} misaligns {} of {tested} {phenomenon} sentences; {which}:\n  {} -> {}",
                run.label.clone(),
                a.misaligned,
                summary.source,
                summary.target
            ));
            let predicted = match summary.predicted {
                links if links.is_empty() => "none (every peak on <sos> or <eos>)".to_owned(),
                links => links,
            };
            lines.push(format!("  predicted: {predicted}"));
            lines.push(format!("  gold:      {}", summary.gold));
            if case.sure != case.gold {
                lines.push(format!("  sure:      {}", summary.sure));
            }
            let options = TextOptions::default().mark_peak(true);
            lines.push(lingo::viz::format_attention(case.weights.view(), &case.source, &case.output, &options)?);
        }
    }
    out.say(&lines.join("\n"));
    Ok(())
}

/// The AER of every run, phenomena down and configurations across.
fn print_matrix(settings: &SuiteSettings, results: &SuiteResults, out: &Output) {
    let names: Vec<String> = settings.configs.iter().map(ToString::to_string).collect();
    let widths: Vec<usize> = names.iter().map(|n| n.len().max(5)).collect();
    let header: String = names.iter().zip(&widths).map(|(n, w)| format!(" {n:>w$}")).collect();
    let mut lines = vec![format!("\nAER (lower is better; n/a: no attention)\n{:<16}{header}", "phenomenon")];
    for row in results.runs.chunks(settings.configs.len()) {
        let cells: String = row
            .iter()
            .zip(&widths)
            .map(|(r, w)| {
                let aer = r.alignment.as_ref().map_or("n/a".into(), |a| format!("{:.3}", a.aer.aer));
                format!(" {aer:>w$}")
            })
            .collect();
        lines.push(format!("{:<16}{cells}", row[0].phenomenon.name()));
    }
    out.say(&lines.join("\n"));
}
