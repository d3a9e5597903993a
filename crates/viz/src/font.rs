//! Text drawn with the embedded DejaVu Sans font.
//!
//! The font file ships inside the crate (`assets/DejaVuSans.ttf`, Bitstream
//! Vera license with public-domain DejaVu changes, see
//! `assets/LICENSE-DejaVu.txt`), so pictures look the same on every machine
//! and never depend on which fonts the system happens to have. DejaVu Sans
//! covers Latin with accents (España, niño), Greek and Cyrillic.
//!
//! Crisp text: each string starts on a whole pixel and sits on a whole-pixel
//! baseline; inside the string glyphs keep their fractional advances and
//! ab_glyph's coverage rasterizer anti-aliases their edges.

use std::sync::OnceLock;

use ab_glyph::{Font, FontRef, GlyphId, PxScale, ScaleFont, point};
use image::Rgb;

use crate::canvas::Canvas;

/// The font file, compiled into the library.
const DEJAVU_SANS: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// The parsed embedded font.
fn font() -> &'static FontRef<'static> {
    static FONT: OnceLock<FontRef<'static>> = OnceLock::new();
    // The bytes are a fixed asset checked by the tests, not user input, so a
    // parse failure is a build defect, not a runtime condition to report.
    FONT.get_or_init(|| FontRef::try_from_slice(DEJAVU_SANS).expect("embedded DejaVuSans.ttf parses"))
}

/// ab_glyph's `PxScale` is the height of ascent − descent in pixels; our sizes
/// are em sizes (like CSS `font-size`), so convert: `scale = size · height / em`.
fn px_scale(size: f32) -> PxScale {
    let font = font();
    let units_per_em = font.units_per_em().unwrap_or(2048.0);
    PxScale::from(size * font.height_unscaled() / units_per_em)
}

/// Vertical metrics of the font at one size, in pixels.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Metrics {
    /// Distance from the baseline up to the top of the tallest glyphs (> 0).
    pub ascent: f32,
    /// Distance from the baseline down to the lowest descender (< 0).
    pub descent: f32,
}

/// The font's ascent and descent at `size` pixels per em.
pub(crate) fn metrics(size: f32) -> Metrics {
    let scaled = font().as_scaled(px_scale(size));
    Metrics { ascent: scaled.ascent(), descent: scaled.descent() }
}

/// The baseline that centres a line of text vertically on `center`: the
/// middle of [baseline − ascent, baseline − descent] lands on `center`.
pub(crate) fn centered_baseline(center: f32, size: f32) -> i64 {
    let m = metrics(size);
    (center + (m.ascent + m.descent) / 2.0).round() as i64
}

/// Glyphs of `text` laid out on one line from x = 0, with kerning, and the
/// line's total advance width.
fn layout(text: &str, size: f32) -> (Vec<(GlyphId, f32)>, f32) {
    let scaled = font().as_scaled(px_scale(size));
    let mut caret = 0.0;
    let mut previous: Option<GlyphId> = None;
    let mut glyphs = Vec::with_capacity(text.len());
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(prev) = previous {
            caret += scaled.kern(prev, id);
        }
        glyphs.push((id, caret));
        caret += scaled.h_advance(id);
        previous = Some(id);
    }
    (glyphs, caret)
}

/// Width in pixels of `text` set at `size` pixels per em.
pub(crate) fn text_width(text: &str, size: f32) -> f32 {
    layout(text, size).1
}

/// The largest size ≤ `size` at which `text` fits in `max_width` pixels:
/// labels that would overflow their slot are drawn smaller, never clipped.
pub(crate) fn fit_size(text: &str, size: f32, max_width: f32) -> f32 {
    let width = text_width(text, size);
    if width > max_width && width > 0.0 { size * max_width / width } else { size }
}

/// Calls `plot(dx, dy, coverage)` for every pixel the text touches, with
/// `(dx, dy)` relative to the start of the baseline (dy < 0 above it).
fn rasterize(text: &str, size: f32, mut plot: impl FnMut(i64, i64, f32)) {
    let scale = px_scale(size);
    let font = font();
    for (id, x) in layout(text, size).0 {
        let glyph = id.with_scale_and_position(scale, point(x, 0.0));
        if let Some(outlined) = font.outline_glyph(glyph) {
            let bounds = outlined.px_bounds();
            let (left, top) = (bounds.min.x as i64, bounds.min.y as i64);
            outlined.draw(|gx, gy, coverage| plot(left + gx as i64, top + gy as i64, coverage));
        }
    }
}

/// Which way a line of text runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Left to right, the usual way.
    Horizontal,
    /// Bottom to top (rotated 90° counter-clockwise), for column labels and
    /// the y-axis title: tops of the letters point left.
    Up,
}

/// Draws `text` with its baseline starting at the pixel `(x, y)`.
///
/// For [`Direction::Up`] the baseline is the vertical line `x`, and the text
/// starts at `y` and runs upwards: a horizontal offset `(dx, dy)` lands at
/// `(x + dy, y − dx)`.
pub(crate) fn draw_text(
    canvas: &mut Canvas,
    text: &str,
    (x, y): (i64, i64),
    size: f32,
    color: Rgb<u8>,
    direction: Direction,
) {
    rasterize(text, size, |dx, dy, coverage| {
        let (px, py) = match direction {
            Direction::Horizontal => (x + dx, y + dy),
            Direction::Up => (x + dy, y - dx),
        };
        canvas.blend(px, py, color, coverage);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_font_has_accented_latin() {
        // A glyph id of 0 is the font's "missing glyph" box.
        for c in "España niño pequeño àéîõü ÇŒß".chars().filter(|c| !c.is_whitespace()) {
            assert_ne!(font().glyph_id(c).0, 0, "no glyph for {c:?}");
        }
    }

    #[test]
    fn fit_size_shrinks_only_what_overflows() {
        let wide = "mmmmmmmm";
        assert_eq!(fit_size("a", 14.0, 100.0), 14.0);
        let smaller = fit_size(wide, 14.0, 40.0);
        assert!(smaller < 14.0);
        assert!((text_width(wide, smaller) - 40.0).abs() < 0.5);
    }
}
