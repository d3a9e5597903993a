//! SVG pictures, read back with a real XML parser: one element per cell
//! and per point with the right hover text, escaped tokens, the PNG's
//! size, nothing outside the file, and clear errors.
//!
//! Reference colours are matplotlib's viridis as published (`#440154` at 0,
//! `#21918c` at 0.5, `#fde725` at 1) and the published Okabe–Ito values
//! (#0072B2, #D55E00), not values read back from this crate.

use lingo_viz::{
    Error, HeatmapOptions, LineOptions, Series, attention_grid_svg, attention_svg, lines_svg, render_attention,
    render_attention_grid, save_svg,
};
use ndarray::{Array2, Array4, array};
use roxmltree::Node;

use crate::common::{attr, cells, elements, parse, texts, title_of};

/// An SVG stands alone (see [`crate::common::assert_self_contained`]) and has no
/// style sheet, which would leak into any page it is inlined in.
fn assert_self_contained(svg: &str) {
    crate::common::assert_self_contained(svg);
    assert!(!svg.contains("<style"), "an SVG with a style sheet");
}

#[test]
fn one_cell_per_weight_with_its_value_on_hover() {
    let weights = array![[0.25_f32, 0.5, 0.25], [0.0, 1.0, 0.0]];
    let svg = attention_svg(weights.view(), &["a", "cat", "."], &["gato", "un"], &HeatmapOptions::default()).unwrap();
    let doc = parse(&svg);
    let cells = cells(doc.root_element());
    assert_eq!(cells.len(), 6);
    let titles: Vec<String> = cells.iter().map(|c| title_of(*c).unwrap()).collect();
    let expected = [
        "gato → a: 0.250",
        "gato → cat: 0.500",
        "gato → .: 0.250",
        "un → a: 0.000",
        "un → cat: 1.000",
        "un → .: 0.000",
    ];
    assert_eq!(titles, expected);
    let fills: Vec<&str> = cells.iter().map(|c| attr(*c, "fill")).collect();
    assert_eq!(fills[1], "#21918c");
    assert_eq!(fills[3], "#440154");
    assert_eq!(fills[4], "#fde725");
    // Cells tile the grid row by row, one cell_size apart.
    let at = |k: usize| (attr(cells[k], "x").parse::<i64>().unwrap(), attr(cells[k], "y").parse::<i64>().unwrap());
    assert_eq!((at(1).0 - at(0).0, at(1).1 - at(0).1), (32, 0));
    assert_eq!((at(3).0 - at(0).0, at(3).1 - at(0).1), (0, 32));
    assert!(cells.iter().all(|c| attr(*c, "width") == "32" && attr(*c, "height") == "32"));
}

#[test]
fn the_picture_has_the_png_heatmap_size_and_a_matching_view_box() {
    let weights = Array2::<f32>::zeros((3, 5));
    let src = ["<sos>", "a", "cat", "sees", "<eos>"];
    let tgt = ["gato", "un", "ve"];
    for options in [HeatmapOptions::default(), HeatmapOptions::default().title("t").colorbar(false).cell_size(20)] {
        let svg = attention_svg(weights.view(), &src, &tgt, &options).unwrap();
        let png = render_attention(weights.view(), &src, &tgt, &options).unwrap();
        let root = parse(&svg).root_element().attribute("viewBox").map(str::to_string);
        let (w, h) = png.dimensions();
        assert_eq!(root.as_deref(), Some(format!("0 0 {w} {h}").as_str()));
        assert!(svg.starts_with(&format!(r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}""#)));
    }
}

#[test]
fn tokens_are_labels_escaped_and_read_back_as_written() {
    let src = ["<unk>", "Tom & Jerry", "\"quoted\"", "it's"];
    let tgt = ["<sos>", "niño", "a<b>c"];
    let weights = Array2::from_elem((3, 4), 0.25_f32);
    let svg = attention_svg(weights.view(), &src, &tgt, &HeatmapOptions::default()).unwrap();
    assert!(svg.contains("&lt;unk&gt;") && svg.contains("Tom &amp; Jerry") && svg.contains("&quot;quoted&quot;"));
    assert!(!svg.contains("<unk>"));
    let doc = parse(&svg);
    let labels = texts(doc.root_element());
    for token in src.iter().chain(&tgt) {
        assert_eq!(labels.iter().filter(|l| l == token).count(), 1, "label {token:?} in {labels:?}");
    }
    // Source tokens are the rotated ones.
    let rotated: Vec<&str> = elements(doc.root_element(), "text")
        .into_iter()
        .filter(|t| t.attribute("transform").is_some_and(|v| v.contains("rotate(-90)")))
        .map(|t| t.text().unwrap())
        .collect();
    assert_eq!(rotated, src);
    assert_eq!(title_of(cells(doc.root_element())[1]).unwrap(), "<sos> → Tom & Jerry: 0.250");
}

#[test]
fn control_characters_in_tokens_still_give_well_formed_xml() {
    let weights = array![[1.0_f32]];
    let svg = attention_svg(weights.view(), &["bell\u{7}"], &["nul\u{0}"], &HeatmapOptions::default()).unwrap();
    let doc = parse(&svg);
    assert!(texts(doc.root_element()).contains(&"bell\u{fffd}".to_string()));
}

#[test]
fn title_values_and_colour_bar_follow_the_options() {
    let weights = array![[0.25_f32, 0.75]];
    let (src, tgt) = (["a", "b"], ["x"]);
    let plain = attention_svg(weights.view(), &src, &tgt, &HeatmapOptions::default().colorbar(false)).unwrap();
    assert_eq!(texts(parse(&plain).root_element()), ["x", "a", "b"]);

    let options = HeatmapOptions::default().title("Bahdanau & Luong").show_values(true);
    let full = attention_svg(weights.view(), &src, &tgt, &options).unwrap();
    let labels = texts(parse(&full).root_element());
    assert_eq!(labels[0], "Bahdanau & Luong");
    assert!(labels.contains(&"0.25".to_string()) && labels.contains(&"0.75".to_string()), "{labels:?}");
    // The colour bar: ticks 0.0 to 1.0 and bands from yellow (top) to purple.
    assert!(labels.contains(&"0.0".to_string()) && labels.contains(&"1.0".to_string()), "{labels:?}");
    let doc = parse(&full);
    let bands: Vec<&str> = elements(doc.root_element(), "rect")
        .into_iter()
        .filter(|r| title_of(*r).is_none() && r.attribute("x").is_some()) // not the background
        .map(|r| attr(r, "fill"))
        .collect();
    assert_eq!(bands.len(), 32);
    assert_eq!((bands[0], bands[31]), ("#fde725", "#440154"));
}

#[test]
fn a_grid_holds_one_heatmap_per_layer_and_head() {
    let (rows, columns) = (2, 4);
    let weights = Array4::from_shape_fn((rows, columns, 2, 3), |(l, h, i, j)| ((l * 4 + h + i + j) % 4) as f32 / 4.0);
    let (src, tgt) = (["a", "b", "c"], ["x", "y"]);
    let options = HeatmapOptions::default();
    let title = |l: usize, h: usize| format!("layer {} head {}", l + 1, h + 1);
    let svg = attention_grid_svg(weights.view(), &src, &tgt, title, &options).unwrap();
    assert_self_contained(&svg);
    let doc = parse(&svg);
    let panels: Vec<Node> = doc.root_element().children().filter(|n| n.tag_name().name() == "g").collect();
    assert_eq!(panels.len(), rows * columns);
    for (k, panel) in panels.iter().enumerate() {
        let (l, h) = (k / columns, k % columns);
        assert_eq!(texts(*panel)[0], title(l, h));
        let titles: Vec<String> = cells(*panel).iter().map(|c| title_of(*c).unwrap()).collect();
        assert_eq!(titles.len(), 6);
        assert_eq!(titles[0], format!("x → a: {:.3}", weights[[l, h, 0, 0]]));
        assert_eq!(titles[5], format!("y → c: {:.3}", weights[[l, h, 1, 2]]));
    }
    // The same overall size as the PNG grid, and the panels where its are.
    let png = render_attention_grid(weights.view(), &src, &tgt, title, &options).unwrap();
    let one = attention_svg(weights.slice(ndarray::s![0, 0, .., ..]), &src, &tgt, &options.clone().title("t")).unwrap();
    let width: u32 = attr(parse(&one).root_element(), "width").parse().unwrap();
    assert_eq!(attr(doc.root_element(), "viewBox"), format!("0 0 {} {}", png.width(), png.height()));
    assert_eq!(attr(panels[5], "transform"), format!("translate({} {})", width + 14, png.height() / 2 + 7));
}

#[test]
fn grid_errors_match_the_png_grid() {
    let words: Vec<String> = (0..30).map(|i| format!("w{i}")).collect();
    let huge = Array4::from_elem((40, 40, 30, 30), 0.5_f32);
    let err = attention_grid_svg(huge.view(), &words, &words, |_, _| String::new(), &HeatmapOptions::default());
    assert!(matches!(err, Err(Error::TooLarge { .. })), "{err:?}");
    // A NaN in a late panel is found, with its row and column.
    let mut weights = Array4::from_elem((1, 3, 1, 2), 0.5_f32);
    weights[[0, 2, 0, 1]] = f32::NAN;
    let err = attention_grid_svg(weights.view(), &["a", "b"], &["x"], |_, h| h.to_string(), &HeatmapOptions::default())
        .unwrap_err();
    assert_eq!(err.to_string(), "the weight at row 0, column 1 is NaN, not a finite number");
    let empty = Array4::<f32>::zeros((0, 3, 1, 2));
    let svg = attention_grid_svg(empty.view(), &["a", "b"], &["x"], |_, _| String::new(), &HeatmapOptions::default())
        .unwrap();
    assert_eq!(attr(parse(&svg).root_element(), "viewBox"), "0 0 0 0");
}

#[test]
fn bad_heatmap_input_is_an_error_with_a_clear_message() {
    let weights = array![[0.5_f32, 0.5], [0.5, 0.5]];
    let options = HeatmapOptions::default();
    let err = attention_svg(weights.view(), &["a"], &["x", "y"], &options).unwrap_err();
    assert_eq!(
        err.to_string(),
        "1 source tokens given, but the weights have 2 columns (shape (tgt_len, src_len) = (2, 2))"
    );
    let err = attention_svg(weights.view(), &["a", "b"], &["x"], &options).unwrap_err();
    assert!(matches!(err, Error::TokenCount { side: "target", expected: 2, got: 1, .. }), "{err}");
    let nan = array![[0.5_f32, 0.5], [f32::NAN, 0.5]];
    let err = attention_svg(nan.view(), &["a", "b"], &["x", "y"], &options).unwrap_err();
    assert_eq!(err.to_string(), "the weight at row 1, column 0 is NaN, not a finite number");
    let empty = Array2::<f32>::zeros((0, 2));
    let err = attention_svg(empty.view(), &["a", "b"], &[] as &[&str], &options).unwrap_err();
    assert!(matches!(err, Error::EmptyWeights { .. }), "{err}");
    let err = attention_svg(weights.view(), &["a", "b"], &["x", "y"], &options.clone().font_size(2)).unwrap_err();
    assert!(matches!(err, Error::InvalidOption { option: "font_size", .. }), "{err}");
}

#[test]
fn heatmaps_are_self_contained() {
    let weights = array![[0.1_f32, 0.9], [0.7, 0.3]];
    let options = HeatmapOptions::default().title("t").show_values(true);
    assert_self_contained(&attention_svg(weights.view(), &["a", "b"], &["x", "y"], &options).unwrap());
}

#[test]
fn a_line_chart_has_one_polyline_per_series_in_palette_order() {
    let series = [
        Series::new("train", &[2.5, 1.5, 1.25, 1.0]),
        Series::new("val", &[2.75, 2.0, 1.75, 1.5]),
        Series::new("test <held out>", &[2.0]),
    ];
    let options = LineOptions::default().title("loss").y_label("nats");
    let svg = lines_svg(&series, &options).unwrap();
    assert_self_contained(&svg);
    let doc = parse(&svg);
    let root = doc.root_element();
    assert_eq!(attr(root, "viewBox"), "0 0 800 480");
    // A lone point has no line, only its dot.
    let polylines = elements(root, "polyline");
    assert_eq!(polylines.len(), 2);
    assert_eq!(attr(polylines[0], "stroke"), "#0072b2");
    assert_eq!(attr(polylines[1], "stroke"), "#d55e00");
    assert_eq!(attr(polylines[0], "points").split(' ').count(), 4);
    // The first series falls: its y pixel grows point by point.
    let ys: Vec<f32> =
        attr(polylines[0], "points").split(' ').map(|p| p.split(',').nth(1).unwrap().parse().unwrap()).collect();
    assert!(ys.windows(2).all(|w| w[1] > w[0]), "{ys:?}");

    let hovers: Vec<String> = elements(root, "circle").into_iter().filter_map(title_of).collect();
    assert_eq!(hovers.len(), 4 + 4 + 1);
    assert_eq!(hovers[2], "train: 1.25 at epoch 3");
    assert_eq!(hovers[8], "test <held out>: 2 at epoch 1");
    let labels = texts(root);
    for expected in ["loss", "nats", "epoch", "train", "val", "test <held out>"] {
        assert!(labels.iter().any(|l| l == expected), "no label {expected:?} in {labels:?}");
    }
}

#[test]
fn without_markers_the_points_keep_their_hover_text_but_no_dot() {
    let series = [Series::from_points("lr", vec![(0.0, 1e-3), (500.0, 5e-4)])];
    let svg = lines_svg(&series, &LineOptions::default().markers(false).x_label("step")).unwrap();
    let doc = parse(&svg);
    let circles: Vec<Node> =
        elements(doc.root_element(), "circle").into_iter().filter(|c| title_of(*c).is_some()).collect();
    assert_eq!(circles.len(), 2);
    assert_eq!(title_of(circles[1]).unwrap(), "lr: 0.0005 at step 500");
    assert_eq!(circles[0].parent().unwrap().attribute("fill-opacity"), Some("0"));
}

#[test]
fn bad_series_are_errors_with_clear_messages() {
    let options = LineOptions::default();
    let err = lines_svg(&[Series::new("val", &[1.0, f32::NAN])], &options).unwrap_err();
    assert_eq!(err.to_string(), "series 0 (\"val\"): point 1 is (2, NaN), not finite");
    let err = lines_svg(&[], &options).unwrap_err();
    assert_eq!(err.to_string(), "option `series`: no series to draw");
    let err = lines_svg(&[Series::new("a", &[1.0])], &options.clone().size(10, 10)).unwrap_err();
    assert!(matches!(err, Error::InvalidOption { option: "width", .. }), "{err}");
}

#[test]
fn save_svg_writes_the_text_and_names_the_path_on_failure() {
    let dir = std::env::temp_dir().join(format!("lingo-viz-test-svg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("attention.svg");
    let svg = attention_svg(array![[1.0_f32]].view(), &["a"], &["b"], &HeatmapOptions::default()).unwrap();
    save_svg(&svg, &path).unwrap();
    save_svg(&svg, &path).unwrap(); // replacing an existing file works too
    assert_eq!(std::fs::read_to_string(&path).unwrap(), svg);
    // The temporary file is gone: only the picture is left.
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["attention.svg"]);
    std::fs::remove_dir_all(&dir).ok();

    let missing = std::env::temp_dir().join("lingo-viz-no-such-dir").join("deeper").join("x.svg");
    let err = save_svg(&svg, &missing).unwrap_err();
    assert!(matches!(err, Error::WriteFile { .. }));
    assert!(err.to_string().starts_with("cannot write "), "{err}");
    assert!(err.to_string().contains("lingo-viz-no-such-dir/deeper/x.svg"), "{err}");
}
