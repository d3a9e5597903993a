//! The lab's page in a real browser: headless Chromium driven through
//! WebDriver (chromedriver). Without Chromium and its driver the test says
//! so loudly and passes, so `cargo test` works on a fresh machine; `.ci/run`
//! installs both, so CI always runs it.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Server;
use base64::Engine;
use serde_json::{Value, json};

/// A WebDriver session on a chromedriver of its own.
struct Browser {
    driver: Child,
    base: String,
    agent: ureq::Agent,
}

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

impl Browser {
    /// A headless Chromium, or `None` (said on standard error) when it is not installed.
    fn start() -> Option<Browser> {
        if !std::path::Path::new(CHROMIUM).exists() || !std::path::Path::new(CHROMEDRIVER).exists() {
            eprintln!(
                "\n*** SKIPPED: the lab's browser test needs {CHROMIUM} and {CHROMEDRIVER} \
                 (Debian packages chromium and chromium-driver; .ci/run installs them) ***\n"
            );
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let mut browser = Browser { driver, base: format!("http://127.0.0.1:{port}"), agent };
        let start = Instant::now();
        while browser.agent.get(&format!("{}/status", browser.base)).call().is_err() {
            assert!(start.elapsed() < Duration::from_secs(20), "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        // The flags the machine's closed network needs, and a fresh profile.
        let profile = tempfile::tempdir().unwrap().keep();
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1500,1100",
        ]
        .iter()
        .map(|a| a.to_string())
        .chain([format!("--user-data-dir={}", profile.display())])
        .collect::<Vec<_>>();
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "goog:chromeOptions": {"binary": CHROMIUM, "args": args}}}});
        let session = browser.call("POST", "/session", Some(capabilities));
        browser.base = format!("{}/session/{}", browser.base, session["sessionId"].as_str().unwrap());
        Some(browser)
    }

    /// One WebDriver command: its `value`.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.base);
        let mut response = match method {
            "GET" => self.agent.get(&url).call(),
            "DELETE" => self.agent.delete(&url).call(),
            _ => self.agent.post(&url).send(body.unwrap_or(json!({})).to_string()),
        }
        .unwrap();
        let answer: Value = serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
        assert!(answer["value"].get("error").is_none(), "{method} {path}: {answer}");
        answer["value"].clone()
    }

    /// Runs `script` in the page and returns what it returns.
    fn eval(&self, script: &str) -> Value {
        self.call("POST", "/execute/sync", Some(json!({"script": script, "args": []})))
    }

    fn click(&self, selector: &str) {
        let element = self.call("POST", "/element", Some(json!({"using": "css selector", "value": selector})));
        let id = element.as_object().unwrap().values().next().unwrap().as_str().unwrap().to_string();
        self.call("POST", &format!("/element/{id}/click"), None);
    }

    /// Waits (at most `seconds`) until `script` returns true.
    fn wait_for(&self, script: &str, seconds: u64) {
        let start = Instant::now();
        while self.eval(script) != json!(true) {
            assert!(start.elapsed() < Duration::from_secs(seconds), "waited {seconds} s for {script}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn screenshot(&self, path: &std::path::Path) {
        let png = self.call("GET", "/screenshot", None);
        let bytes = base64::engine::general_purpose::STANDARD.decode(png.as_str().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if self.base.contains("/session/") {
            let _ = self.agent.delete(&self.base).call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The dot model's alignment accuracy as the page's table shows it, in percent.
const SHOWN_ALIGNMENT: &str =
    "const row = [...document.querySelectorAll('#summary tr')].find(r => r.cells[0].textContent.startsWith('dot'));
     return row ? parseFloat(row.cells[5].textContent) || 0 : 0;";

/// The fill of every cell of the dot model's heatmap.
const HEATMAP: &str = "return [...document.querySelectorAll('[data-model=\"dot\"] svg.map rect')].map(r => r.getAttribute('fill')).join(' ');";

#[test]
fn the_page_trains_the_dot_run_and_replays_its_attention() {
    let Some(browser) = Browser::start() else { return };
    let server = Server::start();
    browser.call("POST", "/url", Some(json!({"url": server.url("/#lesson=ablation&configs=dot")})));
    browser.wait_for("return document.querySelector('[data-choice=\"dot\"]')?.checked === true", 20);
    // The URL chose the model: only dot is ticked.
    let ticked = browser.eval(
        "return [...document.querySelectorAll('[data-choice]')].filter(t => t.checked).map(t => t.dataset.choice)",
    );
    assert_eq!(ticked, json!(["dot"]));
    browser.click("#train");
    browser.wait_for(&format!("return (() => {{ {SHOWN_ALIGNMENT} }})() > 90"), 180);
    browser.wait_for("return document.getElementById('status').dataset.state === 'finished'", 60);
    let shown = browser.eval(&format!("return (() => {{ {SHOWN_ALIGNMENT} }})()"));
    // The page shows what the run's own events say.
    let runs = server.get_json("/api/runs");
    let id = runs["runs"][0]["id"].as_u64().unwrap();
    let events = server.events(id, "", None);
    let last_epoch = events.iter().rev().find(|(_, e)| e["event"] == "epoch").unwrap();
    let alignment = last_epoch.1["alignment"].as_f64().unwrap();
    assert_eq!(shown.as_f64().unwrap(), (1000.0 * alignment).round() / 10.0);
    assert!(browser.eval("return location.hash").as_str().unwrap().contains(&format!("run={id}")));

    // The scrubber replays the snapshots: the first one's heatmap is not the last one's.
    let last = browser.eval(HEATMAP);
    let snapshots = events.iter().filter(|(_, e)| e["event"] == "snapshot").count();
    assert!(snapshots > 10, "{snapshots} snapshots");
    assert_eq!(browser.eval("return Number(document.getElementById('scrubber').max)"), json!(snapshots - 1));
    browser.eval(
        "const s = document.getElementById('scrubber'); s.value = 0; s.dispatchEvent(new Event('input')); return null",
    );
    browser.wait_for("return document.getElementById('scrub-label').textContent.startsWith('step 8')", 10);
    let first = browser.eval(HEATMAP);
    assert_ne!(first, last, "the heatmap did not change");
    assert!(!first.as_str().unwrap().is_empty());
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    browser.screenshot(&dir.join("lab-scrubbed.png"));
    eprintln!("screenshot: {}", dir.join("lab-scrubbed.png").display());

    // The learning-rate slider: off once the run has ended; on a paused run
    // it reaches the run, whose loss chart then marks the change.
    assert_eq!(browser.eval("return document.getElementById('lr-scale').disabled"), json!(true));
    browser.click("#reset");
    browser.wait_for("return document.getElementById('status').dataset.state === 'running'", 20);
    browser.click("#pause");
    browser.wait_for("return document.getElementById('status').dataset.state === 'paused'", 20);
    browser.eval(
        "const s = document.getElementById('lr-scale'); s.value = -1; s.dispatchEvent(new Event('input'));
         s.dispatchEvent(new Event('change')); return null",
    );
    assert_eq!(browser.eval("return document.getElementById('lr-scale-value').textContent"), json!("1/2"));
    browser.wait_for("return document.querySelector('#loss-chart .mark-label')?.textContent === '×1/2'", 20);
    let id = server.get_json("/api/runs")["runs"][1]["id"].as_u64().unwrap();
    assert_eq!(server.post(&format!("/api/runs/{id}/stop"), "").0, 200);
    let events = server.events(id, "", None);
    assert!(events.iter().any(|(_, e)| e["event"] == "lr" && e["scale"] == 0.5));
}

#[test]
fn the_explorer_translates_a_typed_sentence_links_works_a_score_through_and_probes() {
    let Some(browser) = Browser::start() else { return };
    let server = Server::start();
    let request = json!({
        "lesson": "ablation",
        "settings": {"configs": ["none", "dot"], "train_size": 2000, "val_size": 32, "align_samples": 16,
                     "training": {"epochs": 12, "batch_size": 32, "emb": 32, "hidden": 32}, "seed": 1},
    });
    let id = server.start_run(&request);
    server.events(id, "", None); // to its end
    let sentence = server.get_json("/api/models")["models"][0]["examples"][0].as_str().unwrap().to_string();
    browser.call("POST", "/url", Some(json!({"url": server.url(&format!("/#x.model=run%3A{id}%3Adot"))})));
    browser.wait_for("return document.getElementById('x-model').value.endsWith(':dot')", 20);

    // Type a sentence and translate it.
    browser
        .eval(&format!("const s = document.getElementById('x-sentence'); s.value = {}; return null", json!(sentence)));
    browser.click("#x-go");
    browser.wait_for("return document.querySelectorAll('#x-main svg.map rect.cell').length > 0", 20);
    let answer = server.post(
        "/api/explore",
        &json!({"model": {"run": id, "model": "dot"}, "sentence": sentence, "beam": 5}).to_string(),
    );
    assert_eq!(answer.0, 200);
    let answer = answer.1;
    assert_eq!(
        browser.eval("return document.querySelector('#x-main .translation').textContent"),
        answer["translations"][0]["text"]
    );

    // Hover an output token: the source tokens it reads above 0.1 light up, and only they.
    let cols = answer["source"].as_array().unwrap().len();
    let data: Vec<f64> =
        answer["maps"]["cross"]["data"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    let row = 1;
    let lit = browser.eval(&format!(
        "const label = document.querySelector('#x-main svg.links text.token[data-row=\"{row}\"]');
         label.dispatchEvent(new MouseEvent('mouseenter', {{bubbles: true}}));
         return [...document.querySelectorAll('#x-main svg.links text.token.on')].map(t => Number(t.dataset.col))"
    ));
    let want: Vec<usize> = (0..cols).filter(|&j| data[row * cols + j] >= 0.1).collect();
    assert_eq!(lit, json!(want));
    assert!(!want.is_empty());

    // Click a cell: the score worked through adds up to the cell's weight.
    let (r, c) = (1, want[0]);
    browser.click(&format!("#x-main svg.map rect[data-row=\"{r}\"][data-col=\"{c}\"]"));
    browser.wait_for("return document.getElementById('x-steps').dataset.weight !== undefined", 20);
    let shown = browser.eval(&format!(
        "const steps = document.getElementById('x-steps');
         const cell = document.querySelector('#x-main svg.map rect[data-row=\"{r}\"][data-col=\"{c}\"]');
         const bars = [...steps.querySelectorAll('.bar .bar-value')].map(b => Number(b.textContent));
         return [Number(steps.dataset.weight), Number(cell.dataset.weight), bars.reduce((a, b) => a + b, 0),
                 Number(steps.querySelector('.bar.chosen .bar-value').textContent), cell.classList.contains('chosen')]"
    ));
    let shown: Vec<f64> = shown.as_array().unwrap().iter().take(4).map(|v| v.as_f64().unwrap()).collect();
    assert!((shown[0] - shown[1]).abs() < 1e-6, "the steps give {} for a cell of {}", shown[0], shown[1]);
    assert!((shown[2] - 1.0).abs() < 1e-3, "the row's weights sum to {}", shown[2]);
    assert!((shown[3] - shown[1]).abs() < 1e-4);
    assert!((shown[1] - data[r * cols + c]).abs() < 1e-6);

    // The beam tree: the winner's path spells the translation.
    let path =
        browser.eval("return [...document.querySelectorAll('#x-beam-tree .beam-node.winner')].map(n => n.textContent)");
    assert_eq!(path, answer["translations"][0]["tokens"]);

    // The uniform probe: the heatmap becomes uniform, in place.
    browser.eval(
        "const p = document.getElementById('x-probe'); p.value = 'uniform'; p.dispatchEvent(new Event('change')); return null",
    );
    browser.wait_for("return document.querySelector('#x-main .pane-model').textContent.includes('probe: uniform')", 20);
    let weights = browser
        .eval("return [...document.querySelectorAll('#x-main svg.map rect.cell')].map(r => Number(r.dataset.weight))");
    let weights: Vec<f64> = weights.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert!(weights.iter().all(|w| (w - 1.0 / cols as f64).abs() < 1e-6), "{weights:?}");
    browser.wait_for("return document.querySelectorAll('#x-probe-rows tr').length === 6", 60);
    assert!(browser.eval("return location.hash").as_str().unwrap().contains("x.probe=uniform"));
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    browser.screenshot(&dir.join("lab-explorer.png"));
    eprintln!("screenshot: {}", dir.join("lab-explorer.png").display());
}
