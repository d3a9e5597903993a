//! The text heatmap: attention weights as a grid of shade characters.

use ndarray::ArrayView2;

use crate::Error;
use crate::check::{check_attention, peak};

/// The five shades, from "no attention" to "all of it".
///
/// A weight `w` (clamped to 0..1) picks `SHADES[min(floor(5 w), 4)]`, so the
/// fixed 0..1 scale is cut into fifths:
///
/// | weight       | shade |
/// |--------------|-------|
/// | `[0.0, 0.2)` | `·`   |
/// | `[0.2, 0.4)` | `░`   |
/// | `[0.4, 0.6)` | `▒`   |
/// | `[0.6, 0.8)` | `▓`   |
/// | `[0.8, 1.0]` | `█`   |
pub const SHADES: [char; 5] = ['·', '░', '▒', '▓', '█'];

/// How many copies of the shade character fill one cell: three make a block
/// wide enough to read as a square in most terminal fonts.
const SHADE_REPEAT: usize = 3;

/// The shade character for one weight, on the fixed 0..1 scale of [`SHADES`].
///
/// Weights below 0 shade as 0 and above 1 as 1; NaN shades as 0 (the
/// heatmap functions reject NaN before they get here).
///
/// ```
/// use lingo_viz::shade;
/// assert_eq!(shade(0.0), '·');
/// assert_eq!(shade(0.19), '·');
/// assert_eq!(shade(0.2), '░');
/// assert_eq!(shade(0.5), '▒');
/// assert_eq!(shade(0.79), '▓');
/// assert_eq!(shade(0.8), '█');
/// assert_eq!(shade(1.7), '█');
/// ```
pub fn shade(weight: f32) -> char {
    // `as usize` saturates: negatives and NaN become 0, large values are
    // capped by the `min`.
    let level = (weight.clamp(0.0, 1.0) * 5.0) as usize;
    SHADES[level.min(SHADES.len() - 1)]
}

/// What each cell of the text heatmap shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CellStyle {
    /// Three shade characters, e.g. `▓▓▓`.
    #[default]
    Shade,
    /// The weight with two decimals, e.g. `0.72` (the real value, not
    /// clamped).
    Number,
    /// One shade character, a space and the weight, e.g. `▓ 0.72`.
    ShadeAndNumber,
}

/// Options for [`format_attention`]. Build with `Default` and the setters.
///
/// ```
/// use lingo_viz::{CellStyle, TextOptions};
/// let options = TextOptions::default().cells(CellStyle::Number).mark_peak(true);
/// assert_eq!(options.cells, CellStyle::Number);
/// assert!(options.mark_peak);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct TextOptions {
    /// What each cell shows (default: shades only).
    pub cells: CellStyle,
    /// Put a `>` before the largest weight of each row (default: off).
    /// Ties go to the first such column.
    pub mark_peak: bool,
}

setters!(TextOptions {
    cells: CellStyle = lingo_viz::CellStyle::Number,
    mark_peak: bool = true,
} optional {});

/// Renders attention `weights` `(tgt_len, src_len)` as a text heatmap.
///
/// Layout, line by line (no trailing newline):
///
/// * the header: a blank row-label column, then each source token;
/// * one line per target token: the token left-aligned in the row-label
///   column, then one cell per source token.
///
/// The row-label column is as wide as the longest target token. Every source
/// column is as wide as the longest source token or the widest cell,
/// whichever is wider, and is preceded by one space; tokens and cells are
/// right-aligned in it. Widths count Unicode scalar values (`chars`), which
/// lines up for accented Latin in NFC form; double-width scripts (CJK) will
/// not line up.
///
/// Cells show [`SHADES`] on a fixed 0..1 scale, numbers, or both
/// ([`CellStyle`]); with [`TextOptions::mark_peak`] the largest weight of each
/// row gets a `>` in front.
///
/// Reading it: with teacher forcing the decoder's inputs are the target
/// shifted right (`<sos> y1 y2 ...`), so the row labelled with input token
/// `n` is the decoder state that *predicts* token `n + 1`. Pass those inputs
/// as `tgt_tokens` and each row shows where the model looked to produce the
/// next word.
///
/// # Errors
/// [`Error::TokenCount`] if the token lists do not match the weights' shape,
/// [`Error::EmptyWeights`] for a 0-row or 0-column matrix and
/// [`Error::NonFiniteWeight`] for NaN or infinity. Finite weights outside
/// 0..1 are clamped for shading and printed as they are.
///
/// # Example
/// ```
/// use lingo_viz::{format_attention, CellStyle, TextOptions};
/// use ndarray::array;
///
/// // (tgt_len, src_len) = (2, 3)
/// let weights = array![[0.1_f32, 0.2, 0.7], [0.9, 0.05, 0.05]];
/// let text = format_attention(weights.view(), &["a", "cat", "<eos>"], &["<sos>", "gato"],
///     &TextOptions::default())?;
/// let expected = [
///     "          a   cat <eos>",
///     "<sos>   ···   ░░░   ▓▓▓",
///     "gato    ███   ···   ···",
/// ];
/// assert_eq!(text, expected.join("\n"));
///
/// let numbers = format_attention(weights.view(), &["a", "cat", "<eos>"], &["<sos>", "gato"],
///     &TextOptions::default().cells(CellStyle::Number).mark_peak(true))?;
/// let expected = [
///     "          a   cat <eos>",
///     "<sos>  0.10  0.20 >0.70",
///     "gato  >0.90  0.05  0.05",
/// ];
/// assert_eq!(numbers, expected.join("\n"));
/// # Ok::<(), lingo_viz::Error>(())
/// ```
pub fn format_attention<S: AsRef<str>, T: AsRef<str>>(
    weights: ArrayView2<f32>,
    src_tokens: &[S],
    tgt_tokens: &[T],
    options: &TextOptions,
) -> Result<String, Error> {
    check_attention(weights, src_tokens, tgt_tokens)?;

    // Every cell's text first, so the column width can be the widest of them.
    let cells: Vec<Vec<String>> = weights
        .outer_iter()
        .map(|row| {
            let peak_col = peak(row);
            row.iter()
                .enumerate()
                .map(|(j, &w)| {
                    let body = match options.cells {
                        CellStyle::Shade => shade(w).to_string().repeat(SHADE_REPEAT),
                        CellStyle::Number => format!("{w:.2}"),
                        CellStyle::ShadeAndNumber => format!("{} {w:.2}", shade(w)),
                    };
                    match (options.mark_peak, j == peak_col) {
                        (true, true) => format!(">{body}"),
                        _ => body,
                    }
                })
                .collect()
        })
        .collect();

    let width = |s: &str| s.chars().count();
    let col_width =
        src_tokens.iter().map(|t| width(t.as_ref())).chain(cells.iter().flatten().map(|c| width(c))).max().unwrap_or(0);
    let label_width = tgt_tokens.iter().map(|t| width(t.as_ref())).max().unwrap_or(0);

    let mut lines = Vec::with_capacity(tgt_tokens.len() + 1);
    let header: String = src_tokens.iter().map(|t| format!(" {:>col_width$}", t.as_ref())).collect();
    lines.push(format!("{:label_width$}{header}", ""));
    for (token, row) in tgt_tokens.iter().zip(&cells) {
        let body: String = row.iter().map(|c| format!(" {c:>col_width$}")).collect();
        lines.push(format!("{:<label_width$}{body}", token.as_ref()));
    }
    Ok(lines.join("\n"))
}

/// A table as text, as the `lingo` commands print theirs: the first column
/// left-aligned, the others right-aligned, each as wide as its widest cell
/// (in characters), two spaces between columns.
///
/// ```
/// let rows = [vec!["dot (Luong)", "95.4%"], vec!["none", "n/a"]];
/// let text = lingo_viz::format_table(&["configuration", "alignment"], &rows);
/// assert_eq!(text, "configuration  alignment\ndot (Luong)        95.4%\nnone                 n/a");
/// ```
pub fn format_table<H: AsRef<str>, C: AsRef<str>>(header: &[H], rows: &[Vec<C>]) -> String {
    let header: Vec<&str> = header.iter().map(AsRef::as_ref).collect();
    let rows: Vec<Vec<&str>> = rows.iter().map(|row| row.iter().map(AsRef::as_ref).collect()).collect();
    let mut widths = vec![0; header.len()];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |row: &Vec<&str>| {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, &w))| if c == 0 { format!("{cell:<w$}") } else { format!("{cell:>w$}") })
            .collect();
        cells.join("  ").trim_end().to_owned()
    };
    std::iter::once(&header).chain(&rows).map(line).collect::<Vec<_>>().join("\n")
}
