//! A tiny rasterizer: filled rectangles, anti-aliased strokes and discs,
//! and alpha blending onto an `RgbImage`.
//!
//! Anti-aliasing is by coverage: a pixel whose centre lies at distance `d`
//! from the ideal shape's edge gets `coverage = clamp(0.5 − d, 0, 1)` when
//! outside and 1 when well inside, which is the fraction of a 1-pixel box
//! filter the shape covers along that edge. Strokes collect their coverage in
//! a buffer with `max` before painting once, so joints between segments and
//! markers on a line are not painted twice (which would darken them).

use image::{Rgb, RgbImage};

/// An RGB picture being drawn on.
pub(crate) struct Canvas {
    image: RgbImage,
}

impl Canvas {
    /// A `width × height` canvas filled with `background`.
    pub(crate) fn new(width: u32, height: u32, background: Rgb<u8>) -> Self {
        Canvas { image: RgbImage::from_pixel(width, height, background) }
    }

    /// The finished picture.
    pub(crate) fn into_image(self) -> RgbImage {
        self.image
    }

    /// Mixes `color` into pixel `(x, y)` with weight `alpha` (0..1):
    /// `out = old + alpha · (color − old)`. Pixels outside are ignored.
    pub(crate) fn blend(&mut self, x: i64, y: i64, color: Rgb<u8>, alpha: f32) {
        let (Ok(x), Ok(y)) = (u32::try_from(x), u32::try_from(y)) else {
            return;
        };
        if x >= self.image.width() || y >= self.image.height() {
            return;
        }
        let alpha = alpha.clamp(0.0, 1.0);
        let pixel = self.image.get_pixel_mut(x, y);
        for (old, new) in pixel.0.iter_mut().zip(color.0) {
            let mixed = f32::from(*old) + alpha * (f32::from(new) - f32::from(*old));
            *old = mixed.round() as u8;
        }
    }

    /// Fills the rectangle with top-left `(x, y)` and size `width × height`,
    /// clipped to the canvas.
    pub(crate) fn fill_rect(&mut self, (x, y): (i64, i64), (width, height): (i64, i64), color: Rgb<u8>) {
        let clip = |from: i64, len: i64, max: u32| (from.max(0), (from + len).min(i64::from(max)));
        let (x0, x1) = clip(x, width, self.image.width());
        let (y0, y1) = clip(y, height, self.image.height());
        for py in y0..y1 {
            for px in x0..x1 {
                // In range by the clipping above.
                self.image.put_pixel(px as u32, py as u32, color);
            }
        }
    }
}

/// Coverage of anti-aliased strokes and discs inside a clip rectangle,
/// accumulated with `max` and painted in one go.
pub(crate) struct Coverage {
    left: i64,
    top: i64,
    width: i64,
    height: i64,
    data: Vec<f32>,
}

impl Coverage {
    /// Empty coverage for the pixels `left..left+width`, `top..top+height`;
    /// nothing outside this rectangle will be painted.
    pub(crate) fn new((left, top): (i64, i64), (width, height): (i64, i64)) -> Self {
        let (width, height) = (width.max(0), height.max(0));
        Coverage { left, top, width, height, data: vec![0.0; (width * height) as usize] }
    }

    /// Calls `distance(px, py)` for each pixel centre in the box
    /// `[x0, x1] × [y0, y1]` (clipped), turning the distance from the shape's
    /// edge into coverage.
    fn add(&mut self, (x0, y0): (f32, f32), (x1, y1): (f32, f32), edge_distance: impl Fn(f32, f32) -> f32) {
        let px0 = (x0.floor() as i64).max(self.left);
        let px1 = (x1.ceil() as i64).min(self.left + self.width - 1);
        let py0 = (y0.floor() as i64).max(self.top);
        let py1 = (y1.ceil() as i64).min(self.top + self.height - 1);
        for py in py0..=py1 {
            for px in px0..=px1 {
                // Pixel (px, py) covers [px, px+1) × [py, py+1); its centre is +0.5.
                let d = edge_distance(px as f32 + 0.5, py as f32 + 0.5);
                let c = (0.5 - d).clamp(0.0, 1.0);
                let cell = &mut self.data[((py - self.top) * self.width + (px - self.left)) as usize];
                *cell = cell.max(c);
            }
        }
    }

    /// A straight stroke from `a` to `b`, `thickness` pixels wide, with
    /// round ends: every pixel within `thickness / 2` of the segment.
    pub(crate) fn segment(&mut self, a: (f32, f32), b: (f32, f32), thickness: f32) {
        let r = thickness / 2.0;
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let len2 = dx * dx + dy * dy;
        let lo = (a.0.min(b.0) - r - 1.0, a.1.min(b.1) - r - 1.0);
        let hi = (a.0.max(b.0) + r + 1.0, a.1.max(b.1) + r + 1.0);
        self.add(lo, hi, |x, y| {
            // Distance to the segment: project onto it, clamp to the ends.
            let t = if len2 > 0.0 { (((x - a.0) * dx + (y - a.1) * dy) / len2).clamp(0.0, 1.0) } else { 0.0 };
            let (cx, cy) = (a.0 + t * dx, a.1 + t * dy);
            ((x - cx).powi(2) + (y - cy).powi(2)).sqrt() - r
        });
    }

    /// A filled disc of `radius` pixels around `center`.
    pub(crate) fn disc(&mut self, center: (f32, f32), radius: f32) {
        let lo = (center.0 - radius - 1.0, center.1 - radius - 1.0);
        let hi = (center.0 + radius + 1.0, center.1 + radius + 1.0);
        self.add(lo, hi, |x, y| ((x - center.0).powi(2) + (y - center.1).powi(2)).sqrt() - radius);
    }

    /// Blends `color` onto the canvas with the collected coverage.
    pub(crate) fn paint(&self, canvas: &mut Canvas, color: Rgb<u8>) {
        for (i, &c) in self.data.iter().enumerate() {
            if c > 0.0 {
                let i = i as i64;
                canvas.blend(self.left + i % self.width, self.top + i / self.width, color, c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHITE: Rgb<u8> = Rgb([255, 255, 255]);
    const BLACK: Rgb<u8> = Rgb([0, 0, 0]);

    #[test]
    fn blend_mixes_linearly_and_ignores_outside_pixels() {
        let mut canvas = Canvas::new(2, 1, WHITE);
        canvas.blend(0, 0, BLACK, 0.5);
        canvas.blend(-1, 0, BLACK, 1.0);
        canvas.blend(5, 0, BLACK, 1.0);
        let image = canvas.into_image();
        assert_eq!(image.get_pixel(0, 0).0, [128, 128, 128]); // 255 − 127.5, rounded
        assert_eq!(image.get_pixel(1, 0).0, [255, 255, 255]);
    }

    #[test]
    fn a_horizontal_stroke_is_solid_inside_and_soft_at_its_edge() {
        let mut canvas = Canvas::new(20, 9, WHITE);
        let mut cov = Coverage::new((0, 0), (20, 9));
        // Centre line y = 4.5, 3 px thick: rows 3, 4, 5 fully covered.
        cov.segment((2.0, 4.5), (18.0, 4.5), 3.0);
        cov.paint(&mut canvas, BLACK);
        let image = canvas.into_image();
        for y in 3..=5 {
            assert_eq!(image.get_pixel(10, y).0, [0, 0, 0], "row {y}");
        }
        assert_eq!(image.get_pixel(10, 1).0, [255, 255, 255]);
        assert_eq!(image.get_pixel(10, 7).0, [255, 255, 255]);
    }

    #[test]
    fn fill_rect_clips_to_the_canvas() {
        let mut canvas = Canvas::new(4, 4, WHITE);
        canvas.fill_rect((2, -3), (10, 5), BLACK);
        let image = canvas.into_image();
        assert_eq!(image.get_pixel(3, 1).0, [0, 0, 0]);
        assert_eq!(image.get_pixel(1, 1).0, [255, 255, 255]);
        assert_eq!(image.get_pixel(3, 2).0, [255, 255, 255]);
    }
}
