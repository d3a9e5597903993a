//! One-file HTML reports: headings, text, code, SVG figures and tables on
//! one page that opens anywhere, offline, with nothing beside it.

use std::path::Path;

use crate::svg::{Escaped, SVG_NAMESPACE};
use crate::{Error, write_atomically};

/// The page's whole style sheet, inline: a readable column of text, figures
/// scaled down to the column, framed tables and shaded code.
const STYLE: &str = "body{font-family:sans-serif;color:#222;line-height:1.45;max-width:64rem;margin:2rem auto;padding:0 1rem}\
h1,h2,h3{line-height:1.2}\
figure{margin:1.5rem 0}\
figure svg{max-width:100%;height:auto}\
figcaption{color:#555;font-size:.9rem;margin-top:.4rem}\
pre{background:#f4f4f4;padding:.75rem;overflow-x:auto}\
table{border-collapse:collapse;margin:1rem 0}\
th,td{border:1px solid #ccc;padding:.3rem .6rem;text-align:left;font-variant-numeric:tabular-nums}\
th{background:#eee}\
tr:nth-child(even) td{background:#fafafa}";

/// A report as one self-contained HTML file, built block by block:
/// headings, paragraphs, code, SVG figures and tables, in the order added.
///
/// The page has an inline style sheet and no script, link, image source or
/// any other reference outside itself, so it can be mailed, attached to an
/// issue or opened offline. All text is HTML-escaped. The markup is also
/// well-formed XML (XHTML-compatible), so XML tools can read it.
///
/// ```
/// use lingo_viz::{attention_svg, HeatmapOptions, Report};
/// use ndarray::array;
///
/// let weights = array![[0.1_f32, 0.9], [0.8, 0.2]];
/// let svg = attention_svg(weights.view(), &["a", "cat"], &["gato", "un"], &HeatmapOptions::default())?;
/// let html = Report::new("Run 7")
///     .heading("Attention")
///     .figure(svg, "Dot attention after 16 epochs.")
///     .table(&["metric", "value"], vec![vec!["BLEU".to_string(), "31.4".to_string()]])
///     .to_html();
/// assert!(html.starts_with("<!DOCTYPE html>"));
/// assert!(html.contains("<title>gato → cat: 0.900</title>"));
/// assert!(!html.contains("http") && !html.contains("<script"));
/// # Ok::<(), lingo_viz::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    title: String,
    /// The page's body as HTML so far, after the `<h1>` title.
    body: String,
}

impl Report {
    /// An empty report: `title` names the page and heads it as `<h1>`.
    ///
    /// ```
    /// let html = lingo_viz::Report::new("Ablation & sort study").to_html();
    /// assert!(html.contains("<h1>Ablation &amp; sort study</h1>"));
    /// ```
    pub fn new(title: impl Into<String>) -> Self {
        Report { title: title.into(), body: String::new() }
    }

    /// Appends a section heading (`<h2>`).
    ///
    /// ```
    /// let html = lingo_viz::Report::new("r").heading("Loss").to_html();
    /// assert!(html.contains("<h2>Loss</h2>"));
    /// ```
    pub fn heading(self, text: impl AsRef<str>) -> Self {
        self.element("h2", text.as_ref())
    }

    /// Appends a subsection heading (`<h3>`).
    ///
    /// ```
    /// let html = lingo_viz::Report::new("r").subheading("Layer 1").to_html();
    /// assert!(html.contains("<h3>Layer 1</h3>"));
    /// ```
    pub fn subheading(self, text: impl AsRef<str>) -> Self {
        self.element("h3", text.as_ref())
    }

    /// Appends a paragraph of plain text (`<p>`).
    ///
    /// ```
    /// let html = lingo_viz::Report::new("r").paragraph("<eos> ends 98% of rows.").to_html();
    /// assert!(html.contains("<p>&lt;eos&gt; ends 98% of rows.</p>"));
    /// ```
    pub fn paragraph(self, text: impl AsRef<str>) -> Self {
        self.element("p", text.as_ref())
    }

    /// Appends preformatted text, such as a command line, a config file or
    /// a text heatmap from [`format_attention`](crate::format_attention):
    /// spaces and line breaks are kept, in a monospace font.
    ///
    /// ```
    /// let html = lingo_viz::Report::new("r").code("lingo train \\\n  --config run.toml").to_html();
    /// assert!(html.contains("<pre><code>lingo train \\\n  --config run.toml</code></pre>"));
    /// ```
    pub fn code(mut self, text: impl AsRef<str>) -> Self {
        put!(self.body, "<pre><code>{}</code></pre>\n", Escaped(text.as_ref()));
        self
    }

    /// Appends a figure: `svg` inline, as [`attention_svg`](crate::attention_svg),
    /// [`attention_grid_svg`](crate::attention_grid_svg) or
    /// [`lines_svg`](crate::lines_svg) return it, with `caption` under it
    /// (none when empty). The figure keeps its hover labels and is scaled
    /// down to the page's width when wider.
    ///
    /// The SVG is markup and goes in as it is, so it must come from these
    /// functions or another trusted source; only its namespace declaration
    /// is dropped, which an HTML page does not need.
    ///
    /// ```
    /// use lingo_viz::{lines_svg, LineOptions, Report, Series};
    ///
    /// let svg = lines_svg(&[Series::new("train", &[2.0, 1.0])], &LineOptions::default())?;
    /// let html = Report::new("r").figure(svg, "Training loss.").to_html();
    /// assert!(html.contains("<figure><svg width=\"800\""));
    /// assert!(html.contains("<figcaption>Training loss.</figcaption></figure>"));
    /// # Ok::<(), lingo_viz::Error>(())
    /// ```
    pub fn figure(mut self, svg: impl AsRef<str>, caption: impl AsRef<str>) -> Self {
        let svg = svg.as_ref().trim().replacen(SVG_NAMESPACE, "", 1);
        put!(self.body, "<figure>{svg}");
        if !caption.as_ref().is_empty() {
            put!(self.body, "<figcaption>{}</figcaption>", Escaped(caption.as_ref()));
        }
        self.body.push_str("</figure>\n");
        self
    }

    /// Appends a table with a `header` row and `rows` of cells, all plain
    /// text. Rows are written as given: one shorter or longer than the
    /// header makes a ragged table, not an error.
    ///
    /// ```
    /// let rows = vec![vec!["dot".to_string(), "95.4%".to_string()], vec!["additive".to_string(), "96.1%".to_string()]];
    /// let html = lingo_viz::Report::new("r").table(&["attention", "alignment"], rows).to_html();
    /// assert!(html.contains("<tr><th>attention</th><th>alignment</th></tr>"));
    /// assert!(html.contains("<tr><td>dot</td><td>95.4%</td></tr>"));
    /// ```
    pub fn table<H, R, C>(mut self, header: &[H], rows: impl IntoIterator<Item = R>) -> Self
    where
        H: AsRef<str>,
        R: IntoIterator<Item = C>,
        C: AsRef<str>,
    {
        self.body.push_str("<table><thead><tr>");
        for cell in header {
            put!(self.body, "<th>{}</th>", Escaped(cell.as_ref()));
        }
        self.body.push_str("</tr></thead><tbody>\n");
        for row in rows {
            self.body.push_str("<tr>");
            for cell in row {
                put!(self.body, "<td>{}</td>", Escaped(cell.as_ref()));
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</tbody></table>\n");
        self
    }

    /// The whole page: an HTML5 document, UTF-8, whose markup is also
    /// well-formed XML.
    ///
    /// ```
    /// let html = lingo_viz::Report::new("Run <7>").paragraph("done").to_html();
    /// assert!(html.contains("<title>Run &lt;7&gt;</title>"));
    /// assert!(html.trim_end().ends_with("</html>"));
    /// ```
    pub fn to_html(&self) -> String {
        let title = Escaped(&self.title);
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\" />\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\" />\n\
             <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n{}</body>\n</html>\n",
            self.body
        )
    }

    /// Writes [`Report::to_html`] to the file `path`, through a temporary
    /// file in the same folder and a rename: a reader never sees half a
    /// page, and a failed write leaves an older file in place.
    ///
    /// # Errors
    /// [`Error::WriteFile`], naming `path`, when the file cannot be written.
    ///
    /// # Example
    /// ```
    /// let path = std::env::temp_dir().join("lingo-viz-doc-report.html");
    /// lingo_viz::Report::new("r").paragraph("hello").save(&path)?;
    /// assert!(std::fs::read_to_string(&path).unwrap().contains("<p>hello</p>"));
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), lingo_viz::Error>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        write_atomically(path.as_ref(), self.to_html().as_bytes())
    }

    /// Appends `<tag>text</tag>` on a line of its own.
    fn element(mut self, tag: &str, text: &str) -> Self {
        put!(self.body, "<{tag}>{}</{tag}>\n", Escaped(text));
        self
    }
}
