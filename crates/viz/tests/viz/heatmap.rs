//! PNG heatmaps: documented size, decodable files, exact colours at known
//! cells, and pictures that follow the weights.
//!
//! Reference colours are matplotlib's viridis as published (`#440154` at 0,
//! `#21918c` at 0.5, `#fde725` at 1), not values read back from this crate.

use std::path::PathBuf;

use image::{Rgb, RgbImage};
use lingo_viz::{Error, HeatmapOptions, plot_attention, render_attention};
use ndarray::{Array2, array};

const VIRIDIS_0: Rgb<u8> = Rgb([0x44, 0x01, 0x54]);
const VIRIDIS_HALF: Rgb<u8> = Rgb([0x21, 0x91, 0x8c]);
const VIRIDIS_1: Rgb<u8> = Rgb([0xfd, 0xe7, 0x25]);

/// A file in the temp dir that is unique to this test process.
fn temp_png(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("lingo-viz-test-{}-{name}.png", std::process::id()))
}

/// Centre pixel of cell (i, j) for the default options (c = 32, f = 14,
/// w = ceil(0.65 · 14) = 10): the grid starts at
/// x = 14 + 10·lt + 7, y = 14 + title + 10·ls + 7.
fn cell_centre(lt: u32, ls: u32, title: u32, (i, j): (u32, u32)) -> (u32, u32) {
    (21 + 10 * lt + 32 * j + 16, 21 + title + 10 * ls + 32 * i + 16)
}

#[test]
fn size_follows_the_documented_formula() {
    let weights = Array2::<f32>::zeros((3, 5));
    let src = ["<sos>", "a", "cat", "sees", "<eos>"]; // ls = 5
    let tgt = ["gato", "un", "ve"]; // lt = 4
    let image = render_attention(weights.view(), &src, &tgt, &HeatmapOptions::default()).unwrap();
    // width  = 14 + 40 + 7 + 5·32 + (28 + 7 + 30) + 14 = 300
    // height = 14 + 50 + 7 + 3·32 + 14 = 181
    assert_eq!(image.dimensions(), (300, 181));

    let titled = render_attention(weights.view(), &src, &tgt, &HeatmapOptions::default().title("t")).unwrap();
    assert_eq!(titled.dimensions(), (300, 181 + 28));

    // f = 10: w = ceil(6.5) = 7, f/2 = 5; no colour bar; c = 20.
    let options = HeatmapOptions::default().font_size(10).cell_size(20).colorbar(false);
    let small = render_attention(weights.view(), &src, &tgt, &options).unwrap();
    // width  = 10 + 28 + 5 + 100 + 10 = 153; height = 10 + 35 + 5 + 60 + 10 = 120
    assert_eq!(small.dimensions(), (153, 120));
}

#[test]
fn cells_have_the_viridis_colour_of_their_weight() {
    let weights = array![[0.0_f32, 0.5, 1.0], [-3.0, 0.5, 7.0]];
    let src = ["a", "b", "c"];
    let tgt = ["x", "y"];
    let image = render_attention(weights.view(), &src, &tgt, &HeatmapOptions::default()).unwrap();
    let expected = [[VIRIDIS_0, VIRIDIS_HALF, VIRIDIS_1], [VIRIDIS_0, VIRIDIS_HALF, VIRIDIS_1]];
    for (i, row) in expected.iter().enumerate() {
        for (j, &colour) in row.iter().enumerate() {
            let (x, y) = cell_centre(1, 1, 0, (i as u32, j as u32));
            assert_eq!(*image.get_pixel(x, y), colour, "cell ({i}, {j})");
            // The whole cell is one colour: check its corners too.
            assert_eq!(*image.get_pixel(x - 16, y - 16), colour);
            assert_eq!(*image.get_pixel(x + 15, y + 15), colour);
        }
    }
}

#[test]
fn the_file_decodes_to_the_rendered_picture() {
    let weights = array![[0.9_f32, 0.1], [0.3, 0.7]];
    let src = ["el", "niño"];
    let tgt = ["the", "child"];
    let options = HeatmapOptions::default().title("decode").show_values(true);
    let path = temp_png("decode");
    plot_attention(weights.view(), &src, &tgt, &path, &options).unwrap();
    let decoded = image::open(&path).unwrap().to_rgb8();
    std::fs::remove_file(&path).ok();
    let rendered = render_attention(weights.view(), &src, &tgt, &options).unwrap();
    assert_eq!(decoded.dimensions(), rendered.dimensions());
    assert_eq!(decoded, rendered);
}

/// Pixels that differ between two pictures of the same size.
fn diff(a: &RgbImage, b: &RgbImage) -> Vec<(u32, u32)> {
    assert_eq!(a.dimensions(), b.dimensions());
    a.enumerate_pixels().filter(|&(x, y, p)| p != b.get_pixel(x, y)).map(|(x, y, _)| (x, y)).collect()
}

#[test]
fn changing_one_weight_changes_exactly_its_cell() {
    let before = array![[0.2_f32, 0.8], [0.6, 0.4]];
    let mut after = before.clone();
    after[[1, 0]] = 0.05;
    let src = ["a", "b"];
    let tgt = ["x", "y"];
    let options = HeatmapOptions::default();
    let a = render_attention(before.view(), &src, &tgt, &options).unwrap();
    let b = render_attention(after.view(), &src, &tgt, &options).unwrap();
    let changed = diff(&a, &b);
    assert_eq!(changed.len(), 32 * 32);
    let (cx, cy) = cell_centre(1, 1, 0, (1, 0));
    assert!(changed.iter().all(|&(x, y)| x.abs_diff(cx) <= 16 && y.abs_diff(cy) <= 16));
}

#[test]
fn values_and_labels_put_ink_on_the_picture() {
    let weights = array![[0.1_f32, 0.9]];
    let src = ["a", "b"];
    let tgt = ["x"];
    let plain = render_attention(weights.view(), &src, &tgt, &HeatmapOptions::default()).unwrap();
    let numbers = render_attention(weights.view(), &src, &tgt, &HeatmapOptions::default().show_values(true)).unwrap();
    // Values are drawn only inside the cells.
    let changed = diff(&plain, &numbers);
    assert!(changed.len() > 20, "only {} pixels changed", changed.len());
    let grid = (21 + 10, 21 + 10); // lt = ls = 1
    assert!(changed.iter().all(|&(x, y)| x >= grid.0 && x < grid.0 + 64 && y >= grid.1 && y < grid.1 + 32));
}

#[test]
fn accents_are_drawn() {
    // Same lengths, same letters but for the accent: only the label differs,
    // and the accent sits above the letters, inside the row-label band.
    let weights = array![[1.0_f32]];
    let plain = render_attention(weights.view(), &["x"], &["nino"], &HeatmapOptions::default()).unwrap();
    let accented = render_attention(weights.view(), &["x"], &["niño"], &HeatmapOptions::default()).unwrap();
    let changed = diff(&plain, &accented);
    assert!(!changed.is_empty(), "ñ was drawn like n");
    let grid_x = 21 + 10 * 4;
    assert!(changed.iter().all(|&(x, _)| x < grid_x));
}

#[test]
fn thirty_by_thirty_renders_at_its_documented_size() {
    let n = 30;
    let src: Vec<String> = (0..n).map(|i| format!("señal{i:02}")).collect(); // 7 chars
    let tgt: Vec<String> = (0..n).map(|i| format!("étape{i:02}")).collect(); // 7 chars
    let weights = Array2::from_shape_fn((n, n), |(i, j)| if i == j { 0.9 } else { 0.1 / 29.0 });
    let image = render_attention(weights.view(), &src, &tgt, &HeatmapOptions::default()).unwrap();
    // 100 + 10·7 + 32·30 and 35 + 10·7 + 32·30
    assert_eq!(image.dimensions(), (1130, 1065));
    let (x, y) = cell_centre(7, 7, 0, (29, 29));
    assert_eq!(*image.get_pixel(x, y), lingo_viz::viridis(0.9));
}

#[test]
fn the_colour_bar_runs_from_one_at_the_top_to_zero_at_the_bottom() {
    let weights = Array2::<f32>::zeros((6, 2));
    let tgt = ["a", "b", "c", "d", "e", "f"];
    let image = render_attention(weights.view(), &["p", "q"], &tgt, &HeatmapOptions::default()).unwrap();
    // Bar at x = grid_x + 2·32 + f, 14 wide; grid from y = 31 to 31 + 192.
    let bar_x = 31 + 64 + 14 + 7;
    assert_eq!(*image.get_pixel(bar_x, 31), VIRIDIS_1);
    assert_eq!(*image.get_pixel(bar_x, 31 + 191), VIRIDIS_0);
    // Pixel row r shows weight 1 − (r + 0.5)/192: row 95 is 0.5026, which
    // is in viridis' 0.5 entry ([0.5, 0.5039) for a 256-colour map).
    assert_eq!(*image.get_pixel(bar_x, 31 + 95), VIRIDIS_HALF);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let weights = array![[0.5_f32, 0.5]];
    let options = HeatmapOptions::default();
    assert!(matches!(
        render_attention(weights.view(), &["a"], &["x"], &options),
        Err(Error::TokenCount { side: "source", .. })
    ));
    let nan = array![[0.5_f32, f32::INFINITY]];
    assert!(matches!(
        render_attention(nan.view(), &["a", "b"], &["x"], &options),
        Err(Error::NonFiniteWeight { row: 0, col: 1, .. })
    ));
    assert!(matches!(
        render_attention(weights.view(), &["a", "b"], &["x"], &options.clone().cell_size(0)),
        Err(Error::InvalidOption { option: "cell_size", .. })
    ));
    let huge = Array2::<f32>::zeros((1, 300_000));
    let many: Vec<&str> = vec!["t"; 300_000];
    assert!(matches!(render_attention(huge.view(), &many, &["x"], &options), Err(Error::TooLarge { .. })));
}

#[test]
fn write_errors_name_the_path() {
    let weights = array![[1.0_f32]];
    let path = std::env::temp_dir().join("lingo-viz-no-such-dir").join("deeper").join("x.png");
    let err = plot_attention(weights.view(), &["a"], &["b"], &path, &HeatmapOptions::default()).unwrap_err();
    assert!(matches!(err, Error::Write { .. }));
    assert!(err.to_string().contains("lingo-viz-no-such-dir/deeper/x.png"), "{err}");
}

#[test]
fn a_grid_tiles_each_panel_exactly_where_it_belongs() {
    // Two layers of three heads, each panel with its own weights.
    let weights = ndarray::Array4::from_shape_fn((2, 3, 2, 3), |(l, h, i, j)| ((l * 3 + h + i + j) % 4) as f32 / 3.0);
    let (src, tgt) = (["a", "b", "c"], ["x", "y"]);
    let options = HeatmapOptions::default();
    let title = |l: usize, h: usize| format!("layer {} head {}", l + 1, h + 1);
    let grid = lingo_viz::render_attention_grid(weights.view(), &src, &tgt, title, &options).unwrap();
    let gap = options.font_size;
    for (l, h) in [(0, 0), (1, 2), (0, 1)] {
        let panel = weights.slice(ndarray::s![l, h, .., ..]);
        let one = lingo_viz::render_attention(panel, &src, &tgt, &options.clone().title(title(l, h))).unwrap();
        let (x0, y0) = (h as u32 * (one.width() + gap), l as u32 * (one.height() + gap));
        for (x, y, pixel) in one.enumerate_pixels() {
            assert_eq!(grid.get_pixel(x0 + x, y0 + y), pixel, "panel ({l}, {h}) at ({x}, {y})");
        }
    }
    let huge = ndarray::Array4::from_elem((40, 40, 30, 30), 0.5_f32);
    let words: Vec<String> = (0..30).map(|i| format!("w{i}")).collect();
    let err =
        lingo_viz::render_attention_grid(huge.view(), &words, &words, |_, _| String::new(), &options).unwrap_err();
    assert!(matches!(err, lingo_viz::Error::TooLarge { .. }), "{err}");
}
