//! Reading SVG and HTML back with a real XML parser, for the SVG and the
//! report tests.

use roxmltree::{Document, Node, ParsingOptions};

/// `markup` as an XML tree; a report's `<!DOCTYPE html>` (which keeps
/// browsers in standards mode) is a DTD to roxmltree, so DTDs are allowed.
pub fn parse(markup: &str) -> Document<'_> {
    let options = ParsingOptions { allow_dtd: true, ..ParsingOptions::default() };
    Document::parse_with_options(markup, options).unwrap_or_else(|e| panic!("not well-formed XML: {e}\n{markup}"))
}

/// Elements named `name` under `node`, itself included.
pub fn elements<'a, 'i>(node: Node<'a, 'i>, name: &str) -> Vec<Node<'a, 'i>> {
    node.descendants().filter(|n| n.tag_name().name() == name).collect()
}

/// The hover text of an element: its `<title>` child.
pub fn title_of(node: Node) -> Option<String> {
    node.children().find(|n| n.tag_name().name() == "title").and_then(|t| t.text()).map(str::to_string)
}

/// The text of every `<text>` element, in document order.
pub fn texts(node: Node) -> Vec<String> {
    elements(node, "text").iter().map(|t| t.text().unwrap_or("").to_string()).collect()
}

pub fn attr<'a>(node: Node<'a, '_>, name: &str) -> &'a str {
    node.attribute(name).unwrap_or_else(|| panic!("<{}> has no {name}", node.tag_name().name()))
}

/// `<rect>`s with a hover title: a heatmap's cells.
pub fn cells<'a, 'i>(node: Node<'a, 'i>) -> Vec<Node<'a, 'i>> {
    elements(node, "rect").into_iter().filter(|r| title_of(*r).is_some()).collect()
}

/// The markup stands alone: the only URL is the SVG namespace name, no
/// element loads or runs anything, no attribute points anywhere, and fonts
/// are generic.
pub fn assert_self_contained(markup: &str) {
    let doc = parse(markup);
    let without_namespace = markup.replace(r#"xmlns="http://www.w3.org/2000/svg""#, "");
    assert!(!without_namespace.contains("http"), "a URL other than the SVG namespace");
    for needle in ["<script", "<link", "<img", "<image", "<iframe", "<object", "<foreignObject", "url(", "@import"] {
        assert!(!markup.contains(needle), "found {needle}");
    }
    for node in doc.descendants().filter(Node::is_element) {
        for a in node.attributes() {
            let name = a.name();
            assert!(
                !matches!(name, "href" | "src") && !name.starts_with("on"),
                "<{}> has {name}",
                node.tag_name().name()
            );
            if name == "font-family" {
                assert_eq!(a.value(), "sans-serif");
            }
        }
    }
}
