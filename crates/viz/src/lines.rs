//! Line charts for training curves: loss, accuracy or attention entropy
//! over epochs, several series on one chart.

use std::path::Path;

use image::{Rgb, RgbImage};

use crate::canvas::{Canvas, Coverage};
use crate::font::{Direction, centered_baseline, draw_text, fit_size, text_width};
use crate::heatmap::{INK, MAX_PIXELS, WHITE};
use crate::{Error, save_png};

/// Series colours, used in order and then repeated: the Okabe–Ito palette
/// (blue, vermillion, bluish green, reddish purple, orange, sky blue,
/// black), chosen to stay distinguishable for the common forms of colour
/// blindness. Its yellow is left out because it vanishes on white.
pub const PALETTE: [Rgb<u8>; 7] = [
    Rgb([0x00, 0x72, 0xb2]),
    Rgb([0xd5, 0x5e, 0x00]),
    Rgb([0x00, 0x9e, 0x73]),
    Rgb([0xcc, 0x79, 0xa7]),
    Rgb([0xe6, 0x9f, 0x00]),
    Rgb([0x56, 0xb4, 0xe9]),
    Rgb([0x00, 0x00, 0x00]),
];

/// Light grey for grid lines, mid grey for the axes and the legend frame.
pub(crate) const GRID: Rgb<u8> = Rgb([230, 230, 230]);
pub(crate) const AXIS: Rgb<u8> = Rgb([90, 90, 90]);

/// One named curve of `(x, y)` points, drawn in the order given.
///
/// ```
/// use lingo_viz::Series;
/// let train = Series::new("train", &[3.0, 2.1, 1.4]);
/// assert_eq!(train.points, vec![(1.0, 3.0), (2.0, 2.1), (3.0, 1.4)]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The name shown in the legend.
    pub label: String,
    /// The points, `(x, y)`, joined in this order.
    pub points: Vec<(f32, f32)>,
    /// The line's colour; by default the series' place in [`PALETTE`].
    /// Set it to keep one colour per model across charts.
    pub color: Option<Rgb<u8>>,
    /// Drawn dashed, as validation curves are beside solid training ones.
    pub dashed: bool,
}

impl Series {
    /// A series of one value per epoch: `ys[k]` is drawn at `x = k + 1`,
    /// because epochs are counted from 1 in training logs.
    ///
    /// ```
    /// let s = lingo_viz::Series::new("val", &[0.9, 0.7]);
    /// assert_eq!(s.points[1], (2.0, 0.7));
    /// ```
    pub fn new(label: impl Into<String>, ys: &[f32]) -> Self {
        let points = ys.iter().enumerate().map(|(k, &y)| ((k + 1) as f32, y)).collect();
        Series::from_points(label, points)
    }

    /// A series with explicit `(x, y)` points, e.g. steps instead of epochs.
    ///
    /// ```
    /// let s = lingo_viz::Series::from_points("lr", vec![(0.0, 1e-3), (500.0, 5e-4)]);
    /// assert_eq!(s.points.len(), 2);
    /// ```
    pub fn from_points(label: impl Into<String>, points: Vec<(f32, f32)>) -> Self {
        Series { label: label.into(), points, color: None, dashed: false }
    }

    /// Sets [`Series::color`].
    ///
    /// ```
    /// use lingo_viz::{Series, PALETTE};
    /// let val = Series::new("dot validation", &[0.9]).color(PALETTE[1]);
    /// assert_eq!(val.color, Some(PALETTE[1]));
    /// ```
    pub fn color(mut self, color: Rgb<u8>) -> Self {
        self.color = Some(color);
        self
    }

    /// Sets [`Series::dashed`].
    ///
    /// ```
    /// assert!(lingo_viz::Series::new("validation", &[0.9]).dashed().dashed);
    /// ```
    pub fn dashed(mut self) -> Self {
        self.dashed = true;
        self
    }

    /// The colour drawn for this series, the `k`-th of its chart.
    pub(crate) fn paint(&self, k: usize) -> Rgb<u8> {
        self.color.unwrap_or(PALETTE[k % PALETTE.len()])
    }
}

/// A dashed line's pattern, dash then gap, in pixels for a line `thickness`
/// wide: long enough to read as a dash beside a round-capped solid line.
pub(crate) fn dash_pattern(thickness: f32) -> (f32, f32) {
    (4.0 * thickness, 3.0 * thickness)
}

/// The polyline through `points`, solid or dashed.
fn stroke(coverage: &mut Coverage, points: &[(f32, f32)], thickness: f32, dashed: bool) {
    if dashed {
        for (a, b) in dashes(points, dash_pattern(thickness)) {
            coverage.segment(a, b, thickness);
        }
    } else {
        for pair in points.windows(2) {
            coverage.segment(pair[0], pair[1], thickness);
        }
    }
}

/// The dashes of the polyline through `points`, as segments: the pattern
/// runs on along the line's length across its corners.
fn dashes(points: &[(f32, f32)], (on, off): (f32, f32)) -> Vec<((f32, f32), (f32, f32))> {
    let mut out = Vec::new();
    // Distance into the current dash-and-gap period.
    let mut phase = 0.0f32;
    for pair in points.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let length = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        let at =
            |d: f32| if length > 0.0 { (a.0 + (b.0 - a.0) * d / length, a.1 + (b.1 - a.1) * d / length) } else { a };
        let mut d = 0.0;
        while d < length {
            let end = if phase < on { (d + on - phase).min(length) } else { (d + on + off - phase).min(length) };
            if phase < on {
                out.push((at(d), at(end)));
            }
            phase = (phase + end - d) % (on + off);
            d = end;
        }
    }
    out
}

/// Options for [`plot_lines`], [`render_lines`] and
/// [`lines_svg`](crate::lines_svg). Build with `Default` and the setters.
///
/// ```
/// use lingo_viz::LineOptions;
/// let options = LineOptions::default().title("loss").y_label("cross-entropy");
/// assert_eq!((options.width, options.height), (800, 480));
/// assert_eq!(options.x_label.as_deref(), Some("epoch"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LineOptions {
    /// Picture width in pixels, 200..=8000 (default 800).
    pub width: u32,
    /// Picture height in pixels, 150..=8000 (default 480).
    pub height: u32,
    /// Font size in pixels per em, 6..=64 (default 14).
    pub font_size: u32,
    /// A title above the chart (default none).
    pub title: Option<String>,
    /// Label under the x axis (default `"epoch"`).
    pub x_label: Option<String>,
    /// Label beside the y axis, written bottom to top (default none).
    pub y_label: Option<String>,
    /// Fixed y range `(low, high)`; by default the data's range widened to
    /// whole tick steps. Parts of lines outside it are clipped.
    pub y_range: Option<(f32, f32)>,
    /// Draw a dot at every point (default on).
    pub markers: bool,
}

impl Default for LineOptions {
    fn default() -> Self {
        LineOptions {
            width: 800,
            height: 480,
            font_size: 14,
            title: None,
            x_label: Some("epoch".to_string()),
            y_label: None,
            y_range: None,
            markers: true,
        }
    }
}

impl LineOptions {
    /// Sets [`LineOptions::width`] and [`LineOptions::height`].
    ///
    /// ```
    /// let o = lingo_viz::LineOptions::default().size(640, 360);
    /// assert_eq!((o.width, o.height), (640, 360));
    /// ```
    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.width = width;
        self.height = height;
        self
    }

    /// Sets [`LineOptions::y_range`].
    ///
    /// ```
    /// assert_eq!(lingo_viz::LineOptions::default().y_range(0.0, 1.0).y_range, Some((0.0, 1.0)));
    /// ```
    pub fn y_range(mut self, low: f32, high: f32) -> Self {
        self.y_range = Some((low, high));
        self
    }
}

setters!(LineOptions {
    font_size: u32 = 16,
    markers: bool = false,
} optional {
    title = "loss",
    x_label = "step",
    y_label = "nats",
});

/// A tick step of 1, 2 or 5 times a power of ten that cuts `span` into about
/// `target` intervals (the usual "nice numbers" rule for axes).
fn nice_step(span: f64, target: f64) -> f64 {
    let raw = span / target.max(1.0);
    let magnitude = 10f64.powf(raw.log10().floor());
    let nice = match raw / magnitude {
        n if n <= 1.0 => 1.0,
        n if n <= 2.0 => 2.0,
        n if n <= 5.0 => 5.0,
        _ => 10.0,
    };
    nice * magnitude
}

/// One axis: its data range and the ticks on it.
pub(crate) struct Axis {
    low: f64,
    high: f64,
    step: f64,
}

impl Axis {
    /// An axis over `[low, high]`; a zero-width range is widened so that a
    /// flat line or a single point still has a scale around it.
    fn new(low: f64, high: f64, target_ticks: f64, snap_to_ticks: bool) -> Self {
        let (low, high) = if high > low {
            (low, high)
        } else {
            let pad = (low.abs() * 0.1).max(1.0);
            (low - pad, high + pad)
        };
        let step = nice_step(high - low, target_ticks);
        if snap_to_ticks {
            Axis { low: (low / step).floor() * step, high: (high / step).ceil() * step, step }
        } else {
            Axis { low, high, step }
        }
    }

    /// The tick values inside the range.
    pub(crate) fn ticks(&self) -> Vec<f64> {
        let first = (self.low / self.step - 1e-9).ceil() as i64;
        let last = (self.high / self.step + 1e-9).floor() as i64;
        (first..=last).map(|k| k as f64 * self.step).collect()
    }

    /// A tick value as text, with as many decimals as the step needs.
    pub(crate) fn label(&self, value: f64) -> String {
        let decimals = (-self.step.log10()).ceil().max(0.0) as usize;
        // Snap -0.0 and float noise like 0.30000000000000004.
        let value = if value.abs() < self.step * 1e-6 { 0.0 } else { value };
        format!("{value:.decimals$}")
    }

    /// Where `value` falls between `from` (the low end) and `to` pixels.
    fn map(&self, value: f64, from: f64, to: f64) -> f32 {
        (from + (value - self.low) / (self.high - self.low) * (to - from)) as f32
    }
}

/// Checks `series` and `options` (see [`render_lines`]'s errors) and lays
/// out their chart; the PNG and the SVG chart share it.
pub(crate) fn checked_layout(series: &[Series], options: &LineOptions) -> Result<Layout, Error> {
    check_series(series)?;
    check_options(options)?;
    Layout::new(series, options)
}

fn check_series(series: &[Series]) -> Result<(), Error> {
    if series.is_empty() {
        return Err(Error::InvalidOption { option: "series", problem: "no series to draw".to_string() });
    }
    for (index, s) in series.iter().enumerate() {
        let problem = if s.points.is_empty() {
            Some("has no points".to_string())
        } else {
            s.points
                .iter()
                .position(|(x, y)| !x.is_finite() || !y.is_finite())
                .map(|k| format!("point {k} is ({}, {}), not finite", s.points[k].0, s.points[k].1))
        };
        if let Some(problem) = problem {
            return Err(Error::InvalidSeries { index, label: s.label.clone(), problem });
        }
    }
    Ok(())
}

fn check_options(options: &LineOptions) -> Result<(), Error> {
    let ranges = [
        ("width", options.width, 200, 8000),
        ("height", options.height, 150, 8000),
        ("font_size", options.font_size, 6, 64),
    ];
    for (option, value, lo, hi) in ranges {
        if !(lo..=hi).contains(&value) {
            return Err(Error::InvalidOption { option, problem: format!("{value} is outside {lo}..={hi}") });
        }
    }
    if u64::from(options.width) * u64::from(options.height) > MAX_PIXELS {
        return Err(Error::TooLarge {
            width: options.width.into(),
            height: options.height.into(),
            max_pixels: MAX_PIXELS,
        });
    }
    match options.y_range {
        Some((low, high)) if !(low.is_finite() && high.is_finite() && low < high) => Err(Error::InvalidOption {
            option: "y_range",
            problem: format!("({low}, {high}) is not a finite range with low < high"),
        }),
        _ => Ok(()),
    }
}

/// Renders `series` as a line chart in memory; [`plot_lines`] writes the
/// same picture to a PNG file.
///
/// The picture is exactly `options.width × options.height` pixels. Inside a
/// margin of one font size it holds, from the top: the optional title, the
/// plot area with light grid lines at the ticks, the tick labels and the x
/// label; the y label (if any) and the y tick labels sit on the left. Tick
/// steps are 1, 2 or 5 times a power of ten. The x axis spans the data
/// exactly; the y axis spans the data widened to whole tick steps, or
/// `options.y_range`.
///
/// Series take the colours of [`PALETTE`] in order (or their own
/// [`Series::color`]), are drawn as 2-pixel anti-aliased lines, solid or
/// [dashed](Series::dashed), with a dot at each point (`options.markers`),
/// and are listed in a legend in the top-right corner of the plot area.
///
/// # Errors
/// [`Error::InvalidSeries`] for a series with no points or a non-finite
/// coordinate (naming the series and the point), [`Error::InvalidOption`]
/// for no series at all, sizes outside the documented ranges or an empty
/// `y_range`.
///
/// # Example
/// ```
/// use lingo_viz::{render_lines, LineOptions, Series, PALETTE};
///
/// let series = [
///     Series::new("train", &[3.0, 2.2, 1.5, 1.1, 0.9]),
///     Series::new("val", &[3.0, 2.4, 1.8, 1.5, 1.4]),
/// ];
/// let image = render_lines(&series, &LineOptions::default().title("loss"))?;
/// assert_eq!(image.dimensions(), (800, 480));
/// // Somewhere the first series is drawn in the first palette colour.
/// assert!(image.pixels().any(|p| *p == PALETTE[0]));
/// # Ok::<(), lingo_viz::Error>(())
/// ```
pub fn render_lines(series: &[Series], options: &LineOptions) -> Result<RgbImage, Error> {
    let layout = checked_layout(series, options)?;
    let mut canvas = Canvas::new(options.width, options.height, WHITE);
    draw_grid(&mut canvas, &layout);
    draw_series(&mut canvas, &layout, series, options.markers);
    draw_legend(&mut canvas, &layout, series);
    draw_titles(&mut canvas, &layout, options);
    Ok(canvas.into_image())
}

/// Where a chart's parts go, in pixels: the plot area inside margins
/// measured in font sizes, and the two axes scaled onto it.
pub(crate) struct Layout {
    /// The font size, pixels per em, as the unit of every margin.
    pub f: f64,
    /// The same, as the font functions take it.
    pub font: f32,
    pub width: f64,
    pub height: f64,
    /// The plot area's edges.
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
    /// The length of a tick mark.
    pub tick: f64,
    pub x_axis: Axis,
    pub y_axis: Axis,
}

/// The legend box in the top-right corner of the plot area, in pixels.
pub(crate) struct Legend {
    /// Top-left corner of the box.
    pub x0: f64,
    pub y0: f64,
    /// Width and height of the box.
    pub w: f64,
    pub h: f64,
    /// The line sample runs from `sample.0` to `sample.1`; labels start at `label_x`.
    pub sample: (f64, f64),
    pub label_x: f64,
    /// Label font size, smaller than the chart's when labels are too long.
    pub font: f32,
    /// Height of one entry.
    row: f64,
    /// Room above the first entry.
    pad: f64,
}

impl Legend {
    /// The vertical centre of entry `k`.
    pub(crate) fn row_y(&self, k: usize) -> f64 {
        self.y0 + self.pad + self.row * (k as f64 + 0.5)
    }
}

impl Layout {
    /// Lays out the chart of `series`. Vertical layout first: it fixes the
    /// plot height, which fixes the y ticks, whose labels fix the left margin.
    fn new(series: &[Series], options: &LineOptions) -> Result<Layout, Error> {
        let f = f64::from(options.font_size);
        let (width, height) = (f64::from(options.width), f64::from(options.height));
        let font = f as f32;

        let all = || series.iter().flat_map(|s| s.points.iter());
        let (x_lo, x_hi) = all().fold((f64::MAX, f64::MIN), |(lo, hi), &(x, _)| (lo.min(x.into()), hi.max(x.into())));
        let (y_lo, y_hi) = all().fold((f64::MAX, f64::MIN), |(lo, hi), &(_, y)| (lo.min(y.into()), hi.max(y.into())));

        let top = f + if options.title.is_some() { 2.0 * f } else { 0.0 } + 0.5 * f;
        let tick = (f / 3.0).round();
        let bottom = height - f - if options.x_label.is_some() { 1.5 * f } else { 0.0 } - 1.5 * f - tick;
        let y_axis = match options.y_range {
            Some((lo, hi)) => Axis::new(lo.into(), hi.into(), ((bottom - top) / (3.0 * f)).min(10.0), false),
            None => Axis::new(y_lo, y_hi, ((bottom - top) / (3.0 * f)).min(10.0), true),
        };
        let y_label_width =
            y_axis.ticks().into_iter().map(|v| f64::from(text_width(&y_axis.label(v), font))).fold(0.0, f64::max);
        let left = f + if options.y_label.is_some() { 1.5 * f } else { 0.0 } + y_label_width + 0.5 * f + tick;
        let right = width - 2.0 * f;
        if right - left < 2.0 * f || bottom - top < 2.0 * f {
            return Err(Error::InvalidOption {
                option: "width",
                problem: format!("{}x{} leaves no room for the plot at font size {f}", options.width, options.height),
            });
        }
        let x_axis = Axis::new(x_lo, x_hi, ((right - left) / (5.0 * f)).min(10.0), false);
        Ok(Layout { f, font, width, height, left, right, top, bottom, tick, x_axis, y_axis })
    }

    /// The pixel column of the data value `x`.
    pub(crate) fn px(&self, x: f64) -> f32 {
        self.x_axis.map(x, self.left, self.right)
    }

    /// The pixel row of the data value `y` (up is larger).
    pub(crate) fn py(&self, y: f64) -> f32 {
        self.y_axis.map(y, self.bottom, self.top)
    }

    /// The plot area's edges in whole pixels: left, top, right, bottom.
    pub(crate) fn plot_box(&self) -> (i64, i64, i64, i64) {
        (self.left as i64, self.top as i64, self.right as i64, self.bottom as i64)
    }

    /// The line thickness and marker radius, shared by the series and their
    /// samples in the legend so that the two look alike.
    pub(crate) fn pen(&self) -> (f32, f32) {
        let thickness = (self.font / 7.0).max(2.0);
        (thickness, thickness + 1.0)
    }

    /// Where the legend of `series` goes.
    pub(crate) fn legend(&self, series: &[Series]) -> Legend {
        let Layout { f, left, right, top, .. } = *self;
        let row = (1.5 * f).round();
        let sample = 2.0 * f;
        let widest = |font: f32| series.iter().map(|s| f64::from(text_width(&s.label, font))).fold(0.0, f64::max);
        // Labels too long for the plot area are set smaller so that the box
        // stays inside it: room = plot width − margins − line sample.
        let room = (right - left) - 3.0 * f - sample;
        let full = widest(f as f32);
        let font = if full > room && full > 0.0 { (f * room.max(0.0) / full) as f32 } else { f as f32 };
        let label_width = widest(font);
        let (w, h) =
            ((0.5 * f + sample + 0.5 * f + label_width + 0.5 * f).ceil(), (row * series.len() as f64 + 0.5 * f).ceil());
        let (x0, y0) = ((right - 0.5 * f - w).round(), (top + 0.5 * f).round());
        let sample = (x0 + 0.5 * f, x0 + 0.5 * f + sample);
        Legend { x0, y0, w, h, sample, label_x: sample.1 + 0.5 * f, font, row, pad: 0.25 * f }
    }
}

/// Grid lines, tick marks and tick labels of both axes, then the axes
/// themselves: a frame on the left and bottom of the plot area.
fn draw_grid(canvas: &mut Canvas, layout: &Layout) {
    let Layout { f, font, left, bottom, tick, .. } = *layout;
    let (l, t, r, b) = layout.plot_box();
    for v in layout.y_axis.ticks() {
        let text = layout.y_axis.label(v);
        let y = layout.py(v).floor() as i64;
        canvas.fill_rect((l, y), (r - l, 1), GRID);
        canvas.fill_rect((l - tick as i64, y), (tick as i64, 1), AXIS);
        let tx = (left - tick - 0.25 * f) as f32 - text_width(&text, font);
        let baseline = centered_baseline(layout.py(v), font);
        draw_text(canvas, &text, (tx.round() as i64, baseline), font, INK, Direction::Horizontal);
    }
    for v in layout.x_axis.ticks() {
        let text = layout.x_axis.label(v);
        let x = layout.px(v).floor() as i64;
        canvas.fill_rect((x, t), (1, b - t), GRID);
        canvas.fill_rect((x, b), (1, tick as i64), AXIS);
        let tx = layout.px(v) - text_width(&text, font) / 2.0;
        let baseline = centered_baseline((bottom + tick + 0.75 * f) as f32, font);
        draw_text(canvas, &text, (tx.round() as i64, baseline), font, INK, Direction::Horizontal);
    }
    canvas.fill_rect((l - 1, t), (1, b - t + 1), AXIS);
    canvas.fill_rect((l - 1, b), (r - l + 1, 1), AXIS);
}

/// Each series in its palette colour, as joined segments and (with
/// `markers`, or for a lone point) dots, clipped to the plot area plus room
/// for a marker.
fn draw_series(canvas: &mut Canvas, layout: &Layout, series: &[Series], markers: bool) {
    let (thickness, radius) = layout.pen();
    let pad = radius.ceil() as i64 + 1;
    let (l, t, r, b) = layout.plot_box();
    for (k, s) in series.iter().enumerate() {
        let mut coverage = Coverage::new((l - pad, t - pad), (r - l + 2 * pad, b - t + 2 * pad));
        let points: Vec<(f32, f32)> =
            s.points.iter().map(|&(x, y)| (layout.px(x.into()), layout.py(y.into()))).collect();
        stroke(&mut coverage, &points, thickness, s.dashed);
        if markers || points.len() == 1 {
            for &p in &points {
                coverage.disc(p, radius);
            }
        }
        coverage.paint(canvas, s.paint(k));
    }
}

/// The legend: a framed white box in the top-right corner of the plot area
/// with a line sample and the label of each series.
fn draw_legend(canvas: &mut Canvas, layout: &Layout, series: &[Series]) {
    let (thickness, radius) = layout.pen();
    let legend = layout.legend(series);
    let Legend { x0, y0, w, h, sample, label_x, font, .. } = legend;
    canvas.fill_rect((x0 as i64, y0 as i64), (w as i64, h as i64), AXIS);
    canvas.fill_rect((x0 as i64 + 1, y0 as i64 + 1), (w as i64 - 2, h as i64 - 2), WHITE);
    for (k, s) in series.iter().enumerate() {
        let cy = legend.row_y(k);
        let mut coverage = Coverage::new((x0 as i64, y0 as i64), (w as i64, h as i64));
        let (a, b) = ((sample.0 as f32, cy as f32), (sample.1 as f32, cy as f32));
        stroke(&mut coverage, &[a, b], thickness, s.dashed);
        coverage.disc(((a.0 + b.0) / 2.0, cy as f32), radius);
        coverage.paint(canvas, s.paint(k));
        let tx = label_x.round() as i64;
        draw_text(canvas, &s.label, (tx, centered_baseline(cy as f32, font)), font, INK, Direction::Horizontal);
    }
}

/// The axis labels and the title, each shrunk if it would not fit.
fn draw_titles(canvas: &mut Canvas, layout: &Layout, options: &LineOptions) {
    let Layout { f, font, width, height, left, right, top, bottom, .. } = *layout;
    if let Some(x_label) = &options.x_label {
        let size = fit_size(x_label, font, (right - left) as f32);
        let tx = ((left + right) / 2.0) as f32 - text_width(x_label, size) / 2.0;
        let baseline = centered_baseline((height - f - 0.75 * f) as f32, size);
        draw_text(canvas, x_label, (tx.round() as i64, baseline), size, INK, Direction::Horizontal);
    }
    if let Some(y_label) = &options.y_label {
        let size = fit_size(y_label, font, (bottom - top) as f32);
        let start = ((top + bottom) / 2.0) as f32 + text_width(y_label, size) / 2.0;
        let x = centered_baseline((f + 0.75 * f) as f32, size);
        draw_text(canvas, y_label, (x, start.round() as i64), size, INK, Direction::Up);
    }
    if let Some(title) = &options.title {
        let size = fit_size(title, 1.2 * font, (width - 2.0 * f) as f32);
        let tx = ((left + right) / 2.0) as f32 - text_width(title, size) / 2.0;
        let tx = tx.clamp(f as f32, (width - f) as f32 - text_width(title, size));
        let baseline = centered_baseline(2.0 * font, size);
        draw_text(canvas, title, (tx.round() as i64, baseline), size, INK, Direction::Horizontal);
    }
}

/// Writes the chart of [`render_lines`] to the PNG file `path`.
///
/// # Errors
/// Everything [`render_lines`] reports, and [`Error::Write`] (naming `path`)
/// if the file cannot be created or written.
///
/// # Example
/// ```
/// use lingo_viz::{plot_lines, LineOptions, Series};
///
/// let path = std::env::temp_dir().join("lingo-viz-doc-plot-lines.png");
/// let entropy = Series::new("dot", &[1.9, 1.2, 0.6, 0.3]);
/// plot_lines(&[entropy], &path, &LineOptions::default().y_label("entropy (nats)"))?;
/// assert!(path.exists());
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), lingo_viz::Error>(())
/// ```
pub fn plot_lines(series: &[Series], path: impl AsRef<Path>, options: &LineOptions) -> Result<(), Error> {
    let image = render_lines(series, options)?;
    save_png(&image, path.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dashes_alternate_along_the_whole_line_across_corners() {
        // An L of length 10 + 10 with dashes of 4 and gaps of 3: dashes cover
        // 0..4, 7..11 (across the corner at 10), 14..18.
        let pieces = dashes(&[(0.0, 0.0), (10.0, 0.0), (10.0, 10.0)], (4.0, 3.0));
        let expected = [
            ((0.0, 0.0), (4.0, 0.0)),
            ((7.0, 0.0), (10.0, 0.0)),
            ((10.0, 0.0), (10.0, 1.0)),
            ((10.0, 4.0), (10.0, 8.0)),
        ];
        assert_eq!(pieces.len(), expected.len(), "{pieces:?}");
        for (got, want) in pieces.iter().zip(expected) {
            for (g, w) in [(got.0, want.0), (got.1, want.1)] {
                assert!((g.0 - w.0).abs() < 1e-5 && (g.1 - w.1).abs() < 1e-5, "{pieces:?}");
            }
        }
    }

    #[test]
    fn nice_steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(15.0, 8.0), 2.0); // epochs 1..16
        assert_eq!(nice_step(2.43, 5.0), 0.5);
        assert_eq!(nice_step(100.0, 10.0), 10.0);
        assert!((nice_step(0.07, 5.0) - 0.02).abs() < 1e-12);
    }

    #[test]
    fn snapped_axes_cover_the_data_with_whole_steps() {
        let axis = Axis::new(0.62, 3.05, 5.0, true);
        assert_eq!((axis.low, axis.high, axis.step), (0.5, 3.5, 0.5));
        assert_eq!(axis.ticks(), vec![0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]);
        assert_eq!(axis.label(1.0), "1.0");
        // A flat series still gets a range around it.
        let flat = Axis::new(2.0, 2.0, 5.0, true);
        assert!(flat.low < 2.0 && flat.high > 2.0);
    }
}
