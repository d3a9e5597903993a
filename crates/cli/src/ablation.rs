//! `lingo ablation`: [`lingo::lessons::ablation()`], printed as tables and
//! a text heatmap (or its JSON lines), drawn as PNGs and, with `--report`,
//! as one HTML page.

use std::path::PathBuf;

use clap::Args;
use lingo::lessons::{AblationResults, AblationRun, AblationSettings};
use lingo::viz::{HeatmapOptions, LineOptions, Series, TextOptions};

use crate::error::Result;
use crate::output::Output;
use crate::probe_rows;
use crate::report::{self, HtmlReport, Table, head_lines, head_table, percent};

/// Settings of `lingo ablation`: the lesson's, and where its pictures go.
#[derive(Args, Debug, Clone)]
pub struct AblationArgs {
    /// The lesson's settings.
    #[command(flatten)]
    pub settings: AblationSettings,
    /// Directory for the PNG heatmaps and the loss chart
    #[arg(long, default_value = "target/lingo-out")]
    pub out: PathBuf,
    /// Write no pictures
    #[arg(long)]
    pub no_png: bool,
    /// Also write the tables and pictures as one self-contained HTML page (SVGs beside it)
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// `--threads`, `--json`.
    #[command(flatten)]
    pub compute: crate::args::ComputeFlags,
}

/// `lingo ablation`: checks the settings, readies the outputs, runs the
/// lesson and prints it.
pub(crate) fn run(args: &AblationArgs, out: Output) -> Result<()> {
    let settings = args.settings.clone().check()?;
    let _claimed = crate::output::ready_outputs(args.report.as_deref(), (!args.no_png).then_some(&*args.out))?;
    crate::suite::guided_note(&settings.training, &out);
    print(args, &lingo::lessons::ablation(&settings, &mut ())?, &out)
}

/// Prints the ablation's results: each run's epochs (or its JSON line),
/// the tables, the probes, one sentence's attention as text; then the
/// pictures and the report.
fn print(args: &AblationArgs, results: &AblationResults, out: &Output) -> Result<()> {
    for run in &results.runs {
        out.say(&format!("\n== {} ==", run.label));
        let epochs = run.train_losses.len();
        for (e, (train_loss, val_loss)) in run.train_losses.iter().zip(&run.val_losses).enumerate() {
            out.say(&format!("Epoch {}/{epochs} | Train: {train_loss:.4} | Val: {val_loss:.4}", e + 1));
        }
        out.json(&serde_json::to_value(run.summary()).expect("a summary serializes"));
    }
    let mut lines = vec![format!("\n{}", results_table(results).text())];
    lines.push(format!("\n{SALIENCY_TITLE}\n{}", saliency_table(&results.runs).text()));
    for run in &results.runs {
        if let Some(heads) = run.heads.as_ref().filter(|h| h.several()) {
            lines.extend(head_lines(heads, &run.label));
        }
    }
    out.say(&lines.join("\n"));
    let sentences = format!("{} alignment sentences", results.scored);
    if let Some(probes) = &results.probes {
        probe_rows::print_probes(probes, &sentences, &serde_json::json!({}), out);
    }
    let (source, target) = (&results.example.source, &results.example.target);
    if let Some(run) = results.runs.iter().find(|r| r.example.attention.is_some()) {
        let weights = run.example.attention.as_ref().expect("found with attention");
        let text = lingo::viz::format_attention(weights.view(), source, target, &TextOptions::default())?;
        out.say(&format!("\n{}: {}\n{}", run.label, source[1..source.len() - 1].join(" "), text));
    }
    if !args.no_png {
        draw(args, results, out)?;
    }
    if let Some(path) = &args.report {
        let mut report = HtmlReport::new(path, "lingo ablation: attention on the lexicon-reverse task");
        report.add(|page| page.code(report::command_line()));
        report.table(&results_table(results));
        report.add(|page| page.subheading("Attention beside saliency").paragraph(SALIENCY_TITLE));
        report.table(&saliency_table(&results.runs));
        report_example(&mut report, results)?;
        let (series, options) = val_loss_chart(&results.runs);
        report.add(|page| page.heading("Training"));
        report.curves("val-loss", &series, &options, "Validation loss after each epoch.")?;
        if let Some(probes) = &results.probes {
            report.add(|page| page.heading("Probes").paragraph(probe_rows::probe_title(&sentences)));
            report.table(&probe_rows::probe_table(probes));
        }
        report.save(out)?;
    }
    Ok(())
}

/// The pictures: a heatmap per attention model (and its heads), and the
/// validation loss per epoch.
fn draw(args: &AblationArgs, results: &AblationResults, out: &Output) -> Result<()> {
    let (source, target) = (&results.example.source, &results.example.target);
    for run in &results.runs {
        let Some(weights) = &run.example.attention else { continue };
        let name = run.config.to_string().replace(':', "-");
        let path = out.file(&args.out, &format!("ablation-{name}.png"))?;
        let options = HeatmapOptions::default().title(run.label.clone()).show_values(true);
        lingo::viz::plot_attention(weights.view(), source, target, &path, &options)?;
        out.note(&format!("wrote {}", path.display()));
        if let Some(heads) = &run.example.heads {
            let path = out.file(&args.out, &format!("ablation-{name}-heads.png"))?;
            let title = |l: usize, h: usize| format!("layer {} head {}", l + 1, h + 1);
            lingo::viz::plot_attention_grid(heads.view(), source, target, title, &path, &HeatmapOptions::default())?;
            out.note(&format!("wrote {}", path.display()));
        }
    }
    if !results.runs.is_empty() {
        let (series, options) = val_loss_chart(&results.runs);
        let path = out.file(&args.out, "ablation-val-loss.png")?;
        lingo::viz::plot_lines(&series, &path, &options)?;
        out.note(&format!("wrote {}", path.display()));
    }
    Ok(())
}

/// The report's pictures of the shown sentence: each model's attention,
/// its saliency, its heads side by side and their scores.
fn report_example(report: &mut HtmlReport, results: &AblationResults) -> Result<()> {
    let tokens = (&results.example.source[..], &results.example.target[..]);
    let words = tokens.0[1..tokens.0.len() - 1].join(" ");
    report.add(|page| {
        page.heading("Attention and saliency").paragraph(format!(
            "One fresh sentence: {words}. For each model, where it looked (its attention) and what each output word depended on (its gradient x input saliency). Hover over a cell for its value."
        ))
    });
    for run in &results.runs {
        let (name, label) = (run.config.to_string(), run.label.clone());
        report.add(|page| page.subheading(label.clone()));
        if let Some(weights) = &run.example.attention {
            report.heatmap(&name, weights.view(), tokens, &format!("{label}: where each output word looked."))?;
        }
        let caption = format!("{label}: gradient x input saliency of each output word on the source.");
        report.heatmap(&format!("{name}-saliency"), run.example.saliency.view(), tokens, &caption)?;
        if let Some(grid) = &run.example.heads {
            report.head_grid(&format!("{name}-heads"), grid.view(), tokens, "Every head: one row per layer.")?;
        }
        if let Some(scores) = run.heads.as_ref().filter(|h| h.several()) {
            let (best, accuracy) = scores.best();
            let text = format!(
                "Alignment accuracy / mean entropy (nats) of each head; best: {best} ({:.1}%).",
                100.0 * accuracy
            );
            report.add(|page| page.paragraph(text));
            report.table(&head_table(scores));
        }
    }
    Ok(())
}

/// The results, one row per configuration, and the total time.
fn results_table(results: &AblationResults) -> Table {
    let mut table = Table::new(&["configuration", "val loss", "alignment", "chance", "seconds"]);
    for run in &results.runs {
        table.push(vec![
            run.label.clone(),
            format!("{:.4}", run.val_loss()),
            percent(run.alignment.map(|a| a.accuracy)),
            percent(run.alignment.map(|a| a.chance)),
            format!("{:.2}", run.seconds),
        ]);
    }
    let blank = String::new;
    table.push(vec!["total (with scoring)".into(), blank(), blank(), blank(), format!("{:.2}", results.seconds)]);
    table
}

/// Attention beside gradient × input saliency, one row per configuration.
fn saliency_table(runs: &[AblationRun]) -> Table {
    let header = ["configuration", "attention on gold", "saliency on gold", "same peak", "rank correlation"];
    let mut table = Table::new(&header);
    for run in runs {
        let mut cells = vec![run.label.clone()];
        cells.extend(probe_rows::saliency_cells(&run.saliency));
        table.push(cells);
    }
    table
}

/// What the saliency table's title says.
const SALIENCY_TITLE: &str =
    "attention beside gradient x input saliency (peaks on a gold link; rows whose peaks agree; Spearman's rho per row)";

/// Validation loss per epoch of every configuration, one chart.
fn val_loss_chart(runs: &[AblationRun]) -> (Vec<Series>, LineOptions) {
    let series = runs.iter().map(|r| Series::new(&r.label, &r.val_losses)).collect();
    (series, LineOptions::default().title("validation loss").y_label("cross-entropy (label smoothing)"))
}
