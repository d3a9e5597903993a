//! Line charts: documented size, decodable files, series colours, and
//! pictures that follow the data.
//!
//! Reference colours are the published Okabe–Ito values (#0072B2 blue,
//! #D55E00 vermillion, #009E73 bluish green), not values read back from the
//! crate.

use image::{Rgb, RgbImage};
use lingo_viz::{Error, LineOptions, Series, plot_lines, render_lines};

const BLUE: Rgb<u8> = Rgb([0x00, 0x72, 0xb2]);
const VERMILLION: Rgb<u8> = Rgb([0xd5, 0x5e, 0x00]);
const GREEN: Rgb<u8> = Rgb([0x00, 0x9e, 0x73]);

/// Rows in column `x` whose pixel is exactly `colour`.
fn rows_with(image: &RgbImage, x: u32, colour: Rgb<u8>) -> Vec<u32> {
    (0..image.height()).filter(|&y| *image.get_pixel(x, y) == colour).collect()
}

fn flat(label: &str, y: f32) -> Series {
    Series::new(label, &[y; 10])
}

#[test]
fn the_picture_has_the_requested_size() {
    let series = [Series::new("loss", &[2.0, 1.0, 0.5])];
    assert_eq!(render_lines(&series, &LineOptions::default()).unwrap().dimensions(), (800, 480));
    let options = LineOptions::default().size(640, 360).title("t").y_label("y");
    assert_eq!(render_lines(&series, &options).unwrap().dimensions(), (640, 360));
}

#[test]
fn series_take_the_palette_in_order_and_sit_at_their_values() {
    let series = [flat("high", 1.5), flat("low", 0.5), flat("middle", 1.0)];
    let options = LineOptions::default().y_range(0.0, 2.0).markers(false);
    let image = render_lines(&series, &options).unwrap();
    // A column in the middle of the plot, away from the legend.
    let x = 300;
    let (high, low, middle) =
        (rows_with(&image, x, BLUE), rows_with(&image, x, VERMILLION), rows_with(&image, x, GREEN));
    for rows in [&high, &low, &middle] {
        // A 2-pixel line has one or two fully covered rows per column.
        assert!((1..=2).contains(&rows.len()), "{rows:?}");
    }
    // Pixel rows grow downwards: the larger value is higher up, and 1.0 lies
    // halfway between 0.5 and 1.5.
    assert!(high[0] < middle[0] && middle[0] < low[0]);
    let halfway = (f64::from(high[0]) + f64::from(low[0])) / 2.0;
    assert!((f64::from(middle[0]) - halfway).abs() <= 1.0);
}

#[test]
fn a_set_colour_overrides_the_palette_and_dashed_lines_have_gaps() {
    // Two series of one model: both vermillion, the second dashed.
    let series = [flat("train", 1.5).color(VERMILLION), flat("validation", 0.5).color(VERMILLION).dashed()];
    let image = render_lines(&series, &LineOptions::default().y_range(0.0, 2.0).markers(false)).unwrap();
    assert!(!image.pixels().any(|p| *p == BLUE), "no series takes the palette's first colour");
    // Along the plot's middle, columns on the solid line all have its colour;
    // the dashed one has runs with and runs without.
    let (solid_row, dashed_row) =
        (rows_with(&image, 300, VERMILLION)[0], *rows_with(&image, 300, VERMILLION).last().unwrap());
    let inked = |row: u32| (200..500).filter(|&x| *image.get_pixel(x, row) == VERMILLION).count();
    assert_eq!(inked(solid_row), 300);
    let dashed = inked(dashed_row);
    assert!((100..250).contains(&dashed), "{dashed} of 300 columns inked");
}

#[test]
fn the_file_decodes_to_the_rendered_picture() {
    let series = [Series::new("train", &[3.0, 1.0, 0.7]), Series::new("val", &[3.1, 1.4, 1.1])];
    let options = LineOptions::default().title("loss").y_label("nats");
    let path = std::env::temp_dir().join(format!("lingo-viz-test-{}-lines.png", std::process::id()));
    plot_lines(&series, &path, &options).unwrap();
    let decoded = image::open(&path).unwrap().to_rgb8();
    std::fs::remove_file(&path).ok();
    assert_eq!(decoded, render_lines(&series, &options).unwrap());
}

#[test]
fn different_data_gives_a_different_picture() {
    let options = LineOptions::default();
    let a = render_lines(&[Series::new("s", &[1.0, 2.0, 3.0])], &options).unwrap();
    let b = render_lines(&[Series::new("s", &[1.0, 2.5, 3.0])], &options).unwrap();
    assert_ne!(a, b);
    // Same data, same picture: rendering is deterministic.
    assert_eq!(a, render_lines(&[Series::new("s", &[1.0, 2.0, 3.0])], &options).unwrap());
}

#[test]
fn single_points_and_flat_lines_still_draw() {
    let image = render_lines(&[Series::new("one", &[0.25])], &LineOptions::default().markers(false)).unwrap();
    assert!(image.pixels().any(|p| *p == BLUE), "a lone point is drawn as a dot");
    let image = render_lines(&[flat("flat", 2.0)], &LineOptions::default()).unwrap();
    assert!(!rows_with(&image, 300, BLUE).is_empty());
}

#[test]
fn bad_series_and_options_are_errors_naming_the_problem() {
    let options = LineOptions::default();
    assert!(matches!(render_lines(&[], &options), Err(Error::InvalidOption { option: "series", .. })));

    let err = render_lines(&[Series::new("ok", &[1.0]), Series::new("empty", &[])], &options).unwrap_err();
    assert_eq!(err.to_string(), "series 1 (\"empty\"): has no points");

    let err = render_lines(&[Series::new("loss", &[1.0, f32::NAN])], &options).unwrap_err();
    assert_eq!(err.to_string(), "series 0 (\"loss\"): point 1 is (2, NaN), not finite");

    let series = [Series::new("s", &[1.0, 2.0])];
    assert!(matches!(
        render_lines(&series, &options.clone().y_range(1.0, 1.0)),
        Err(Error::InvalidOption { option: "y_range", .. })
    ));
    assert!(matches!(
        render_lines(&series, &options.clone().size(10, 10)),
        Err(Error::InvalidOption { option: "width", .. })
    ));
    assert!(matches!(
        render_lines(&series, &options.clone().size(200, 150).font_size(64)),
        Err(Error::InvalidOption { .. })
    ));

    let path = std::env::temp_dir().join("lingo-viz-missing-dir").join("chart.png");
    let err = plot_lines(&series, &path, &options).unwrap_err();
    assert!(err.to_string().contains("lingo-viz-missing-dir/chart.png"), "{err}");
}

#[test]
fn the_legend_shows_each_series_colour_in_the_top_right() {
    // Both lines run low (y = 0.2 and 0.3 of 0..2), so in the top quarter of
    // the picture only the legend's samples can carry their colours.
    let series = [flat("train", 0.2), flat("validation", 0.3)];
    let image = render_lines(&series, &LineOptions::default().y_range(0.0, 2.0)).unwrap();
    for colour in [BLUE, VERMILLION] {
        let spots: Vec<(u32, u32)> =
            image.enumerate_pixels().filter(|&(_, y, p)| y < 120 && *p == colour).map(|(x, y, _)| (x, y)).collect();
        assert!(!spots.is_empty(), "no legend sample in {colour:?}");
        assert!(spots.iter().all(|&(x, _)| x > 400), "legend sample left of centre");
    }
}

#[test]
fn axis_labels_draw_where_they_belong() {
    let series = [Series::new("s", &[1.0, 2.0, 3.0])];
    let bare = LineOptions::default();
    let base = render_lines(&series, &bare).unwrap();
    // The y label sits in the left margin, written upwards.
    let labelled = render_lines(&series, &bare.clone().y_label("loss")).unwrap();
    let moved: Vec<u32> = base
        .enumerate_pixels()
        .filter(|&(x, y, p)| x < 40 && p != labelled.get_pixel(x, y))
        .map(|(_, y, _)| y)
        .collect();
    assert!(!moved.is_empty(), "the y label drew nothing in the left margin");
    // A different x label changes only the bottom strip.
    let other = render_lines(&series, &bare.clone().x_label("step")).unwrap();
    assert!(base.enumerate_pixels().filter(|&(x, y, p)| p != other.get_pixel(x, y)).all(|(_, y, _)| y > 480 - 40));
}
