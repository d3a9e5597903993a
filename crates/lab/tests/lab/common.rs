//! A lab on a free port of 127.0.0.1, and a client that speaks to it as a
//! page does: JSON requests, and the events read as server-sent events.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::thread::JoinHandle;

use lingo_lab::Lab;
use serde_json::Value;

/// A lab serving a directory of its own, on its own thread.
pub struct Server {
    pub lab: Lab,
    pub address: SocketAddr,
    pub dir: tempfile::TempDir,
    thread: Option<JoinHandle<std::io::Result<()>>>,
    agent: ureq::Agent,
}

impl Server {
    pub fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let lab = Lab::new(dir.path()).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let serving = lab.clone();
        let thread = std::thread::spawn(move || {
            serving.run("127.0.0.1:0".parse().unwrap(), |address| tx.send(address).unwrap())
        });
        let address = rx.recv().unwrap();
        let agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        Server { lab, address, dir, thread: Some(thread), agent }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// `GET path`: the status and the body.
    pub fn get(&self, path: &str) -> (u16, String) {
        let mut response = self.agent.get(&self.url(path)).call().unwrap();
        let status = response.status().as_u16();
        (status, response.body_mut().read_to_string().unwrap())
    }

    /// `GET path` as JSON, which must come with status 200.
    pub fn get_json(&self, path: &str) -> Value {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// `POST path` with `body`: the status and the body as JSON.
    pub fn post(&self, path: &str, body: &str) -> (u16, Value) {
        let mut response = self.agent.post(&self.url(path)).send(body).unwrap();
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap();
        (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("POST {path}: {e}: {text:?}")))
    }

    /// `POST path` with a body of any bytes: the status and the body as JSON.
    pub fn post_bytes(&self, path: &str, body: &[u8]) -> (u16, Value) {
        let mut response = self.agent.post(&self.url(path)).send(body).unwrap();
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap();
        (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("POST {path}: {e}: {text:?}")))
    }

    /// `POST path` with `body`: the status, the content type and the body's bytes.
    pub fn post_for_file(&self, path: &str, body: &str) -> (u16, String, Vec<u8>) {
        let mut response = self.agent.post(&self.url(path)).send(body).unwrap();
        let status = response.status().as_u16();
        let kind = response.headers().get("content-type").map_or("", |v| v.to_str().unwrap()).to_string();
        (status, kind, response.body_mut().read_to_vec().unwrap())
    }

    /// Starts a run of `request` and returns its number.
    pub fn start_run(&self, request: &Value) -> u64 {
        let (status, run) = self.post("/api/runs", &request.to_string());
        assert_eq!(status, 201, "{run}");
        run["id"].as_u64().unwrap()
    }

    /// The events of run `id` as server-sent events, with `header`, until
    /// the stream ends: each event's number and JSON.
    pub fn events(&self, id: u64, query: &str, header: Option<(&str, &str)>) -> Vec<(usize, Value)> {
        let mut events = Vec::new();
        self.each_event(id, query, header, |n, event| {
            events.push((n, event.clone()));
            true
        });
        events
    }

    /// Calls `f` with each event of run `id` until it says stop or the stream ends.
    pub fn each_event(
        &self,
        id: u64,
        query: &str,
        header: Option<(&str, &str)>,
        mut f: impl FnMut(usize, &Value) -> bool,
    ) {
        let mut request = self.agent.get(&self.url(&format!("/api/runs/{id}/events{query}")));
        if let Some((name, value)) = header {
            request = request.header(name, value);
        }
        let response = request.call().unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let content_type = response.headers().get("content-type").unwrap().to_str().unwrap().to_string();
        assert!(content_type.starts_with("text/event-stream"), "{content_type}");
        let reader = BufReader::new(response.into_body().into_reader());
        let (mut number, mut data) = (None, String::new());
        for line in reader.lines() {
            let line = line.unwrap();
            if let Some(id) = line.strip_prefix("id: ").or_else(|| line.strip_prefix("id:")) {
                number = Some(id.trim().parse::<usize>().unwrap());
            } else if let Some(text) = line.strip_prefix("data: ").or_else(|| line.strip_prefix("data:")) {
                data.push_str(text);
            } else if line.is_empty() && !data.is_empty() {
                let event: Value = serde_json::from_str(&data).unwrap();
                if !f(number.take().expect("every event has an id"), &event) {
                    return;
                }
                data.clear();
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.lab.close();
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap().unwrap();
        }
    }
}

/// `value` without what differs between two runs of the same seed: times and rates.
pub fn without_times(value: &Value) -> Value {
    match value {
        Value::Object(fields) => fields
            .iter()
            .filter(|(key, _)| !key.contains("seconds") && !key.ends_with("per_second"))
            .map(|(key, v)| (key.clone(), without_times(v)))
            .collect(),
        Value::Array(items) => items.iter().map(without_times).collect(),
        other => other.clone(),
    }
}

/// Keeps every model a lesson trains, as the lab does, with the examples
/// it held out.
#[derive(Default)]
pub struct Keep(pub Vec<(String, lingo_nn::Translator, Vec<lingo_data::AlignedExample>)>);

impl lingo_lessons::Observer for Keep {
    fn every(&self) -> lingo_lessons::Every {
        lingo_lessons::Every::NOTHING
    }

    fn event(&mut self, _: &lingo_lessons::Event) {}

    fn trained(&mut self, model: &lingo_lessons::Trained<'_>) {
        self.0.push((model.run.to_string(), model.translator().unwrap(), model.examples.to_vec()));
    }
}

/// The models `request` trains, without the lab: [`Keep`]'s.
pub fn library_models(request: &Value) -> Keep {
    let mut plain = request.clone();
    plain.as_object_mut().unwrap().remove("watch");
    let mut keep = Keep::default();
    lingo_lessons::Request::from_json(&plain.to_string()).unwrap().run(&mut keep).unwrap();
    keep
}
