//! Attention heatmaps and line charts as SVG text: the layouts of the PNG
//! pictures, drawn as vector shapes, with a hover label on every cell and
//! every point.
//!
//! The files stand alone: text uses the generic `sans-serif` font family,
//! and nothing refers to anything outside the file (no `href`, no `url()`,
//! no `<style>`, which would leak into an HTML page the SVG is inlined in).

use std::fmt::{self, Display, Write as _};
use std::path::Path;

use image::Rgb;
use ndarray::{ArrayView2, ArrayView4, s};

use crate::colormap::viridis;
use crate::font::{fit_size, text_width};
use crate::heatmap::{HeatmapOptions, INK, Layout, WHITE, checked_layout, colorbar_ticks, grid_size, is_light};
use crate::lines::{self, AXIS, GRID, Legend, LineOptions, Series};
use crate::{Error, write_atomically};

/// The namespace declaration on every root `<svg>`: a file needs it, an
/// HTML page does not (the report removes it to stay free of URLs).
pub(crate) const SVG_NAMESPACE: &str = r#" xmlns="http://www.w3.org/2000/svg""#;

/// Text made safe for XML and HTML, both as element content and inside a
/// quoted attribute: `& < > " '` become references, and the control
/// characters XML 1.0 forbids become U+FFFD so the document still parses.
pub(crate) struct Escaped<'a>(pub &'a str);

impl Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '&' => f.write_str("&amp;")?,
                '<' => f.write_str("&lt;")?,
                '>' => f.write_str("&gt;")?,
                '"' => f.write_str("&quot;")?,
                '\'' => f.write_str("&#39;")?,
                '\t' | '\n' | '\r' => f.write_char(c)?,
                c if c < ' ' || c == '\u{fffe}' || c == '\u{ffff}' => f.write_char('\u{fffd}')?,
                c => f.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// A colour as `#rrggbb`.
pub(crate) struct Hex(pub(crate) Rgb<u8>);

impl Display for Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [r, g, b] = self.0.0;
        write!(f, "#{r:02x}{g:02x}{b:02x}")
    }
}

/// A coordinate or size rounded to a tenth of a pixel and written without
/// a trailing `.0`, which keeps files small without visible loss.
pub(crate) struct Num(pub(crate) f64);

impl Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Adding 0.0 turns -0.0 into 0.0.
        write!(f, "{}", (self.0 * 10.0).round() / 10.0 + 0.0)
    }
}

/// ` stroke-dasharray="…"` for a dashed line `.1` pixels wide (the PNG's
/// pattern, [`lines::dash_pattern`]), or nothing for a solid one.
struct Dashes(bool, f32);

impl Display for Dashes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0 {
            return Ok(());
        }
        let (on, off) = lines::dash_pattern(self.1);
        write!(f, r#" stroke-dasharray="{} {}""#, Num(on.into()), Num(off.into()))
    }
}

/// ` font-size="…"` for a text set at `size` inside a group that sets
/// `group`, or nothing when they agree: most labels keep the group's size.
struct SizeAttr(f32, f32);

impl Display for SizeAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if (self.0 - self.1).abs() < 0.05 { Ok(()) } else { write!(f, r#" font-size="{}""#, Num(self.0.into())) }
    }
}

/// The root element's start tag and a white background: `width × height`
/// pixels with a matching `viewBox`, so the picture scales when a page
/// shrinks it, and ink-coloured `font_size` text by default.
pub(crate) fn open(out: &mut String, (width, height): (u64, u64), font_size: f64) {
    put!(
        out,
        r#"<svg{SVG_NAMESPACE} width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="{}" fill="{}">"#,
        Num(font_size),
        Hex(INK)
    );
    put!(out, r#"<rect width="{width}" height="{height}" fill="{}"/>"#, Hex(WHITE));
}

/// Attention `weights` `(tgt_len, src_len)` as an SVG heatmap: the picture
/// of [`render_attention`](crate::render_attention), same size and layout,
/// with each cell a `<rect>` whose `<title>` (shown on hover) reads
/// `"target → source: 0.873"` with the weight as given, to three decimals.
///
/// Source tokens run along the top, rotated to read bottom to top; target
/// tokens label the rows. [`HeatmapOptions`] adds a title, two-decimal
/// numbers inside the cells and the colour bar, as for the PNG. Tokens are
/// escaped, so `<unk>` or `&` show as written.
///
/// # Errors
/// As [`render_attention`](crate::render_attention): token counts that do
/// not match the shape, empty or non-finite weights, options out of range,
/// and [`Error::TooLarge`].
///
/// # Example
/// ```
/// use lingo_viz::{attention_svg, HeatmapOptions};
/// use ndarray::array;
///
/// let weights = array![[0.25_f32, 0.75], [1.0, 0.0]];
/// let svg = attention_svg(weights.view(), &["a", "<unk>"], &["gato", "un"], &HeatmapOptions::default())?;
/// assert!(svg.starts_with("<svg"));
/// assert_eq!(svg.matches("<title>").count(), 4);
/// assert!(svg.contains("<title>gato → a: 0.250</title>"));
/// assert!(svg.contains("&lt;unk&gt;"));
/// # Ok::<(), lingo_viz::Error>(())
/// ```
pub fn attention_svg<S: AsRef<str>, T: AsRef<str>>(
    weights: ArrayView2<f32>,
    src_tokens: &[S],
    tgt_tokens: &[T],
    options: &HeatmapOptions,
) -> Result<String, Error> {
    let layout = checked_layout(weights, src_tokens, tgt_tokens, options)?;
    let mut out = String::new();
    open(&mut out, (layout.size.0.into(), layout.size.1.into()), layout.font as f64);
    heatmap(&mut out, &layout, weights, src_tokens, tgt_tokens, options);
    out.push_str("</svg>");
    Ok(out)
}

/// Heatmaps of several attentions over the same sentence pair, tiled as
/// [`render_attention_grid`](crate::render_attention_grid) tiles its PNG
/// panels: `weights (rows, columns, tgt_len, src_len)`, one
/// [`attention_svg`] panel per `(row, column)` titled `title(row, column)`,
/// a font-size gap between panels. A Transformer's heads: one row per
/// layer, one column per head. No rows or no columns give an empty picture.
///
/// # Errors
/// As [`attention_svg`] for each panel, and [`Error::TooLarge`] when the
/// whole grid passes 64 megapixels.
///
/// # Example
/// ```
/// use lingo_viz::{attention_grid_svg, HeatmapOptions};
///
/// let weights = ndarray::Array4::from_elem((2, 3, 2, 2), 0.5_f32); // 2 layers, 3 heads
/// let svg = attention_grid_svg(weights.view(), &["a", "b"], &["x", "y"],
///     |l, h| format!("layer {} head {}", l + 1, h + 1), &HeatmapOptions::default())?;
/// assert_eq!(svg.matches("<title>x → a: 0.500</title>").count(), 6);
/// assert!(svg.contains(">layer 2 head 3</text>"));
/// # Ok::<(), lingo_viz::Error>(())
/// ```
pub fn attention_grid_svg<S: AsRef<str>, T: AsRef<str>>(
    weights: ArrayView4<f32>,
    src_tokens: &[S],
    tgt_tokens: &[T],
    title: impl Fn(usize, usize) -> String,
    options: &HeatmapOptions,
) -> Result<String, Error> {
    let (rows, columns, ..) = weights.dim();
    let mut out = String::new();
    if rows == 0 || columns == 0 {
        open(&mut out, (0, 0), options.font_size.into());
        out.push_str("</svg>");
        return Ok(out);
    }
    let panel = |r: usize, c: usize| weights.slice(s![r, c, .., ..]);
    let titled = |r: usize, c: usize| options.clone().title(title(r, c));
    // Every panel shows the same tokens and shape with a title, so the
    // first gives the size of all; the whole size is checked before drawing.
    let (w, h) = checked_layout(panel(0, 0), src_tokens, tgt_tokens, &titled(0, 0))?.size;
    let gap = options.font_size;
    open(&mut out, grid_size((w, h), rows, columns, gap)?, gap.into());
    for r in 0..rows {
        for c in 0..columns {
            let options = titled(r, c);
            let layout = checked_layout(panel(r, c), src_tokens, tgt_tokens, &options)?;
            put!(
                out,
                r#"<g transform="translate({} {})">"#,
                c as u64 * u64::from(w + gap),
                r as u64 * u64::from(h + gap)
            );
            heatmap(&mut out, &layout, panel(r, c), src_tokens, tgt_tokens, &options);
            out.push_str("</g>");
        }
    }
    out.push_str("</svg>");
    Ok(out)
}

/// The shapes of one heatmap laid out by `layout`, without the root
/// element: title, cells, values, labels and colour bar.
fn heatmap<S: AsRef<str>, T: AsRef<str>>(
    out: &mut String,
    layout: &Layout,
    weights: ArrayView2<f32>,
    src_tokens: &[S],
    tgt_tokens: &[T],
    options: &HeatmapOptions,
) {
    let Layout { font: f, cell: c, grid: (gx, gy), size: (width, _), .. } = *layout;
    if let Some(title) = &options.title {
        let size = fit_size(title, 1.2 * f as f32, (i64::from(width) - 2 * f) as f32);
        put!(
            out,
            r#"<text x="{}" y="{}" font-size="{}" text-anchor="middle" dominant-baseline="central">{}</text>"#,
            Num(f64::from(width) / 2.0),
            2 * f,
            Num(size.into()),
            Escaped(title)
        );
    }
    // Edges snap to whole pixels so that neighbouring cells leave no seams.
    out.push_str(r#"<g shape-rendering="crispEdges">"#);
    for ((i, j), &w) in weights.indexed_iter() {
        let (x, y) = (gx + j as i64 * c, gy + i as i64 * c);
        let (tgt, src) = (Escaped(tgt_tokens[i].as_ref()), Escaped(src_tokens[j].as_ref()));
        put!(
            out,
            r#"<rect x="{x}" y="{y}" width="{c}" height="{c}" fill="{}"><title>{tgt} → {src}: {w:.3}</title></rect>"#,
            Hex(viridis(w))
        );
    }
    out.push_str("</g>");
    if options.show_values {
        cell_values(out, layout, weights);
    }
    token_labels(out, layout, src_tokens, tgt_tokens);
    if options.colorbar {
        colorbar(out, layout);
    }
}

/// Each weight with two decimals, centred in its cell: ink on light cells,
/// white on dark ones. The numbers let the pointer through to the cell
/// below, so its hover label still shows.
fn cell_values(out: &mut String, layout: &Layout, weights: ArrayView2<f32>) {
    let Layout { font: f, cell: c, grid: (gx, gy), .. } = *layout;
    // Values are set a little smaller than labels, and shrunk to fit the cell.
    let value_size = 0.85 * f as f32;
    put!(
        out,
        r#"<g font-size="{}" text-anchor="middle" dominant-baseline="central" fill="{}" pointer-events="none">"#,
        Num(value_size.into()),
        Hex(WHITE)
    );
    for ((i, j), &w) in weights.indexed_iter() {
        let text = format!("{w:.2}");
        let size = SizeAttr(fit_size(&text, value_size, (c - 4) as f32), value_size);
        let ink = if is_light(viridis(w)) { format!(r#" fill="{}""#, Hex(INK)) } else { String::new() };
        let (x, y) =
            (Num((gx + j as i64 * c) as f64 + c as f64 / 2.0), Num((gy + i as i64 * c) as f64 + c as f64 / 2.0));
        put!(out, r#"<text x="{x}" y="{y}"{size}{ink}>{text}</text>"#);
    }
    out.push_str("</g>");
}

/// Target tokens right-aligned left of their rows, source tokens above
/// their columns reading bottom to top; tokens too long for their band are
/// set smaller, as in the PNG.
fn token_labels<S: AsRef<str>, T: AsRef<str>>(out: &mut String, layout: &Layout, src: &[S], tgt: &[T]) {
    let Layout { font: f, cell: c, grid: (gx, gy), .. } = *layout;
    let gap = f / 2;
    // The label's line height (about 1.16 em) must fit inside one cell.
    let size = (f as f32).min(0.8 * c as f32);
    put!(out, r#"<g font-size="{}" dominant-baseline="central"><g text-anchor="end">"#, Num(size.into()));
    for (i, token) in tgt.iter().enumerate() {
        let token = token.as_ref();
        let fitted = SizeAttr(fit_size(token, size, layout.row_label_width as f32), size);
        let y = Num(gy as f64 + (i as f64 + 0.5) * c as f64);
        put!(out, r#"<text x="{}" y="{y}"{fitted}>{}</text>"#, gx - gap, Escaped(token));
    }
    out.push_str("</g>");
    for (j, token) in src.iter().enumerate() {
        let token = token.as_ref();
        let fitted = SizeAttr(fit_size(token, size, layout.col_label_height as f32), size);
        let x = Num(gx as f64 + (j as f64 + 0.5) * c as f64);
        put!(out, r#"<text transform="translate({x} {}) rotate(-90)"{fitted}>{}</text>"#, gy - gap, Escaped(token));
    }
    out.push_str("</g>");
}

/// The colour bar right of the grid: 1 at the top, 0 at the bottom, in at
/// most 32 bands (finer steps are invisible at these sizes) whose colours
/// run evenly from the scale's top to its bottom colour, with ticks.
fn colorbar(out: &mut String, layout: &Layout) {
    let Layout { font: f, grid: (gx, top), grid_size: (gw, height), .. } = *layout;
    let left = gx + gw + f;
    let bands = height.min(32);
    out.push_str(r#"<g shape-rendering="crispEdges">"#);
    for k in 0..bands {
        let (y0, y1) = (top + k * height / bands, top + (k + 1) * height / bands);
        let w = 1.0 - k as f32 / (bands - 1) as f32;
        put!(out, r#"<rect x="{left}" y="{y0}" width="{f}" height="{}" fill="{}"/>"#, y1 - y0, Hex(viridis(w)));
    }
    out.push_str("</g>");
    let mut ticks = String::new();
    let mut labels = String::new();
    for w in colorbar_ticks(height, f) {
        let y = Num(top as f64 + f64::from(1.0 - w) * height as f64);
        put!(ticks, "M{} {y}h{}", left + f, f / 4);
        put!(labels, r#"<text x="{}" y="{y}">{w:.1}</text>"#, left + f + f / 2);
    }
    put!(out, r#"<path d="{ticks}" stroke="{}"/><g dominant-baseline="central">{labels}</g>"#, Hex(INK));
}

/// `series` as an SVG line chart: the chart of
/// [`render_lines`](crate::render_lines), same size, axes, ticks, grid,
/// colours ([`PALETTE`](crate::PALETTE) unless set) and legend, with each series one `<polyline>` and
/// each point a `<circle>` whose `<title>` (shown on hover) reads
/// `"train: 1.25 at epoch 3"`. Without `markers` the circles are
/// transparent but still show their value on hover.
///
/// # Errors
/// As [`render_lines`](crate::render_lines): [`Error::InvalidSeries`] for a
/// series with no points or a non-finite coordinate,
/// [`Error::InvalidOption`] for no series, sizes out of range or an empty
/// `y_range`.
///
/// # Example
/// ```
/// use lingo_viz::{lines_svg, LineOptions, Series};
///
/// let curves = [Series::new("train", &[2.5, 1.5, 1.25]), Series::new("val", &[2.75, 2.0, 1.75])];
/// let svg = lines_svg(&curves, &LineOptions::default().y_label("loss"))?;
/// assert_eq!(svg.matches("<polyline").count(), 2);
/// assert!(svg.contains("<title>train: 1.25 at epoch 3</title>"));
/// assert!(svg.contains(r##"stroke="#0072b2""##)); // PALETTE[0]
/// # Ok::<(), lingo_viz::Error>(())
/// ```
pub fn lines_svg(series: &[Series], options: &LineOptions) -> Result<String, Error> {
    let layout = lines::checked_layout(series, options)?;
    let mut out = String::new();
    open(&mut out, (options.width.into(), options.height.into()), layout.f);
    axes(&mut out, &layout);
    curves(&mut out, &layout, series, options);
    legend(&mut out, &layout, series);
    axis_titles(&mut out, &layout, options);
    out.push_str("</svg>");
    Ok(out)
}

/// Grid lines at the ticks, tick marks, tick labels and the axis frame on
/// the left and bottom of the plot area. Lines sit on pixel centres so that
/// one-pixel strokes stay sharp.
fn axes(out: &mut String, layout: &lines::Layout) {
    let (l, t, r, b) = layout.plot_box();
    let (f, tick) = (layout.f, layout.tick);
    let (mut grid, mut marks, mut y_labels, mut x_labels) =
        (String::new(), String::new(), String::new(), String::new());
    for v in layout.y_axis.ticks() {
        let y = layout.py(v).floor() as f64 + 0.5;
        put!(grid, "M{l} {y}H{r}");
        put!(marks, "M{} {y}h{tick}", Num(l as f64 - tick));
        let x = Num(layout.left - tick - 0.25 * f);
        put!(y_labels, r#"<text x="{x}" y="{}">{}</text>"#, Num(layout.py(v).into()), layout.y_axis.label(v));
    }
    for v in layout.x_axis.ticks() {
        let x = layout.px(v).floor() as f64 + 0.5;
        put!(grid, "M{x} {t}V{b}");
        put!(marks, "M{x} {b}v{tick}");
        let y = Num(layout.bottom + tick + 0.75 * f);
        put!(x_labels, r#"<text x="{}" y="{y}">{}</text>"#, Num(layout.px(v).into()), layout.x_axis.label(v));
    }
    put!(marks, "M{} {t}V{}H{r}", l as f64 - 0.5, b as f64 + 0.5);
    put!(out, r#"<path d="{grid}" stroke="{}"/><path d="{marks}" fill="none" stroke="{}"/>"#, Hex(GRID), Hex(AXIS));
    put!(
        out,
        r#"<g dominant-baseline="central"><g text-anchor="end">{y_labels}</g><g text-anchor="middle">{x_labels}</g></g>"#
    );
}

/// Each series in its palette colour: a polyline through its points and a
/// circle with a hover label at each one, clipped to the plot area plus
/// room for a marker (a nested `<svg>` clips without needing an id).
fn curves(out: &mut String, layout: &lines::Layout, series: &[Series], options: &LineOptions) {
    let (thickness, radius) = layout.pen();
    let pad = radius.ceil() as i64 + 1;
    let (l, t, r, b) = layout.plot_box();
    let (x, y, w, h) = (l - pad, t - pad, r - l + 2 * pad, b - t + 2 * pad);
    put!(out, r#"<svg x="{x}" y="{y}" width="{w}" height="{h}" viewBox="{x} {y} {w} {h}">"#);
    let x_name = options.x_label.as_deref().unwrap_or("x =");
    for (k, s) in series.iter().enumerate() {
        let color = Hex(s.paint(k));
        let points: Vec<(f32, f32)> =
            s.points.iter().map(|&(x, y)| (layout.px(x.into()), layout.py(y.into()))).collect();
        if points.len() > 1 {
            out.push_str(r#"<polyline points=""#);
            for (n, &(px, py)) in points.iter().enumerate() {
                let sep = if n == 0 { "" } else { " " };
                put!(out, "{sep}{},{}", Num(px.into()), Num(py.into()));
            }
            put!(
                out,
                r#"" fill="none" stroke="{color}" stroke-width="{}" stroke-linejoin="round" stroke-linecap="round"{}/>"#,
                Num(thickness.into()),
                Dashes(s.dashed, thickness)
            );
        }
        // A lone point is always drawn: without its dot it would not show.
        let hidden = if options.markers || points.len() == 1 { "" } else { r#" fill-opacity="0""# };
        put!(out, r#"<g fill="{color}"{hidden}>"#);
        for (&(px, py), &(x, y)) in points.iter().zip(&s.points) {
            put!(
                out,
                r#"<circle cx="{}" cy="{}" r="{}"><title>{}: {y} at {} {x}</title></circle>"#,
                Num(px.into()),
                Num(py.into()),
                Num(radius.into()),
                Escaped(&s.label),
                Escaped(x_name)
            );
        }
        out.push_str("</g>");
    }
    out.push_str("</svg>");
}

/// The framed legend in the top-right corner of the plot area: a line
/// sample with a dot and the label of each series.
fn legend(out: &mut String, layout: &lines::Layout, series: &[Series]) {
    let (thickness, radius) = layout.pen();
    let legend = layout.legend(series);
    let Legend { x0, y0, w, h, sample, label_x, font, .. } = legend;
    put!(
        out,
        r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}" stroke="{}"/>"#,
        Num(x0 + 0.5),
        Num(y0 + 0.5),
        Num(w - 1.0),
        Num(h - 1.0),
        Hex(WHITE),
        Hex(AXIS)
    );
    put!(out, r#"<g dominant-baseline="central"{}>"#, SizeAttr(font, layout.font));
    for (k, s) in series.iter().enumerate() {
        let color = Hex(s.paint(k));
        let y = Num(legend.row_y(k));
        put!(
            out,
            r#"<path d="M{} {y}H{}" stroke="{color}" stroke-width="{}"{}/><circle cx="{}" cy="{y}" r="{}" fill="{color}"/>"#,
            Num(sample.0),
            Num(sample.1),
            Num(thickness.into()),
            Dashes(s.dashed, thickness),
            Num((sample.0 + sample.1) / 2.0),
            Num(radius.into())
        );
        put!(out, r#"<text x="{}" y="{y}">{}</text>"#, Num(label_x), Escaped(&s.label));
    }
    out.push_str("</g>");
}

/// The x label under the axis, the y label reading bottom to top on the
/// left, and the title on top, each set smaller if it would not fit.
fn axis_titles(out: &mut String, layout: &lines::Layout, options: &LineOptions) {
    let lines::Layout { f, font, width, height, left, right, top, bottom, .. } = *layout;
    let centred = r#"text-anchor="middle" dominant-baseline="central""#;
    if let Some(x_label) = &options.x_label {
        let size = Num(fit_size(x_label, font, (right - left) as f32).into());
        let (x, y) = (Num((left + right) / 2.0), Num(height - 1.75 * f));
        put!(out, r#"<text x="{x}" y="{y}" font-size="{size}" {centred}>{}</text>"#, Escaped(x_label));
    }
    if let Some(y_label) = &options.y_label {
        let size = Num(fit_size(y_label, font, (bottom - top) as f32).into());
        let (x, y) = (Num(1.75 * f), Num((top + bottom) / 2.0));
        put!(
            out,
            r#"<text transform="translate({x} {y}) rotate(-90)" font-size="{size}" {centred}>{}</text>"#,
            Escaped(y_label)
        );
    }
    if let Some(title) = &options.title {
        let size = fit_size(title, 1.2 * font, (width - 2.0 * f) as f32);
        // Centred over the plot area, but never past the picture's margins.
        let half = f64::from(text_width(title, size)) / 2.0;
        let x = ((left + right) / 2.0).clamp(f + half, (width - f - half).max(f + half));
        put!(
            out,
            r#"<text x="{}" y="{}" font-size="{}" {centred}>{}</text>"#,
            Num(x),
            Num(2.0 * f),
            Num(size.into()),
            Escaped(title)
        );
    }
}

/// Writes `svg` (from [`attention_svg`], [`attention_grid_svg`] or
/// [`lines_svg`]) to the file `path`, through a temporary file in the same
/// folder and a rename: a reader never sees half a picture, and a failed
/// write leaves an older file in place.
///
/// # Errors
/// [`Error::WriteFile`], naming `path`, when the file cannot be written
/// (for instance because its folder does not exist).
///
/// # Example
/// ```
/// use lingo_viz::{attention_svg, save_svg, HeatmapOptions};
/// use ndarray::array;
///
/// let path = std::env::temp_dir().join("lingo-viz-doc-save-svg.svg");
/// let weights = array![[0.9_f32, 0.1]];
/// save_svg(&attention_svg(weights.view(), &["a", "b"], &["x"], &HeatmapOptions::default())?, &path)?;
/// assert!(std::fs::read_to_string(&path).unwrap().starts_with("<svg"));
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), lingo_viz::Error>(())
/// ```
pub fn save_svg(svg: &str, path: impl AsRef<Path>) -> Result<(), Error> {
    write_atomically(path.as_ref(), svg.as_bytes())
}
