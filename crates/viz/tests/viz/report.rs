//! HTML reports, read back with a real XML parser: blocks in order, text
//! escaped, figures inline with their hover labels, tables cell by cell,
//! nothing outside the file, and a size that stays small.

use lingo_viz::{
    Error, HeatmapOptions, LineOptions, Report, Series, attention_grid_svg, attention_svg, format_attention, lines_svg,
};
use ndarray::{Array2, Array4};
use roxmltree::Node;

use crate::common::{assert_self_contained, attr, cells, elements, parse, texts, title_of};

/// Weights that put `peak` on the anti-diagonal and share the rest evenly.
fn anti_diagonal(n: usize, peak: f32) -> Array2<f32> {
    Array2::from_shape_fn((n, n), |(i, j)| if i + j == n - 1 { peak } else { (1.0 - peak) / (n - 1) as f32 })
}

/// The element children of `node`, as tag names.
fn child_tags(node: Node) -> Vec<String> {
    node.children().filter(Node::is_element).map(|n| n.tag_name().name().to_string()).collect()
}

#[test]
fn blocks_come_in_order_with_their_text_escaped() {
    let html = Report::new("Run <7> & friends")
        .heading("Attention \"heads\"")
        .subheading("it's layer 1")
        .paragraph("<eos> & <pad> are special.")
        .code("if a < b && c > d {\n    x\n}")
        .to_html();
    assert!(html.starts_with("<!DOCTYPE html>\n"));
    let doc = parse(&html);
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "html");
    assert_eq!(child_tags(root), ["head", "body"]);
    let head = root.first_element_child().unwrap();
    assert_eq!(child_tags(head), ["meta", "meta", "title", "style"]);
    assert_eq!(elements(head, "title")[0].text(), Some("Run <7> & friends"));
    let body = root.last_element_child().unwrap();
    assert_eq!(child_tags(body), ["h1", "h2", "h3", "p", "pre"]);
    let read: Vec<String> = body.descendants().filter_map(|n| n.text()).map(str::to_string).collect();
    assert!(read.contains(&"Attention \"heads\"".to_string()), "{read:?}");
    assert!(read.contains(&"<eos> & <pad> are special.".to_string()), "{read:?}");
    assert_eq!(elements(body, "code")[0].text(), Some("if a < b && c > d {\n    x\n}"));
    assert!(!html.contains("<eos>") && !html.contains("Run <7>"));
}

#[test]
fn figures_are_inline_svg_with_their_cells_and_captions() {
    let src = ["<sos>", "the", "cat", "<eos>"];
    let tgt = ["<sos>", "gato", "el", "<eos>"];
    let weights = anti_diagonal(4, 0.85);
    let svg = attention_svg(weights.view(), &src, &tgt, &HeatmapOptions::default().show_values(true)).unwrap();
    let curve = lines_svg(&[Series::new("train", &[2.0, 1.0, 0.5])], &LineOptions::default()).unwrap();
    let html = Report::new("r").figure(&svg, "Anti-diagonal & sharp.").figure(curve, "").to_html();
    assert!(!html.contains("http"), "the report keeps the SVG namespace URL");
    let doc = parse(&html);
    let figures = elements(doc.root_element(), "figure");
    assert_eq!(figures.len(), 2);
    assert_eq!(child_tags(figures[0]), ["svg", "figcaption"]);
    assert_eq!(elements(figures[0], "figcaption")[0].text(), Some("Anti-diagonal & sharp."));
    assert_eq!(child_tags(figures[1]), ["svg"], "an empty caption adds no figcaption");
    // The inline picture is the standalone one: same cells, same labels.
    let standalone = parse(&svg);
    let inline_titles: Vec<String> = cells(figures[0]).iter().filter_map(|c| title_of(*c)).collect();
    let file_titles: Vec<String> = cells(standalone.root_element()).iter().filter_map(|c| title_of(*c)).collect();
    assert_eq!(inline_titles.len(), 16);
    assert_eq!(inline_titles, file_titles);
    assert!(inline_titles.contains(&"<sos> → <eos>: 0.850".to_string()), "{inline_titles:?}");
    assert_eq!(texts(figures[0]), texts(standalone.root_element()));
    assert_eq!(attr(elements(figures[1], "svg")[0], "width"), "800");
}

#[test]
fn tables_hold_header_and_rows_cell_by_cell() {
    let rows = vec![
        vec!["dot".to_string(), "95.4%".to_string(), "0.21".to_string()],
        vec!["<none>".to_string(), "—".to_string(), "1.07".to_string()],
    ];
    let html = Report::new("r").table(&["attention", "alignment", "val loss"], rows.clone()).to_html();
    let doc = parse(&html);
    let cell_text = |name: &str| -> Vec<String> {
        elements(doc.root_element(), name).iter().map(|c| c.text().unwrap_or("").to_string()).collect()
    };
    assert_eq!(cell_text("th"), ["attention", "alignment", "val loss"]);
    assert_eq!(cell_text("td"), rows.concat());
    assert_eq!(elements(doc.root_element(), "tr").len(), 3);
    // Arrays of &str work as well as vectors of strings.
    let small = Report::new("r").table(&["k", "v"], [["a", "1"], ["b", "2"]]).to_html();
    assert_eq!(elements(parse(&small).root_element(), "td").len(), 4);
}

#[test]
fn a_report_refers_to_nothing_outside_itself_and_stays_small() {
    let words: Vec<String> = (0..12).map(|i| format!("w{i}")).collect();
    let heads =
        Array4::from_shape_fn((2, 4, 12, 12), |(l, h, i, j)| if (i + j + l + h) % 12 == 0 { 0.9 } else { 0.01 });
    let grid =
        attention_grid_svg(heads.view(), &words, &words, |l, h| format!("L{l} H{h}"), &HeatmapOptions::default())
            .unwrap();
    let mut report = Report::new("Everything").heading("Heads").figure(grid, "Eight heads.");
    for n in [8, 12, 16] {
        let src: Vec<String> = (0..n).map(|i| format!("src{i}")).collect();
        let weights = anti_diagonal(n, 0.7);
        let options = HeatmapOptions::default().show_values(true).title(format!("{n} tokens"));
        report = report.figure(attention_svg(weights.view(), &src, &src, &options).unwrap(), "Anti-diagonal.");
        let text = format_attention(weights.view(), &src, &src, &Default::default()).unwrap();
        report = report.code(text);
    }
    let curves = [Series::new("train", &[3.0; 50]), Series::new("val", &[3.5; 50])];
    let table: Vec<Vec<String>> =
        (0..100).map(|k| vec![k.to_string(), format!("{:.3}", 3.0 / (k + 1) as f32)]).collect();
    let html = report
        .figure(lines_svg(&curves, &LineOptions::default()).unwrap(), "Loss.")
        .table(&["epoch", "loss"], table)
        .to_html();

    assert_self_contained(&html);
    assert!(!html.contains("http"));
    assert_eq!(html.matches("<style").count(), 1, "one style sheet, in the head");
    // 1616 cells (464 with numbers), 100 points, 100 rows: about 240 kB,
    // far below the 2 MB a page may weigh; more means bloated markup.
    assert!(html.len() < 300_000, "{} bytes", html.len());
}

#[test]
fn save_writes_the_page_and_names_the_path_on_failure() {
    let report = Report::new("saved").paragraph("hello");
    let path = std::env::temp_dir().join(format!("lingo-viz-test-report-{}.html", std::process::id()));
    report.save(&path).unwrap();
    let written = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert_eq!(written, report.to_html());

    let missing = std::env::temp_dir().join("lingo-viz-no-such-dir").join("report.html");
    let err = report.save(&missing).unwrap_err();
    assert!(matches!(err, Error::WriteFile { .. }));
    assert!(err.to_string().contains("lingo-viz-no-such-dir/report.html"), "{err}");
}
