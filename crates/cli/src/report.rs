//! `--report FILE.html`: a command's tables and pictures in one
//! self-contained page, every picture also written as an SVG beside it
//! (`FILE-NAME.svg`), and the plain tables the text output prints.

use std::path::{Path, PathBuf};

use lingo::lessons::measure::HeadScores;
use lingo::viz::{HeatmapOptions, LineOptions, Report, Series};
use ndarray::{ArrayView2, ArrayView4};

use crate::error::Result;
use crate::output::{Output, output_dir_of};

/// A share as a table cell: a percentage with one decimal, `n/a` when there is none.
pub(crate) fn percent(x: Option<f64>) -> String {
    x.map_or("n/a".into(), |x| format!("{:.1}%", 100.0 * x))
}

/// A table: a header and rows of cells, printed as text or put in a report.
pub(crate) struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names and no rows yet.
    pub fn new<S: AsRef<str>>(header: &[S]) -> Table {
        Table { header: header.iter().map(|h| h.as_ref().to_owned()).collect(), rows: Vec::new() }
    }

    /// Adds a row.
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// The table as text ([`lingo::viz::format_table`]).
    pub fn text(&self) -> String {
        lingo::viz::format_table(&self.header, &self.rows)
    }
}

/// Every head's alignment accuracy and mean entropy, `accuracy / entropy`
/// in each cell: one row per layer, one column per head.
pub(crate) fn head_table(heads: &HeadScores) -> Table {
    let mut header = vec![String::new()];
    header.extend((0..heads.accuracy.first().map_or(0, Vec::len)).map(|h| format!("head {}", h + 1)));
    let mut table = Table::new(&header);
    for (l, (acc, ent)) in heads.accuracy.iter().zip(&heads.entropy).enumerate() {
        let mut row = vec![format!("layer {}", l + 1)];
        row.extend(acc.iter().zip(ent).map(|(a, h)| format!("{:.1}% / {h:.2}", 100.0 * a)));
        table.push(row);
    }
    table
}

/// The head table as text, titled `title`, with the best head named under it.
pub(crate) fn head_lines(heads: &HeadScores, title: &str) -> Vec<String> {
    let (name, accuracy) = heads.best();
    vec![
        format!("\n{title}: alignment accuracy / mean entropy (nats) of each head"),
        head_table(heads).text(),
        format!("best: {name} ({:.1}%)", 100.0 * accuracy),
    ]
}

/// A report being built: the page, and the SVG files to write beside it.
pub(crate) struct HtmlReport {
    path: PathBuf,
    page: Option<Report>,
    svgs: Vec<(PathBuf, String)>,
}

impl HtmlReport {
    /// A report to be saved at `path`, titled `title`.
    pub fn new(path: &Path, title: &str) -> HtmlReport {
        HtmlReport { path: path.to_owned(), page: Some(Report::new(title)), svgs: Vec::new() }
    }

    /// Adds blocks to the page: `add(|page| page.heading("...").paragraph("..."))`.
    pub fn add(&mut self, blocks: impl FnOnce(Report) -> Report) {
        self.page = self.page.take().map(blocks);
    }

    /// Adds a table.
    pub fn table(&mut self, table: &Table) {
        self.add(|page| page.table(&table.header, &table.rows));
    }

    /// Adds a figure, also written as `FILE-name.svg` beside the report.
    pub fn figure(&mut self, name: &str, svg: String, caption: &str) {
        let stem = self.path.file_stem().map_or("report".into(), |s| s.to_string_lossy().into_owned());
        let file = self.path.with_file_name(format!("{stem}-{}.svg", name.replace([':', '/', ' '], "-")));
        self.add(|page| page.figure(&svg, caption));
        self.svgs.push((file, svg));
    }

    /// A heatmap of `weights (tgt_len, src_len)` as a figure.
    pub fn heatmap<S: AsRef<str>, T: AsRef<str>>(
        &mut self,
        name: &str,
        weights: ArrayView2<f32>,
        (src, tgt): (&[S], &[T]),
        caption: &str,
    ) -> Result<()> {
        let svg = lingo::viz::attention_svg(weights, src, tgt, &HeatmapOptions::default().show_values(true))?;
        self.figure(name, svg, caption);
        Ok(())
    }

    /// One heatmap per head, one row per layer, `weights (layers, heads, tgt_len, src_len)`.
    pub fn head_grid<S: AsRef<str>, T: AsRef<str>>(
        &mut self,
        name: &str,
        weights: ArrayView4<f32>,
        tokens: (&[S], &[T]),
        caption: &str,
    ) -> Result<()> {
        self.titled_head_grid(name, weights, tokens, |l, h| format!("layer {} head {}", l + 1, h + 1), caption)
    }

    /// [`head_grid`](Self::head_grid) with each map titled by `title(layer, head)`.
    pub fn titled_head_grid<S: AsRef<str>, T: AsRef<str>>(
        &mut self,
        name: &str,
        weights: ArrayView4<f32>,
        (src, tgt): (&[S], &[T]),
        title: impl Fn(usize, usize) -> String,
        caption: &str,
    ) -> Result<()> {
        let svg = lingo::viz::attention_grid_svg(weights, src, tgt, title, &HeatmapOptions::default())?;
        self.figure(name, svg, caption);
        Ok(())
    }

    /// Curves on one chart.
    pub fn curves(&mut self, name: &str, series: &[Series], options: &LineOptions, caption: &str) -> Result<()> {
        let svg = lingo::viz::lines_svg(series, options)?;
        self.figure(name, svg, caption);
        Ok(())
    }

    /// Writes the SVGs, then the page, and says where.
    pub fn save(mut self, out: &Output) -> Result<()> {
        output_dir_of(&self.path)?;
        for (file, svg) in &self.svgs {
            lingo::viz::save_svg(svg, file)?;
        }
        let page = self.page.take().expect("the page exists until saved");
        page.save(&self.path)?;
        out.note(&format!("wrote {} (and {} SVG files beside it)", self.path.display(), self.svgs.len()));
        Ok(())
    }
}

/// The command line that made a report, for its first paragraph.
pub(crate) fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("lingo {}", args.join(" "))
}
