//! Exact text output of `format_attention` on small cases.
//!
//! The expected strings are written out by hand from the documented layout;
//! the first one is the heatmap printed in the attention tutorial (part 5),
//! reproduced with weights chosen to fall in the same shade bands.

use lingo_viz::{CellStyle, Error, TextOptions, format_attention, shade};
use ndarray::{Array2, array};

/// `format_attention` with default options (shades only, no peak marks).
fn shades(weights: &Array2<f32>, src: &[&str], tgt: &[&str]) -> Result<String, Error> {
    format_attention(weights.view(), src, tgt, &TextOptions::default())
}

/// A row that puts `peak` on column `at` and `rest` on every other column.
fn one_hot_row(len: usize, at: usize, peak: f32, rest: f32) -> Vec<f32> {
    (0..len).map(|j| if j == at { peak } else { rest }).collect()
}

#[test]
fn reproduces_the_tutorial_heatmap() {
    let src = ["<sos>", "bird", "wants", "a", "cat", "dog", "<eos>"];
    let tgt = ["<sos>", "perro", "gato", "un", "quiere", "pajaro"];
    let mut flat = vec![0.01, 0.01, 0.01, 0.01, 0.01, 0.7, 0.25];
    for at in [4, 3, 2, 1, 0] {
        flat.extend(one_hot_row(7, at, 0.94, 0.01));
    }
    let weights = Array2::from_shape_vec((6, 7), flat).unwrap();
    let text = shades(&weights, &src, &tgt).unwrap();
    let expected = [
        "       <sos>  bird wants     a   cat   dog <eos>",
        "<sos>    ···   ···   ···   ···   ···   ▓▓▓   ░░░",
        "perro    ···   ···   ···   ···   ███   ···   ···",
        "gato     ···   ···   ···   ███   ···   ···   ···",
        "un       ···   ···   ███   ···   ···   ···   ···",
        "quiere   ···   ███   ···   ···   ···   ···   ···",
        "pajaro   ███   ···   ···   ···   ···   ···   ···",
    ];
    assert_eq!(text, expected.join("\n"));
}

#[test]
fn numbers_with_split_attention_on_duplicates() {
    // The sorting case study: 7 2 5 2 9 -> 2 2 5 7 9, the two 2s share.
    let src = ["7", "2", "5", "2", "9"];
    let tgt = ["2", "2", "5"];
    let weights =
        array![[0.05_f32, 0.48, 0.02, 0.43, 0.02], [0.03, 0.41, 0.04, 0.48, 0.04], [0.08, 0.05, 0.78, 0.06, 0.03],];
    let options = TextOptions::default().cells(CellStyle::Number).mark_peak(true);
    let text = format_attention(weights.view(), &src, &tgt, &options).unwrap();
    // Cells are at most 5 chars (">0.48"), wider than any token.
    let expected = [
        "      7     2     5     2     9",
        "2  0.05 >0.48  0.02  0.43  0.02",
        "2  0.03  0.41  0.04 >0.48  0.04",
        "5  0.08  0.05 >0.78  0.06  0.03",
    ];
    assert_eq!(text, expected.join("\n"));
}

#[test]
fn shade_and_number_side_by_side() {
    let weights = array![[0.3_f32, 0.7]];
    let options = TextOptions::default().cells(CellStyle::ShadeAndNumber);
    let text = format_attention(weights.view(), &["x", "y"], &["t"], &options).unwrap();
    let expected = ["       x      y", "t ░ 0.30 ▓ 0.70"];
    assert_eq!(text, expected.join("\n"));
}

#[test]
fn peak_ties_go_to_the_first_column_and_shades_mark_it() {
    let weights = array![[0.5_f32, 0.5], [0.0, 1.0]];
    let options = TextOptions::default().mark_peak(true);
    let text = format_attention(weights.view(), &["a", "b"], &["p", "q"], &options).unwrap();
    let expected = ["     a    b", "p >▒▒▒  ▒▒▒", "q  ··· >███"];
    assert_eq!(text, expected.join("\n"));
}

#[test]
fn accented_tokens_are_measured_in_characters_not_bytes() {
    // "niño" is 4 characters but 5 bytes; "España" 6 and 7.
    let weights = array![[1.0_f32, 0.0], [0.0, 1.0]];
    let text = shades(&weights, &["niño", "sí"], &["España", "ñ"]).unwrap();
    // Label column 6 wide ("España"), source columns 4 wide ("niño"), and
    // each cell's three shade characters right-aligned in them.
    let expected = ["       niño   sí", "España  ███  ···", "ñ       ···  ███"];
    assert_eq!(text, expected.join("\n"));
}

#[test]
fn out_of_range_weights_are_clamped_for_shading_and_printed_as_is() {
    let weights = array![[-0.25_f32, 1.5]];
    let shades = shades(&weights, &["a", "b"], &["t"]).unwrap();
    assert_eq!(shades, "    a   b\nt ··· ███");
    let numbers =
        format_attention(weights.view(), &["a", "b"], &["t"], &TextOptions::default().cells(CellStyle::Number))
            .unwrap();
    assert_eq!(numbers, "      a     b\nt -0.25  1.50");
}

#[test]
fn shade_thresholds_are_fifths() {
    let cases = [
        (0.0, '·'),
        (0.1999, '·'),
        (0.2, '░'),
        (0.3999, '░'),
        (0.4, '▒'),
        (0.5999, '▒'),
        (0.6, '▓'),
        (0.7999, '▓'),
        (0.8, '█'),
        (1.0, '█'),
    ];
    for (w, want) in cases {
        assert_eq!(shade(w), want, "weight {w}");
    }
}

#[test]
fn mismatched_sizes_name_the_side_and_both_counts() {
    let weights = Array2::<f32>::zeros((2, 3));
    let err = shades(&weights, &["a", "b"], &["x", "y"]).unwrap_err();
    assert!(matches!(err, Error::TokenCount { side: "source", expected: 3, got: 2, .. }));
    let err = shades(&weights, &["a", "b", "c"], &["x"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "1 target tokens given, but the weights have 2 rows (shape (tgt_len, src_len) = (2, 3))"
    );
}

#[test]
fn empty_and_non_finite_weights_are_errors() {
    let none: [&str; 0] = [];
    let empty = Array2::<f32>::zeros((0, 2));
    let err = shades(&empty, &["a", "b"], &none).unwrap_err();
    assert!(matches!(err, Error::EmptyWeights { tgt_len: 0, src_len: 2 }));

    let weights = array![[0.5_f32, 0.5], [f32::NAN, 1.0]];
    let err = shades(&weights, &["a", "b"], &["x", "y"]).unwrap_err();
    assert_eq!(err.to_string(), "the weight at row 1, column 0 is NaN, not a finite number");
}
