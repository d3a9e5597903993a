//! The lessons the lab trains: each on a thread of its own, its events
//! kept in order so that every client, however late it comes, replays the
//! same stream from the start and then follows it live.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use futures_util::Stream;
use lingo_data::AlignedExample;
use lingo_lessons::{CheckedRequest, Error as LessonError, Event, Every, Observer, RunOptions, Trained};
use lingo_nn::{RunControl, Translator};
use serde::Serialize;
use tokio::sync::watch;

use crate::error::ApiError;

/// Lessons training at once; one more is refused until one ends.
pub const MAX_TRAINING: usize = 4;

/// Runs kept for their events; the oldest ended one goes when one more starts.
pub const MAX_KEPT: usize = 32;

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Training (or measuring).
    Running,
    /// Held between two steps until resumed, stepped or stopped.
    Paused,
    /// Ended with its results.
    Finished,
    /// Ended by a stop, before its results.
    Stopped,
    /// Ended with an error.
    Failed,
}

impl RunState {
    /// Whether the run has ended: no event follows.
    pub fn ended(self) -> bool {
        matches!(self, RunState::Finished | RunState::Stopped | RunState::Failed)
    }
}

/// A control a client sends to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Hold before the next step.
    Pause,
    /// Go on.
    Resume,
    /// Take one step (each model of the lesson), then hold.
    Step,
    /// End the lesson before its next step.
    Stop,
}

impl std::str::FromStr for Action {
    type Err = ApiError;

    fn from_str(name: &str) -> Result<Action, ApiError> {
        Ok(match name {
            "pause" => Action::Pause,
            "resume" => Action::Resume,
            "step" => Action::Step,
            "stop" => Action::Stop,
            _ => return Err(ApiError::not_found("action", format!("no action `{name}`: pause, resume, step or stop"))),
        })
    }
}

/// One lesson the lab trains.
pub struct Run {
    id: u64,
    lesson: String,
    /// The request with every setting explicit, as the lesson reads it.
    request: serde_json::Value,
    control: RunControl,
    log: Mutex<Log>,
    /// How many events the log holds; streams wait on its changes.
    count: watch::Sender<usize>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Each model the lesson has finished training, by its run name.
    trained: Mutex<BTreeMap<String, Kept>>,
    /// The last step heard of each model, by its run name (0 before its first).
    steps: Mutex<BTreeMap<String, u64>>,
    /// Each task model the explorer reads, by its run name: as at its last
    /// snapshot while it trains, then as trained.
    models: Mutex<BTreeMap<String, Explorable>>,
}

/// A task model the explorer reads, with the examples its lesson holds out.
#[derive(Clone)]
pub struct Explorable {
    /// The model, its vocabularies and their tokenizer.
    pub translator: Arc<Translator>,
    /// Held-out examples with gold alignments: what probes are measured on.
    pub examples: Arc<[AlignedExample]>,
    /// The step it is at: its last snapshot's, or its last once trained.
    pub step: u64,
    /// Whether its training has ended.
    pub trained: bool,
}

/// A trained model as a run keeps it.
#[derive(Clone)]
pub enum Kept {
    /// In memory, as a task lesson handed it over.
    Model(Arc<Translator>),
    /// The `model.ckpt` a corpus run wrote.
    File(PathBuf),
}

impl Kept {
    /// Writes the model as a checkpoint at `path`, atomically.
    pub fn save(&self, path: &Path) -> Result<(), ApiError> {
        let failed = |e: lingo_nn::Error| ApiError::internal(format!("cannot write the checkpoint: {e}"));
        match self {
            Kept::Model(translator) => translator.save(path).map_err(failed),
            Kept::File(written) => Translator::load(written).and_then(|t| t.save(path)).map_err(failed),
        }
    }
}

/// A run's events, each as its JSON text, and its state.
struct Log {
    events: Vec<Arc<str>>,
    state: RunState,
}

/// A run as `GET /api/runs` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// Its number.
    pub id: u64,
    /// The lesson (`ablation`).
    pub lesson: String,
    /// Where it is.
    pub state: RunState,
    /// Events so far.
    pub events: usize,
    /// The request, every setting explicit.
    pub request: serde_json::Value,
}

impl Run {
    /// The run's number.
    pub fn id(&self) -> u64 {
        self.id
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where the run is.
    pub fn state(&self) -> RunState {
        self.log().state
    }

    /// The run as listed.
    pub fn summary(&self) -> RunSummary {
        let log = self.log();
        RunSummary {
            id: self.id,
            lesson: self.lesson.clone(),
            state: log.state,
            events: log.events.len(),
            request: self.request.clone(),
        }
    }

    /// The lesson, as requests name it.
    pub fn lesson(&self) -> &str {
        &self.lesson
    }

    /// The request with every setting explicit.
    pub fn request(&self) -> &serde_json::Value {
        &self.request
    }

    /// Every event so far, each as its JSON text.
    pub fn events_so_far(&self) -> Vec<Arc<str>> {
        self.log().events.clone()
    }

    /// The model `name` as trained, once its training has ended.
    pub fn trained(&self, name: &str) -> Result<Kept, ApiError> {
        let trained = self.trained.lock().unwrap_or_else(PoisonError::into_inner);
        trained.get(name).cloned().ok_or_else(|| {
            let names: Vec<&str> = trained.keys().map(String::as_str).collect();
            let have = if names.is_empty() { "none yet".to_string() } else { names.join(", ") };
            ApiError::not_found("model", format!("no trained model {name:?} in run {}: {have}", self.id))
        })
    }

    /// Every task model the explorer reads, by its run name.
    pub fn models(&self) -> BTreeMap<String, Explorable> {
        self.models.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The task model `name`, as [`models`](Self::models) lists it.
    pub fn model(&self, name: &str) -> Result<Explorable, ApiError> {
        let models = self.models.lock().unwrap_or_else(PoisonError::into_inner);
        models.get(name).cloned().ok_or_else(|| {
            let names: Vec<&str> = models.keys().map(String::as_str).collect();
            let have = if names.is_empty() { "none yet".to_string() } else { names.join(", ") };
            ApiError::not_found("model.model", format!("no model {name:?} to explore in run {}: {have}", self.id))
        })
    }

    /// Appends one event's JSON text and wakes the streams.
    fn push(&self, json: String) {
        let len = {
            let mut log = self.log();
            log.events.push(json.into());
            log.events.len()
        };
        self.count.send_replace(len);
    }

    /// Moves to `state` and tells the streams, with `detail`'s fields.
    fn set_state(&self, state: RunState, detail: serde_json::Value) {
        let mut event = serde_json::json!({ "event": "state", "state": state });
        if let (Some(event), Some(detail)) = (event.as_object_mut(), detail.as_object()) {
            event.extend(detail.clone());
        }
        let len = {
            let mut log = self.log();
            if log.state.ended() {
                return;
            }
            log.state = state;
            log.events.push(event.to_string().into());
            log.events.len()
        };
        self.count.send_replace(len);
    }

    /// The state of a run that has not ended; an ended one is a conflict.
    fn live(&self) -> Result<RunState, ApiError> {
        let state = self.state();
        if state.ended() {
            return Err(ApiError::conflict("id", format!("run {} has ended ({})", self.id, state_name(state))));
        }
        Ok(state)
    }

    /// Scales the learning rate of the run's models by `scale` from their
    /// next step (1: as the lesson set it), and tells the streams with an
    /// `lr` event naming the models still training and the last step heard
    /// of each (exact while the run is paused); an ended run refuses.
    pub fn scale_lr(&self, scale: f64) -> Result<RunState, ApiError> {
        let state = self.live()?;
        self.control.scale_lr(scale);
        let mut steps = self.steps.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let trained = self.trained.lock().unwrap_or_else(PoisonError::into_inner);
        steps.retain(|name, _| !trained.contains_key(name));
        drop(trained);
        self.push(serde_json::json!({ "event": "lr", "scale": scale, "steps": steps }).to_string());
        Ok(state)
    }

    /// Pauses, resumes, steps or stops the run; an ended run refuses.
    pub fn act(&self, action: Action) -> Result<RunState, ApiError> {
        let state = self.live()?;
        match action {
            Action::Pause => self.control.pause(),
            Action::Resume => self.control.resume(),
            Action::Step => self.control.step(),
            // The state moves to `stopped` when the lesson has returned.
            Action::Stop => {
                self.control.stop();
                return Ok(state);
            }
        }
        let next = if action == Action::Resume { RunState::Running } else { RunState::Paused };
        if next != state || action == Action::Step {
            self.set_state(next, serde_json::json!({ "action": action_name(action) }));
        }
        Ok(self.state())
    }

    /// The events from number `from` (0 first), each with its number; the
    /// stream ends after the run's last event, or when `closing` turns true.
    pub fn events(
        self: Arc<Run>,
        from: usize,
        closing: watch::Receiver<bool>,
    ) -> impl Stream<Item = (usize, Arc<str>)> + Send + 'static {
        let count = self.count.subscribe();
        futures_util::stream::unfold((self, from, count, closing), |(run, next, mut count, mut closing)| async move {
            loop {
                // Marked seen before the log is read, so no push between the two is missed.
                count.borrow_and_update();
                let (event, ended) = {
                    let log = run.log();
                    (log.events.get(next).cloned(), log.state.ended())
                };
                if let Some(event) = event {
                    return Some(((next, event), (run, next + 1, count, closing)));
                }
                if ended || *closing.borrow_and_update() {
                    return None;
                }
                // Whichever comes first: a new event, or the lab closing.
                let next = futures_util::future::select(Box::pin(count.changed()), Box::pin(closing.changed())).await;
                use futures_util::future::Either;
                if let Either::Left((Err(_), _)) | Either::Right((Err(_), _)) = next {
                    return None; // the run or the lab is gone
                }
            }
        })
    }
}

fn state_name(state: RunState) -> String {
    serde_json::to_value(state).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

fn action_name(action: Action) -> &'static str {
    match action {
        Action::Pause => "pause",
        Action::Resume => "resume",
        Action::Step => "step",
        Action::Stop => "stop",
    }
}

/// What a run tells its lesson: how often to hear of it, and the control.
struct Watcher {
    run: Arc<Run>,
    every: Every,
}

impl Observer for Watcher {
    fn every(&self) -> Every {
        self.every
    }

    fn event(&mut self, event: &Event) {
        if let Event::Checkpoint(written) = event
            && written.path.file_name().is_some_and(|name| name == "model.ckpt")
        {
            self.keep(&written.run, Kept::File(written.path.clone()));
        }
        let steps = || self.run.steps.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            // Every model is training from the start, at step 0.
            Event::Started(started) => steps().extend(started.runs.iter().map(|r| (r.run.clone(), 0))),
            Event::Step(step) => {
                steps().insert(step.run.clone(), step.step);
            }
            _ => {}
        }
        self.run.push(serde_json::to_string(event).expect("events serialize"));
    }

    fn control(&self) -> Option<RunControl> {
        Some(self.run.control.clone())
    }

    fn trained(&mut self, model: &Trained<'_>) {
        // A task model always fits its own vocabularies; nothing is kept otherwise.
        if let Ok(translator) = model.translator() {
            let translator = Arc::new(translator);
            self.keep(model.run, Kept::Model(Arc::clone(&translator)));
            let step = self.run.steps.lock().unwrap_or_else(PoisonError::into_inner).get(model.run).copied();
            self.explorable(model, translator, step.unwrap_or(0), true);
        }
    }

    fn training(&mut self, model: &Trained<'_>, step: u64) {
        if let Ok(translator) = model.translator() {
            self.explorable(model, Arc::new(translator), step, false);
        }
    }
}

impl Watcher {
    fn keep(&self, run: &str, model: Kept) {
        self.run.trained.lock().unwrap_or_else(PoisonError::into_inner).insert(run.to_string(), model);
    }

    /// Puts `model` where the explorer reads it, its examples copied once per model.
    fn explorable(&self, model: &Trained<'_>, translator: Arc<Translator>, step: u64, trained: bool) {
        let mut models = self.run.models.lock().unwrap_or_else(PoisonError::into_inner);
        let examples = match models.get(model.run) {
            Some(kept) if kept.trained && !trained => return, // a late snapshot of a finished model
            Some(kept) => Arc::clone(&kept.examples),
            None => model.examples.into(),
        };
        models.insert(model.run.to_string(), Explorable { translator, examples, step, trained });
    }
}

/// Every run of the lab, by number.
#[derive(Default)]
pub struct Runs {
    next: AtomicU64,
    runs: Mutex<BTreeMap<u64, Arc<Run>>>,
}

impl Runs {
    fn runs(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<Run>>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `request` on a thread of its own, telling its events as `every` asks.
    /// A corpus run writes its directory in `runs_dir`, named by the run's
    /// number and the time it started.
    pub fn start(&self, request: CheckedRequest, every: Every, runs_dir: &Path) -> Result<Arc<Run>, ApiError> {
        let mut runs = self.runs();
        let training = runs.values().filter(|r| !r.state().ended()).count();
        if training >= MAX_TRAINING {
            return Err(ApiError::too_many(
                "lesson",
                format!("{training} lessons are training already (at most {MAX_TRAINING}); stop one first"),
            ));
        }
        while runs.len() >= MAX_KEPT {
            let Some(oldest) = runs.values().find(|r| r.state().ended()).map(|r| r.id) else { break };
            runs.remove(&oldest);
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let started = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let out = runs_dir.join(format!("run-{id}-{started}"));
        let request = request.with_run_options(RunOptions { out, ..RunOptions::default() });
        let run = Arc::new(Run {
            id,
            lesson: request.lesson().to_string(),
            request: request.to_json(),
            control: RunControl::new(),
            log: Mutex::new(Log { events: Vec::new(), state: RunState::Running }),
            count: watch::Sender::new(0),
            thread: Mutex::new(None),
            trained: Mutex::new(BTreeMap::new()),
            steps: Mutex::new(BTreeMap::new()),
            models: Mutex::new(BTreeMap::new()),
        });
        let mut watcher = Watcher { run: Arc::clone(&run), every };
        let thread = std::thread::Builder::new()
            .name(format!("lab-run-{id}"))
            .spawn(move || {
                // A panic in a lesson ends its run as failed, never the server.
                let result = catch_unwind(AssertUnwindSafe(|| request.run(&mut watcher)));
                let run = watcher.run;
                match result {
                    Ok(Ok(_)) => run.set_state(RunState::Finished, serde_json::json!({})),
                    Ok(Err(LessonError::Stopped)) => run.set_state(RunState::Stopped, serde_json::json!({})),
                    Ok(Err(e)) => run.set_state(RunState::Failed, serde_json::json!({ "error": e.to_string() })),
                    Err(_) => run.set_state(RunState::Failed, serde_json::json!({ "error": "the lesson panicked" })),
                }
            })
            .map_err(|e| ApiError::internal(format!("cannot start a thread: {e}")))?;
        *run.thread.lock().unwrap_or_else(PoisonError::into_inner) = Some(thread);
        runs.insert(id, Arc::clone(&run));
        Ok(run)
    }

    /// Run `id`.
    pub fn get(&self, id: u64) -> Result<Arc<Run>, ApiError> {
        self.runs().get(&id).cloned().ok_or_else(|| ApiError::not_found("id", format!("no run {id}")))
    }

    /// Every run kept, oldest first.
    pub fn list(&self) -> Vec<RunSummary> {
        self.runs().values().map(|r| r.summary()).collect()
    }

    /// Stops every run and waits for their threads: a corpus run writes
    /// its checkpoint before it returns.
    pub fn stop_all(&self) {
        let runs: Vec<Arc<Run>> = self.runs().values().cloned().collect();
        for run in &runs {
            run.control.stop();
        }
        for run in runs {
            let thread = run.thread.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(thread) = thread {
                let _ = thread.join();
            }
        }
    }
}
