//! Renders the pictures in `docs/gallery/` from synthetic attention weights
//! and synthetic training curves.
//!
//! ```text
//! cargo run --release -p lingo-viz --example gallery [OUT_DIR]
//! ```
//!
//! `OUT_DIR` defaults to the workspace's `docs/gallery`. The weights here are
//! made up to look like what a trained model produces; the model examples
//! will replace them with real ones.

use std::error::Error;
use std::path::{Path, PathBuf};

use lingo_viz::{
    CellStyle, HeatmapOptions, LineOptions, Series, TextOptions, format_attention, plot_attention, plot_lines,
};
use ndarray::Array2;

/// Attention rows `(tgt_len, src_len)` from a list of aligned source
/// positions per row: each listed position gets its share of `focus`, the
/// neighbours of the first one `blur` each, and the rest of the mass is
/// spread evenly, so every row sums to 1.
fn synthetic_attention(src_len: usize, aligned: &[&[(usize, f32)]], blur: f32) -> Array2<f32> {
    let mut weights = Array2::zeros((aligned.len(), src_len));
    for (i, targets) in aligned.iter().enumerate() {
        let mut row = vec![0.0_f32; src_len];
        for &(j, share) in targets.iter() {
            row[j] += share;
        }
        let (first, _) = targets[0];
        for n in [first.wrapping_sub(1), first + 1] {
            if n < src_len && row[n] == 0.0 {
                row[n] = blur;
            }
        }
        let rest = (1.0 - row.iter().sum::<f32>()).max(0.0) / src_len as f32;
        for (w, r) in weights.row_mut(i).iter_mut().zip(&row) {
            *w = r + rest;
        }
    }
    weights
}

/// Writes one attention matrix both ways: `NAME.txt` (and stdout) with
/// `format_attention`, `NAME.png` with `plot_attention` and numbers in cells.
fn text_and_picture(
    out: &Path,
    name: &str,
    (weights, src, tgt): (&Array2<f32>, &[&str], &[&str]),
    text_options: &TextOptions,
    title: &str,
) -> Result<(), Box<dyn Error>> {
    let text = format_attention(weights.view(), src, tgt, text_options)?;
    println!("{text}\n");
    std::fs::write(out.join(format!("{name}.txt")), format!("{text}\n"))?;
    let options = HeatmapOptions::default().title(title).show_values(true);
    plot_attention(weights.view(), src, tgt, out.join(format!("{name}.png")), &options)?;
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let out = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/gallery"));
    std::fs::create_dir_all(&out)?;

    // 1. Lexicon reverse: "bird wants a cat dog" -> "perro gato un quiere
    //    pájaro". Rows are the decoder's inputs; row n predicts token n + 1,
    //    so row <sos> (predicting "perro") looks at "dog", and so on back.
    let src = ["<sos>", "bird", "wants", "a", "cat", "dog", "<eos>"];
    let tgt = ["<sos>", "perro", "gato", "un", "quiere", "pájaro"];
    let weights = synthetic_attention(
        src.len(),
        &[&[(5, 0.78)], &[(4, 0.86)], &[(3, 0.9)], &[(2, 0.88)], &[(1, 0.9)], &[(6, 0.8)]],
        0.06,
    );
    text_and_picture(&out, "reverse", (&weights, &src, &tgt), &TextOptions::default(), "Lexicon reverse (synthetic)")?;

    // 2. Sorting with duplicates: 3 1 4 1 5 9 2 6 5 3 -> 1 1 2 3 3 4 5 5 6 9.
    //    Each row splits its attention between the copies of the digit it
    //    emits, as an attention model does before it learns an order.
    let src = ["3", "1", "4", "1", "5", "9", "2", "6", "5", "3"];
    let tgt = ["<sos>", "1", "1", "2", "3", "3", "4", "5", "5", "6"];
    let split = |a, b, first: f32| [(a, first), (b, 0.9 - first)];
    let (ones_a, ones_b) = (split(1, 3, 0.5), split(1, 3, 0.38));
    let (threes_a, threes_b) = (split(0, 9, 0.55), split(0, 9, 0.42));
    let (fives_a, fives_b) = (split(4, 8, 0.47), split(4, 8, 0.4));
    let weights = synthetic_attention(
        src.len(),
        &[
            &ones_a,
            &ones_b,
            &[(6, 0.88)],
            &threes_a,
            &threes_b,
            &[(2, 0.9)],
            &fives_a,
            &fives_b,
            &[(7, 0.9)],
            &[(5, 0.92)],
        ],
        0.02,
    );
    let numbers = TextOptions::default().cells(CellStyle::ShadeAndNumber).mark_peak(true);
    text_and_picture(&out, "sorting", (&weights, &src, &tgt), &numbers, "Sorting with duplicates (synthetic)")?;

    // 3. Readability at 30 x 30 with accented tokens: a Spanish sentence
    //    and its English translation, mostly monotonic with local swaps
    //    (adjective-noun) and one word translated by two ("después").
    let src: Vec<&str> = "<sos> el niño pequeño de España comió una manzana roja en la cocina , y después José \
                          también leyó un libro muy antiguo sobre la historia de Málaga . <eos>"
        .split_whitespace()
        .collect();
    let outputs: Vec<&str> = "the small boy from Spain ate a red apple in the kitchen , and after that José also \
                              read a very old book about the history of Málaga . <eos>"
        .split_whitespace()
        .collect();
    // Decoder inputs: <sos> then every output but the last.
    let tgt: Vec<&str> = std::iter::once("<sos>").chain(outputs[..outputs.len() - 1].iter().copied()).collect();
    let aligned_to =
        [1, 3, 2, 4, 5, 6, 7, 9, 8, 10, 11, 12, 13, 14, 15, 15, 16, 17, 18, 19, 21, 22, 20, 23, 24, 25, 26, 27, 28, 29];
    let rows: Vec<[(usize, f32); 1]> = aligned_to.iter().map(|&j| [(j, 0.8)]).collect();
    let row_refs: Vec<&[(usize, f32)]> = rows.iter().map(|r| r.as_slice()).collect();
    let weights = synthetic_attention(src.len(), &row_refs, 0.07);
    let options = HeatmapOptions::default().title("30 × 30 tokens, Spanish → English (synthetic)");
    plot_attention(weights.view(), &src, &tgt, out.join("readability-30x30.png"), &options)?;

    // 4. Training curves over 16 epochs. Loss falls in a sigmoid from about
    //    3 to 0.6, the validation curve a little behind and above.
    let per_epoch = |curve: &dyn Fn(f32) -> f32| -> Vec<f32> { (1..=16).map(|e| curve(e as f32)).collect() };
    let sigmoid_loss = |floor: f32, mid: f32| move |e: f32| floor + (3.05 - floor) / (1.0 + ((e - mid) / 1.3).exp());
    let loss = [
        Series::new("train", &per_epoch(&sigmoid_loss(0.6, 7.0))),
        Series::new("validation", &per_epoch(&sigmoid_loss(0.64, 7.3))),
    ];
    let options = LineOptions::default().title("Loss (synthetic)").y_label("cross-entropy (nats)");
    plot_lines(&loss, out.join("loss.png"), &options)?;

    // 5. Attention entropy per target token, H = -sum_j w_j ln w_j, decays
    //    roughly exponentially as attention sharpens, from ln 7 = 1.95 nats
    //    (uniform attention over 7 positions) to a floor.
    let decay = |floor: f32, tau: f32| move |e: f32| floor + (7f32.ln() - floor) * (-(e - 1.0) / tau).exp();
    let entropy = [
        Series::new("dot (Luong)", &per_epoch(&decay(0.18, 2.5))),
        Series::new("additive (Bahdanau)", &per_epoch(&decay(0.35, 3.5))),
    ];
    let options =
        LineOptions::default().title("Attention entropy (synthetic)").y_label("entropy (nats)").y_range(0.0, 2.0);
    plot_lines(&entropy, out.join("entropy.png"), &options)?;

    println!("wrote the gallery to {}", out.display());
    Ok(())
}
