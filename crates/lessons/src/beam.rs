//! A beam search drawn: a [`BeamTrace`] as lingo-viz's [`SearchTree`],
//! its tokens as text and the winner's path marked, for `lingo translate
//! --beam-svg` and the lab's downloads.

use lingo_nn::{BeamTrace, Fate, Hypothesis, Translation, Translator};
use lingo_viz::{NodeFate, SearchTree, TreeNode};

/// `trace` as a tree whose path is where `best` stood at each step; tokens
/// are `translator`'s target tokens as pictures show them
/// ([`TextTokenizer::shown`](lingo_data::TextTokenizer::shown)). Without `pruned`, only the kept and finished
/// candidates are drawn (every pruned one is a leaf, and a step can have
/// beam² of them).
///
/// ```
/// # let translator = lingo_nn::translator::doc_translator();
/// let search = lingo_nn::BeamConfig { beam_size: 2, ..Default::default() };
/// let options = lingo_nn::TranslateOptions { search, ..Default::default() };
/// let (best, trace) = translator.translate_traced("a b", &options).unwrap();
/// let tree = lingo_lessons::beam::beam_tree(&trace, &best[0], &translator, false);
/// let path: Vec<&str> = tree.path.iter().zip(&tree.steps).filter_map(|(at, step)| Some(step[(*at)?].label.as_str())).collect();
/// assert_eq!(path, best[0].tokens);
/// ```
pub fn beam_tree(trace: &BeamTrace, best: &Translation, translator: &Translator, pruned: bool) -> SearchTree {
    let output = Hypothesis { tokens: best.ids.clone(), log_prob: best.log_prob, score: best.score, attention: None };
    let winner = trace.find(&output).map(|(step, at)| trace.path(step, at)).unwrap_or_default();
    let mut steps: Vec<Vec<TreeNode>> = Vec::with_capacity(trace.steps.len());
    let mut path = Vec::with_capacity(trace.steps.len());
    // Each step's kept beam j is drawn at `slots[j]` of its column.
    let mut slots: Vec<usize> = vec![0];
    for (t, candidates) in trace.steps.iter().enumerate() {
        let (mut column, mut next_slots, mut on_path) = (Vec::new(), Vec::new(), None);
        for (at, c) in candidates.iter().enumerate() {
            if !pruned && c.fate == Fate::Pruned {
                continue;
            }
            if winner.get(t) == Some(&at) {
                on_path = Some(column.len());
            }
            let fate = match c.fate {
                Fate::Kept(j) => {
                    next_slots.resize(next_slots.len().max(j + 1), 0);
                    next_slots[j] = column.len();
                    NodeFate::Kept
                }
                Fate::Finished { .. } => NodeFate::Finished,
                Fate::Pruned => NodeFate::Pruned,
            };
            let label = translator.tokenizer().shown(&translator.tgt_vocab().decode(&[c.token], false).concat());
            column.push(TreeNode { parent: slots[c.parent], label, value: c.log_prob, fate });
        }
        steps.push(column);
        path.push(on_path);
        slots = next_slots;
    }
    SearchTree { root: "<sos>".into(), steps, path }
}
