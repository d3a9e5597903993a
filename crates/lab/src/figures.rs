//! A run's pictures as downloads and its one-file HTML report, drawn by
//! lingo-viz (the same renderer and embedded font as the command line's
//! pictures) from the run's own events: what the page showed is what is kept.

use std::collections::BTreeMap;
use std::io::Cursor;

use lingo_viz::{HeatmapOptions, LineOptions, PALETTE, Report, Series};
use ndarray::{Array4, ArrayView2, ArrayView4, Axis, s};
use serde::Deserialize;

use crate::error::ApiError;

/// What a run's events say, model by model.
#[derive(Debug, Default)]
pub(crate) struct Record {
    pub models: Vec<ModelRecord>,
    /// Each learning-rate change asked while it trained: the factor on the
    /// lesson's rate, and the models still training with the last step
    /// heard of each.
    pub lr_scales: Vec<(f64, BTreeMap<String, u64>)>,
}

/// One model of a run.
#[derive(Debug, Default)]
pub(crate) struct ModelRecord {
    pub run: String,
    pub label: String,
    pub params: u64,
    /// (step, batch loss) of each step event.
    pub steps: Vec<(u64, f32)>,
    pub epochs: Vec<EpochHeard>,
    pub snapshots: Vec<SnapshotHeard>,
}

/// The fields of an epoch event a picture uses.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct EpochHeard {
    pub epoch: usize,
    pub steps: u64,
    pub val_loss: f32,
    pub alignment: Option<f64>,
    pub entropy: Option<f32>,
    pub seconds: f64,
    pub heads: Option<HeadsHeard>,
}

/// Every head's alignment accuracy, `[layer][head]`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct HeadsHeard {
    pub accuracy: Vec<Vec<f64>>,
}

/// A snapshot event of the first pinned example.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct SnapshotHeard {
    pub step: u64,
    pub example: usize,
    pub source: Vec<String>,
    pub target: Vec<String>,
    /// `(layers, heads, tgt_len, src_len)`.
    pub weights: Array4<f32>,
}

#[derive(Deserialize)]
struct RunHeard {
    run: String,
    label: String,
    params: u64,
}

#[derive(Deserialize)]
struct StepHeard {
    run: String,
    step: u64,
    loss: f32,
}

/// The events a picture reads; the others are passed over.
#[derive(Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Heard {
    Started {
        runs: Vec<RunHeard>,
    },
    Step(StepHeard),
    Epoch(Box<EpochOf>),
    Snapshot(Box<SnapshotOf>),
    Lr {
        scale: f64,
        steps: BTreeMap<String, u64>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct EpochOf {
    run: String,
    #[serde(flatten)]
    epoch: EpochHeard,
}

#[derive(Deserialize)]
struct SnapshotOf {
    run: String,
    #[serde(flatten)]
    snapshot: SnapshotHeard,
}

impl Record {
    /// The record of `events`, each one event's JSON text.
    pub fn of<'a>(events: impl IntoIterator<Item = &'a str>) -> Record {
        let mut record = Record::default();
        for event in events {
            // Every event is one the lab wrote itself; a lab event ("state") reads as Other.
            let Ok(heard) = serde_json::from_str::<Heard>(event) else { continue };
            match heard {
                Heard::Started { runs } => {
                    for r in runs {
                        let model = record.model(&r.run);
                        (model.label, model.params) = (r.label, r.params);
                    }
                }
                Heard::Step(s) => record.model(&s.run).steps.push((s.step, s.loss)),
                Heard::Epoch(e) => record.model(&e.run).epochs.push(e.epoch),
                Heard::Snapshot(s) if s.snapshot.example == 0 => record.model(&s.run).snapshots.push(s.snapshot),
                Heard::Lr { scale, steps } => record.lr_scales.push((scale, steps)),
                Heard::Snapshot(_) | Heard::Other => {}
            }
        }
        record
    }

    fn model(&mut self, run: &str) -> &mut ModelRecord {
        match self.models.iter().position(|m| m.run == run) {
            Some(i) => &mut self.models[i],
            None => {
                self.models.push(ModelRecord { run: run.to_string(), label: run.to_string(), ..Default::default() });
                self.models.last_mut().expect("just pushed")
            }
        }
    }

    /// The model named `run`, or a 404 naming `model`.
    pub fn find(&self, run: &str) -> Result<&ModelRecord, ApiError> {
        self.models.iter().find(|m| m.run == run).ok_or_else(|| {
            let names: Vec<&str> = self.models.iter().map(|m| m.run.as_str()).collect();
            ApiError::not_found("model", format!("no model {run:?} in this run: {}", names.join(", ")))
        })
    }
}

impl ModelRecord {
    /// The last snapshot taken at or before `step` (the last of all without one).
    pub fn snapshot(&self, step: Option<u64>) -> Result<&SnapshotHeard, ApiError> {
        let taken = self.snapshots.iter().rfind(|s| step.is_none_or(|step| s.step <= step));
        taken.ok_or_else(|| {
            ApiError::not_found("step", format!("{} has no snapshot of its attention there", self.label))
        })
    }
}

/// A chart of every model of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chart {
    /// Training loss per step heard, validation loss per epoch.
    Loss,
    /// Alignment accuracy per epoch.
    Alignment,
    /// Attention entropy per epoch.
    Entropy,
}

impl Chart {
    pub const ALL: [Chart; 3] = [Chart::Loss, Chart::Alignment, Chart::Entropy];

    pub fn name(self) -> &'static str {
        match self {
            Chart::Loss => "loss",
            Chart::Alignment => "alignment",
            Chart::Entropy => "entropy",
        }
    }

    /// The chart's curves and options; `None` when no model has a point for it.
    pub fn draw(self, record: &Record) -> Option<(Vec<Series>, LineOptions)> {
        let epochs = |m: &ModelRecord, y: fn(&EpochHeard) -> Option<f32>| -> Vec<(f32, f32)> {
            m.epochs.iter().filter_map(|e| Some((e.epoch as f32, y(e)?))).collect()
        };
        // One colour per model on every chart, as on the page: its place
        // among the runs, kept when another model has no curve here.
        let color = |k: usize| PALETTE[k % PALETTE.len()];
        let mut series = Vec::new();
        let options = match self {
            Chart::Loss => {
                for (k, m) in record.models.iter().enumerate() {
                    let train = m.steps.iter().map(|&(s, l)| (s as f32, l)).collect();
                    series.push(Series::from_points(format!("{} train", m.label), train).color(color(k)));
                    let val = m.epochs.iter().map(|e| (e.steps as f32, e.val_loss)).collect();
                    series.push(Series::from_points(format!("{} validation", m.label), val).color(color(k)).dashed());
                }
                LineOptions::default().title("loss").x_label("step").y_label("cross-entropy")
            }
            Chart::Alignment => {
                for (k, m) in record.models.iter().enumerate() {
                    let points = epochs(m, |e| e.alignment.map(|a| a as f32));
                    series.push(Series::from_points(m.label.clone(), points).color(color(k)));
                }
                LineOptions::default().title("alignment accuracy").x_label("epoch").y_label("share").y_range(0.0, 1.0)
            }
            Chart::Entropy => {
                for (k, m) in record.models.iter().enumerate() {
                    series.push(Series::from_points(m.label.clone(), epochs(m, |e| e.entropy)).color(color(k)));
                }
                LineOptions::default().title("attention entropy").x_label("epoch").y_label("nats")
            }
        };
        series.retain(|s| !s.points.is_empty());
        (!series.is_empty()).then_some((series, options))
    }
}

/// A picture a client asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Figure {
    Chart(Chart),
    /// One head of a model's snapshot (the best-aligned at that epoch by default).
    Attention {
        model: String,
        step: Option<u64>,
        head: Option<(usize, usize)>,
    },
    /// Every head of a model's snapshot.
    Heads {
        model: String,
        step: Option<u64>,
    },
}

/// The head a picture shows when none is asked for: the best-aligned at
/// the last epoch before the snapshot (the earlier of a tie, as the page
/// marks it), else the last layer's first.
fn default_head(model: &ModelRecord, snapshot: &SnapshotHeard) -> (usize, usize) {
    let layers = snapshot.weights.dim().0;
    let heads = model.epochs.iter().filter(|e| e.steps <= snapshot.step).filter_map(|e| e.heads.as_ref()).next_back();
    let mut best = (layers - 1, 0, f64::NEG_INFINITY);
    for (l, row) in heads.map_or(&[][..], |h| &h.accuracy).iter().enumerate() {
        for (h, &a) in row.iter().enumerate() {
            if a > best.2 {
                best = (l, h, a);
            }
        }
    }
    (best.0, best.1)
}

/// The figure's title and what it draws, or a 4xx naming the field.
enum Drawn<'a> {
    Lines(Vec<Series>, LineOptions),
    Map(&'a SnapshotHeard, (usize, usize), String),
    Grid(&'a SnapshotHeard),
}

fn drawn<'a>(record: &'a Record, figure: &Figure) -> Result<Drawn<'a>, ApiError> {
    Ok(match figure {
        Figure::Chart(chart) => {
            let (series, options) = chart.draw(record).ok_or_else(|| {
                ApiError::not_found("name", format!("nothing to draw in the {} chart yet", chart.name()))
            })?;
            Drawn::Lines(series, options)
        }
        Figure::Attention { model, step, head } => {
            let m = record.find(model)?;
            let snapshot = m.snapshot(*step)?;
            let (layers, count, ..) = snapshot.weights.dim();
            let (l, h) = head.unwrap_or_else(|| default_head(m, snapshot));
            if l >= layers || h >= count {
                return Err(ApiError::bad_request("head", format!("the model has {layers} layers of {count} heads")));
            }
            let which = if layers * count > 1 { format!(", layer {} head {}", l + 1, h + 1) } else { String::new() };
            Drawn::Map(snapshot, (l, h), format!("{}, step {}{which}", m.label, snapshot.step))
        }
        Figure::Heads { model, step } => Drawn::Grid(record.find(model)?.snapshot(*step)?),
    })
}

fn viz(err: lingo_viz::Error) -> ApiError {
    ApiError::internal(format!("cannot draw it: {err}"))
}

fn head_title(l: usize, h: usize) -> String {
    format!("layer {} head {}", l + 1, h + 1)
}

/// Draws `drawn` with one format's renderers, each given the lab's options.
fn render<T>(
    drawn: Drawn<'_>,
    lines: impl FnOnce(&[Series], &LineOptions) -> Result<T, lingo_viz::Error>,
    map: impl FnOnce(ArrayView2<f32>, &[String], &[String], &HeatmapOptions) -> Result<T, lingo_viz::Error>,
    grid: impl FnOnce(ArrayView4<f32>, &[String], &[String], &HeatmapOptions) -> Result<T, lingo_viz::Error>,
) -> Result<T, ApiError> {
    match drawn {
        Drawn::Lines(series, options) => lines(&series, &options),
        Drawn::Map(snap, (l, h), title) => map(
            snap.weights.slice(s![l, h, .., ..]),
            &snap.source,
            &snap.target,
            &HeatmapOptions::default().title(title).show_values(true),
        ),
        Drawn::Grid(snap) => grid(snap.weights.view(), &snap.source, &snap.target, &HeatmapOptions::default()),
    }
    .map_err(viz)
}

/// The figure as SVG.
pub(crate) fn svg(record: &Record, figure: &Figure) -> Result<String, ApiError> {
    render(
        drawn(record, figure)?,
        lingo_viz::lines_svg,
        |w, s, t, o| lingo_viz::attention_svg(w, s, t, o),
        |w, s, t, o| lingo_viz::attention_grid_svg(w, s, t, head_title, o),
    )
}

/// The figure as PNG bytes.
pub(crate) fn png(record: &Record, figure: &Figure) -> Result<Vec<u8>, ApiError> {
    let image = render(
        drawn(record, figure)?,
        lingo_viz::render_lines,
        |w, s, t, o| lingo_viz::render_attention(w, s, t, o),
        |w, s, t, o| lingo_viz::render_attention_grid(w, s, t, head_title, o),
    )?;
    png_bytes(&image)
}

/// `image` encoded as PNG.
pub(crate) fn png_bytes(image: &image::RgbImage) -> Result<Vec<u8>, ApiError> {
    let mut bytes = Cursor::new(Vec::new());
    image
        .write_to(&mut bytes, image::ImageFormat::Png)
        .map_err(|e| ApiError::internal(format!("cannot encode the PNG: {e}")))?;
    Ok(bytes.into_inner())
}

/// The run as one self-contained HTML page: its settings, a table of its
/// models, its curves, and each model's attention on the pinned sentence
/// as it formed (four snapshots across the run) and at the end.
pub(crate) fn report(record: &Record, title: &str, request: &serde_json::Value) -> Result<Report, ApiError> {
    let mut page = Report::new(title)
        .paragraph("Written by lingo lab from the run's own events: every number here is one the page showed.")
        .code(serde_json::to_string_pretty(request).expect("a request serializes"));
    if !record.lr_scales.is_empty() {
        let label =
            |run: &String| record.models.iter().find(|m| &m.run == run).map_or(run.clone(), |m| m.label.clone());
        let changes: Vec<String> = record
            .lr_scales
            .iter()
            .map(|(scale, steps)| {
                let at: Vec<String> =
                    steps.iter().map(|(run, step)| format!("{} after step {step}", label(run))).collect();
                format!("×{scale} ({})", if at.is_empty() { "no model was training".into() } else { at.join(", ") })
            })
            .collect();
        page = page.paragraph(format!(
            "The learning rate was changed while it trained (a factor on the rate above, for the models still \
             training; each step is the last heard before the change): {}. A new run of these settings trains \
             without the changes.",
            changes.join("; ")
        ));
    }
    let header = ["model", "parameters", "epochs", "steps", "val loss", "alignment", "entropy", "seconds"];
    let rows: Vec<Vec<String>> = record
        .models
        .iter()
        .map(|m| {
            let last = m.epochs.last();
            let or_dash = |x: Option<String>| x.unwrap_or_else(|| "–".into());
            vec![
                m.label.clone(),
                m.params.to_string(),
                last.map_or(0, |e| e.epoch).to_string(),
                last.map_or(0, |e| e.steps).to_string(),
                or_dash(last.map(|e| format!("{:.4}", e.val_loss))),
                or_dash(last.and_then(|e| e.alignment).map(|a| format!("{:.1}%", 100.0 * a))),
                or_dash(last.and_then(|e| e.entropy).map(|h| format!("{h:.3}"))),
                or_dash(last.map(|e| format!("{:.2}", e.seconds))),
            ]
        })
        .collect();
    page = page.heading("Models").table(&header, rows);
    page = page.heading("Training");
    for chart in Chart::ALL {
        if let Some((series, options)) = chart.draw(record) {
            let svg = lingo_viz::lines_svg(&series, &options).map_err(viz)?;
            page = page.figure(svg, format!("The {} of every model.", chart.name()));
        }
    }
    for m in record.models.iter().filter(|m| !m.snapshots.is_empty()) {
        page = page.heading(format!("{}: attention on the pinned sentence", m.label));
        let last = m.snapshots.len() - 1;
        let mut shown: Vec<usize> = (0..4).map(|i| i * last / 3).collect();
        shown.dedup();
        for i in shown {
            let snap = &m.snapshots[i];
            let mean = snap.weights.index_axis(Axis(0), snap.weights.dim().0 - 1).mean_axis(Axis(0));
            let mean = mean.expect("a snapshot has a head");
            let options = HeatmapOptions::default().title(format!("step {}", snap.step)).show_values(true);
            let svg = lingo_viz::attention_svg(mean.view(), &snap.source, &snap.target, &options).map_err(viz)?;
            page = page.figure(svg, format!("After step {} (the mean of the last layer's heads).", snap.step));
        }
        let snap = &m.snapshots[last];
        if snap.weights.dim().0 * snap.weights.dim().1 > 1 {
            let svg = lingo_viz::attention_grid_svg(
                snap.weights.view(),
                &snap.source,
                &snap.target,
                head_title,
                &HeatmapOptions::default(),
            )
            .map_err(viz)?;
            page = page.figure(svg, "Every head at the end, one row per layer.");
        }
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_keeps_its_colour_on_every_chart_and_its_validation_is_dashed() {
        // Two models; only the second attends, so only it has an alignment curve.
        let events = [
            r#"{"event":"step","run":"none","step":2,"loss":3.0}"#,
            r#"{"event":"step","run":"dot","step":2,"loss":2.5}"#,
            r#"{"event":"epoch","run":"none","epoch":1,"steps":2,"val_loss":2.9,"alignment":null,"entropy":null,"seconds":0.1}"#,
            r#"{"event":"epoch","run":"dot","epoch":1,"steps":2,"val_loss":2.4,"alignment":0.5,"entropy":1.2,"seconds":0.1}"#,
        ];
        let record = Record::of(events);
        let (loss, _) = Chart::Loss.draw(&record).unwrap();
        let styles: Vec<_> = loss.iter().map(|s| (s.color, s.dashed)).collect();
        let (none, dot) = (Some(PALETTE[0]), Some(PALETTE[1]));
        assert_eq!(styles, [(none, false), (none, true), (dot, false), (dot, true)]);
        let (alignment, _) = Chart::Alignment.draw(&record).unwrap();
        assert_eq!((alignment.len(), alignment[0].color), (1, dot));
    }

    #[test]
    fn the_report_says_where_the_learning_rate_changed() {
        let events = [
            r#"{"event":"started","runs":[{"run":"dot","label":"dot (Luong)","params":10}]}"#,
            r#"{"event":"step","run":"dot","step":4,"loss":2.5}"#,
            r#"{"event":"lr","scale":0.25,"steps":{"dot":4}}"#,
            r#"{"event":"step","run":"dot","step":5,"loss":2.4}"#,
        ];
        let record = Record::of(events);
        let html = report(&record, "run", &serde_json::json!({})).unwrap().to_html();
        assert!(html.contains("×0.25 (dot (Luong) after step 4)"), "{html}");
    }
}
