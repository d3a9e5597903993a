//! A search drawn as a tree, step by step from left to right: every
//! candidate of every step with its score, linked to the one it continues,
//! kept, finished or pruned, the winner's path in bold. One layout, drawn
//! as PNG ([`render_search_tree`]) and as SVG ([`search_tree_svg`]).

use image::{Rgb, RgbImage};

use crate::canvas::{Canvas, Coverage};
use crate::error::Error;
use crate::font::{Direction, centered_baseline, draw_text, text_width};
use crate::heatmap::{INK, MAX_PIXELS, WHITE};

/// What the search did with a [`TreeNode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeFate {
    /// It goes on to the next step.
    Kept,
    /// It ended the output: a finished candidate.
    Finished,
    /// The search dropped it.
    Pruned,
}

/// One candidate of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeNode {
    /// The node of the previous step it continues (its index there; 0 in the first step).
    pub parent: usize,
    /// Its token.
    pub label: String,
    /// Its score (a log-probability), printed beside the label.
    pub value: f32,
    /// What became of it.
    pub fate: NodeFate,
}

/// A search: the root's label, each step's candidates in the order to
/// draw them, and the winner's node at each step (`None` past its end).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchTree {
    /// What every candidate of the first step continues (`<sos>`).
    pub root: String,
    /// One column per step.
    pub steps: Vec<Vec<TreeNode>>,
    /// The winner's path: its node's index in each step.
    pub path: Vec<Option<usize>>,
}

const SIZE: f32 = 12.0;
const ROW: f32 = 20.0;
const GAP: f32 = 28.0;
const MARGIN: f32 = 10.0;
const KEPT: Rgb<u8> = INK;
const FINISHED: Rgb<u8> = Rgb([4, 120, 87]);
const PRUNED: Rgb<u8> = Rgb([156, 163, 175]);
const WINNER: Rgb<u8> = Rgb([180, 83, 9]);

/// Where everything goes: each node's text start and its box's right end,
/// on its row's centre line.
struct Layout {
    size: (u32, u32),
    title_y: f32,
    /// `(x, right, y)` of the root.
    root: (f32, f32, f32),
    /// `(x, right, y)` of each node, by step.
    nodes: Vec<Vec<(f32, f32, f32)>>,
    /// Each step's heading: its x.
    headings: Vec<f32>,
    /// The headings' centre line.
    heading_y: f32,
}

/// A node's text: its label and score.
fn text(node: &TreeNode) -> String {
    format!("{} {:.2}", node.label, node.value)
}

fn color(fate: NodeFate, winner: bool) -> Rgb<u8> {
    match (winner, fate) {
        (true, _) => WINNER,
        (_, NodeFate::Kept) => KEPT,
        (_, NodeFate::Finished) => FINISHED,
        (_, NodeFate::Pruned) => PRUNED,
    }
}

/// The layout of `tree`, its parents and path checked.
fn checked_layout(tree: &SearchTree, title: &str) -> Result<Layout, Error> {
    for (t, step) in tree.steps.iter().enumerate() {
        let before = if t == 0 { 1 } else { tree.steps[t - 1].len() };
        if let Some((k, node)) = step.iter().enumerate().find(|(_, n)| n.parent >= before) {
            return Err(Error::InvalidOption {
                option: "steps",
                problem: format!("node {k} of step {} continues node {} of {before}", t + 1, node.parent),
            });
        }
        if let Some(Some(at)) = tree.path.get(t).filter(|at| at.is_some_and(|at| at >= step.len())) {
            return Err(Error::InvalidOption {
                option: "path",
                problem: format!("step {} has {} nodes, not {}", t + 1, step.len(), at + 1),
            });
        }
    }
    let title_height = if title.is_empty() { 0.0 } else { 2.0 * SIZE };
    let top = MARGIN + title_height + 1.6 * SIZE; // the step headings
    let centre = |k: usize| top + (k as f32 + 0.5) * ROW;
    let mut x = MARGIN;
    let root_width = text_width(&tree.root, SIZE);
    let root = (x, x + root_width, centre(0));
    x += root_width + GAP;
    let (mut nodes, mut headings) = (Vec::new(), Vec::new());
    for step in &tree.steps {
        let width = step.iter().map(|n| text_width(&text(n), SIZE)).fold(text_width("step 00", SIZE), f32::max);
        nodes.push(step.iter().enumerate().map(|(k, n)| (x, x + text_width(&text(n), SIZE), centre(k))).collect());
        headings.push(x);
        x += width + GAP;
    }
    let rows = tree.steps.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let title_width = MARGIN * 2.0 + text_width(title, 1.2 * SIZE);
    let (width, height) = ((x - GAP + MARGIN).max(title_width).ceil(), (centre(rows - 1) + ROW / 2.0 + MARGIN).ceil());
    if (width as u64).saturating_mul(height as u64) > MAX_PIXELS {
        return Err(Error::TooLarge { width: width as u64, height: height as u64, max_pixels: MAX_PIXELS });
    }
    let heading_y = top - 0.8 * SIZE;
    Ok(Layout { size: (width as u32, height as u32), title_y: MARGIN + SIZE, root, nodes, headings, heading_y })
}

/// Every edge: from the parent's right end to the node's start, its fate and whether it is on the winner's path.
fn edges<'a>(
    tree: &'a SearchTree,
    layout: &'a Layout,
) -> impl Iterator<Item = ((f32, f32), (f32, f32), NodeFate, bool)> + 'a {
    tree.steps.iter().enumerate().flat_map(move |(t, step)| {
        step.iter().enumerate().map(move |(k, node)| {
            let (px, py) = match t {
                0 => (layout.root.1, layout.root.2),
                _ => (layout.nodes[t - 1][node.parent].1, layout.nodes[t - 1][node.parent].2),
            };
            let (x, _, y) = layout.nodes[t][k];
            let on_path =
                tree.path.get(t) == Some(&Some(k)) && (t == 0 || tree.path.get(t - 1) == Some(&Some(node.parent)));
            ((px + 4.0, py), (x - 4.0, y), node.fate, on_path)
        })
    })
}

/// `tree` as a PNG picture titled `title` (empty: no title): text in the
/// embedded font, the same layout as [`search_tree_svg`].
///
/// # Errors
/// A node whose parent is not in the previous step, a path outside its
/// step, or a picture over 64 megapixels.
///
/// ```
/// use lingo_viz::{NodeFate, SearchTree, TreeNode, render_search_tree};
/// let node = |parent, label: &str, value, fate| TreeNode { parent, label: label.into(), value, fate };
/// let tree = SearchTree {
///     root: "<sos>".into(),
///     steps: vec![
///         vec![node(0, "el", -0.1, NodeFate::Kept), node(0, "un", -2.3, NodeFate::Pruned)],
///         vec![node(0, "gato", -0.4, NodeFate::Kept)],
///         vec![node(0, "<eos>", -0.5, NodeFate::Finished)],
///     ],
///     path: vec![Some(0), Some(0), Some(0)],
/// };
/// let image = render_search_tree(&tree, "el gato")?;
/// assert!(image.width() > 200 && image.height() > 60);
/// # Ok::<(), lingo_viz::Error>(())
/// ```
pub fn render_search_tree(tree: &SearchTree, title: &str) -> Result<RgbImage, Error> {
    let layout = checked_layout(tree, title)?;
    let mut canvas = Canvas::new(layout.size.0, layout.size.1, WHITE);
    let (w, h) = (i64::from(layout.size.0), i64::from(layout.size.1));
    if !title.is_empty() {
        let baseline = centered_baseline(layout.title_y, 1.2 * SIZE);
        draw_text(&mut canvas, title, (MARGIN as i64, baseline), 1.2 * SIZE, INK, Direction::Horizontal);
    }
    // Edges first, the winner's last so it stays on top.
    for winner in [false, true] {
        for fate in [NodeFate::Pruned, NodeFate::Kept, NodeFate::Finished] {
            let mut ink = Coverage::new((0, 0), (w, h));
            for (a, b, _, _) in edges(tree, &layout).filter(|e| e.2 == fate && e.3 == winner) {
                ink.segment(a, b, if winner { 2.5 } else { 1.0 });
            }
            ink.paint(&mut canvas, if winner { WINNER } else { color(fate, false) });
        }
    }
    for (t, &x) in layout.headings.iter().enumerate() {
        let baseline = centered_baseline(layout.heading_y, 0.85 * SIZE);
        draw_text(
            &mut canvas,
            &format!("step {}", t + 1),
            (x as i64, baseline),
            0.85 * SIZE,
            PRUNED,
            Direction::Horizontal,
        );
    }
    let (x, _, y) = layout.root;
    draw_text(&mut canvas, &tree.root, (x as i64, centered_baseline(y, SIZE)), SIZE, PRUNED, Direction::Horizontal);
    for (t, step) in tree.steps.iter().enumerate() {
        for (k, node) in step.iter().enumerate() {
            let (x, _, y) = layout.nodes[t][k];
            let ink = color(node.fate, tree.path.get(t) == Some(&Some(k)));
            draw_text(
                &mut canvas,
                &text(node),
                (x as i64, centered_baseline(y, SIZE)),
                SIZE,
                ink,
                Direction::Horizontal,
            );
        }
    }
    Ok(canvas.into_image())
}

/// `tree` as SVG text: the picture of [`render_search_tree`], each node's
/// `<title>` (shown on hover) giving its tokens from the root, its score
/// and its fate.
///
/// # Errors
/// As [`render_search_tree`].
///
/// ```
/// use lingo_viz::{NodeFate, SearchTree, TreeNode, search_tree_svg};
/// let node = |parent, label: &str, value, fate| TreeNode { parent, label: label.into(), value, fate };
/// let tree = SearchTree {
///     root: "<sos>".into(),
///     steps: vec![vec![node(0, "el", -0.1, NodeFate::Kept)], vec![node(0, "<eos>", -0.5, NodeFate::Finished)]],
///     path: vec![Some(0), Some(0)],
/// };
/// let svg = search_tree_svg(&tree, "")?;
/// assert!(svg.contains("<title>el &lt;eos&gt;: -0.500, finished (the winner)</title>"));
/// # Ok::<(), lingo_viz::Error>(())
/// ```
pub fn search_tree_svg(tree: &SearchTree, title: &str) -> Result<String, Error> {
    use crate::svg::{Escaped, Hex, Num, open};
    let layout = checked_layout(tree, title)?;
    let mut out = String::new();
    open(&mut out, (layout.size.0.into(), layout.size.1.into()), SIZE.into());
    if !title.is_empty() {
        put!(
            out,
            r#"<text x="{MARGIN}" y="{}" font-size="{}">{}</text>"#,
            Num((layout.title_y + 0.4 * SIZE).into()),
            Num((1.2 * SIZE).into()),
            Escaped(title)
        );
    }
    for winner in [false, true] {
        for (a, b, fate, _) in edges(tree, &layout).filter(|e| e.3 == winner) {
            put!(
                out,
                r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="{}"/>"#,
                Num(a.0.into()),
                Num(a.1.into()),
                Num(b.0.into()),
                Num(b.1.into()),
                Hex(color(fate, winner)),
                if winner { 2.5 } else { 1.0 }
            );
        }
    }
    let heading_baseline = layout.heading_y + 0.3 * SIZE;
    for (t, &x) in layout.headings.iter().enumerate() {
        put!(
            out,
            r#"<text x="{}" y="{}" font-size="{}" fill="{}">step {}</text>"#,
            Num(x.into()),
            Num(heading_baseline.into()),
            Num((0.85 * SIZE).into()),
            Hex(PRUNED),
            t + 1
        );
    }
    let (x, _, y) = layout.root;
    put!(
        out,
        r#"<text x="{}" y="{}" fill="{}">{}</text>"#,
        Num(x.into()),
        Num((y + 0.35 * SIZE).into()),
        Hex(PRUNED),
        Escaped(&tree.root)
    );
    for (t, step) in tree.steps.iter().enumerate() {
        for (k, node) in step.iter().enumerate() {
            let (x, _, y) = layout.nodes[t][k];
            let winner = tree.path.get(t) == Some(&Some(k));
            let fate = match node.fate {
                NodeFate::Kept => "kept",
                NodeFate::Finished => "finished",
                NodeFate::Pruned => "pruned",
            };
            let tokens = tokens_to(tree, t, k).join(" ");
            put!(
                out,
                r#"<text x="{}" y="{}" fill="{}"{}><title>{}: {:.3}, {fate}{}</title>{}</text>"#,
                Num(x.into()),
                Num((y + 0.35 * SIZE).into()),
                Hex(color(node.fate, winner)),
                if winner { r#" font-weight="bold""# } else { "" },
                Escaped(&tokens),
                node.value,
                if winner { " (the winner)" } else { "" },
                Escaped(&text(node))
            );
        }
    }
    out.push_str("</svg>");
    Ok(out)
}

/// The labels from the first step to node `k` of step `t`, through the parents.
fn tokens_to(tree: &SearchTree, t: usize, mut k: usize) -> Vec<&str> {
    let mut labels = Vec::with_capacity(t + 1);
    for step in tree.steps[..=t].iter().rev() {
        labels.push(step[k].label.as_str());
        k = step[k].parent;
    }
    labels.reverse();
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(parent: usize, label: &str, fate: NodeFate) -> TreeNode {
        TreeNode { parent, label: label.into(), value: -1.0, fate }
    }

    #[test]
    fn a_parent_outside_the_previous_step_or_a_path_outside_its_step_is_refused() {
        let mut tree = SearchTree {
            root: "<sos>".into(),
            steps: vec![vec![node(0, "a", NodeFate::Kept)], vec![node(1, "b", NodeFate::Finished)]],
            path: vec![Some(0), Some(0)],
        };
        assert!(search_tree_svg(&tree, "").unwrap_err().to_string().contains("continues node 1 of 1"));
        tree.steps[1][0].parent = 0;
        tree.path[1] = Some(3);
        assert!(render_search_tree(&tree, "").unwrap_err().to_string().contains("not 4"));
        tree.path[1] = Some(0);
        assert!(render_search_tree(&tree, "").is_ok());
    }

    #[test]
    fn the_winners_path_is_drawn_in_its_own_colour_and_pruned_nodes_in_grey() {
        let tree = SearchTree {
            root: "<sos>".into(),
            steps: vec![vec![node(0, "el", NodeFate::Kept), node(0, "un", NodeFate::Pruned)]],
            path: vec![Some(0)],
        };
        let image = render_search_tree(&tree, "").unwrap();
        let has = |c: Rgb<u8>| image.pixels().any(|p| *p == c);
        assert!(has(WINNER) && has(PRUNED));
        let svg = search_tree_svg(&tree, "").unwrap();
        assert_eq!(svg.matches(r#"font-weight="bold""#).count(), 1);
        assert!(svg.contains("<title>un: -1.000, pruned</title>"));
    }
}
