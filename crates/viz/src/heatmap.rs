//! The PNG heatmap: viridis cells, token labels, a colour bar and a title.

use std::path::Path;

use image::{Rgb, RgbImage};
use ndarray::{ArrayView2, ArrayView4, s};

use crate::canvas::Canvas;
use crate::check::check_attention;
use crate::colormap::viridis;
use crate::font::{Direction, centered_baseline, draw_text, fit_size};
use crate::{Error, save_png};

/// Background of every picture.
pub(crate) const WHITE: Rgb<u8> = Rgb([255, 255, 255]);
/// Colour of labels and titles: near-black reads softer than pure black.
pub(crate) const INK: Rgb<u8> = Rgb([34, 34, 34]);
/// Largest picture the renderers will allocate, in pixels (about 200 MB of
/// RGB), so a runaway token list fails with an error instead of exhausting
/// memory.
pub(crate) const MAX_PIXELS: u64 = 64_000_000;

/// Options for [`plot_attention`], [`render_attention`], their grids and
/// [`attention_svg`](crate::attention_svg). Build with `Default` and the
/// setters.
///
/// ```
/// use lingo_viz::HeatmapOptions;
/// let options = HeatmapOptions::default().title("Luong dot attention").show_values(true);
/// assert_eq!(options.cell_size, 32);
/// assert_eq!(options.font_size, 14);
/// assert_eq!(options.title.as_deref(), Some("Luong dot attention"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HeatmapOptions {
    /// Side of one square cell in pixels, 4..=512 (default 32).
    pub cell_size: u32,
    /// Font size in pixels per em for labels, 6..=128 (default 14).
    pub font_size: u32,
    /// A title above the picture (default none).
    pub title: Option<String>,
    /// Print each weight with two decimals inside its cell (default off).
    pub show_values: bool,
    /// Draw the colour bar on the right (default on).
    pub colorbar: bool,
}

impl Default for HeatmapOptions {
    fn default() -> Self {
        HeatmapOptions { cell_size: 32, font_size: 14, title: None, show_values: false, colorbar: true }
    }
}

setters!(HeatmapOptions {
    cell_size: u32 = 20,
    font_size: u32 = 12,
    show_values: bool = true,
    colorbar: bool = false,
} optional {
    title = "sorting",
});

/// Where everything goes, in pixels; see [`render_attention`] for the
/// formulas. The SVG heatmap uses the same layout, so both pictures match.
pub(crate) struct Layout {
    /// `f`, the label font size.
    pub font: i64,
    /// `c`, the cell side.
    pub cell: i64,
    /// Top-left corner of the grid of cells.
    pub grid: (i64, i64),
    /// Width and height of the grid: `(src_len · c, tgt_len · c)`.
    pub grid_size: (i64, i64),
    /// Width of the row-label band (without the gap to the grid).
    pub row_label_width: i64,
    /// Height of the column-label band (without the gap to the grid).
    pub col_label_height: i64,
    /// Whole picture.
    pub size: (u32, u32),
}

/// Pixels set aside per character of the longest token: `ceil(0.65 f)`,
/// a little more than DejaVu Sans's average letter width.
fn char_width(font: i64) -> i64 {
    (13 * font + 19) / 20
}

fn layout(
    src_chars: usize,
    tgt_chars: usize,
    (tgt_len, src_len): (usize, usize),
    options: &HeatmapOptions,
) -> Result<Layout, Error> {
    let check_range = |option, value: u32, lo, hi| {
        if (lo..=hi).contains(&value) {
            Ok(i64::from(value))
        } else {
            Err(Error::InvalidOption { option, problem: format!("{value} is outside {lo}..={hi}") })
        }
    };
    let cell = check_range("cell_size", options.cell_size, 4, 512)?;
    let font = check_range("font_size", options.font_size, 6, 128)?;
    let cw = char_width(font);
    let gap = font / 2;
    let as_px = |n: usize| i64::try_from(n).unwrap_or(i64::MAX / 4);

    let row_label_width = cw * as_px(tgt_chars);
    let col_label_height = cw * as_px(src_chars);
    let title_band = if options.title.is_some() { 2 * font } else { 0 };
    let bar_band = if options.colorbar { 2 * font + gap + 3 * cw } else { 0 };
    let grid = (font + row_label_width + gap, font + title_band + col_label_height + gap);
    let grid_size = (as_px(src_len).saturating_mul(cell), as_px(tgt_len).saturating_mul(cell));
    let width = grid.0 + grid_size.0 + bar_band + font;
    let height = grid.1 + grid_size.1 + font;
    if (width as u64).saturating_mul(height as u64) > MAX_PIXELS {
        return Err(Error::TooLarge { width: width as u64, height: height as u64, max_pixels: MAX_PIXELS });
    }
    Ok(Layout { font, cell, grid, grid_size, row_label_width, col_label_height, size: (width as u32, height as u32) })
}

/// Checks the input (see [`check_attention`]) and lays out its heatmap.
pub(crate) fn checked_layout<S: AsRef<str>, T: AsRef<str>>(
    weights: ArrayView2<f32>,
    src_tokens: &[S],
    tgt_tokens: &[T],
    options: &HeatmapOptions,
) -> Result<Layout, Error> {
    check_attention(weights, src_tokens, tgt_tokens)?;
    let longest = |tokens: &mut dyn Iterator<Item = &str>| tokens.map(|t| t.chars().count()).max().unwrap_or(0);
    let src_chars = longest(&mut src_tokens.iter().map(AsRef::as_ref));
    let tgt_chars = longest(&mut tgt_tokens.iter().map(AsRef::as_ref));
    layout(src_chars, tgt_chars, weights.dim(), options)
}

/// The whole size of a grid of `rows × columns` panels of `panel` pixels
/// with `gap` between them; [`Error::TooLarge`] past 64 megapixels.
pub(crate) fn grid_size(panel: (u32, u32), rows: usize, columns: usize, gap: u32) -> Result<(u64, u64), Error> {
    let span = |n: usize, side: u32| ((u64::from(side) + u64::from(gap)) * n as u64).saturating_sub(u64::from(gap));
    let (width, height) = (span(columns, panel.0), span(rows, panel.1));
    if width.saturating_mul(height) > MAX_PIXELS {
        return Err(Error::TooLarge { width, height, max_pixels: MAX_PIXELS });
    }
    Ok((width, height))
}

/// The weights at which the colour bar of a grid `height` pixels tall gets
/// a labelled tick: as many evenly spaced ones as fit with a line of space
/// (1.2 `font`) for each label.
pub(crate) fn colorbar_ticks(height: i64, font: i64) -> impl Iterator<Item = f32> {
    let line = 1.2 * font as f32;
    let steps = [5, 2, 1].into_iter().find(|&n| height as f32 >= (n + 1) as f32 * line).unwrap_or(1);
    (0..=steps).map(move |k| k as f32 / steps as f32)
}

/// Renders attention `weights` `(tgt_len, src_len)` as a heatmap picture in
/// memory; [`plot_attention`] writes the same picture to a PNG file.
///
/// Each weight is one square cell coloured with [`viridis`] on the fixed 0..1
/// scale (clamped). Source tokens label the columns along the top, written
/// bottom to top; target tokens label the rows on the left, right-aligned.
/// Row `n` is the decoder state that predicts target token `n + 1` (see
/// [`format_attention`](crate::format_attention)).
///
/// # Size
/// With `c` = `cell_size`, `f` = `font_size`, `w = ceil(0.65 f)` pixels per
/// character, `ls`/`lt` the character counts of the longest source/target
/// token and all divisions rounding down:
///
/// ```text
/// width  = f + w·lt + f/2 + src_len·c + [colorbar: 2f + f/2 + 3w] + f
/// height = f + [title: 2f] + w·ls + f/2 + tgt_len·c + f
/// ```
///
/// The grid's top-left corner is at `x = f + w·lt + f/2`,
/// `y = f + [title: 2f] + w·ls + f/2`, so cell `(i, j)` covers
/// `x .. x + c` with `x = grid_x + j·c` and likewise for `y` with `i`. With
/// the defaults (`c = 32`, `f = 14`, `w = 10`):
/// `width = 100 + 10·lt + 32·src_len` and
/// `height = 35 + 10·ls + 32·tgt_len`, plus 28 with a title.
///
/// A label that would not fit its band (tokens of wide letters such as
/// `mmmm`) is drawn at a smaller size rather than clipped.
///
/// # Errors
/// As [`format_attention`](crate::format_attention), plus
/// [`Error::InvalidOption`] for sizes outside the documented ranges and
/// [`Error::TooLarge`] past 64 megapixels.
///
/// # Example
/// ```
/// use lingo_viz::{render_attention, viridis, HeatmapOptions};
/// use ndarray::array;
///
/// let weights = array![[0.0_f32, 1.0], [0.5, 0.5]];
/// let image = render_attention(weights.view(), &["a", "cat"], &["gato", "un"],
///     &HeatmapOptions::default())?;
/// // lt = 4 ("gato"), ls = 3 ("cat"): 100 + 40 + 64 and 35 + 30 + 64.
/// assert_eq!(image.dimensions(), (204, 129));
/// // The grid starts at (14 + 40 + 7, 14 + 30 + 7) = (61, 51); cell (0, 1)
/// // holds weight 1.0, so its centre is viridis' yellow.
/// assert_eq!(*image.get_pixel(61 + 32 + 16, 51 + 16), viridis(1.0));
/// # Ok::<(), lingo_viz::Error>(())
/// ```
pub fn render_attention<S: AsRef<str>, T: AsRef<str>>(
    weights: ArrayView2<f32>,
    src_tokens: &[S],
    tgt_tokens: &[T],
    options: &HeatmapOptions,
) -> Result<RgbImage, Error> {
    let layout = checked_layout(weights, src_tokens, tgt_tokens, options)?;
    let mut canvas = Canvas::new(layout.size.0, layout.size.1, WHITE);

    draw_cells(&mut canvas, &layout, weights, options.show_values);
    draw_labels(&mut canvas, &layout, src_tokens, tgt_tokens);
    if options.colorbar {
        draw_colorbar(&mut canvas, &layout);
    }
    if let Some(title) = &options.title {
        let size = fit_size(title, 1.2 * layout.font as f32, (i64::from(layout.size.0) - 2 * layout.font) as f32);
        let width = crate::font::text_width(title, size);
        let x = ((layout.size.0 as f32 - width) / 2.0).round() as i64;
        let baseline = centered_baseline(2.0 * layout.font as f32, size);
        draw_text(&mut canvas, title, (x, baseline), size, INK, Direction::Horizontal);
    }
    Ok(canvas.into_image())
}

/// Writes the heatmap of [`render_attention`] to the PNG file `path`.
///
/// # Errors
/// Everything [`render_attention`] reports, and [`Error::Write`] (naming
/// `path`) if the file cannot be created or written.
///
/// # Example
/// ```
/// use lingo_viz::{plot_attention, HeatmapOptions};
/// use ndarray::array;
///
/// let path = std::env::temp_dir().join("lingo-viz-doc-plot-attention.png");
/// let weights = array![[0.9_f32, 0.1], [0.2, 0.8]];
/// plot_attention(weights.view(), &["a", "b"], &["x", "y"], &path,
///     &HeatmapOptions::default().title("toy"))?;
/// assert!(path.exists());
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), lingo_viz::Error>(())
/// ```
pub fn plot_attention<S: AsRef<str>, T: AsRef<str>>(
    weights: ArrayView2<f32>,
    src_tokens: &[S],
    tgt_tokens: &[T],
    path: impl AsRef<Path>,
    options: &HeatmapOptions,
) -> Result<(), Error> {
    let image = render_attention(weights, src_tokens, tgt_tokens, options)?;
    save_png(&image, path.as_ref())
}

/// Heatmaps of several attentions over the same sentence pair, tiled:
/// `weights (rows, columns, tgt_len, src_len)`, one [`render_attention`]
/// panel per `(row, column)` titled `title(row, column)`, with a
/// font-size gap between panels. A Transformer's heads: one row per
/// layer, one column per head.
///
/// # Errors
/// As [`render_attention`] for each panel, and [`Error::TooLarge`] when the
/// whole grid passes 64 megapixels.
///
/// # Example
/// ```
/// use lingo_viz::{render_attention_grid, HeatmapOptions};
/// let weights = ndarray::Array4::from_elem((2, 3, 2, 2), 0.5_f32);   // 2 layers, 3 heads
/// let options = HeatmapOptions::default();
/// let grid = render_attention_grid(weights.view(), &["a", "b"], &["x", "y"], |l, h| format!("layer {} head {}", l + 1, h + 1), &options)?;
/// let one = lingo_viz::render_attention(weights.slice(ndarray::s![0, 0, .., ..]), &["a", "b"], &["x", "y"], &options.title("layer 1 head 1"))?;
/// assert_eq!(grid.dimensions(), (3 * one.width() + 2 * 14, 2 * one.height() + 14));
/// # Ok::<(), lingo_viz::Error>(())
/// ```
pub fn render_attention_grid<S: AsRef<str>, T: AsRef<str>>(
    weights: ArrayView4<f32>,
    src_tokens: &[S],
    tgt_tokens: &[T],
    title: impl Fn(usize, usize) -> String,
    options: &HeatmapOptions,
) -> Result<RgbImage, Error> {
    let (rows, columns, ..) = weights.dim();
    let panel = |r: usize, c: usize| {
        render_attention(weights.slice(s![r, c, .., ..]), src_tokens, tgt_tokens, &options.clone().title(title(r, c)))
    };
    if rows == 0 || columns == 0 {
        return Ok(RgbImage::from_pixel(0, 0, WHITE));
    }
    // Every panel shows the same tokens and shape, so the first gives the size of all.
    let first = panel(0, 0)?;
    let (w, h) = first.dimensions();
    let gap = options.font_size;
    let (width, height) = grid_size((w, h), rows, columns, gap)?;
    let mut grid = RgbImage::from_pixel(width as u32, height as u32, WHITE);
    for r in 0..rows {
        for c in 0..columns {
            let image = if (r, c) == (0, 0) { first.clone() } else { panel(r, c)? };
            let (x, y) = (c as u32 * (w + gap), r as u32 * (h + gap));
            image::imageops::replace(&mut grid, &image, i64::from(x), i64::from(y));
        }
    }
    Ok(grid)
}

/// Writes the grid of [`render_attention_grid`] to the PNG file `path`.
///
/// # Errors
/// Everything [`render_attention_grid`] reports, and [`Error::Write`]
/// (naming `path`) if the file cannot be written.
///
/// # Example
/// ```
/// use lingo_viz::{plot_attention_grid, HeatmapOptions};
/// let path = std::env::temp_dir().join("lingo-viz-doc-grid.png");
/// let weights = ndarray::Array4::from_elem((1, 2, 1, 3), 1.0_f32 / 3.0);
/// plot_attention_grid(weights.view(), &["a", "b", "c"], &["x"], |_, h| format!("head {}", h + 1), &path, &HeatmapOptions::default())?;
/// assert!(path.exists());
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), lingo_viz::Error>(())
/// ```
pub fn plot_attention_grid<S: AsRef<str>, T: AsRef<str>>(
    weights: ArrayView4<f32>,
    src_tokens: &[S],
    tgt_tokens: &[T],
    title: impl Fn(usize, usize) -> String,
    path: impl AsRef<Path>,
    options: &HeatmapOptions,
) -> Result<(), Error> {
    let image = render_attention_grid(weights, src_tokens, tgt_tokens, title, options)?;
    save_png(&image, path.as_ref())
}

/// Relative luminance (Rec. 709 weights on the sRGB values), to pick black or
/// white text over a cell: viridis is dark below about 0.6 and light above.
pub(crate) fn is_light(color: Rgb<u8>) -> bool {
    let [r, g, b] = color.0.map(f32::from);
    0.2126 * r + 0.7152 * g + 0.0722 * b > 140.0
}

fn draw_cells(canvas: &mut Canvas, layout: &Layout, weights: ArrayView2<f32>, show_values: bool) {
    let c = layout.cell;
    // Values are set a little smaller than labels, and shrunk to fit the cell.
    let value_size = 0.85 * layout.font as f32;
    for ((i, j), &w) in weights.indexed_iter() {
        let (x, y) = (layout.grid.0 + j as i64 * c, layout.grid.1 + i as i64 * c);
        let color = viridis(w);
        canvas.fill_rect((x, y), (c, c), color);
        if show_values {
            let text = format!("{w:.2}");
            let size = fit_size(&text, value_size, (c - 4) as f32);
            let width = crate::font::text_width(&text, size);
            let ink = if is_light(color) { INK } else { WHITE };
            let tx = (x as f32 + (c as f32 - width) / 2.0).round() as i64;
            let baseline = centered_baseline(y as f32 + c as f32 / 2.0, size);
            draw_text(canvas, &text, (tx, baseline), size, ink, Direction::Horizontal);
        }
    }
}

fn draw_labels<S: AsRef<str>, T: AsRef<str>>(canvas: &mut Canvas, layout: &Layout, src: &[S], tgt: &[T]) {
    let c = layout.cell as f32;
    let gap = layout.font / 2;
    // The label's line height (about 1.16 em) must fit inside one cell.
    let size = (layout.font as f32).min(0.8 * c);
    for (i, token) in tgt.iter().enumerate() {
        let token = token.as_ref();
        let size = fit_size(token, size, layout.row_label_width as f32);
        let width = crate::font::text_width(token, size);
        let x = (layout.grid.0 - gap) as f32 - width;
        let baseline = centered_baseline(layout.grid.1 as f32 + (i as f32 + 0.5) * c, size);
        draw_text(canvas, token, (x.round() as i64, baseline), size, INK, Direction::Horizontal);
    }
    for (j, token) in src.iter().enumerate() {
        let token = token.as_ref();
        let size = fit_size(token, size, layout.col_label_height as f32);
        // Rotated text: its "vertical" centring becomes horizontal.
        let x = centered_baseline(layout.grid.0 as f32 + (j as f32 + 0.5) * c, size);
        draw_text(canvas, token, (x, layout.grid.1 - gap), size, INK, Direction::Up);
    }
}

fn draw_colorbar(canvas: &mut Canvas, layout: &Layout) {
    let f = layout.font;
    let height = layout.grid_size.1;
    let left = layout.grid.0 + layout.grid_size.0 + f;
    let top = layout.grid.1;
    // Top row is weight 1, bottom row weight 0; each pixel row shows the
    // weight at its centre.
    for row in 0..height {
        let w = 1.0 - (row as f32 + 0.5) / height as f32;
        canvas.fill_rect((left, top + row), (f, 1), viridis(w));
    }
    for w in colorbar_ticks(height, f) {
        let y = top as f32 + (1.0 - w) * height as f32;
        let tick_y = (y.round() as i64).min(top + height - 1);
        canvas.fill_rect((left + f, tick_y), (f / 4, 1), INK);
        let baseline = centered_baseline(y, f as f32);
        draw_text(canvas, &format!("{w:.1}"), (left + f + f / 2, baseline), f as f32, INK, Direction::Horizontal);
    }
}
