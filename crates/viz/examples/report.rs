//! Builds a demo HTML report from synthetic attention and a synthetic loss
//! curve, and writes each of its pictures beside it as an SVG file.
//!
//! ```text
//! cargo run --release -p lingo-viz --example report -- OUT.html
//! ```
//!
//! For `OUT.html` it writes `OUT.html`, `OUT-alignment.svg`, `OUT-heads.svg`
//! and `OUT-loss.svg`. The weights are made up to look like what a trained
//! model produces: a reversing alignment, and eight heads of a two-layer
//! Transformer with the patterns such heads often learn.

use std::error::Error;
use std::path::{Path, PathBuf};

use lingo_viz::{
    HeatmapOptions, LineOptions, Report, Series, TextOptions, attention_grid_svg, attention_svg, format_attention,
    lines_svg, save_svg,
};
use ndarray::{Array2, Array4, ArrayView2, Axis};

/// The lexicon-reverse task: translate word by word, then reverse.
const SRC: [&str; 6] = ["the", "cat", "sees", "a", "fish", "<eos>"];
const TGT: [&str; 6] = ["pez", "un", "ve", "gato", "el", "<eos>"];

/// Row `i` of the reversing alignment looks at this source position: the
/// words in reverse, `<eos>` at `<eos>`.
fn reversed(i: usize) -> f32 {
    if i + 1 == SRC.len() { i as f32 } else { (SRC.len() - 2 - i) as f32 }
}

/// Attention `(TGT.len(), SRC.len())` whose row `i` is a softmax peaked at
/// source position `centre(i)`: `sharpness` 0 is uniform, 3 nearly one-hot.
fn focused(centre: impl Fn(usize) -> f32, sharpness: f32) -> Array2<f32> {
    let mut weights = Array2::from_shape_fn((TGT.len(), SRC.len()), |(i, j)| {
        let distance = j as f32 - centre(i);
        (-sharpness * distance * distance).exp()
    });
    for mut row in weights.rows_mut() {
        let sum = row.sum();
        row /= sum;
    }
    weights
}

/// Two layers of four heads, each with a pattern of its own.
fn heads() -> (Array4<f32>, [&'static str; 8]) {
    let last = (SRC.len() - 1) as f32;
    let diagonal = |i: usize| i as f32 * last / (TGT.len() - 1) as f32;
    let patterns = [
        (focused(diagonal, 1.5), "monotonic"),
        (focused(reversed, 1.0), "reversing"),
        (focused(|i| i.saturating_sub(1) as f32, 2.0), "previous position"),
        (focused(|_| 0.0, 1.0), "first token"),
        (focused(reversed, 3.0), "reversing, sharp"),
        (focused(reversed, 0.3), "reversing, broad"),
        (focused(|_| last, 2.0), "<eos>"),
        (focused(|_| 0.0, 0.02), "nearly uniform"),
    ];
    let mut weights = Array4::zeros((2, 4, TGT.len(), SRC.len()));
    for (k, (pattern, _)) in patterns.iter().enumerate() {
        weights.index_axis_mut(Axis(0), k / 4).index_axis_mut(Axis(0), k % 4).assign(pattern);
    }
    (weights, patterns.map(|(_, name)| name))
}

/// Mean entropy of the rows in nats, and the share of rows whose peak is
/// the reversing alignment's position.
fn scores(weights: ArrayView2<f32>) -> (f32, f32) {
    let rows = weights.nrows() as f32;
    let entropy = weights.iter().filter(|&&w| w > 0.0).map(|&w| -w * w.ln()).sum::<f32>() / rows;
    let aligned = weights
        .rows()
        .into_iter()
        .enumerate()
        .filter(|(i, row)| {
            let peak = row.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(j, _)| j);
            peak == Some(reversed(*i) as usize)
        })
        .count() as f32;
    (entropy, aligned / rows)
}

/// A synthetic training run: loss falling towards a floor, validation
/// levelling off above training, with a little deterministic noise.
fn loss_curves() -> [Series; 2] {
    let curve = |floor: f32, rate: f32, wobble: f32| -> Vec<f32> {
        (0..30).map(|e| floor + 3.0 * (-rate * e as f32).exp() + wobble * (1.7 * e as f32).sin()).collect()
    };
    [Series::new("train", &curve(0.35, 0.22, 0.02)), Series::new("validation", &curve(0.8, 0.2, 0.04))]
}

/// `OUT-name.svg` beside `OUT.html`.
fn beside(out: &Path, name: &str) -> PathBuf {
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "report".into());
    out.with_file_name(format!("{stem}-{name}.svg"))
}

fn main() -> Result<(), Box<dyn Error>> {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: cargo run --release -p lingo-viz --example report -- OUT.html");
        std::process::exit(2);
    };
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }

    let alignment = focused(reversed, 2.0);
    let options = HeatmapOptions::default().show_values(true).title("the cat sees a fish → pez un ve gato el");
    let alignment_svg = attention_svg(alignment.view(), &SRC, &TGT, &options)?;

    let (heads, names) = heads();
    let title = |l: usize, h: usize| format!("layer {} head {}: {}", l + 1, h + 1, names[4 * l + h]);
    let heads_svg = attention_grid_svg(heads.view(), &SRC, &TGT, title, &HeatmapOptions::default())?;

    let curves = loss_curves();
    let loss_options = LineOptions::default().title("loss per epoch").y_label("cross-entropy (nats)");
    let loss_svg = lines_svg(&curves, &loss_options)?;

    let mut rows = Vec::new();
    for l in 0..2 {
        for h in 0..4 {
            let (entropy, aligned) = scores(heads.index_axis(Axis(0), l).index_axis(Axis(0), h));
            let head = format!("layer {} head {}", l + 1, h + 1);
            rows.push(vec![
                head,
                names[4 * l + h].to_string(),
                format!("{entropy:.2}"),
                format!("{:.0}%", 100.0 * aligned),
            ]);
        }
    }

    let text = format_attention(alignment.view(), &SRC, &TGT, &TextOptions::default())?;
    let report = Report::new("lingo-viz demo report")
        .paragraph(
            "Synthetic attention on the lexicon-reverse task (translate word by word, then reverse) \
             and a synthetic training run. Hover over a cell for its weight, over a point for its value.",
        )
        .heading("Alignment")
        .figure(&alignment_svg, "Each target word attends to its source word: the anti-diagonal, and <eos> to <eos>.")
        .code(text)
        .heading("Transformer heads")
        .figure(&heads_svg, "Two layers of four heads over the same sentence pair.")
        .table(&["head", "pattern", "entropy (nats)", "peak on the alignment"], rows)
        .heading("Training")
        .figure(&loss_svg, "Validation loss levels off above the training loss.")
        .subheading("How this page was made")
        .code("cargo run --release -p lingo-viz --example report -- OUT.html");

    for (name, svg) in [("alignment", &alignment_svg), ("heads", &heads_svg), ("loss", &loss_svg)] {
        let path = beside(&out, name);
        save_svg(svg, &path)?;
        println!("{} ({} bytes)", path.display(), svg.len());
    }
    report.save(&out)?;
    println!("{} ({} bytes)", out.display(), report.to_html().len());
    Ok(())
}
