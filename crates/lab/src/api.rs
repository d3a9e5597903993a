//! The lab's HTTP API. Every answer is JSON, but the page, its assets and
//! the event streams:
//!
//! | method and path | what it does |
//! |---|---|
//! | `GET /` | the page |
//! | `GET /assets/{name}` | its scripts and style sheet |
//! | `GET /api/lessons` | each lesson's default settings |
//! | `POST /api/runs` | starts a lesson: `{"lesson": ..., "settings": {...}, "watch": {...}}`; 201 with the run |
//! | `GET /api/runs` | every run kept, oldest first |
//! | `GET /api/runs/{id}` | one run |
//! | `GET /api/runs/{id}/events` | its events as server-sent events, from the first (or `?from=N`, or after `Last-Event-ID`) |
//! | `POST /api/runs/{id}/{action}` | `pause`, `resume`, `step` or `stop` |
//! | `POST /api/runs/{id}/lr` | scales the learning rate of the run's models from their next step: `{"scale": 0.5}` (1: as set) |
//! | `POST /api/runs/{id}/save` | writes, inside the lab's directory, a model as a `model.ckpt` that `lingo translate` reads (`{"model": "dot", "checkpoint": "dot.ckpt"}`) and the run as a one-file HTML report (`{"report": "run.html"}`); `"overwrite": true` replaces a file |
//! | `GET /api/models` | the models the explorer reads: each run's task models (in training or trained) with examples to type, and the `.ckpt` files in the lab's directory and its runs' folders |
//! | `POST /api/explore` | translates a sentence: `{"model": {"run": 1, "model": "dot"}, "sentence": "...", "beam": 5, "probe": "uniform"}` (or `"model": {"checkpoint": "model.ckpt"}`); the translations, the beam trace, unknown words and every attention map, `(layers, heads, rows, cols)` per kind |
//! | `POST /api/explore/score` | one cell worked through: `{"model", "sentence", "output": [ids], "kind": "cross", "layer": 0, "row": 1, "col": 2}` |
//! | `POST /api/explore/probes` | a task model's validation loss and accuracies under every probe |
//! | `POST /api/explore/figure` | a view of `/api/explore`'s answer drawn by the lab: `"figure": "attention"` (one map; `"kind"`, `"layer"`, `"head"` from 0, the mean of the heads without), `"heads"` or `"beam"` (the search as a tree; `"pruned": true` draws every candidate), `"format": "svg"` or `"png"` |
//! | `GET /api/runs/{id}/figures/{name}.{svg,png}` | `loss`, `alignment`, `entropy`; `attention` and `heads` of `?model=dot` at `&step=N` (the last snapshot by default; `&layer=L&head=H`, from 1, for one head) |
//!
//! A refused request gets a 4xx status and `{"error": ..., "field": ...}`
//! naming the field at fault ([`ApiError`]).

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use lingo_lessons::{AblationSettings, CorpusSettings, Every, Request, SortStudySettings, SuiteSettings};
use serde::Deserialize;

use crate::Lab;
use crate::error::ApiError;
use crate::explore;
use crate::figures::{self, Chart, Figure, Record};
use crate::files;
use crate::page;
use crate::runs::{Action, Run};

/// Where, inside the lab's directory, corpus runs write theirs.
pub const RUNS_DIR: &str = "lab-runs";

/// The largest request body read: settings are a few hundred bytes.
pub const MAX_BODY: usize = 64 * 1024;

/// The routes above, on `lab`.
pub(crate) fn router(lab: Lab) -> axum::Router {
    axum::Router::new()
        .route("/", get(page::index))
        .route("/assets/{name}", get(page::asset))
        .route("/api/lessons", get(lessons))
        .route("/api/runs", get(list).post(start))
        .route("/api/runs/{id}", get(show))
        .route("/api/runs/{id}/events", get(events))
        .route("/api/runs/{id}/save", post(save))
        .route("/api/runs/{id}/lr", post(scale_lr))
        .route("/api/runs/{id}/figures/{name}", get(figure))
        .route("/api/models", get(models))
        .route("/api/explore", post(explore))
        .route("/api/explore/score", post(score))
        .route("/api/explore/probes", post(probes))
        .route("/api/explore/figure", post(explore_figure))
        .route("/api/runs/{id}/{action}", post(act))
        .fallback(not_found)
        .method_not_allowed_fallback(wrong_method)
        .layer(axum::middleware::from_fn(read_body))
        .with_state(lab)
}

/// Reads every request's body (at most [`MAX_BODY`] bytes, else 413)
/// before its handler runs, so that the handlers take it whole, and one
/// which ignores its body (a control, a 404) leaves the connection
/// reusable: hyper closes a keep-alive connection whose request body was
/// left unread, and the client's next request on it then fails.
async fn read_body(request: axum::extract::Request, next: axum::middleware::Next) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_BODY).await.map_err(|_| {
        ApiError::with_status(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request",
            format!("the body could not be read whole (at most {MAX_BODY} bytes)"),
        )
    })?;
    Ok(next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))).await)
}

async fn not_found() -> ApiError {
    ApiError::not_found("path", "no such page or API route")
}

async fn wrong_method(method: axum::http::Method) -> ApiError {
    ApiError::with_status(StatusCode::METHOD_NOT_ALLOWED, "method", format!("{method} is not served at this path"))
}

/// The model names a page offers for a lesson's `configs` (any `multi_head:H` reads too).
pub const MODELS: &[&str] = &["none", "dot", "general", "additive", "scaled_dot", "multi_head:4", "transformer"];

/// Each lesson's settings: `defaults` as a request writes them, and for
/// each field (by its name, nested or not) its `help` and `flag` on the
/// command line and, for a choice, its `choices`. Read from the same
/// definitions as the command line's, so the page and `lingo --help` agree.
async fn lessons() -> Json<serde_json::Value> {
    Json(serde_json::json!({
        "ablation": lesson::<AblationSettings>(),
        "sort_study": lesson::<SortStudySettings>(),
        "alignment_suite": lesson::<SuiteSettings>(),
        "train": lesson::<CorpusSettings>(),
    }))
}

fn lesson<S: Default + serde::Serialize + clap::Args>() -> serde_json::Value {
    let command = S::augment_args(clap::Command::new("lesson"));
    let mut fields = serde_json::Map::new();
    for arg in command.get_arguments() {
        let mut choices: Vec<String> =
            arg.get_possible_values().iter().filter(|v| !v.is_hide_set()).map(|v| v.get_name().to_string()).collect();
        match arg.get_id().as_str() {
            "configs" => choices = MODELS.iter().map(|m| m.to_string()).collect(),
            "phenomena" => choices = lingo_data::Phenomenon::ALL.iter().map(|p| p.to_string()).collect(),
            _ => {}
        }
        let flag = arg.get_long().map(|l| format!("--{l}"));
        let help = arg.get_help().map(|h| h.to_string());
        fields.insert(arg.get_id().to_string(), serde_json::json!({ "help": help, "flag": flag, "choices": choices }));
    }
    serde_json::json!({ "defaults": S::default(), "fields": fields })
}

/// How often a run's events come, beside its lesson's settings.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
struct Watch {
    /// Steps between two step events (0: none).
    #[serde(default = "default_steps")]
    steps: u64,
    /// Steps between two snapshots of the pinned example (0: none).
    #[serde(default = "default_snapshots")]
    snapshots: u64,
}

/// The most steps between two events a run can ask for.
pub const MAX_EVERY: u64 = 1_000_000;

fn default_steps() -> u64 {
    4
}

fn default_snapshots() -> u64 {
    8
}

impl Default for Watch {
    fn default() -> Watch {
        Watch { steps: default_steps(), snapshots: default_snapshots() }
    }
}

/// The corpus a corpus run reads unless told: the sample lingo ships, as
/// the lab finds it when started in lingo's repository.
pub const SAMPLE_CORPUS: &str = "data/eng-spa-sample.tsv";

/// Reads a run request: the lesson's own request, and `watch`. A corpus
/// run's `settings.data.path` (and `alignments`) is a file inside `root`.
pub(crate) fn read_request(
    body: &[u8],
    root: &std::path::Path,
) -> Result<(lingo_lessons::CheckedRequest, Every), ApiError> {
    let text = std::str::from_utf8(body).map_err(|e| ApiError::bad_request("request", format!("not UTF-8: {e}")))?;
    let mut value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| ApiError::bad_request("request", format!("not JSON: {e}")))?;
    let fields = value.as_object_mut().ok_or_else(|| {
        ApiError::bad_request("request", "must be a JSON object: {\"lesson\": ..., \"settings\": {...}}")
    })?;
    let watch = match fields.remove("watch") {
        None => Watch::default(),
        Some(watch) => {
            let watch: Watch = serde_path_to_error::deserialize(watch).map_err(|e| {
                let path = e.path().to_string();
                let field = if path == "." { "watch".to_string() } else { format!("watch.{path}") };
                ApiError::bad_request(&field, e.inner().to_string())
            })?;
            for (name, every) in [("watch.steps", watch.steps), ("watch.snapshots", watch.snapshots)] {
                if every > MAX_EVERY {
                    return Err(ApiError::bad_request(name, format!("must be at most {MAX_EVERY}, got {every}")));
                }
            }
            watch
        }
    };
    if value["lesson"] == "train" {
        confine_corpus(&mut value, root)?;
    }
    let request = Request::from_json(&value.to_string())?;
    Ok((request, Every { steps: watch.steps, snapshots: watch.snapshots, measures: true }))
}

/// Puts the files a corpus run reads, names inside `root`, in `request`
/// as absolute paths: the corpus (the sample by default) and, when asked
/// for, its word links.
fn confine_corpus(request: &mut serde_json::Value, root: &std::path::Path) -> Result<(), ApiError> {
    let Some(settings) = request.get_mut("settings").and_then(|s| s.as_object_mut()) else { return Ok(()) };
    let data = settings.entry("data").or_insert_with(|| serde_json::json!({}));
    let Some(data) = data.as_object_mut() else { return Ok(()) }; // the lesson names the wrong type
    for (key, default) in [("path", Some(SAMPLE_CORPUS)), ("alignments", None)] {
        let field = format!("settings.data.{key}");
        let name = match (data.get(key), default) {
            (None | Some(serde_json::Value::Null), None) => continue,
            (None | Some(serde_json::Value::Null), Some(default)) => default,
            (Some(serde_json::Value::String(name)), _) => name.as_str(),
            (Some(other), _) => return Err(ApiError::bad_request(&field, format!("must be a file name, got {other}"))),
        };
        let path = files::to_read(root, &field, name)?;
        data.insert(key.into(), serde_json::Value::String(path.display().to_string()));
    }
    Ok(())
}

async fn start(State(lab): State<Lab>, body: Bytes) -> Result<Response, ApiError> {
    let (request, every) = read_request(&body, lab.dir())?;
    let run = lab.runs().start(request, every, &lab.dir().join(RUNS_DIR))?;
    Ok((StatusCode::CREATED, Json(run.summary())).into_response())
}

async fn list(State(lab): State<Lab>) -> Json<serde_json::Value> {
    Json(serde_json::json!({ "runs": lab.runs().list() }))
}

/// The run a path's `{id}` names.
fn run_of(lab: &Lab, id: Result<Path<String>, PathRejection>) -> Result<Arc<Run>, ApiError> {
    let Path(id) = id.map_err(|e| ApiError::bad_request("id", e.body_text()))?;
    let id: u64 = id.parse().map_err(|_| ApiError::bad_request("id", format!("not a run number: {id:?}")))?;
    lab.runs().get(id)
}

async fn show(State(lab): State<Lab>, id: Result<Path<String>, PathRejection>) -> Result<Response, ApiError> {
    Ok(Json(run_of(&lab, id)?.summary()).into_response())
}

async fn act(
    State(lab): State<Lab>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path((id, action)) = path.map_err(|e| ApiError::bad_request("id", e.body_text()))?;
    let action: Action = action.parse()?;
    let run = run_of(&lab, Ok(Path(id)))?;
    let state = run.act(action)?;
    Ok(Json(serde_json::json!({ "id": run.id(), "state": state })).into_response())
}

/// A JSON body read as `T`: a bad field is named by its path, a body
/// that is no object of the right shape by `request`.
fn read_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    std::str::from_utf8(body).map_err(|e| ApiError::bad_request("request", format!("not UTF-8: {e}")))?;
    named(serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_slice(body)))
}

/// A JSON value read as `T`, a bad field named as [`read_json`] names it.
pub(crate) fn from_value<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    named(serde_path_to_error::deserialize(value))
}

fn named<T, E: std::fmt::Display>(read: Result<T, serde_path_to_error::Error<E>>) -> Result<T, ApiError> {
    read.map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." || !path.starts_with(char::is_alphabetic) { "request".into() } else { path };
        ApiError::bad_request(&field, e.inner().to_string())
    })
}

async fn models(State(lab): State<Lab>) -> Json<serde_json::Value> {
    Json(explore::models(&lab))
}

/// Runs `work` on `lab` off the server's thread (translating and probing
/// take milliseconds to seconds), its answer as JSON.
async fn blocking<T: serde::de::DeserializeOwned + Send + 'static>(
    lab: Lab,
    body: &[u8],
    work: fn(&Lab, T) -> Result<serde_json::Value, ApiError>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let asked: T = read_json(body)?;
    tokio::task::spawn_blocking(move || work(&lab, asked))
        .await
        .map_err(|e| ApiError::internal(format!("the work failed: {e}")))?
        .map(Json)
}

async fn explore(State(lab): State<Lab>, body: Bytes) -> Result<Json<serde_json::Value>, ApiError> {
    blocking(lab, &body, explore::explore).await
}

async fn score(State(lab): State<Lab>, body: Bytes) -> Result<Json<serde_json::Value>, ApiError> {
    blocking(lab, &body, explore::score).await
}

async fn probes(State(lab): State<Lab>, body: Bytes) -> Result<Json<serde_json::Value>, ApiError> {
    blocking(lab, &body, explore::probes).await
}

async fn explore_figure(State(lab): State<Lab>, body: Bytes) -> Result<Response, ApiError> {
    let asked = explore::FigureAsked::read(read_json(&body)?)?;
    let (kind, bytes) = tokio::task::spawn_blocking(move || explore::figure(&lab, asked))
        .await
        .map_err(|e| ApiError::internal(format!("the drawing failed: {e}")))??;
    Ok(([(CONTENT_TYPE, kind)], bytes).into_response())
}

/// The learning-rate factors `POST /api/runs/{id}/lr` accepts, both ends
/// included: a thousandth to a thousand times the lesson's rate.
pub const LR_SCALES: (f64, f64) = (1e-3, 1e3);

/// What `POST /api/runs/{id}/lr` asks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LrScale {
    /// The factor on the lesson's learning rate (1: as set).
    scale: f64,
}

/// Reads `{"scale": f}` with `f` inside [`LR_SCALES`].
pub(crate) fn read_lr_scale(body: &[u8]) -> Result<f64, ApiError> {
    let LrScale { scale } = read_json(body)?;
    let (low, high) = LR_SCALES;
    if !(low..=high).contains(&scale) {
        return Err(ApiError::bad_request("scale", format!("must be between {low} and {high}, got {scale}")));
    }
    Ok(scale)
}

async fn scale_lr(
    State(lab): State<Lab>,
    id: Result<Path<String>, PathRejection>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let run = run_of(&lab, id)?;
    let scale = read_lr_scale(&body)?;
    let state = run.scale_lr(scale)?;
    Ok(Json(serde_json::json!({ "id": run.id(), "state": state, "scale": scale })).into_response())
}

/// What `POST /api/runs/{id}/save` writes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Save {
    /// The model to write as a checkpoint (its run name: `dot`).
    model: Option<String>,
    /// Where, inside the lab's directory (`dot.ckpt`).
    checkpoint: Option<String>,
    /// Where to write the run's report (`run.html`).
    report: Option<String>,
    /// Whether to replace files that exist.
    #[serde(default)]
    overwrite: bool,
}

async fn save(
    State(lab): State<Lab>,
    id: Result<Path<String>, PathRejection>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let run = run_of(&lab, id)?;
    let asked: Save = read_json(&body)?;
    if asked.checkpoint.is_none() && asked.report.is_none() {
        return Err(ApiError::bad_request("request", "say what to write: `checkpoint` (with `model`) or `report`"));
    }
    let root = lab.dir().to_path_buf();
    // Every name and the model are checked before anything is written.
    let checkpoint = match &asked.checkpoint {
        Some(name) => {
            let model =
                asked.model.as_deref().ok_or_else(|| ApiError::bad_request("model", "is needed with `checkpoint`"))?;
            Some((files::to_write(&root, "checkpoint", name, "ckpt", asked.overwrite)?, run.trained(model)?))
        }
        None => None,
    };
    let report = asked
        .report
        .as_deref()
        .map(|name| files::to_write(&root, "report", name, "html", asked.overwrite))
        .transpose()?;
    let written = tokio::task::spawn_blocking(move || -> Result<Vec<String>, ApiError> {
        let mut written = Vec::new();
        let relative = |path: &std::path::Path| path.strip_prefix(&root).unwrap_or(path).display().to_string();
        if let Some((path, model)) = checkpoint {
            model.save(&path)?;
            written.push(relative(&path));
        }
        if let Some(path) = report {
            let record = Record::of(run.events_so_far().iter().map(|e| &**e));
            let title = format!("lingo lab: {} (run {})", run.lesson(), run.id());
            let page = figures::report(&record, &title, run.request())?;
            page.save(&path).map_err(|e| ApiError::internal(format!("cannot write the report: {e}")))?;
            written.push(relative(&path));
        }
        Ok(written)
    })
    .await
    .map_err(|e| ApiError::internal(format!("the writer failed: {e}")))??;
    Ok(Json(serde_json::json!({ "wrote": written })).into_response())
}

/// Reads `/figures/{name}` and its query into the figure and its format (`svg`, `png`).
fn figure_of(name: &str, query: Option<&str>) -> Result<(Figure, &'static str), ApiError> {
    let (kind, format) = name.rsplit_once('.').ok_or_else(|| {
        ApiError::not_found("name", format!("{name:?}: a figure is named `loss.svg`, `attention.png`..."))
    })?;
    let format = match format {
        "svg" => "svg",
        "png" => "png",
        other => return Err(ApiError::not_found("name", format!("no format {other:?}: svg or png"))),
    };
    let (mut model, mut step, mut layer, mut head) = (None, None, None, None);
    let number = |field: &str, text: &str| {
        text.parse::<u64>().map_err(|_| ApiError::bad_request(field, format!("not a number: {text:?}")))
    };
    let from_one = |field: &str, text: &str| match number(field, text)? {
        0 => Err(ApiError::bad_request(field, "counts from 1")),
        n => Ok(usize::try_from(n - 1).unwrap_or(usize::MAX)),
    };
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("model", m)) => model = Some(m.to_string()),
            Some(("step", n)) => step = Some(number("step", n)?),
            Some(("layer", n)) => layer = Some(from_one("layer", n)?),
            Some(("head", n)) => head = Some(from_one("head", n)?),
            _ => return Err(ApiError::bad_request("query", format!("unknown parameter {pair:?}"))),
        }
    }
    let model = || model.clone().ok_or_else(|| ApiError::bad_request("model", format!("{kind} needs `?model=`")));
    let figure = match kind {
        "attention" => {
            let head = match (layer, head) {
                (None, None) => None,
                (Some(l), Some(h)) => Some((l, h)),
                _ => return Err(ApiError::bad_request("head", "give both `layer` and `head`, or neither")),
            };
            Figure::Attention { model: model()?, step, head }
        }
        "heads" => Figure::Heads { model: model()?, step },
        chart => Figure::Chart(Chart::ALL.into_iter().find(|c| c.name() == chart).ok_or_else(|| {
            ApiError::not_found("name", format!("no figure {chart:?}: loss, alignment, entropy, attention, heads"))
        })?),
    };
    Ok((figure, format))
}

async fn figure(
    State(lab): State<Lab>,
    path: Result<Path<(String, String)>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let Path((id, name)) = path.map_err(|e| ApiError::bad_request("id", e.body_text()))?;
    let run = run_of(&lab, Ok(Path(id)))?;
    let (figure, format) = figure_of(&name, query.as_deref())?;
    let file = format!("run{}-{}", run.id(), name);
    tokio::task::spawn_blocking(move || {
        let record = Record::of(run.events_so_far().iter().map(|e| &**e));
        let disposition = format!("attachment; filename=\"{file}\"");
        let headers =
            |kind: &'static str| [(CONTENT_TYPE, kind.to_string()), (CONTENT_DISPOSITION, disposition.clone())];
        Ok(match format {
            "svg" => (headers("image/svg+xml"), figures::svg(&record, &figure)?).into_response(),
            _ => (headers("image/png"), figures::png(&record, &figure)?).into_response(),
        })
    })
    .await
    .map_err(|e| ApiError::internal(format!("the drawing failed: {e}")))?
}

/// The first event to send: `?from=N`, else one after `Last-Event-ID`, else 0.
fn first_event(query: Option<&str>, headers: &HeaderMap) -> Result<usize, ApiError> {
    let number = |field: &str, text: &str| {
        text.trim().parse::<usize>().map_err(|_| ApiError::bad_request(field, format!("not an event number: {text:?}")))
    };
    let mut from = None;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("from", n)) => from = Some(number("from", n)?),
            _ => return Err(ApiError::bad_request("query", format!("unknown parameter {pair:?}: only `from`"))),
        }
    }
    if let Some(from) = from {
        return Ok(from);
    }
    match headers.get("last-event-id") {
        Some(id) => {
            let id = id.to_str().map_err(|_| ApiError::bad_request("Last-Event-ID", "not text"))?;
            Ok(number("Last-Event-ID", id)?.saturating_add(1))
        }
        None => Ok(0),
    }
}

async fn events(
    State(lab): State<Lab>,
    id: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let run = run_of(&lab, id)?;
    let from = first_event(query.as_deref(), &headers)?;
    let stream = run
        .events(from, lab.closing())
        .map(|(n, json)| Ok::<_, Infallible>(SseEvent::default().id(n.to_string()).data(&*json)));
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()).into_response())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{LR_SCALES, read_lr_scale, read_request};

    /// Any JSON, its keys often the lessons' own, so the reader goes deep.
    fn any_json() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[a-z_:0-9]{0,12}".prop_map(Value::String),
        ];
        let key = prop_oneof![
            Just("configs"),
            Just("training"),
            Just("epochs"),
            Just("lr"),
            Just("hidden"),
            Just("train_size"),
            Just("lengths"),
            Just("phenomena"),
            Just("seed"),
            Just("steps"),
            Just("x"),
        ]
        .prop_map(str::to_string);
        leaf.prop_recursive(4, 32, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(key.clone(), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_bytes_are_read_or_refused_with_a_400_naming_a_field(body in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Err(e) = read_request(&body, &std::env::temp_dir()) {
                prop_assert_eq!(e.status(), 400);
                prop_assert!(!e.field().is_empty());
            }
        }

        #[test]
        fn any_scale_is_read_inside_its_bounds_or_refused_naming_a_field(
            body in prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..40),
                any_json().prop_map(|v| v.to_string().into_bytes()),
                any::<f64>().prop_map(|f| serde_json::json!({ "scale": f }).to_string().into_bytes()),
            ],
        ) {
            match read_lr_scale(&body) {
                Ok(scale) => prop_assert!((LR_SCALES.0..=LR_SCALES.1).contains(&scale)),
                Err(e) => {
                    prop_assert_eq!(e.status(), 400);
                    prop_assert!(!e.field().is_empty());
                }
            }
        }

        #[test]
        fn any_settings_are_read_or_refused_with_a_400_naming_a_field(
            lesson in prop_oneof![Just("ablation"), Just("sort_study"), Just("alignment_suite"), Just("train"), Just("nap")],
            settings in any_json(),
            watch in proptest::option::of(any_json()),
        ) {
            let mut request = serde_json::json!({ "lesson": lesson, "settings": settings });
            if let Some(watch) = watch {
                request["watch"] = watch;
            }
            match read_request(request.to_string().as_bytes(), &std::env::temp_dir()) {
                // What reads is what the lesson would run: it checks again.
                Ok((checked, _)) => prop_assert!(lingo_lessons::Request::from_json(&checked.to_json().to_string()).is_ok()),
                Err(e) => {
                    prop_assert_eq!(e.status(), 400);
                    let first = e.field().split(['.', '[']).next().unwrap_or("");
                    prop_assert!(["lesson", "settings", "watch", "request"].contains(&first), "{}", e);
                }
            }
        }
    }
}
