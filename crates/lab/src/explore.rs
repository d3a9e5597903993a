//! The explorer: one typed sentence through a model the lab holds (a task
//! lesson's model, as at its last snapshot while it trains, then as
//! trained; or a `model.ckpt` inside the lab's directory). Every number it
//! answers with comes from a lingo-nn call a program makes too:
//! [`Translator::inspect`] (translations, beam trace, unknown words, every
//! attention map), [`AnyModel::explain`](lingo_nn::AnyModel::explain) (one
//! score worked through) and [`probe_model`] (a probe's validation scores).
//!
//! A model is named in a request as `{"run": 1, "model": "dot"}` or
//! `{"checkpoint": "model.ckpt"}`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use lingo_attention::{GoldLinks, ScoreSteps};
use lingo_data::{AlignedExample, Example, SOS};
use lingo_lessons::beam::beam_tree;
use lingo_lessons::probes::probe_model;
use lingo_nn::{
    AttentionKind, BeamConfig, Cell, EncoderDecoder, Hypothesis, Inspection, Probe, TranslateOptions, Translator,
};
use lingo_viz::HeatmapOptions;
use ndarray::{Array4, Axis, s};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Lab;
use crate::api::{RUNS_DIR, from_value};
use crate::error::ApiError;
use crate::files;
use crate::runs::Kept;

/// The longest sentence read, in bytes.
pub const MAX_SENTENCE: usize = 2000;

/// The most tokens a sentence may have, `<sos>` and `<eos>` aside.
pub const MAX_TOKENS: usize = 100;

/// The widest beam.
pub const MAX_BEAM: usize = 16;

/// Checkpoints kept loaded, the most recently used first.
const LOADED: usize = 4;

/// Examples of a task model that `GET /api/models` offers to type.
const OFFERED: usize = 12;

/// A model named in a request.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelRef {
    /// A run's number, with `model`.
    #[serde(default)]
    pub run: Option<u64>,
    /// The model's name in that run (`dot`).
    #[serde(default)]
    pub model: Option<String>,
    /// Or a checkpoint inside the lab's directory.
    #[serde(default)]
    pub checkpoint: Option<String>,
}

/// A model as a request named it, ready to translate.
struct Resolved {
    translator: Arc<Translator>,
    /// Held-out examples with gold alignments (none for a checkpoint).
    examples: Arc<[AlignedExample]>,
    /// The step of a task model, and whether its training has ended.
    step: Option<(u64, bool)>,
}

/// Checkpoints read once and kept, by path and modification time.
#[derive(Default)]
pub(crate) struct Loaded(Mutex<Vec<(PathBuf, SystemTime, Arc<Translator>)>>);

impl Loaded {
    /// The translator `path` holds, read unless it is loaded and unchanged.
    fn get(&self, path: &Path, field: &str) -> Result<Arc<Translator>, ApiError> {
        let modified = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .map_err(|e| ApiError::bad_request(field, format!("{} cannot be read: {e}", path.display())))?;
        let kept = |list: &mut Vec<(PathBuf, SystemTime, Arc<Translator>)>| {
            let at = list.iter().position(|(p, m, _)| p == path && *m == modified)?;
            let entry = list.remove(at);
            let translator = Arc::clone(&entry.2);
            list.insert(0, entry);
            Some(translator)
        };
        if let Some(translator) = kept(&mut self.lock()) {
            return Ok(translator);
        }
        // Read without the lock: a large checkpoint takes a while.
        let translator = Arc::new(Translator::load(path).map_err(|e| ApiError::bad_request(field, e.to_string()))?);
        let mut list = self.lock();
        list.retain(|(p, _, _)| p != path);
        list.insert(0, (path.to_path_buf(), modified, Arc::clone(&translator)));
        list.truncate(LOADED);
        Ok(translator)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(PathBuf, SystemTime, Arc<Translator>)>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The model `named`, as the lab holds it.
fn resolve(lab: &Lab, named: &ModelRef) -> Result<Resolved, ApiError> {
    let from_file = |path: &Path, field: &str| -> Result<Resolved, ApiError> {
        Ok(Resolved { translator: lab.loaded().get(path, field)?, examples: Arc::from([]), step: None })
    };
    match (named.run, &named.model, &named.checkpoint) {
        (Some(id), Some(name), None) => {
            let run = lab.runs().get(id).map_err(|e| ApiError::not_found("model.run", e.to_string()))?;
            match run.model(name) {
                Ok(model) => Ok(Resolved {
                    translator: model.translator,
                    examples: model.examples,
                    step: Some((model.step, model.trained)),
                }),
                // A corpus run's model is the checkpoint it wrote.
                Err(missing) => match run.trained(name) {
                    Ok(Kept::File(path)) => from_file(&path, "model.model"),
                    _ => Err(missing),
                },
            }
        }
        (None, None, Some(name)) => {
            from_file(&files::to_read(lab.dir(), "model.checkpoint", name)?, "model.checkpoint")
        }
        _ => Err(ApiError::bad_request(
            "model",
            "name a run's model, {\"run\": 1, \"model\": \"dot\"}, or a checkpoint, {\"checkpoint\": \"model.ckpt\"}",
        )),
    }
}

/// `sentence`'s source ids, or a 400 naming `sentence`: empty, too long,
/// or without a token the tokenizer reads.
fn source_ids(translator: &Translator, sentence: &str) -> Result<Vec<usize>, ApiError> {
    let refuse = |why: String| Err(ApiError::bad_request("sentence", why));
    if sentence.trim().is_empty() {
        return refuse("is empty: type a sentence to translate".into());
    }
    if sentence.len() > MAX_SENTENCE {
        return refuse(format!("is {} bytes long, more than {MAX_SENTENCE}", sentence.len()));
    }
    let ids = translator.encode(sentence);
    match ids.len() - 2 {
        0 => refuse(format!("{sentence:?} has no token this model's tokenizer reads")),
        n if n > MAX_TOKENS => refuse(format!("has {n} tokens, more than {MAX_TOKENS}")),
        _ => Ok(ids),
    }
}

/// `probe`'s intervention for `src`, gold links taken from the example
/// whose source it is; a 400 naming `probe` when there is none.
fn intervention(
    probe: Probe,
    src: &[usize],
    examples: &[AlignedExample],
) -> Result<Option<lingo_attention::Intervention>, ApiError> {
    let gold = examples.iter().find(|e| e.src == src).map(|e| GoldLinks::new(vec![e.gold.clone()]));
    if probe == Probe::Gold && gold.is_none() {
        return Err(ApiError::bad_request(
            "probe",
            "gold needs the sentence's gold alignment: type one of the model's examples (a checkpoint has none)",
        ));
    }
    Ok(probe.intervention(|| gold.unwrap_or_default()))
}

/// What `POST /api/explore` asks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Explore {
    model: ModelRef,
    sentence: String,
    /// 1: greedy search.
    #[serde(default = "default_beam")]
    beam: usize,
    /// A probe's name (`uniform`); the model as trained by default.
    #[serde(default)]
    probe: Option<String>,
}

fn default_beam() -> usize {
    BeamConfig::default().beam_size
}

fn probe_named(name: Option<&str>) -> Result<Probe, ApiError> {
    name.map_or(Ok(Probe::Unchanged), |n| n.parse().map_err(|e: String| ApiError::bad_request("probe", e)))
}

/// `POST /api/explore`: the sentence translated, with everything the page draws.
pub(crate) fn explore(lab: &Lab, asked: Explore) -> Result<Value, ApiError> {
    let (translator, seen, probe, model) = inspected(lab, &asked)?;
    Ok(inspection_json(&translator, &seen, probe, &model))
}

/// The sentence `asked` names through its model, the probe applied.
fn inspected(lab: &Lab, asked: &Explore) -> Result<(Arc<Translator>, Inspection, Probe, Resolved), ApiError> {
    if !(1..=MAX_BEAM).contains(&asked.beam) {
        return Err(ApiError::bad_request("beam", format!("must be 1 to {MAX_BEAM}, got {}", asked.beam)));
    }
    let probe = probe_named(asked.probe.as_deref())?;
    let model = resolve(lab, &asked.model)?;
    let src = source_ids(&model.translator, &asked.sentence)?;
    let translator = match intervention(probe, &src, &model.examples)? {
        Some(replaced) => Arc::new(model.translator.intervene(Some(replaced))),
        None => Arc::clone(&model.translator),
    };
    let options = TranslateOptions {
        search: BeamConfig { beam_size: asked.beam, n_best: asked.beam.min(3), ..BeamConfig::default() },
        ..TranslateOptions::default()
    };
    let seen = translator.inspect(&asked.sentence, &options).map_err(|e| ApiError::internal(e.to_string()))?;
    Ok((translator, seen, probe, model))
}

/// Tokens as the page and the pictures show them: a BPE piece without its
/// end-of-word mark ([`TextTokenizer::shown`](lingo_data::TextTokenizer::shown)).
struct Shown<'a>(&'a Translator);

impl Shown<'_> {
    /// Target token `id`.
    fn target(&self, id: usize) -> String {
        self.0.tokenizer().shown(&self.0.tgt_vocab().decode(&[id], false).concat())
    }

    fn all(&self, tokens: &[String]) -> Vec<String> {
        tokens.iter().map(|t| self.0.tokenizer().shown(t)).collect()
    }

    /// The rows and columns of `kind`'s maps: output tokens over the
    /// source, or a sequence over itself (the decoder's inputs as its columns).
    fn axes(&self, seen: &Inspection, kind: AttentionKind) -> (Vec<String>, Vec<String>) {
        let best = &seen.translations[0];
        let (source, output) = (self.all(&best.source_tokens), self.all(&best.tokens));
        match kind {
            AttentionKind::Cross => (output, source),
            AttentionKind::EncoderSelf => (source.clone(), source),
            AttentionKind::DecoderSelf => (output, self.inputs(seen)),
        }
    }

    /// The decoder's inputs: `<sos>` and the best translation but its last token.
    fn inputs(&self, seen: &Inspection) -> Vec<String> {
        seen.example.tgt[..seen.example.tgt.len() - 1].iter().map(|&id| self.target(id)).collect()
    }
}

/// What `POST /api/explore/figure` asks: an [`Explore`] request, and
/// which view of its answer to draw with lingo-viz, as the command line
/// draws its pictures.
pub(crate) struct FigureAsked {
    explore: Explore,
    view: View,
}

/// The view of a [`FigureAsked`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct View {
    /// `attention` (one map), `heads` (every layer and head) or `beam` (the search as a tree).
    figure: String,
    /// `svg` or `png`.
    format: String,
    #[serde(default = "cross")]
    kind: AttentionKind,
    #[serde(default)]
    layer: usize,
    /// One head (from 0); the mean over heads without.
    #[serde(default)]
    head: Option<usize>,
    /// For `beam`: draw the pruned candidates too.
    #[serde(default)]
    pruned: bool,
}

impl FigureAsked {
    /// The view's fields, the rest read as the explorer's request: each
    /// strict about the fields it knows.
    pub(crate) fn read(mut body: serde_json::Map<String, Value>) -> Result<FigureAsked, ApiError> {
        const VIEW: [&str; 6] = ["figure", "format", "kind", "layer", "head", "pruned"];
        let view = VIEW.iter().filter_map(|&k| body.remove_entry(k)).collect();
        Ok(FigureAsked { explore: from_value(Value::Object(body))?, view: from_value(Value::Object(view))? })
    }
}

/// An inspection as the page reads it.
fn inspection_json(translator: &Translator, seen: &Inspection, probe: Probe, model: &Resolved) -> Value {
    let shown = Shown(translator);
    let translations: Vec<Value> = seen
        .translations
        .iter()
        .map(|t| {
            json!({ "text": t.text, "tokens": shown.all(&t.tokens), "ids": t.ids, "score": t.score,
                    "log_prob": t.log_prob, "finished": t.finished })
        })
        .collect();
    // The trace names tokens by id; their text once each.
    let mut token_text = BTreeMap::new();
    for c in seen.trace.steps.iter().flatten() {
        token_text.entry(c.token.to_string()).or_insert_with(|| shown.target(c.token));
    }
    let maps: serde_json::Map<String, Value> = seen
        .attention
        .iter()
        .flat_map(|a| {
            AttentionKind::ALL.into_iter().filter_map(move |k| a.get(k).map(|m| (k.to_string(), map_json(m))))
        })
        .collect();
    let gold = model.examples.iter().any(|e| e.src == seen.example.src);
    // Where the best translation stood at each step of the search.
    let best = &seen.translations[0];
    let output = Hypothesis { tokens: best.ids.clone(), log_prob: best.log_prob, score: best.score, attention: None };
    let winner = seen.trace.find(&output).map(|(step, at)| seen.trace.path(step, at));
    json!({
        "model": describe(translator, model.step),
        "probe": probe,
        "source": shown.all(&seen.translations[0].source_tokens),
        "unknown": seen.unknown.iter().map(|(at, token)| (at, translator.tokenizer().shown(token))).collect::<Vec<_>>(),
        "translations": translations,
        "trace": seen.trace,
        "winner": winner,
        "token_text": token_text,
        "inputs": shown.inputs(seen),
        "maps": maps,
        "gold": gold,
    })
}

/// `(layers, heads, rows, cols)` as `{"dim": [...], "data": [...]}`, row-major.
fn map_json(maps: &Array4<f32>) -> Value {
    json!({ "dim": maps.shape(), "data": maps.iter().copied().collect::<Vec<f32>>() })
}

/// A model's kind, attention (its scorer and placement) and place in
/// training, for the page's captions.
fn describe(translator: &Translator, step: Option<(u64, bool)>) -> Value {
    let config = translator.model().config();
    let (attention, placement) = match &config {
        lingo_nn::AnyConfig::Seq2Seq(c) => (c.attention.map(|s| s.to_string()), Some(format!("{:?}", c.placement))),
        lingo_nn::AnyConfig::Transformer(c) => (Some(format!("{} heads", c.heads)), None),
    };
    json!({
        "kind": config.kind(),
        "attention": attention,
        "placement": placement,
        "step": step.map(|s| s.0),
        "trained": step.is_none_or(|s| s.1),
    })
}

/// What `POST /api/explore/score` asks: one cell of the maps of `sentence`
/// translated as `output` (the translation's ids, `<eos>` included).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Score {
    model: ModelRef,
    sentence: String,
    output: Vec<usize>,
    kind: AttentionKind,
    layer: usize,
    row: usize,
    col: usize,
}

/// `POST /api/explore/score`: the cell worked through ([`ScoreSteps`]).
pub(crate) fn score(lab: &Lab, asked: Score) -> Result<Value, ApiError> {
    let model = resolve(lab, &asked.model)?;
    let src = source_ids(&model.translator, &asked.sentence)?;
    let vocab = model.translator.tgt_vocab().len();
    let longest = TranslateOptions::default().max_len(src.len());
    if asked.output.is_empty() || asked.output.len() > longest {
        return Err(ApiError::bad_request("output", format!("must hold 1 to {longest} token ids")));
    }
    if let Some(bad) = asked.output.iter().find(|&&id| id >= vocab) {
        return Err(ApiError::bad_request("output", format!("id {bad} is outside the target vocabulary of {vocab}")));
    }
    // Rows and columns are positions of the source, or of the decoder's inputs (`<sos>` and the output but its last).
    let (src_len, tgt_len) = (src.len(), asked.output.len());
    let (rows, cols) = match asked.kind {
        AttentionKind::Cross => (tgt_len, src_len),
        AttentionKind::EncoderSelf => (src_len, src_len),
        AttentionKind::DecoderSelf => (tgt_len, tgt_len),
    };
    for (field, at, len) in [("row", asked.row, rows), ("col", asked.col, cols)] {
        if at >= len {
            return Err(ApiError::bad_request(field, format!("{at} is outside the map's {len} positions")));
        }
    }
    let example = Example { src, tgt: std::iter::once(SOS).chain(asked.output).collect() };
    let cell = Cell { kind: asked.kind, layer: asked.layer, row: asked.row, col: asked.col };
    let steps = model.translator.model().explain(&example, cell).map_err(|e| match &e {
        // The layer, or a kind the model lacks.
        lingo_nn::Error::Config { what, .. } => ApiError::bad_request(what, e.to_string()),
        _ => ApiError::internal(e.to_string()),
    })?;
    Ok(steps_json(&steps))
}

/// Every intermediate of a cell; masked scores (`-∞`) as `null`.
fn steps_json(steps: &ScoreSteps) -> Value {
    let heads: Vec<Value> = steps
        .heads
        .iter()
        .map(|h| {
            let scores: Vec<Option<f32>> = h.scores.iter().map(|&s| s.is_finite().then_some(s)).collect();
            json!({ "query": h.query, "key": h.key, "hidden": h.hidden, "terms": h.terms, "scale": h.scale,
                    "scores": scores, "weights": h.weights, "values": h.values, "context": h.context })
        })
        .collect();
    json!({
        "scorer": steps.scorer.to_string(),
        "col": steps.source,
        "heads": heads,
        "weights": steps.weights,
        "context": steps.context,
    })
}

/// What `POST /api/explore/probes` asks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Probes {
    model: ModelRef,
}

/// `POST /api/explore/probes`: the model's validation scores under every
/// probe, on the examples its lesson held out.
pub(crate) fn probes(lab: &Lab, asked: Probes) -> Result<Value, ApiError> {
    let model = resolve(lab, &asked.model)?;
    if model.examples.is_empty() {
        return Err(ApiError::bad_request(
            "model",
            "a checkpoint has no held-out examples here: probe it with `lingo probe --data PAIRS.tsv`",
        ));
    }
    let any = model.translator.model();
    let rows = probe_model(("model", "model"), any, any.config().has_attention(), &model.examples, None)?;
    let rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({ "probe": r.probe, "loss": r.score.loss, "token_accuracy": r.score.token_accuracy,
                    "sequence_accuracy": r.score.sequence_accuracy, "bleu": r.score.bleu })
        })
        .collect();
    Ok(json!({ "examples": model.examples.len(), "step": model.step.map(|s| s.0), "rows": rows }))
}

/// `GET /api/models`: every task model of every run, with a few of its
/// examples' sources to type, and the checkpoints in the lab's directory
/// and its runs' folders.
pub(crate) fn models(lab: &Lab) -> Value {
    let mut models = Vec::new();
    for summary in lab.runs().list() {
        let Ok(run) = lab.runs().get(summary.id) else { continue };
        for (name, model) in run.models() {
            let vocab = model.translator.src_vocab();
            let offered: Vec<String> =
                model.examples.iter().take(OFFERED).map(|e| vocab.decode(&e.src, true).join(" ")).collect();
            let mut entry = describe(&model.translator, Some((model.step, model.trained)));
            entry["run"] = json!(summary.id);
            entry["lesson"] = json!(summary.lesson);
            entry["model"] = json!(name);
            entry["examples"] = json!(offered);
            models.push(entry);
        }
    }
    json!({ "models": models, "checkpoints": checkpoints(lab.dir()) })
}

/// The `.ckpt` files in `root` and one folder down in its runs' folder, by
/// name relative to `root`, sorted; links that lead out are left out.
fn checkpoints(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut folders = vec![PathBuf::new()];
    if let Ok(runs) = std::fs::read_dir(root.join(RUNS_DIR)) {
        folders.extend(runs.flatten().map(|e| Path::new(RUNS_DIR).join(e.file_name())));
    }
    for folder in folders {
        let Ok(entries) = std::fs::read_dir(root.join(&folder)) else { continue };
        for entry in entries.flatten() {
            let name = folder.join(entry.file_name());
            let name = name.to_string_lossy();
            if name.ends_with(".ckpt") && files::to_read(root, "checkpoint", &name).is_ok() {
                found.push(name.into_owned());
            }
        }
    }
    found.sort();
    found
}

fn cross() -> AttentionKind {
    AttentionKind::Cross
}

/// `POST /api/explore/figure`: the view as an SVG or PNG file, and its
/// content type.
pub(crate) fn figure(lab: &Lab, asked: FigureAsked) -> Result<(&'static str, Vec<u8>), ApiError> {
    let View { figure, format, kind, layer, head, pruned } = asked.view;
    if !["svg", "png"].contains(&format.as_str()) {
        return Err(ApiError::bad_request("format", format!("{format:?}: svg or png")));
    }
    let beam = asked.explore.beam;
    let (translator, seen, probe, _) = inspected(lab, &asked.explore)?;
    let draw_error = |e: lingo_viz::Error| ApiError::internal(format!("cannot draw it: {e}"));
    let png = |image: Result<image::RgbImage, lingo_viz::Error>| crate::figures::png_bytes(&image.map_err(draw_error)?);
    let kind_of = |format: &str| if format == "svg" { "image/svg+xml" } else { "image/png" };
    if figure == "beam" {
        let tree = beam_tree(&seen.trace, &seen.translations[0], &translator, pruned);
        let title = format!("{} (beam {beam})", seen.translations[0].text);
        let bytes = match format.as_str() {
            "svg" => lingo_viz::search_tree_svg(&tree, &title).map_err(draw_error)?.into_bytes(),
            _ => png(lingo_viz::render_search_tree(&tree, &title))?,
        };
        return Ok((kind_of(&format), bytes));
    }
    let maps = seen
        .attention
        .as_ref()
        .and_then(|a| a.get(kind))
        .ok_or_else(|| ApiError::bad_request("kind", format!("this model has no {kind} attention to draw")))?;
    let (layers, heads, ..) = maps.dim();
    if layer >= layers || head.is_some_and(|h| h >= heads) {
        return Err(ApiError::bad_request("layer", format!("the model has {layers} layers of {heads} heads")));
    }
    let (rows, cols) = Shown(&translator).axes(&seen, kind);
    let probed = if probe == Probe::Unchanged { String::new() } else { format!(", probe {probe}") };
    let title = format!("{}{probed}", seen.translations[0].text);
    let options = HeatmapOptions::default().title(title);
    let head_title = |l: usize, h: usize| format!("layer {} head {}", l + 1, h + 1);
    let bytes = match (figure.as_str(), format.as_str()) {
        ("attention", format) => {
            let one = match head {
                Some(h) => maps.slice(s![layer, h, .., ..]).to_owned(),
                None => maps.slice(s![layer, .., .., ..]).mean_axis(Axis(0)).expect("a head at least"),
            };
            let options = options.show_values(true);
            match format {
                "svg" => lingo_viz::attention_svg(one.view(), &cols, &rows, &options).map_err(draw_error)?.into_bytes(),
                _ => png(lingo_viz::render_attention(one.view(), &cols, &rows, &options))?,
            }
        }
        ("heads", "svg") => lingo_viz::attention_grid_svg(maps.view(), &cols, &rows, head_title, &options)
            .map_err(draw_error)?
            .into_bytes(),
        ("heads", _) => png(lingo_viz::render_attention_grid(maps.view(), &cols, &rows, head_title, &options))?,
        (other, _) => {
            return Err(ApiError::bad_request("figure", format!("no figure {other:?}: attention, heads or beam")));
        }
    };
    Ok((kind_of(&format), bytes))
}
