//! Reading a `--report` page back: checks every report must pass, and its
//! tables and hover titles.

use std::path::Path;

/// The page at `path`, checked for what every report must be: well-formed,
/// under 2 MB, with no script, link, URL or external source; and every SVG
/// file written beside it well-formed too. Returns the page's text.
pub fn read_report(path: &Path) -> String {
    let html = std::fs::read_to_string(path).unwrap();
    assert!(html.len() < 2 << 20, "{} is {} bytes", path.display(), html.len());
    for external in ["<script", "<link", "http:", "https:", "src=", "href=", "url(", "@import"] {
        assert!(!html.contains(external), "{} refers outside itself: {external}", path.display());
    }
    roxmltree::Document::parse(html.trim_start_matches("<!DOCTYPE html>")).expect("well-formed markup");
    let stem = path.file_stem().unwrap().to_str().unwrap();
    for entry in std::fs::read_dir(path.parent().unwrap()).unwrap() {
        let file = entry.unwrap().path();
        let name = file.file_name().unwrap().to_str().unwrap();
        if name.starts_with(stem) && name.ends_with(".svg") {
            let svg = std::fs::read_to_string(&file).unwrap();
            roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(html.contains(&svg[svg.find("<rect").unwrap()..][..200]), "{name} is not in the page");
        }
    }
    html
}

/// The cells of every table of the page, in order: `tables[t][row][cell]`.
pub fn tables(html: &str) -> Vec<Vec<Vec<String>>> {
    let doc = roxmltree::Document::parse(html.trim_start_matches("<!DOCTYPE html>")).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("table"))
        .map(|table| {
            table
                .descendants()
                .filter(|n| n.has_tag_name("tr"))
                .map(|tr| tr.children().filter(|c| c.is_element()).map(|c| c.text().unwrap_or("").to_owned()).collect())
                .collect()
        })
        .collect()
}

/// Hover titles of the page's SVG elements.
pub fn titles(html: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(html.trim_start_matches("<!DOCTYPE html>")).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("title") && n.parent().is_some_and(|p| !p.has_tag_name("head")))
        .map(|n| n.text().unwrap_or("").to_owned())
        .collect()
}
