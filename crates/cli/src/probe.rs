//! `lingo probe`: [`lingo::lessons::probe_checkpoint()`], a model written
//! by `lingo train` evaluated on held-out pairs as trained and with its
//! attention replaced after training, printed as a table (or its JSON
//! lines) and, with `--report`, as one HTML page. See `docs/attention-lab.md`.

use std::path::PathBuf;

use clap::Args;
use lingo::lessons::{FirstPair, ProbeResults, ProbeSettings};
use serde_json::json;

use crate::error::Result;
use crate::output::Output;
use crate::probe_rows;
use crate::report::{self, HtmlReport, Table};

/// Settings of `lingo probe`: the lesson's, and where its page goes.
#[derive(Args, Debug, Clone)]
pub struct ProbeArgs {
    /// The lesson's settings.
    #[command(flatten)]
    pub settings: ProbeSettings,
    /// Also write the table, the first pair's attention under every probe and its translations as one
    /// self-contained HTML page (SVGs beside it)
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// `--threads`, `--json`.
    #[command(flatten)]
    pub compute: crate::args::ComputeFlags,
}

/// `lingo probe`: checks the settings, readies the report, probes, prints.
pub(crate) fn run(args: &ProbeArgs, out: &Output) -> Result<()> {
    let settings = args.settings.clone().check()?;
    crate::output::ready_outputs(args.report.as_deref(), None)?;
    print(args, &lingo::lessons::probe_checkpoint(&settings, &mut ())?, out)
}

/// Prints the probes' table (or JSON lines) and writes the report.
fn print(args: &ProbeArgs, results: &ProbeResults, out: &Output) -> Result<()> {
    let described = format!("{} pairs of {}", results.pairs, args.settings.data.display());
    probe_rows::print_probes(&results.rows, &described, &json!({ "baseline_loss": results.baseline_loss }), out);
    if let Some(loss) = results.baseline_loss {
        out.say(&format!("baseline without attention: loss {loss:.4}"));
    }
    if let Some(path) = &args.report {
        let mut report = HtmlReport::new(path, "lingo probe: does the model use its attention?");
        report.add(|page| page.code(report::command_line()).paragraph(probe_rows::probe_title(&described)));
        report.table(&probe_rows::probe_table(&results.rows));
        first_pair(&mut report, &results.first)?;
        report.save(out)?;
    }
    Ok(())
}

/// The first pair under every probe: its teacher-forced attention as a
/// heatmap, and its greedy translation, in a table.
fn first_pair(report: &mut HtmlReport, first: &FirstPair) -> Result<()> {
    let tokens = (&first.source_tokens[..], &first.target_tokens[..]);
    report.add(|page| page.heading("The first pair").paragraph(format!("{} → {}", first.source, first.target)));
    let mut translations = Table::new(&["attention", "greedy translation"]);
    for probed in &first.probes {
        let caption = format!("{}: the attention under teacher forcing (rows: the reference's tokens).", probed.probe);
        report.heatmap(&probed.probe.to_string(), probed.attention.view(), tokens, &caption)?;
        translations.push(vec![probed.probe.to_string(), probed.translation.clone()]);
    }
    report.add(|page| page.subheading("Its translation under each probe"));
    report.table(&translations);
    Ok(())
}
