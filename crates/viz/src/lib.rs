//! # lingo-viz
//!
//! Pictures of attention: text heatmaps for terminals, logs and doctests,
//! PNG heatmaps with labelled axes, and line charts for training curves.
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
pub mod error;

mod canvas;
mod check;
mod colormap;
mod font;
mod heatmap;
mod lines;
mod text;

use std::path::Path;

pub use colormap::viridis;
pub use error::Error;
pub use heatmap::{HeatmapOptions, plot_attention, render_attention};
pub use lines::{LineOptions, PALETTE, Series, plot_lines, render_lines};
pub use text::{CellStyle, SHADES, TextOptions, format_attention, shade};

/// Encodes `image` as PNG into `path`; every writer in the crate goes
/// through here so that failures always name the file.
fn save_png(image: &image::RgbImage, path: &Path) -> Result<(), Error> {
    image
        .save_with_format(path, image::ImageFormat::Png)
        .map_err(|source| Error::Write {
            path: path.to_path_buf(),
            source,
        })
}
