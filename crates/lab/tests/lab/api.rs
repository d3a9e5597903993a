//! The lab's API as a page uses it, on a real server on a free port.

use std::time::{Duration, Instant};

use crate::common::{Server, library_models, without_times};
use lingo_lessons::Request;
use serde_json::{Value, json};

/// A small ablation: one dot model, a few steps an epoch.
fn small_ablation(configs: &[&str], epochs: usize, watch: Value) -> Value {
    json!({
        "lesson": "ablation",
        "settings": {"configs": configs, "train_size": 96, "val_size": 16, "align_samples": 8,
                     "training": {"epochs": epochs, "batch_size": 16, "emb": 16, "hidden": 16}, "seed": 5},
        "watch": watch,
    })
}

/// What the library returns for the same request, without the lab.
fn library_results(request: &Value) -> Value {
    let mut request = request.clone();
    request.as_object_mut().unwrap().remove("watch");
    let results = Request::from_json(&request.to_string()).unwrap().run(&mut ()).unwrap();
    without_times(&results)
}

fn kind(event: &Value) -> &str {
    event["event"].as_str().unwrap()
}

/// Waits (at most a minute) until `done` says the run's summary is there.
fn wait_until(server: &Server, id: u64, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let run = server.get_json(&format!("/api/runs/{id}"));
        if done(&run) {
            return run;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "run {id} never got there: {run}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_run_streams_its_events_in_order_and_ends_with_the_librarys_results() {
    let server = Server::start();
    let request = small_ablation(&["none", "dot"], 3, json!({"steps": 2, "snapshots": 3}));
    let id = server.start_run(&request);
    let events = server.events(id, "", None);

    // Numbered from 0 with no gap; started first, then the lesson's finish, then the state.
    assert!(events.iter().enumerate().all(|(i, (n, _))| i == *n));
    let kinds: Vec<&str> = events.iter().map(|(_, e)| kind(e)).collect();
    assert_eq!(kinds[0], "started");
    assert_eq!(&kinds[kinds.len() - 2..], ["finished", "state"]);
    assert_eq!(events.last().unwrap().1["state"], "finished");
    // 96 pairs in batches of 16: 6 steps an epoch, 18 in all; steps heard at 2, 4, ..., 18.
    for run in ["none", "dot"] {
        let of = |k: &'static str| events.iter().filter(move |(_, e)| kind(e) == k && e["run"] == run).map(|(_, e)| e);
        let steps: Vec<u64> = of("step").map(|e| e["step"].as_u64().unwrap()).collect();
        assert_eq!(steps, (1..=9).map(|i| 2 * i).collect::<Vec<_>>(), "{run}");
        let epochs: Vec<&Value> = of("epoch").collect();
        assert_eq!(epochs.len(), 3, "{run}");
        assert_eq!(epochs.iter().all(|e| e["alignment"].is_number()), run == "dot", "{run}");
        // The model without attention has nothing to show; dot shows its (1 layer, 1 head) map.
        let snapshots: Vec<&Value> = of("snapshot").collect();
        assert_eq!(snapshots.len(), if run == "dot" { 6 } else { 0 }, "{run}");
        for snapshot in snapshots {
            let dims = &snapshot["weights"]["dim"];
            let (tgt, src) =
                (snapshot["target"].as_array().unwrap().len(), snapshot["source"].as_array().unwrap().len());
            assert_eq!(dims, &json!([1, 1, tgt, src]));
        }
    }
    // The results are the library's for the same settings and seed, bit for bit.
    let finished = &events[events.len() - 2].1;
    assert_eq!(without_times(&finished["results"]), library_results(&request));
    assert_eq!(server.get_json(&format!("/api/runs/{id}"))["state"], "finished");
}

#[test]
fn a_late_client_replays_the_same_events_and_can_start_anywhere() {
    let server = Server::start();
    let id = server.start_run(&small_ablation(&["dot"], 2, json!({"steps": 1, "snapshots": 2})));
    // Two clients at once, from the start.
    let (first, second) = std::thread::scope(|s| {
        let a = s.spawn(|| server.events(id, "", None));
        let b = s.spawn(|| server.events(id, "", None));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(first, second);
    // One after the run ended: the same, from the first event.
    assert_eq!(server.events(id, "", None), first);
    assert_eq!(server.events(id, "?from=5", None), first[5..]);
    // A reconnecting browser sends the last number it saw.
    assert_eq!(server.events(id, "", Some(("Last-Event-ID", "4"))), first[5..]);
    assert!(server.events(id, &format!("?from={}", first.len() + 10), None).is_empty());
}

#[test]
fn a_run_pauses_steps_one_batch_at_a_time_resumes_and_trains_the_same_bits() {
    let server = Server::start();
    // Steps and snapshots every 4 while running; while held, each step is heard.
    let request = small_ablation(&["none", "dot"], 4, json!({"steps": 4, "snapshots": 4}));
    let id = server.start_run(&request);
    let (status, paused) = server.post(&format!("/api/runs/{id}/pause"), "");
    assert_eq!((status, &paused["state"]), (200, &json!("paused")));
    // Held: the number of events stays put.
    let held = wait_until_held(&server, id);
    std::thread::sleep(Duration::from_millis(100));
    let still = server.get_json(&format!("/api/runs/{id}"));
    assert_eq!((still["events"].as_u64().unwrap(), &still["state"]), (held, &json!("paused")));
    // Each step press moves each model one batch: two more step events, then held again.
    for press in 1..=2 {
        let before = step_events(&server, id);
        assert_eq!(server.post(&format!("/api/runs/{id}/step"), "").0, 200);
        let run = wait_until(&server, id, |_| step_events(&server, id).len() == before.len() + 3);
        std::thread::sleep(Duration::from_millis(100));
        let after = step_events(&server, id);
        assert_eq!(after.len(), before.len() + 3, "press {press}: {run}");
        for model in ["none", "dot"] {
            let last = after.iter().filter(|(r, _)| r == model).map(|(_, s)| *s).max();
            let was = before.iter().filter(|(r, _)| r == model).map(|(_, s)| *s).max().unwrap_or(0);
            assert_eq!(last, Some(was + 1), "press {press}, {model}");
        }
        // The attending model's heatmap moves with it, whatever the interval.
        let snapshots = |events: &[(String, u64)]| events.iter().filter(|(r, _)| r == "dot/snapshot").count();
        assert_eq!(snapshots(&after), snapshots(&before) + 1, "press {press}");
    }
    assert_eq!(server.post(&format!("/api/runs/{id}/resume"), "").1["state"], "running");
    let events = server.events(id, "", None);
    let finished = events.iter().find(|(_, e)| kind(e) == "finished").expect("the run finished");
    assert_eq!(without_times(&finished.1["results"]), library_results(&request));
    // The states every client saw, in order.
    let states: Vec<&str> =
        events.iter().filter(|(_, e)| kind(e) == "state").map(|(_, e)| e["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["paused", "paused", "paused", "running", "finished"]);
    // An ended run takes no more controls.
    let (status, err) = server.post(&format!("/api/runs/{id}/pause"), "");
    assert_eq!((status, &err["field"]), (409, &json!("id")));
}

#[test]
fn the_learning_rate_scales_from_the_next_step_and_the_streams_hear_it() {
    let server = Server::start();
    // Long enough (600 steps) that the pause lands mid-run.
    let request = small_ablation(&["dot"], 100, json!({"steps": 1, "snapshots": 0}));
    let (changed, unchanged) = (server.start_run(&request), server.start_run(&request));
    assert_eq!(server.post(&format!("/api/runs/{changed}/pause"), "").0, 200);
    wait_until_held(&server, changed);
    let (status, answer) = server.post(&format!("/api/runs/{changed}/lr"), r#"{"scale": 0.5}"#);
    assert_eq!((status, &answer["scale"]), (200, &json!(0.5)), "{answer}");
    // Held, then one step more: that step is the first at half the rate.
    let before = step_events(&server, changed).len();
    assert_eq!(server.post(&format!("/api/runs/{changed}/step"), "").0, 200);
    wait_until(&server, changed, |_| step_events(&server, changed).len() > before);
    assert_eq!(server.post(&format!("/api/runs/{changed}/resume"), "").0, 200);
    let events = server.events(changed, "", None);
    let heard = events.iter().position(|(_, e)| kind(e) == "lr").expect("an lr event");
    assert_eq!(events[heard].1["scale"], 0.5);
    // Step by step, the rate is the unchanged run's (its schedule warms up),
    // halved from the first step after the change on.
    let rates = |events: &[(usize, Value)]| -> Vec<(u64, f64)> {
        let steps = events.iter().filter(|(_, e)| kind(e) == "step");
        steps.map(|(_, e)| (e["step"].as_u64().unwrap(), e["lr"].as_f64().unwrap())).collect()
    };
    let scheduled: std::collections::HashMap<u64, f64> =
        rates(&server.events(unchanged, "", None)).into_iter().collect();
    let (early, late) = (rates(&events[..heard]), rates(&events[heard..]));
    assert!(early.iter().all(|(step, lr)| *lr == scheduled[step]), "{early:?}");
    // The event names the model still training and the last step heard of it.
    assert_eq!(events[heard].1["steps"], json!({ "dot": early.last().map_or(0, |(step, _)| *step) }));
    assert_eq!(late.len(), 600 - early.len(), "every step after the change is heard");
    assert!(late.iter().all(|(step, lr)| *lr == scheduled[step] * 0.5), "{late:?}");
    // Out of bounds, or misnamed, the request names its field; an ended run refuses.
    let refused = |body: &str| {
        let (status, err) = server.post(&format!("/api/runs/{changed}/lr"), body);
        (status, err["field"].as_str().unwrap().to_string())
    };
    assert_eq!(refused(r#"{"scale": 0}"#), (400, "scale".into()));
    assert_eq!(refused(r#"{"scale": 1e9}"#), (400, "scale".into()));
    assert_eq!(refused(r#"{"factor": 2}"#), (400, "factor".into()));
    assert_eq!(refused("0.5"), (400, "request".into()));
    assert_eq!(refused(r#"{"scale": 2}"#), (409, "id".into()));
}

/// Waits until paused run `id` holds, and returns its number of events.
/// The lesson started and the pause came; a step under way when it came is
/// heard too (a held run reports its steps): so wait until nothing moves.
fn wait_until_held(server: &Server, id: u64) -> u64 {
    let count = || wait_until(server, id, |run| run["events"].as_u64() >= Some(2))["events"].as_u64().unwrap();
    let mut held = count();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = count();
        if now == held {
            return held;
        }
        held = now;
    }
}

/// The step events of run `id` so far: (model, step); and its snapshots, as
/// (`model/snapshot`, step).
fn step_events(server: &Server, id: u64) -> Vec<(String, u64)> {
    let count = server.get_json(&format!("/api/runs/{id}"))["events"].as_u64().unwrap() as usize;
    let mut steps = Vec::new();
    let mut seen = 0;
    if count > 0 {
        server.each_event(id, "", None, |n, e| {
            let run = e["run"].as_str().unwrap_or_default();
            match kind(e) {
                "step" => steps.push((run.to_string(), e["step"].as_u64().unwrap())),
                "snapshot" => steps.push((format!("{run}/snapshot"), e["step"].as_u64().unwrap())),
                _ => {}
            }
            seen = n + 1;
            seen < count
        });
    }
    steps
}

#[test]
fn a_stopped_run_ends_its_streams_and_says_so() {
    let server = Server::start();
    let id = server.start_run(&small_ablation(&["dot"], 50, json!({"steps": 1, "snapshots": 0})));
    let mut seen = Vec::new();
    server.each_event(id, "", None, |_, e| {
        if kind(e) == "step" && e["step"] == 3 {
            assert_eq!(server.post(&format!("/api/runs/{id}/stop"), "").0, 200);
        }
        seen.push(e.clone());
        true
    });
    let last = seen.last().unwrap();
    assert_eq!((kind(last), &last["state"]), ("state", &json!("stopped")));
    assert!(!seen.iter().any(|e| kind(e) == "finished"));
    assert_eq!(server.get_json("/api/runs")["runs"][0]["state"], "stopped");
}

#[test]
fn closing_the_lab_stops_its_runs_and_ends_every_stream() {
    let server = Server::start();
    let id = server.start_run(&small_ablation(&["dot"], 50, json!({"steps": 1, "snapshots": 0})));
    let lab = server.lab.clone();
    let mut last = Value::Null;
    server.each_event(id, "", None, |_, e| {
        if kind(e) == "step" && e["step"] == 2 {
            let lab = lab.clone();
            std::thread::spawn(move || lab.close());
        }
        last = e.clone();
        true
    });
    assert_eq!(last["state"], "stopped");
}

#[test]
fn bad_requests_get_a_4xx_naming_the_field() {
    let server = Server::start();
    let cases: &[(&str, &str, u16, &str)] = &[
        (
            "/api/runs",
            r#"{"lesson": "ablation", "settings": {"training": {"epochs": 0}}}"#,
            400,
            "settings.training.epochs",
        ),
        ("/api/runs", r#"{"lesson": "ablation", "settings": {"train_size": -3}}"#, 400, "settings.train_size"),
        (
            "/api/runs",
            r#"{"lesson": "ablation", "settings": {"configs": ["dot", "telepathy"]}}"#,
            400,
            "settings.configs[1]",
        ),
        (
            "/api/runs",
            r#"{"lesson": "ablation", "settings": {"training": {"hidden": 60000}, "train_size": 100000}}"#,
            400,
            "settings.training.hidden",
        ),
        (
            "/api/runs",
            r#"{"lesson": "ablation", "settings": {"min_words": 5, "max_words": 4}}"#,
            400,
            "settings.max_words",
        ),
        ("/api/runs", r#"{"lesson": "juggling", "settings": {}}"#, 400, "lesson"),
        ("/api/runs", r#"{"lesson": "ablation", "settings": {}, "watch": {"steps": "often"}}"#, 400, "watch.steps"),
        ("/api/runs", r#"{"lesson": "ablation", "settings": {}, "watch": {"every": 3}}"#, 400, "watch.every"),
        (
            "/api/runs",
            r#"{"lesson": "ablation", "settings": {}, "watch": {"snapshots": 1e12}}"#,
            400,
            "watch.snapshots",
        ),
        ("/api/runs", "not json", 400, "request"),
        ("/api/runs", "[1, 2]", 400, "request"),
        ("/api/runs", "", 400, "request"),
        ("/api/runs/7/pause", "", 404, "id"),
        ("/api/runs/seven/pause", "", 400, "id"),
        ("/api/runs/1/jump", "", 404, "action"),
        ("/api/nothing", "", 404, "path"),
    ];
    for &(path, body, status, field) in cases {
        let (got, err) = server.post(path, body);
        assert_eq!((got, err["field"].as_str().unwrap()), (status, field), "POST {path} {body}: {err}");
        assert!(err["error"].as_str().is_some_and(|e| !e.is_empty()), "{err}");
    }
    // Too large a body is refused before it is read.
    let (status, err) = server.post("/api/runs", &" ".repeat(lingo_lab::api::MAX_BODY + 1));
    assert_eq!((status, err["field"].as_str().unwrap()), (413, "request"));
    for (path, status, field) in
        [("/api/runs/99", 404, "id"), ("/api/runs/-1", 400, "id"), ("/api/runs/1/events?from=x", 404, "id")]
    {
        let (got, body) = server.get(path);
        let err: Value = serde_json::from_str(&body).unwrap();
        assert_eq!((got, err["field"].as_str().unwrap()), (status, field), "GET {path}: {body}");
    }
    let id = server.start_run(&small_ablation(&["dot"], 1, json!({})));
    for (query, field) in [("?from=x", "from"), ("?since=3", "query"), ("?from=2&since=3", "query")] {
        let (got, body) = server.get(&format!("/api/runs/{id}/events{query}"));
        let err: Value = serde_json::from_str(&body).unwrap();
        assert_eq!((got, err["field"].as_str().unwrap()), (400, field), "{query}: {body}");
    }
    // Nothing was started by a refused request.
    assert_eq!(server.get_json("/api/runs")["runs"].as_array().unwrap().len(), 1);
}

#[test]
fn the_lab_trains_at_most_four_lessons_at_once() {
    let server = Server::start();
    let request = small_ablation(&["dot"], 50, json!({}));
    let ids: Vec<u64> = (0..lingo_lab::runs::MAX_TRAINING).map(|_| server.start_run(&request)).collect();
    for id in &ids {
        server.post(&format!("/api/runs/{id}/pause"), "");
    }
    let (status, err) = server.post("/api/runs", &request.to_string());
    assert_eq!((status, err["field"].as_str().unwrap()), (429, "lesson"), "{err}");
    server.post(&format!("/api/runs/{}/stop", ids[0]), "");
    wait_until(&server, ids[0], |run| run["state"] == "stopped");
    server.start_run(&request);
}

#[test]
fn the_page_and_its_assets_come_from_the_lab_alone() {
    let server = Server::start();
    let (status, page) = server.get("/");
    assert_eq!(status, 200);
    assert!(page.contains("<title>lingo lab</title>"));
    let response = ureq::get(&server.url("/")).call().unwrap();
    let policy = response.headers().get("content-security-policy").unwrap().to_str().unwrap();
    assert!(policy.starts_with("default-src 'self'"), "{policy}");
    for asset in ["lab.js", "plots.js", "lab.css"] {
        assert_eq!(server.get(&format!("/assets/{asset}")).0, 200, "{asset}");
    }
    assert_eq!(server.get("/assets/../Cargo.toml").0, 404);
    let lessons = server.get_json("/api/lessons");
    assert_eq!(lessons["ablation"]["defaults"]["training"]["epochs"], 16);
    assert_eq!(lessons["sort_study"]["defaults"]["lengths"], json!([5, 10]));
    // Each field as the command line has it, choices listed.
    let rnn = &lessons["ablation"]["fields"]["rnn"];
    assert_eq!((&rnn["flag"], &rnn["choices"]), (&json!("--rnn"), &json!(["lstm", "gru"])));
    assert_eq!(lessons["alignment_suite"]["fields"]["phenomena"]["choices"].as_array().unwrap().len(), 7);
    // Every model offered reads as one, and every field has its help.
    for model in lingo_lab::api::MODELS {
        assert!(model.parse::<lingo_lessons::models::ModelChoice>().is_ok(), "{model}");
    }
    for (lesson, about) in lessons.as_object().unwrap() {
        for (name, field) in about["fields"].as_object().unwrap() {
            assert!(field["help"].as_str().is_some_and(|h| !h.is_empty()), "{lesson}.{name} has no help");
        }
    }
}

#[test]
fn any_path_gets_a_json_answer_below_500_and_garbage_leaves_the_server_serving() {
    use proptest::prelude::*;
    let server = Server::start();
    let id = server.start_run(&small_ablation(&["dot"], 1, json!({})));
    let segment = prop_oneof![
        Just("runs".to_string()),
        Just(id.to_string()),
        Just("events".to_string()),
        Just("pause".to_string()),
        Just("%2e%2e".to_string()),
        Just("%2F".to_string()),
        "[a-zA-Z0-9._~-]{0,6}",
    ];
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config::with_cases(200));
    runner
        .run(&(proptest::collection::vec(segment, 0..5), any::<bool>()), |(segments, post)| {
            let path = format!("/api/{}", segments.join("/"));
            if post {
                let (status, _) = server.post(&path, "{}"); // the body is JSON, or `post` fails
                prop_assert!(status < 500, "POST {path}: {status}");
            } else if !path.ends_with("/events") {
                let (status, body) = server.get(&path);
                prop_assert!(status < 500, "GET {path}: {status}");
                prop_assert!(serde_json::from_str::<Value>(&body).is_ok(), "GET {path}: {body}");
            }
            Ok(())
        })
        .unwrap();
    // Bytes that are no HTTP at all: the connection is refused or closed, and the lab serves on.
    for garbage in [&b"\x00\xff\xfe GARBAGE\r\n\r\n"[..], b"GET /api/runs HTTP/9.9\r\n\r\n", &[b'A'; 70_000]] {
        use std::io::{Read, Write};
        let mut socket = std::net::TcpStream::connect(server.address).unwrap();
        socket.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = socket.write_all(garbage);
        let _ = socket.shutdown(std::net::Shutdown::Write);
        let mut answer = Vec::new();
        let _ = socket.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 4"), "{answer}");
    }
    assert_eq!(server.get("/api/runs").0, 200);
}

#[test]
fn a_connection_stays_usable_after_a_request_whose_body_its_route_ignores() {
    use std::io::{Read, Write};
    let server = Server::start();
    let mut socket = std::net::TcpStream::connect(server.address).unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // A POST to no route, its body arriving after the headers (as a client may send it).
    socket.write_all(b"POST /api/nothing HTTP/1.1\r\nHost: lab\r\nContent-Length: 2\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    socket.write_all(b"{}").unwrap();
    socket.write_all(b"GET /api/runs HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n").unwrap();
    let mut answers = String::new();
    let _ = socket.read_to_string(&mut answers);
    // The first answer's body ends without a newline: find the status lines anywhere.
    let statuses: Vec<&str> = answers.match_indices("HTTP/1.1 ").map(|(at, _)| &answers[at..at + 12]).collect();
    assert_eq!(statuses, ["HTTP/1.1 404", "HTTP/1.1 200"], "{answers}");
}

#[test]
fn a_run_saves_a_checkpoint_lingo_translate_reads_and_a_report() {
    let server = Server::start();
    let request = small_ablation(&["none", "dot"], 2, json!({"steps": 2, "snapshots": 2}));
    let id = server.start_run(&request);
    server.events(id, "", None); // to its end
    let save = |body: Value| server.post(&format!("/api/runs/{id}/save"), &body.to_string());

    let (status, err) = save(json!({"model": "dot", "checkpoint": "models/dot.ckpt"}));
    assert_eq!((status, err["field"].as_str().unwrap()), (400, "checkpoint"), "{err}"); // no folder `models`
    std::fs::create_dir(server.dir.path().join("models")).unwrap();
    let (status, wrote) = save(json!({"model": "dot", "checkpoint": "models/dot.ckpt", "report": "run.html"}));
    assert_eq!((status, &wrote["wrote"]), (200, &json!(["models/dot.ckpt", "run.html"])), "{wrote}");

    // The checkpoint is the library's model for the same seed: the same translation, the same scores.
    let saved = lingo_nn::Translator::load(server.dir.path().join("models/dot.ckpt")).unwrap();
    let keep = library_models(&request);
    let library = &keep.0.iter().find(|(run, _, _)| run == "dot").unwrap().1;
    let options = lingo_nn::TranslateOptions::default();
    let sentences = ["the cat eats", "a dog sees the bird"];
    let (ours, theirs) =
        (saved.translate(&sentences, &options).unwrap(), library.translate(&sentences, &options).unwrap());
    for (a, b) in ours.iter().zip(&theirs) {
        assert_eq!((&a.text, a.log_prob.to_bits()), (&b.text, b.log_prob.to_bits()));
    }
    // The report is one page with the run's curves and heatmaps in it.
    let html = std::fs::read_to_string(server.dir.path().join("run.html")).unwrap();
    assert!(html.contains("lingo lab: ablation (run 1)") && html.contains("dot (Luong)"));
    assert!(html.matches("<svg").count() >= 4, "{} pictures", html.matches("<svg").count());
    assert!(!html.contains("src=\""), "the report loads nothing");

    // A file that exists is kept unless told otherwise.
    let (status, err) = save(json!({"model": "dot", "checkpoint": "models/dot.ckpt"}));
    assert_eq!((status, err["field"].as_str().unwrap()), (409, "checkpoint"));
    assert_eq!(save(json!({"model": "dot", "checkpoint": "models/dot.ckpt", "overwrite": true})).0, 200);
    for (body, status, field) in [
        (json!({"model": "transformer", "checkpoint": "t.ckpt"}), 404, "model"),
        (json!({"checkpoint": "t.ckpt"}), 400, "model"),
        (json!({"model": "dot"}), 400, "request"),
        (json!({"model": "dot", "checkpoint": "t.ckpt", "format": "onnx"}), 400, "format"),
        (json!({"report": 7}), 400, "report"),
    ] {
        let (got, err) = save(body.clone());
        assert_eq!((got, err["field"].as_str().unwrap()), (status, field), "{body}: {err}");
    }
}

#[test]
fn no_name_leads_a_file_outside_the_labs_directory() {
    let server = Server::start();
    let id = server.start_run(&small_ablation(&["dot"], 1, json!({})));
    server.events(id, "", None);
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), server.dir.path().join("link")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("x.ckpt"), server.dir.path().join("dangling.ckpt")).unwrap();
    std::fs::create_dir(server.dir.path().join("sub")).unwrap();
    let escape = outside.path().join("x.ckpt").display().to_string();
    for name in [
        "../x.ckpt",
        "sub/../../x.ckpt",
        &escape,
        "link/x.ckpt",
        "dangling.ckpt",
        "sub",
        "x.txt",
        "",
        "x\0.ckpt",
        &"a/".repeat(3000),
    ] {
        let (status, err) =
            server.post(&format!("/api/runs/{id}/save"), &json!({"model": "dot", "checkpoint": name}).to_string());
        assert_eq!((status, err["field"].as_str().unwrap()), (400, "checkpoint"), "{name:?}: {err}");
    }
    for name in ["../run.html", "link/run.html"] {
        let (status, err) = server.post(&format!("/api/runs/{id}/save"), &json!({"report": name}).to_string());
        assert_eq!((status, err["field"].as_str().unwrap()), (400, "report"), "{name:?}: {err}");
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "a file was written outside");
    // A name inside, through `.` and a folder, is fine.
    let (status, _) = server
        .post(&format!("/api/runs/{id}/save"), &json!({"model": "dot", "checkpoint": "./sub/x.ckpt"}).to_string());
    assert_eq!(status, 200);
    assert!(server.dir.path().join("sub/x.ckpt").is_file());
}

#[test]
fn every_chart_and_heatmap_downloads_as_svg_and_png() {
    let server = Server::start();
    let id = server.start_run(&small_ablation(&["none", "multi_head:2"], 2, json!({"steps": 2, "snapshots": 3})));
    let events = server.events(id, "", None);
    let snapshot_steps: Vec<u64> =
        events.iter().filter(|(_, e)| kind(e) == "snapshot").map(|(_, e)| e["step"].as_u64().unwrap()).collect();
    let get = |path: &str| {
        let mut response = ureq::get(&server.url(&format!("/api/runs/{id}/figures/{path}"))).call().unwrap();
        let kind = response.headers().get("content-type").unwrap().to_str().unwrap().to_string();
        (kind, response.body_mut().read_to_vec().unwrap())
    };
    for name in ["loss", "alignment", "entropy", "attention", "heads"] {
        let query = if ["attention", "heads"].contains(&name) { "?model=multi_head:2" } else { "" };
        let (kind, svg) = get(&format!("{name}.svg{query}"));
        assert_eq!(kind, "image/svg+xml");
        roxmltree::Document::parse(std::str::from_utf8(&svg).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (kind, png) = get(&format!("{name}.png{query}"));
        assert_eq!(kind, "image/png");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{name}");
    }
    // A step picks that snapshot; one head is that head's map.
    let first = get(&format!("attention.svg?model=multi_head:2&step={}&layer=1&head=2", snapshot_steps[0])).1;
    let last = get("attention.svg?model=multi_head:2&layer=1&head=2").1;
    assert_ne!(first, last);
    assert!(String::from_utf8(first).unwrap().contains(&format!("step {}", snapshot_steps[0])));
    for (path, status, field) in [
        ("attention.svg?model=none", 404, "step"),
        ("attention.svg?model=nope", 404, "model"),
        ("attention.svg", 400, "model"),
        ("attention.svg?model=multi_head:2&layer=1&head=3", 400, "head"),
        ("attention.svg?model=multi_head:2&layer=0&head=1", 400, "layer"),
        ("attention.svg?model=multi_head:2&layer=1", 400, "head"),
        ("loss.svg?colour=red", 400, "query"),
        ("loss.gif", 404, "name"),
        ("spectrum.svg", 404, "name"),
    ] {
        let (got, body) = server.get(&format!("/api/runs/{id}/figures/{path}"));
        let err: Value = serde_json::from_str(&body).unwrap();
        assert_eq!((got, err["field"].as_str().unwrap()), (status, field), "{path}: {body}");
    }
}

/// A corpus of `pairs` lines in the lab's directory, as `name`.
fn write_corpus(server: &Server, name: &str, pairs: usize) {
    let text: String = (0..pairs).map(|i| format!("{} cats sleep\t{} gatos duermen\n", i % 40, i % 40)).collect();
    std::fs::write(server.dir.path().join(name), text).unwrap();
}

#[test]
fn a_corpus_run_reads_a_file_of_the_labs_directory_and_writes_its_own_there() {
    let server = Server::start();
    write_corpus(&server, "cats.tsv", 200);
    let settings = json!({"data": {"path": "cats.tsv", "test_size": 10, "valid_size": 10, "tokenizer": "word"},
                          "model": {"emb": 16, "hidden": 16}, "train": {"rounds": 2, "round_size": 100}, "decode": {"beam": 1}});
    let id = server.start_run(&json!({"lesson": "train", "settings": settings, "watch": {"steps": 1, "snapshots": 2}}));
    let events = server.events(id, "", None);
    let kinds: Vec<&str> = events.iter().map(|(_, e)| kind(e)).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "epoch").count(), 2, "{kinds:?}");
    assert!(kinds.contains(&"snapshot") && kinds.contains(&"checkpoint"), "{kinds:?}");
    assert_eq!(events.last().unwrap().1["state"], "finished", "{:?}", events.last());
    // Its directory is inside the lab's, and its model saves as any other.
    let runs: Vec<_> =
        std::fs::read_dir(server.dir.path().join("lab-runs")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(runs.len(), 1);
    assert!(runs[0].join("model.ckpt").is_file() && runs[0].join("config.toml").is_file());
    let (status, wrote) =
        server.post(&format!("/api/runs/{id}/save"), &json!({"model": "model", "checkpoint": "cats.ckpt"}).to_string());
    assert_eq!(status, 200, "{wrote}");
    let saved = lingo_nn::Translator::load(server.dir.path().join("cats.ckpt")).unwrap();
    let kept = lingo_nn::Translator::load(runs[0].join("model.ckpt")).unwrap();
    let options = lingo_nn::TranslateOptions::default();
    assert_eq!(
        saved.translate(&["3 cats sleep"], &options).unwrap(),
        kept.translate(&["3 cats sleep"], &options).unwrap()
    );

    // The corpus is a file inside the directory, the sample lingo ships by default.
    let outside = tempfile::NamedTempFile::new().unwrap();
    for path in [json!("../cats.tsv"), json!(outside.path()), json!("missing.tsv"), json!(null), json!(3)] {
        let body = json!({"lesson": "train", "settings": {"data": {"path": path}}});
        let (status, err) = server.post("/api/runs", &body.to_string());
        assert_eq!((status, err["field"].as_str().unwrap()), (400, "settings.data.path"), "{path}: {err}");
    }
    let (_, err) = server.post("/api/runs", &json!({"lesson": "train", "settings": {}}).to_string());
    assert!(err["error"].as_str().unwrap().contains(lingo_lab::api::SAMPLE_CORPUS), "{err}");
}

#[test]
fn a_corpus_run_reads_word_links_of_the_labs_directory_only() {
    let server = Server::start();
    write_corpus(&server, "cats.tsv", 200);
    std::fs::write(server.dir.path().join("cats.align"), "0-0 1-1 2-2\n".repeat(200)).unwrap();
    let settings = |alignments: serde_json::Value| {
        json!({"data": {"path": "cats.tsv", "alignments": alignments, "test_size": 10, "valid_size": 10, "tokenizer": "word"},
               "model": {"emb": 16, "hidden": 16}, "train": {"rounds": 1, "round_size": 100}, "decode": {"beam": 1}})
    };
    // A file outside, a way out, one that is not there, not a name: refused before any run, naming the field.
    let outside = tempfile::NamedTempFile::new().unwrap();
    for alignments in [json!(outside.path()), json!("../cats.align"), json!("missing.align"), json!(["cats.align"])] {
        let body = json!({"lesson": "train", "settings": settings(alignments.clone())});
        let (status, err) = server.post("/api/runs", &body.to_string());
        assert_eq!((status, err["field"].as_str().unwrap()), (400, "settings.data.alignments"), "{alignments}: {err}");
    }
    let id = server.start_run(&json!({"lesson": "train", "settings": settings(json!("cats.align"))}));
    let events = server.events(id, "", None);
    let finished = events.iter().find(|(_, e)| kind(e) == "finished").expect("the run finished");
    let aer = &finished.1["results"]["summary"]["test_aer"];
    assert_eq!(aer["sure"], 30, "three links for each of 10 test pairs: {aer}");
}

#[test]
fn a_client_that_goes_away_stops_nothing() {
    let server = Server::start();
    let request = small_ablation(&["dot"], 3, json!({"steps": 1, "snapshots": 2}));
    let id = server.start_run(&request);
    // A tab that reads three events and closes.
    let mut read = 0;
    server.each_event(id, "", None, |_, _| {
        read += 1;
        read < 3
    });
    let run = wait_until(&server, id, |run| run["state"] != "running");
    assert_eq!(run["state"], "finished", "{run}");
    let events = server.events(id, "", None);
    let finished = events.iter().find(|(_, e)| kind(e) == "finished").expect("the run finished");
    assert_eq!(without_times(&finished.1["results"]), library_results(&request));
}
