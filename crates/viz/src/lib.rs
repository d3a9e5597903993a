//! # lingo-viz
//!
//! Pictures of attention: text heatmaps for terminals, logs and doctests,
//! PNG and SVG heatmaps with labelled axes, line charts for training
//! curves, and one-file HTML reports that gather them.
//!
//! The crate depends on `ndarray` (plus `image` to encode PNG and `ab_glyph`
//! to draw text) and nothing else from lingo: it takes plain 2-D arrays and
//! token lists, so it is usable on attention from any model.
//!
//! ## Attention weights
//!
//! Every heatmap takes `weights: ArrayView2<f32>` of shape
//! `(tgt_len, src_len)`: row `i` is the distribution over source positions
//! that the decoder used at target step `i`, so each row usually sums to 1.
//! Models in lingo return a batch `(batch, tgt_len, src_len)`; pass one
//! example with `weights.index_axis(Axis(0), b)`.
//!
//! The scale is fixed at 0..1, never stretched to the data, so two pictures
//! can be compared by eye. Finite weights outside 0..1 are clamped for
//! shading and colour (numbers are printed as they are); NaN or infinite
//! weights are an error ([`Error::NonFiniteWeight`]), as are token lists that
//! do not match the shape ([`Error::TokenCount`]) and empty matrices.
//!
//! ## Text heatmaps
//!
//! [`format_attention`] shades each cell with `·` `░` `▒` `▓` `█` (fifths of
//! 0..1, see [`SHADES`]):
//!
//! ```
//! use lingo_viz::{format_attention, TextOptions};
//! use ndarray::array;
//!
//! // The lexicon-reverse task: "a cat" -> "gato un". Rows are the decoder's
//! // inputs; row n is the state that predicts target token n + 1.
//! let src = ["<sos>", "a", "cat", "<eos>"];
//! let tgt = ["<sos>", "gato", "un"];
//! let weights = array![
//!     [0.0_f32, 0.05, 0.9, 0.05],
//!     [0.05, 0.85, 0.1, 0.0],
//!     [0.1, 0.0, 0.0, 0.9],
//! ];
//! let text = format_attention(weights.view(), &src, &tgt, &TextOptions::default())?;
//! let expected = [
//!     "      <sos>     a   cat <eos>",
//!     "<sos>   ···   ···   ███   ···",
//!     "gato    ···   ███   ···   ···",
//!     "un      ···   ···   ···   ███",
//! ];
//! assert_eq!(text, expected.join("\n"));
//! # Ok::<(), lingo_viz::Error>(())
//! ```
//!
//! Options switch the cells to numbers or to shade and number side by side
//! ([`CellStyle`]) and mark each row's peak ([`TextOptions::mark_peak`]).
//!
//! ## PNG heatmaps
//!
//! [`plot_attention`] writes a PNG file and [`render_attention`] returns the
//! same picture as an [`image::RgbImage`] (for tests, or to compose several
//! pictures). Cells are coloured with [`viridis`], a perceptually uniform
//! colour map, on the same fixed 0..1 scale; source tokens run along the top,
//! target tokens down the left, a colour bar sits on the right, and
//! [`HeatmapOptions`] adds a title and numbers in the cells. The picture's
//! size follows exactly from the token counts, the longest tokens and the
//! options (formula in [`render_attention`]).
//!
//! ```
//! use lingo_viz::{render_attention, viridis, HeatmapOptions};
//! use ndarray::array;
//!
//! let weights = array![[0.1_f32, 0.9], [0.8, 0.2]];
//! let image = render_attention(weights.view(), &["a", "cat"], &["gato", "un"],
//!     &HeatmapOptions::default().title("toy"))?;
//! assert_eq!(image.dimensions(), (204, 129 + 28));
//! # Ok::<(), lingo_viz::Error>(())
//! ```
//!
//! ## Training curves
//!
//! [`plot_lines`] and [`render_lines`] draw one or more [`Series`] (loss,
//! accuracy, attention entropy) on one chart with ticks, grid, axis labels
//! and a legend:
//!
//! ```
//! use lingo_viz::{render_lines, LineOptions, Series};
//!
//! let curves = [Series::new("train", &[2.9, 1.8, 1.1]), Series::new("val", &[3.0, 2.1, 1.5])];
//! let image = render_lines(&curves, &LineOptions::default().y_label("loss"))?;
//! assert_eq!(image.dimensions(), (800, 480));
//! # Ok::<(), lingo_viz::Error>(())
//! ```
//!
//! ## SVG pictures
//!
//! [`attention_svg`], [`attention_grid_svg`] and [`lines_svg`] draw the
//! same pictures as vector graphics and return them as `String`s of SVG;
//! [`save_svg`] writes one to a file. They share the PNG pictures' layout
//! and size, and add what a PNG cannot: hovering over a cell shows
//! `"target → source: weight"`, hovering over a point of a curve shows its
//! value. An SVG stands alone: text is set in the viewer's `sans-serif`
//! font and nothing refers to anything outside the file.
//!
//! ```
//! use lingo_viz::{attention_svg, lines_svg, HeatmapOptions, LineOptions, Series};
//! use ndarray::array;
//!
//! let weights = array![[0.125_f32, 0.875], [0.75, 0.25]];
//! let svg = attention_svg(weights.view(), &["a", "cat"], &["gato", "un"], &HeatmapOptions::default())?;
//! assert!(svg.contains("<title>gato → cat: 0.875</title>"));
//! let curve = lines_svg(&[Series::new("train", &[2.9, 1.8])], &LineOptions::default())?;
//! assert_eq!(curve.matches("<polyline").count(), 1);
//! # Ok::<(), lingo_viz::Error>(())
//! ```
//!
//! ## HTML reports
//!
//! [`Report`] gathers headings, paragraphs, code, SVG figures and tables
//! into one HTML file with an inline style sheet and nothing else: no
//! script, no link, no reference outside the file, so a report opens the
//! same anywhere, offline, and can be attached or mailed as it is.
//!
//! ```
//! use lingo_viz::{attention_svg, HeatmapOptions, Report};
//! use ndarray::array;
//!
//! let weights = array![[0.1_f32, 0.9], [0.8, 0.2]];
//! let heatmap = attention_svg(weights.view(), &["a", "cat"], &["gato", "un"], &HeatmapOptions::default())?;
//! let report = Report::new("lexicon-reverse")
//!     .paragraph("Dot attention after 16 epochs.")
//!     .figure(heatmap, "Each row sums to 1.")
//!     .table(&["metric", "value"], [["alignment", "95.4%"]]);
//! let html = report.to_html();
//! assert!(html.contains("<figcaption>Each row sums to 1.</figcaption>"));
//! assert!(!html.contains("http"));
//! # Ok::<(), lingo_viz::Error>(())
//! ```
//!
//! ## Drawing
//!
//! There is no plotting library underneath: a small rasterizer fills
//! rectangles and draws anti-aliased lines and dots, and text is set with
//! `ab_glyph` from DejaVu Sans, which is compiled into the crate
//! (`assets/DejaVuSans.ttf`; Bitstream Vera license, DejaVu changes in the
//! public domain, full text in `assets/LICENSE-DejaVu.txt`). PNG pictures
//! are therefore identical on every machine, and accented tokens such as
//! `España` or `niño` are drawn correctly. SVG pictures leave the glyphs to
//! the viewer but are laid out with DejaVu Sans's widths, which are wider
//! than most sans-serif fonts', so labels fit. Pictures of the gallery
//! (`docs/gallery.md`) come from `cargo run --release -p lingo-viz --example
//! gallery`.
#![warn(missing_docs)]

/// Builder-style setters for an options struct: `options.field(value)`
/// returns the options with `field` replaced. Fields listed under `optional`
/// are `Option<String>` and take anything that converts into a `String`.
/// Each setter gets a doc comment and a doctest with the example value.
macro_rules! setters {
    ($options:ident {
        $($field:ident : $ty:ty = $example:expr),* $(,)?
    } optional {
        $($text:ident = $text_example:literal),* $(,)?
    }) => {
        impl $options {
            $(
                #[doc = concat!("Sets [`", stringify!($options), "::", stringify!($field), "`].")]
                #[doc = ""]
                #[doc = "```"]
                #[doc = concat!("let options = lingo_viz::", stringify!($options), "::default().",
                    stringify!($field), "(", stringify!($example), ");")]
                #[doc = concat!("assert_eq!(options.", stringify!($field), ", ", stringify!($example), ");")]
                #[doc = "```"]
                pub fn $field(mut self, $field: $ty) -> Self {
                    self.$field = $field;
                    self
                }
            )*
            $(
                #[doc = concat!("Sets [`", stringify!($options), "::", stringify!($text), "`].")]
                #[doc = ""]
                #[doc = "```"]
                #[doc = concat!("let options = lingo_viz::", stringify!($options), "::default().",
                    stringify!($text), "(", stringify!($text_example), ");")]
                #[doc = concat!("assert_eq!(options.", stringify!($text), ".as_deref(), Some(",
                    stringify!($text_example), "));")]
                #[doc = "```"]
                pub fn $text(mut self, $text: impl Into<String>) -> Self {
                    self.$text = Some($text.into());
                    self
                }
            )*
        }
    };
}

/// Appends formatted text to a `String`, like `write!`; writing to a
/// `String` cannot fail, so there is no `fmt::Result` to handle.
macro_rules! put {
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = write!($out, $($arg)*);
    }};
}

mod error;

mod canvas;
mod check;
mod colormap;
mod font;
mod heatmap;
mod lines;
mod report;
mod svg;
mod text;
mod tree;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

pub use colormap::viridis;
pub use error::Error;
pub use heatmap::{HeatmapOptions, plot_attention, plot_attention_grid, render_attention, render_attention_grid};
pub use lines::{LineOptions, PALETTE, Series, plot_lines, render_lines};
pub use report::Report;
pub use svg::{attention_grid_svg, attention_svg, lines_svg, save_svg};
pub use text::{CellStyle, SHADES, TextOptions, format_attention, format_table, shade};
pub use tree::{NodeFate, SearchTree, TreeNode, render_search_tree, search_tree_svg};

/// The examples of `docs/reports.md`, compiled and run as doctests so the
/// guide cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/reports.md")]
pub struct ReportsGuide;

/// Encodes `image` as PNG into `path`; every writer in the crate goes
/// through here so that failures always name the file.
fn save_png(image: &image::RgbImage, path: &Path) -> Result<(), Error> {
    image
        .save_with_format(path, image::ImageFormat::Png)
        .map_err(|source| Error::Write { path: path.to_path_buf(), source })
}

/// Writes `contents` to `path` through a temporary file in the same folder
/// and a rename, so that a reader never sees half a file and a failed write
/// leaves the old file in place. Errors name `path`.
fn write_atomically(path: &Path, contents: &[u8]) -> Result<(), Error> {
    // Unique per process and call, so concurrent writers never share a temporary file.
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let error = |source| Error::WriteFile { path: path.to_path_buf(), source };
    let Some(name) = path.file_name() else {
        return Err(error(std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file")));
    };
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".{}-{}.tmp", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)));
    let temp = path.with_file_name(temp_name);
    let written = std::fs::write(&temp, contents).and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        // Best effort: the temporary file may not even exist.
        let _ = std::fs::remove_file(&temp);
    }
    written.map_err(error)
}
