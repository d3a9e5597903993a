//! `lingo sort-study`: [`lingo::lessons::sort_study()`], its epochs printed
//! as they end, then its tables, attention heatmaps and entropy chart (or
//! its JSON lines), and with `--report` one HTML page.

use std::path::PathBuf;

use clap::Args;
use lingo::lessons::observe::{Every, Observer};
use lingo::lessons::{EpochTimes, Event, RareRow, SortRun, SortStudyResults, SortStudySettings, StudyModel};
use lingo::viz::{CellStyle, HeatmapOptions, LineOptions, Series, TextOptions};
use serde_json::json;

use crate::error::Result;
use crate::output::Output;
use crate::probe_rows;
use crate::report::{self, HtmlReport, Table, head_lines, head_table, percent};

/// Settings of `lingo sort-study`: the lesson's, and where its pictures go.
#[derive(Args, Debug, Clone)]
pub struct SortStudyArgs {
    /// The lesson's settings.
    #[command(flatten)]
    pub settings: SortStudySettings,
    /// Directory for the entropy chart and the heatmaps
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

/// `lingo sort-study`: checks the settings, readies the outputs (no
/// pictures when only timing), runs the lesson with its epoch lines, and
/// prints it.
pub(crate) fn run(args: &SortStudyArgs, out: Output) -> Result<()> {
    let settings = args.settings.clone().check()?;
    let draws = !args.no_png && !settings.time_epochs;
    let _claimed = crate::output::ready_outputs(args.report.as_deref(), draws.then_some(&*args.out))?;
    let mut lines = EpochLines(out);
    let observer: &mut dyn Observer = if out.is_json() || settings.time_epochs { &mut () } else { &mut lines };
    print(args, &lingo::lessons::sort_study(&settings, observer)?, &out)
}

/// Prints each epoch as it ends, with its attention entropy (text only).
struct EpochLines(Output);

impl Observer for EpochLines {
    fn every(&self) -> Every {
        Every::NOTHING
    }

    fn event(&mut self, event: &Event) {
        if let Event::Epoch(e) = event {
            let h = e.entropy.map_or(String::new(), |h| format!(" | attention entropy: {h:.3}"));
            let (epoch, epochs, train, val) = (e.epoch, e.epochs, e.train_loss, e.val_loss);
            self.0.say(&format!("{} | Epoch {epoch}/{epochs} | Train: {train:.4} | Val: {val:.4}{h}", e.run));
        }
    }
}

/// Prints the study's results: each model's JSON line, the heatmaps of
/// the case study's sequences, the tables and the probes; then the
/// pictures and the report.
fn print(args: &SortStudyArgs, results: &SortStudyResults, out: &Output) -> Result<()> {
    let settings = &args.settings;
    if let Some(timing) = &results.timing {
        print_timing(settings, timing, out);
        return Ok(());
    }
    for run in &results.runs {
        out.json(&serde_json::to_value(run.summary()).expect("a summary serializes"));
    }
    for run in &results.runs {
        show_heatmap(args, run, out)?;
    }
    print_tables(settings, &results.runs, &results.rare, out);
    let sequences = |len: usize| format!("{} fresh sequences of length {len}", settings.test_size);
    for (len, rows) in &results.probes {
        probe_rows::print_probes(rows, &sequences(*len), &json!({ "seq_len": len }), out);
    }
    if !args.no_png {
        plot_entropy(args, &results.runs, out)?;
    }
    let Some(path) = &args.report else { return Ok(()) };
    let mut report = HtmlReport::new(path, "lingo sort-study: attention learning to sort");
    report.add(|page| page.code(report::command_line()).heading("Results"));
    report.table(&results_table(&results.runs));
    report.add(|page| page.subheading("Attention beside saliency").paragraph(SALIENCY_TITLE));
    report.table(&saliency_table(&results.runs));
    report.add(|page| page.subheading("Longer than trained (sequence accuracy, greedy)"));
    report.table(&longer_table(settings, &results.runs));
    if !results.rare.is_empty() {
        report.add(|page| page.subheading(rare_title(settings)));
        report.table(&rare_table(&results.rare));
    }
    report.add(|page| page.heading("Attention"));
    for run in &results.runs {
        let Some(example) = &run.example else { continue };
        let tokens = (&example.source[..], &example.target[..]);
        let caption =
            format!("Length {}: where each output digit looked (row n predicts output token n + 1).", run.len);
        report.heatmap(&format!("len{}", run.len), example.weights.view(), tokens, &caption)?;
        if let Some(heads) = &example.heads {
            let caption = format!("Length {}: every head, one row per layer.", run.len);
            report.head_grid(&format!("len{}-heads", run.len), heads.view(), tokens, &caption)?;
        }
    }
    for r in &results.runs {
        if let Some(heads) = r.heads.as_ref().filter(|h| h.several()) {
            let (best, accuracy) = heads.best();
            report.add(|page| {
                page.paragraph(format!(
                    "Length {}, {} ({}): alignment accuracy / mean entropy (nats) of each head on the test set; best: {best} ({:.1}%).",
                    r.len,
                    r.model,
                    r.variant,
                    100.0 * accuracy
                ))
            });
            report.table(&head_table(heads));
        }
    }
    let series = entropy_series(&results.runs);
    if !series.is_empty() {
        let caption = "Mean attention entropy on the validation set before training and after each epoch.";
        report.curves("entropy", &series, &entropy_options(), caption)?;
    }
    let losses: Vec<Series> = results
        .runs
        .iter()
        .map(|r| Series::new(format!("length {} {} ({})", r.len, r.model, r.variant), &r.val_losses))
        .collect();
    let options = LineOptions::default().title("validation loss").y_label("cross-entropy");
    report.add(|page| page.heading("Training"));
    report.curves("val-loss", &losses, &options, "Validation loss after each epoch.")?;
    if !results.probes.is_empty() {
        report.add(|page| page.heading("Probes"));
    }
    for (len, rows) in &results.probes {
        report.add(|page| page.paragraph(probe_rows::probe_title(&sequences(*len))));
        report.table(&probe_rows::probe_table(rows));
    }
    report.save(out)
}

/// `--time-epochs`: a line per epoch with its seconds, the median, and the JSON object.
fn print_timing(settings: &SortStudySettings, timing: &EpochTimes, out: &Output) {
    let len = timing.seq_len;
    for (e, (s, loss)) in timing.epoch_seconds.iter().zip(&timing.train_losses).enumerate() {
        out.say(&format!("len {len}, attention | Epoch {}/{} | Train: {loss:.4} | {s:.3} s", e + 1, settings.epochs));
    }
    let (median, size, batch) = (timing.median_epoch_seconds, timing.train_size, timing.batch_size);
    out.say(&format!("median: {median:.3} s per epoch of {size} sequences (batch {batch})"));
    out.json(&serde_json::to_value(timing).expect("a timing serializes"));
}

/// One attention model's case-study sequence, as numbers (like the case
/// study's table) and as a PNG.
fn show_heatmap(args: &SortStudyArgs, run: &SortRun, out: &Output) -> Result<()> {
    let Some(example) = &run.example else { return Ok(()) };
    let (weights, source, target, len) = (example.weights.view(), &example.source, &example.target, run.len);
    let options = TextOptions::default().cells(CellStyle::Number).mark_peak(true);
    out.say(&format!(
        "\nattention, length {len} (row n predicts output token n + 1):\n{}",
        lingo::viz::format_attention(weights, source, target, &options)?
    ));
    if !args.no_png {
        let path = out.file(&args.out, &format!("sort-len{len}.png"))?;
        let title = match args.settings.model {
            StudyModel::Rnn => format!("sorting, length {len}: additive attention"),
            StudyModel::Transformer => format!("sorting, length {len}: Transformer, last layer"),
        };
        let options = HeatmapOptions::default().title(title).show_values(true);
        lingo::viz::plot_attention(weights, source, target, &path, &options)?;
        out.note(&format!("wrote {}", path.display()));
    }
    Ok(())
}

/// One row per trained model.
fn results_table(results: &[SortRun]) -> Table {
    let header =
        ["length", "attention", "training data", "accuracy", "with dups", "without dups", "alignment", "seconds"];
    let mut table = Table::new(&header);
    for r in results {
        table.push(vec![
            r.len.to_string(),
            r.model.to_string(),
            r.variant.clone(),
            percent(Some(r.accuracy)),
            percent(Some(r.duplicates)),
            percent(r.distinct),
            percent(r.alignment),
            format!("{:.1}", r.seconds),
        ]);
    }
    table
}

/// Attention beside gradient × input saliency on the test set, one row per model.
fn saliency_table(results: &[SortRun]) -> Table {
    let header = ["length", "attention", "training data", "attention on gold", "saliency on gold", "same peak", "rho"];
    let mut table = Table::new(&header);
    for r in results {
        let mut cells = vec![r.len.to_string(), r.model.to_string(), r.variant.clone()];
        cells.extend(probe_rows::saliency_cells(&r.saliency));
        table.push(cells);
    }
    table
}

/// What the saliency table's title says.
const SALIENCY_TITLE: &str = "attention beside gradient x input saliency on the test set (peaks on a gold link; rows whose peaks agree; Spearman's rho per row)";

/// Sequence accuracy on inputs longer than trained, one row per uniformly trained model.
fn longer_table(settings: &SortStudySettings, results: &[SortRun]) -> Table {
    let mut header = vec!["trained at".to_string(), "attention".to_string()];
    header.extend(settings.longer.iter().map(|l| format!("+{l}")));
    let mut table = Table::new(&header);
    for r in results.iter().filter(|r| r.variant == "uniform") {
        let mut row = vec![r.len.to_string(), r.model.to_string()];
        row.extend(r.longer.iter().map(|&(_, a)| percent(Some(a))));
        table.push(row);
    }
    table
}

fn rare_title(settings: &SortStudySettings) -> String {
    format!("rare digit {} (length {}, attention)", settings.rare_digit, settings.lengths[0])
}

/// Accuracy with and without the rare digit, for the uniform and the skewed training.
fn rare_table(rare: &[RareRow]) -> Table {
    let mut table = Table::new(&["training data", "with the digit", "without it", "alignment (with it)"]);
    for row in rare {
        table.push(vec![
            row.training.clone(),
            percent(Some(row.with_rare)),
            percent(Some(row.without_rare)),
            percent(row.alignment),
        ]);
    }
    table
}

fn print_tables(settings: &SortStudySettings, results: &[SortRun], rare: &[RareRow], out: &Output) {
    let mut lines = vec![format!("\n{}", results_table(results).text())];
    lines.push(format!("\n{SALIENCY_TITLE}:\n{}", saliency_table(results).text()));
    for r in results {
        if let Some(heads) = r.heads.as_ref().filter(|h| h.several()) {
            lines.extend(head_lines(heads, &format!("length {}, {} ({})", r.len, r.model, r.variant)));
        }
    }
    lines.push(format!(
        "\nlonger than trained (sequence accuracy, greedy):\n{}",
        longer_table(settings, results).text()
    ));
    if !rare.is_empty() {
        lines.push(format!("\n{}:\n{}", rare_title(settings), rare_table(rare).text()));
    }
    out.say(&lines.join("\n"));
}

/// Attention entropy per epoch of every attention model, one series each.
fn entropy_series(results: &[SortRun]) -> Vec<Series> {
    results
        .iter()
        .filter(|r| !r.entropy.is_empty())
        .map(|r| {
            Series::from_points(
                format!("length {} ({})", r.len, r.variant),
                r.entropy.iter().enumerate().map(|(e, &h)| (e as f32, h)).collect(),
            )
        })
        .collect()
}

fn entropy_options() -> LineOptions {
    LineOptions::default().title("attention entropy while learning to sort").y_label("mean entropy (nats)")
}

/// Attention entropy per epoch of every attention model, one chart.
fn plot_entropy(args: &SortStudyArgs, results: &[SortRun], out: &Output) -> Result<()> {
    let series = entropy_series(results);
    if series.is_empty() {
        return Ok(());
    }
    let path = out.file(&args.out, "sort-entropy.png")?;
    lingo::viz::plot_lines(&series, &path, &entropy_options())?;
    out.note(&format!("wrote {}", path.display()));
    Ok(())
}
