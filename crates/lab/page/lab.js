// The lab's page: choose a lesson and its settings, train it on the lab,
// and watch its events arrive (server-sent events) as charts and heatmaps.
// The whole setup lives in the URL, so a link reproduces it.

import { loadModels as refreshExplorer, start as startExplorer } from "./explore.js";
import { color, headGrid, heatmap, lineChart } from "./plots.js";

/** Settings shown first for each lesson; the rest sit under "More settings". */
const MAIN = {
  ablation: ["configs", "rnn", "placement", "layers", "heads", "lr", "emb", "hidden", "batch_size", "epochs", "train_size", "seed"],
  sort_study: ["model", "lengths", "lr", "emb", "hidden", "batch_size", "epochs", "train_size", "seed"],
  alignment_suite: ["phenomena", "configs", "rnn", "placement", "layers", "heads", "lr", "emb", "hidden", "batch_size", "epochs", "train_size", "seed"],
  train: ["path", "kind", "attention", "rnn", "emb", "hidden", "lr", "batch_size", "time_budget", "round_size", "test_size", "valid_size", "tokenizer", "seed"],
};

/** Where the page starts where the lesson's own default would train for long: one phenomenon, not seven. */
const PAGE_DEFAULTS = {
  alignment_suite: { phenomena: ["reverse"], configs: ["none", "dot", "additive"] },
  // The sample's 2,000 pairs, a minute of training: held-out pairs and rounds to match.
  train: { "data.path": "data/eng-spa-sample.tsv", "data.test_size": 100, "data.valid_size": 100, "data.tokenizer": "word",
    "data.vocab_size": 2000, "train.time_budget": 60, "train.round_size": 1800, "decode.beam": 1 },
};

const LESSON_NAMES = {
  ablation: "Attention ablation (lexicon, reversed)",
  sort_study: "Sorting digits",
  alignment_suite: "Alignment suite",
  train: "Translation on a corpus (a TSV file)",
};

const $ = (id) => document.getElementById(id);
const clone = (value) => JSON.parse(JSON.stringify(value));

const page = {
  lessons: null, // GET /api/lessons
  lesson: "ablation",
  settings: {}, // the lesson's settings as a request writes them
  run: null, // the run watched: its number
  state: "idle",
  source: null, // its EventSource
  models: new Map(), // name -> what its events said
  order: [], // model names in the lesson's order
  steps: [], // every snapshot step, in order (the scrubber's positions)
  scrub: null, // the scrubber's position, or null to follow the run
  heads: {}, // model -> [layer, head] chosen
  slowest: 0, // the longest a drawing took this run, in ms
  lrScales: [], // each learning-rate change: {scale, steps: {model: the last step heard before it}}
};

/** The factor a position of the lr slider stands for: powers of two, ×1/16 to ×16. */
const scaleAt = (position) => 2 ** position;
const scaleText = (scale) => (scale >= 1 ? String(scale) : `1/${1 / scale}`);
/** Shows the factor the lr slider stands at beside it. */
const showScale = () => { $("lr-scale-value").textContent = scaleText(scaleAt(Number($("lr-scale").value))); };

/** `settings` at the dotted `path` ("training.lr"). */
function getPath(settings, path) {
  return path.split(".").reduce((value, key) => value?.[key], settings);
}

function setPath(settings, path, value) {
  const keys = path.split(".");
  const last = keys.pop();
  keys.reduce((value, key) => value[key], settings)[last] = value;
}

/** Every leaf of `defaults` as its dotted path, in order. */
function leaves(defaults, prefix = "") {
  return Object.entries(defaults).flatMap(([key, value]) =>
    value && typeof value === "object" && !Array.isArray(value) ? leaves(value, `${prefix}${key}.`) : [`${prefix}${key}`]);
}

function defaultsOf(lesson) {
  const defaults = clone(page.lessons[lesson].defaults);
  for (const [path, value] of Object.entries(PAGE_DEFAULTS[lesson] ?? {})) setPath(defaults, path, value);
  return defaults;
}

/** Reads `text` as the type of `example` (a default value). */
function parseAs(example, text) {
  // A setting whose default is unset (chosen by the model's kind): empty unsets it.
  if (example === null) return text.trim() === "" ? null : Number.isFinite(Number(text)) ? Number(text) : text.trim();
  if (Array.isArray(example)) {
    const items = text.split(",").map((t) => t.trim()).filter(Boolean);
    return typeof example[0] === "number" ? items.map(Number) : items;
  }
  if (typeof example === "number") return Number(text);
  if (typeof example === "boolean") return text === "true";
  return text;
}

// ---- the URL: lesson, every setting that differs from its default, the run watched

function writeUrl() {
  const defaults = defaultsOf(page.lesson);
  const params = new URLSearchParams({ lesson: page.lesson });
  for (const path of leaves(defaults)) {
    const value = getPath(page.settings, path);
    if (JSON.stringify(value) !== JSON.stringify(getPath(defaults, path))) params.set(path, Array.isArray(value) ? value.join(",") : String(value));
  }
  if (page.run !== null) params.set("run", page.run);
  // The explorer's own keys stay.
  for (const [key, value] of new URLSearchParams(location.hash.slice(1))) if (key.startsWith("x.")) params.set(key, value);
  history.replaceState(null, "", `#${params}`);
}

function readUrl() {
  const params = new URLSearchParams(location.hash.slice(1));
  const lesson = params.get("lesson");
  page.lesson = lesson in page.lessons ? lesson : "ablation";
  page.settings = defaultsOf(page.lesson);
  for (const path of leaves(page.settings)) {
    if (params.has(path)) setPath(page.settings, path, parseAs(getPath(page.settings, path), params.get(path)));
  }
  const run = Number(params.get("run"));
  return Number.isInteger(run) && run > 0 ? run : null;
}

// ---- the settings form, made from the lesson's own definitions

function field(path) {
  const name = path.split(".").pop();
  const about = page.lessons[page.lesson].fields[name] ?? {};
  const value = getPath(page.settings, path);
  const box = document.createElement("label");
  box.className = "field";
  box.dataset.path = path;
  box.title = `${about.help ?? ""}${about.flag ? ` (lingo ${page.lesson.replace("_", "-")} ${about.flag})` : ""}`;
  const title = document.createElement("span");
  title.textContent = name.replaceAll("_", " ");
  box.appendChild(title);
  const changed = (next) => {
    setPath(page.settings, path, next);
    box.classList.remove("bad");
    writeUrl();
  };
  const choices = about.choices ?? [];
  if (Array.isArray(value) && choices.length) {
    const set = document.createElement("span");
    set.className = "choices";
    for (const choice of choices) {
      const item = document.createElement("label");
      const tick = document.createElement("input");
      tick.type = "checkbox";
      tick.checked = value.includes(choice);
      tick.dataset.choice = choice;
      tick.addEventListener("change", () => changed(choices.filter((c) => set.querySelector(`[data-choice="${c}"]`).checked)));
      item.append(tick, choice);
      set.appendChild(item);
    }
    box.appendChild(set);
  } else if (choices.length) {
    const select = document.createElement("select");
    // A setting unset by default (chosen by the model's kind) can be unset again.
    const unset = getPath(defaultsOf(page.lesson), path) === null;
    if (unset) select.add(new Option("by the model's kind", "", false, value === null));
    for (const choice of choices) select.add(new Option(choice, choice, false, choice === value));
    select.addEventListener("change", () => changed(unset && select.value === "" ? null : select.value));
    box.appendChild(select);
  } else if (typeof value === "boolean") {
    const tick = document.createElement("input");
    tick.type = "checkbox";
    tick.checked = value;
    tick.addEventListener("change", () => changed(tick.checked));
    box.appendChild(tick);
  } else {
    const input = document.createElement("input");
    input.type = "text";
    input.inputMode = typeof value === "number" ? "decimal" : "text";
    input.value = Array.isArray(value) ? value.join(",") : value ?? "";
    if (value === null) input.placeholder = "by the model's kind";
    input.addEventListener("change", () => changed(parseAs(value, input.value)));
    box.appendChild(input);
  }
  return box;
}

function renderForm() {
  $("lesson").value = page.lesson;
  const main = MAIN[page.lesson];
  const paths = leaves(page.settings);
  const byName = (name) => paths.find((p) => p.split(".").pop() === name);
  $("main-settings").replaceChildren(...main.map(byName).filter(Boolean).map(field));
  $("more-settings").replaceChildren(...paths.filter((p) => !main.includes(p.split(".").pop())).map(field));
}

// ---- a run: start it, follow its events, steer it

async function post(path, body) {
  const response = await fetch(path, { method: "POST", body: body === undefined ? "" : JSON.stringify(body) });
  const answer = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}`, field: "request" }));
  return { ok: response.ok, answer };
}

function showError(answer) {
  const banner = $("error");
  if (!answer) {
    banner.hidden = true;
    return;
  }
  banner.hidden = false;
  banner.textContent = answer.error;
  const path = (answer.field ?? "").replace(/^settings\./, "").replace(/\[\d+\]$/, "");
  document.querySelector(`.field[data-path="${path}"]`)?.classList.add("bad");
}

async function train() {
  showError(null);
  const { ok, answer } = await post("/api/runs", { lesson: page.lesson, settings: page.settings });
  if (!ok) return showError(answer);
  watch(answer.id);
}

async function watch(id) {
  const known = await fetch(`/api/runs/${id}`);
  if (!known.ok) {
    page.run = null;
    writeUrl();
    return showError(await known.json());
  }
  page.source?.close();
  Object.assign(page, { run: id, state: "running", models: new Map(), order: [], steps: [], scrub: null, heads: {}, slowest: 0, lrScales: [] });
  $("notes").textContent = "";
  writeUrl();
  page.source = new EventSource(`/api/runs/${id}/events`);
  page.source.onmessage = (message) => receive(JSON.parse(message.data));
  page.source.onerror = () => {
    // The stream ends after the run's last event; the browser would reconnect to an ended run.
    if (["finished", "stopped", "failed"].includes(page.state)) page.source.close();
  };
  schedule();
}

function model(name) {
  if (!page.models.has(name)) {
    page.models.set(name, { name, label: name, params: 0, steps: [], epochs: [], snapshots: [], rate: null, step: 0 });
    page.order.push(name);
  }
  return page.models.get(name);
}

/** One event of the run, as the lesson sent it. */
function receive(event) {
  switch (event.event) {
    case "started":
      for (const info of event.runs) Object.assign(model(info.run), { label: info.label, params: info.params });
      $("data").textContent = Object.entries(event.data).map(([use, n]) => `${n} ${use}`).join(" · ");
      break;
    case "step": {
      const m = model(event.run);
      const last = m.steps.at(-1);
      if (last && event.seconds > last.seconds) m.rate = (event.step - last.step) / (event.seconds - last.seconds);
      m.steps.push(event);
      m.step = event.step;
      break;
    }
    case "epoch":
      model(event.run).epochs.push(event);
      break;
    case "snapshot": {
      if (event.example !== 0) break;
      const m = model(event.run);
      m.snapshots.push(event);
      if (!page.steps.includes(event.step)) page.steps.push(event.step);
      break;
    }
    case "finished":
      page.results = event.results;
      break;
    case "note":
      $("notes").textContent = event.text;
      break;
    case "checkpoint":
      $("notes").textContent = `wrote ${event.path}`;
      break;
    case "lr":
      page.lrScales.push({ scale: event.scale, steps: event.steps });
      break;
    case "state":
      page.state = event.state;
      // Held or ended, its models are worth exploring: the explorer lists them.
      refreshExplorer();
      if (event.error) showError({ error: event.error, field: "request" });
      break;
  }
  schedule();
}

async function act(action) {
  if (page.run === null) return;
  const { ok, answer } = await post(`/api/runs/${page.run}/${action}`);
  if (!ok) showError(answer);
}

/** Sends the lr slider's factor to the run: its models train at it from their next step. */
async function scaleLr() {
  if (page.run === null) return;
  const { ok, answer } = await post(`/api/runs/${page.run}/lr`, { scale: scaleAt(Number($("lr-scale").value)) });
  if (!ok) showError(answer);
}

async function reset() {
  if (page.run !== null && !["finished", "stopped", "failed"].includes(page.state)) await act("stop");
  train();
}

// ---- drawing: events are drawn at most ten times a second, however fast
// they come (each drawing costs the browser far more than its script, and
// the training needs the cores); a control answers at once.

const EVENT_DRAWS_MS = 100;
let pending = false;
let lastDraw = 0;
function schedule(now = false) {
  if (pending) return;
  pending = true;
  const wait = now ? 0 : Math.max(0, lastDraw + EVENT_DRAWS_MS - performance.now());
  setTimeout(() => requestAnimationFrame(() => {
    pending = false;
    const start = performance.now();
    draw();
    lastDraw = performance.now();
    const took = lastDraw - start;
    page.slowest = Math.max(page.slowest, took);
    $("draw-ms").textContent = `· last update drawn in ${took.toFixed(1)} ms (slowest ${page.slowest.toFixed(1)} ms)`;
  }), wait);
}

/** Whether `node` already shows what `key` names; a drawing skips it then (the browser repaints less). */
function unchanged(node, key) {
  if (node.dataset.key === key) return true;
  node.dataset.key = key;
  return false;
}

function draw() {
  const running = page.state === "running", paused = page.state === "paused";
  $("pause").textContent = paused ? "Resume" : "Pause";
  $("pause").disabled = !(running || paused);
  $("step").disabled = !(running || paused);
  $("stop").disabled = !(running || paused);
  // The slider shows the run's factor (what its events said), unless a hand is on it.
  const slider = $("lr-scale");
  slider.disabled = !(running || paused);
  if (document.activeElement !== slider) slider.value = String(Math.log2(page.lrScales.at(-1)?.scale ?? 1));
  showScale();
  const rates = page.order.map((n) => page.models.get(n).rate).filter((r) => r !== null);
  $("status").textContent = page.run === null ? "not started" :
    `run ${page.run}: ${page.state}${rates.length ? ` · ${rates.reduce((a, b) => a + b, 0).toFixed(0)} steps/s in all` : ""}`;
  $("status").dataset.state = page.state;
  const models = page.order.map((name, i) => ({ ...page.models.get(name), color: color(i) }));
  const counts = (pick) => `${page.run}|${page.lesson}|${models.map((m) => pick(m).length).join(",")}`;
  if (!unchanged($("loss-chart"), counts((m) => m.steps) + counts((m) => m.epochs) + page.lrScales.length)) {
    lineChart($("loss-chart"), {
      xLabel: "step", yLabel: "loss",
      marks: page.lrScales.flatMap(({ scale, steps }) => models.filter((m) => m.name in steps).map((m) => ({
        x: steps[m.name], color: m.color, label: `×${scaleText(scale)}`,
        title: `${m.label}: learning rate ×${scaleText(scale)} after step ${steps[m.name]}`,
      }))),
      series: models.flatMap((m) => [
        { label: `${m.label} train`, color: m.color, points: m.steps.map((s) => [s.step, s.loss]) },
        { label: `${m.label} validation`, color: m.color, dashed: true, points: m.epochs.map((e) => [e.steps, e.val_loss]) },
      ]),
    });
  }
  if (!unchanged($("alignment-chart"), counts((m) => m.epochs))) {
    lineChart($("alignment-chart"), {
      xLabel: "epoch", yLabel: "alignment accuracy", yRange: [0, 1], percent: true, empty: noGold(),
      series: models.filter((m) => m.epochs.some((e) => e.alignment !== null))
        .map((m) => ({ label: m.label, color: m.color, points: m.epochs.map((e) => [e.epoch, e.alignment]) })),
    });
  }
  if (!unchanged($("entropy-chart"), counts((m) => m.epochs))) {
    lineChart($("entropy-chart"), {
      xLabel: "epoch", yLabel: "attention entropy (nats)", empty: noGold(),
      series: models.filter((m) => m.epochs.some((e) => e.entropy !== null))
        .map((m) => ({ label: m.label, color: m.color, points: m.epochs.map((e) => [e.epoch, e.entropy]) })),
    });
  }
  drawLegend(models);
  drawTable(models);
  drawAttention(models);
  drawKeep(models);
  for (const box of document.querySelectorAll("#curves .downloads")) downloads(box, box.dataset.figure, "");
}

/** SVG and PNG links to the lab's own drawing of `figure` (lingo-viz, its embedded font). */
function downloads(box, figure, query) {
  if (page.run === null) return box.replaceChildren();
  const links = ["svg", "png"].map((format) => {
    const link = document.createElement("a");
    link.href = `/api/runs/${page.run}/figures/${figure}.${format}${query}`;
    link.textContent = format.toUpperCase();
    link.title = `download as ${format.toUpperCase()}, drawn by the lab as the command line draws its pictures`;
    return link;
  });
  const current = [...box.children].map((a) => a.href).join(" ");
  if (current !== links.map((a) => a.href).join(" ")) box.replaceChildren(...links);
}

function drawKeep(models) {
  const select = $("keep-model");
  const names = models.map((m) => m.name);
  if ([...select.options].map((o) => o.value).join() !== names.join()) {
    select.replaceChildren(...models.map((m) => new Option(m.label, m.name)));
  }
  const ended = ["finished", "stopped", "failed"].includes(page.state);
  $("save-checkpoint").disabled = !ended || !names.length;
  $("save-report").disabled = page.run === null;
  $("keep-checkpoint").placeholder = `${(select.value || "model").replace(/[^a-z0-9_-]/gi, "-")}.ckpt`;
  $("keep-report").placeholder = `run${page.run ?? ""}.html`;
}

async function keep(what) {
  const name = (id) => $(id).value.trim() || $(id).placeholder;
  const body = what === "checkpoint"
    ? { model: $("keep-model").value, checkpoint: name("keep-checkpoint") }
    : { report: name("keep-report") };
  body.overwrite = $("keep-overwrite").checked;
  const { ok, answer } = await post(`/api/runs/${page.run}/save`, body);
  $("kept").textContent = ok ? `wrote ${answer.wrote.join(", ")}` : `not written: ${answer.error}`;
  $("kept").classList.toggle("bad", !ok);
}

/** What an empty alignment chart says: a corpus has no gold links to score against. */
function noGold() {
  return page.run !== null && page.lesson === "train" ? "a corpus has no gold alignment to score against" : "nothing yet";
}

function drawLegend(models) {
  $("legend").replaceChildren(...models.map((m) => {
    const item = document.createElement("span");
    item.className = "key";
    item.style.setProperty("--color", m.color);
    item.textContent = m.label;
    item.title = `${m.params.toLocaleString()} parameters; solid: training loss, dashed: validation loss`;
    return item;
  }));
}

function cell(text, title) {
  const td = document.createElement("td");
  td.textContent = text;
  if (title) td.title = title;
  return td;
}

const pct = (x) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(1)}%`);

function drawTable(models) {
  $("summary").replaceChildren(...models.map((m) => {
    const last = m.epochs.at(-1), step = m.steps.at(-1);
    const tr = document.createElement("tr");
    tr.style.setProperty("--color", m.color);
    tr.append(
      cell(m.label, `${m.name}: ${m.params.toLocaleString()} parameters`),
      cell(last ? `${last.epoch} / ${last.epochs}` : "–", "epochs finished / epochs"),
      cell(String(m.step), "optimizer steps taken"),
      cell(step ? step.loss.toFixed(4) : "–", "the last batch's training loss"),
      cell(last ? last.val_loss.toFixed(4) : "–", "validation loss after the last epoch"),
      cell(pct(last?.alignment), "share of output tokens whose attention peaks on the gold source word"),
      cell(last?.entropy == null ? "–" : last.entropy.toFixed(3), "mean attention entropy in nats (0: one word; ln n: spread evenly)"),
      cell(step ? step.lr.toPrecision(3) : "–", "the learning rate of the last step heard (the schedule's, times the lr × factor)"),
      cell(m.rate === null ? "–" : m.rate.toFixed(0), "training steps per second, measured by the trainer"),
    );
    return tr;
  }));
}

/** The best-aligned head, [layer, head], at the last epoch before `step` (the earlier of a tie). */
function bestHead(m, step) {
  const heads = m.epochs.findLast((e) => e.steps <= step)?.heads;
  if (!heads) return null;
  let best = null;
  heads.accuracy.forEach((row, l) => row.forEach((a, h) => { if (!best || a > best[2]) best = [l, h, a]; }));
  return best && [best[0], best[1]];
}

function drawAttention(models) {
  const scrubber = $("scrubber");
  scrubber.max = Math.max(0, page.steps.length - 1);
  scrubber.disabled = page.steps.length < 2;
  const position = page.scrub ?? page.steps.length - 1;
  scrubber.value = position;
  const step = page.steps[position];
  $("scrub-label").textContent = step === undefined ? "no snapshot yet" : `step ${step}${page.scrub === null ? " (live)" : ""}`;
  const cards = $("attention");
  const shown = models.filter((m) => m.snapshots.length);
  for (const m of shown) {
    let card = cards.querySelector(`[data-model="${m.name}"]`);
    if (!card) {
      card = document.createElement("figure");
      card.dataset.model = m.name;
      card.innerHTML = `<figcaption></figcaption><svg class="map"></svg><div class="grid"></div><p class="hint">this map <span class="downloads dl-map"></span><span class="dl-heads"> · every head <span class="downloads"></span></span></p>`;
      cards.appendChild(card);
    }
    const snapshot = m.snapshots.findLast((s) => step === undefined || s.step <= step) ?? m.snapshots[0];
    const [layers, heads, rows, cols] = snapshot.weights.dim;
    const best = bestHead(m, snapshot.step);
    const chosen = page.heads[m.name] ?? best ?? [layers - 1, 0];
    const offset = (chosen[0] * heads + chosen[1]) * rows * cols;
    const epoch = m.epochs.findLast((e) => e.steps <= snapshot.step);
    const head = layers * heads > 1 ? ` · layer ${chosen[0] + 1} head ${chosen[1] + 1}` : "";
    if (unchanged(card, `${snapshot.step}|${chosen}|${best}|${epoch?.alignment}|${m.color}`)) continue;
    card.querySelector("figcaption").textContent =
      `${m.label} · step ${snapshot.step}${head}${epoch?.alignment != null ? ` · alignment ${pct(epoch.alignment)}` : ""}`;
    card.querySelector("figcaption").style.setProperty("--color", m.color);
    heatmap(card.querySelector(".map"), { data: snapshot.weights.data, offset, source: snapshot.source, target: snapshot.target });
    const grid = card.querySelector(".grid");
    if (layers * heads > 1) {
      headGrid(grid, { weights: snapshot.weights, source: snapshot.source, target: snapshot.target, best, chosen, pick: (l, h) => { page.heads[m.name] = [l, h]; schedule(true); } });
    } else grid.replaceChildren();
    const at = `?model=${encodeURIComponent(m.name)}&step=${snapshot.step}`;
    downloads(card.querySelector(".dl-map"), "attention", `${at}&layer=${chosen[0] + 1}&head=${chosen[1] + 1}`);
    card.querySelector(".dl-heads").hidden = layers * heads === 1;
    downloads(card.querySelector(".dl-heads .downloads"), "heads", at);
  }
  for (const card of [...cards.children]) if (!shown.some((m) => m.name === card.dataset.model)) card.remove();
  $("no-attention").hidden = shown.length > 0 || page.run === null;
}

// ---- replaying the snapshots

let replaying = null;
function replay() {
  if (replaying) {
    clearInterval(replaying);
    replaying = null;
    $("replay").textContent = "Replay";
    return;
  }
  page.scrub = 0;
  $("replay").textContent = "Stop replay";
  replaying = setInterval(() => {
    if (page.scrub >= page.steps.length - 1) return replay();
    page.scrub += 1;
    schedule(true);
  }, 80);
}

// ---- the page

async function main() {
  page.lessons = await (await fetch("/api/lessons")).json();
  for (const [lesson, name] of Object.entries(LESSON_NAMES)) $("lesson").add(new Option(name, lesson));
  const run = readUrl();
  renderForm();
  $("lesson").addEventListener("change", () => {
    page.lesson = $("lesson").value;
    page.settings = defaultsOf(page.lesson);
    renderForm();
    writeUrl();
  });
  $("train").addEventListener("click", train);
  $("pause").addEventListener("click", () => act(page.state === "paused" ? "resume" : "pause"));
  $("step").addEventListener("click", () => act("step"));
  $("stop").addEventListener("click", () => act("stop"));
  $("reset").addEventListener("click", reset);
  $("lr-scale").addEventListener("input", showScale);
  $("lr-scale").addEventListener("change", scaleLr);
  $("replay").addEventListener("click", replay);
  $("save-checkpoint").addEventListener("click", () => keep("checkpoint"));
  $("save-report").addEventListener("click", () => keep("report"));
  $("keep-model").addEventListener("change", () => schedule(true));
  $("scrubber").addEventListener("input", () => {
    const position = Number($("scrubber").value);
    page.scrub = position >= page.steps.length - 1 ? null : position;
    schedule(true);
  });
  // A link pasted into this tab's address bar: its setup, and its run if it names one.
  window.addEventListener("hashchange", () => {
    const named = readUrl();
    renderForm();
    if (named !== null && named !== page.run) watch(named);
    writeUrl();
  });
  if (run !== null) watch(run);
  writeUrl();
  schedule();
  startExplorer();
}

main();
