// The explorer: a typed sentence through one of the lab's models (a run's,
// as at its last snapshot while it trains, or a checkpoint of the lab's
// folder). Every number comes from the lab's API, which calls lingo-nn:
// the translation and its maps (`/api/explore`), one score worked through
// (`/api/explore/score`), the probes' validation scores (`/api/explore/probes`).

import { el, headGrid, shade, tip } from "./plots.js";

const $ = (id) => document.getElementById(id);

const KIND_NAMES = { cross: "decoder → source (cross)", encoder_self: "source → source (encoder self)", decoder_self: "target → earlier target (decoder self)" };

/** Everything the explorer shows, and what the URL keeps (`x.` keys of the address's fragment). */
const state = {
  models: [], // as `GET /api/models` lists them, each with a `key`
  checkpoints: [],
  answer: null, // the main model's `/api/explore` answer
  compared: [], // [{key, answer}] for the models compared with it
  view: { kind: "cross", layer: 0, head: "mean" },
  cell: null, // [row, col] worked through
  probes: new Map(), // model key and step → its probes' scores
  threshold: 0.1, // a source token no row reads above this is marked dropped
  busy: false,
};

// ---- model references: `run:1:dot` or `ckpt:name.ckpt`

function keyOf(m) {
  return m.checkpoint !== undefined ? `ckpt:${m.checkpoint}` : `run:${m.run}:${m.model}`;
}

function refOf(key) {
  if (key.startsWith("ckpt:")) return { checkpoint: key.slice(5) };
  const [, run, ...name] = key.split(":");
  return { run: Number(run), model: name.join(":") };
}

function labelOf(key) {
  const m = state.models.find((x) => x.key === key);
  if (!m) return key.replace(/^ckpt:/, "");
  const where = m.trained ? "trained" : `step ${m.step}, training`;
  return `run ${m.run}: ${m.model} (${where})`;
}

// ---- the URL

function readUrl() {
  const params = new URLSearchParams(location.hash.slice(1));
  const get = (key, fallback) => params.get(`x.${key}`) ?? fallback;
  $("x-sentence").value = get("s", "");
  $("x-beam").value = get("beam", "5");
  $("x-probe").value = get("probe", "unchanged");
  state.view = { kind: get("kind", "cross"), layer: Number(get("layer", "0")), head: get("head", "mean") };
  if (state.view.head !== "mean") state.view.head = Number(state.view.head);
  const cell = get("cell", "").split(",").map(Number);
  state.cell = cell.length === 2 && cell.every(Number.isInteger) ? cell : null;
  return { model: get("model", ""), compare: get("cmp", "").split(",").filter(Boolean) };
}

function writeUrl() {
  const params = new URLSearchParams(location.hash.slice(1));
  for (const key of [...params.keys()]) if (key.startsWith("x.")) params.delete(key);
  const set = (key, value) => { if (value !== "" && value !== null) params.set(`x.${key}`, value); };
  set("model", $("x-model").value);
  set("s", $("x-sentence").value);
  set("beam", $("x-beam").value);
  set("probe", $("x-probe").value);
  set("kind", state.view.kind);
  set("layer", state.view.layer);
  set("head", state.view.head);
  set("cmp", compareKeys().join(","));
  if (state.cell) set("cell", state.cell.join(","));
  history.replaceState(null, "", `#${params}`);
}

// ---- talking to the lab

async function post(path, body) {
  const response = await fetch(path, { method: "POST", body: JSON.stringify(body) });
  const answer = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}`, field: "request" }));
  return { ok: response.ok, answer };
}

function say(text, bad = false) {
  const line = $("x-message");
  line.textContent = text;
  line.classList.toggle("bad", bad);
}

export async function loadModels(chosen) {
  const listed = await (await fetch("/api/models")).json();
  state.models = listed.models.map((m) => ({ ...m, key: keyOf(m) }));
  state.checkpoints = listed.checkpoints;
  const keys = [...state.models.map((m) => m.key), ...listed.checkpoints.map((c) => `ckpt:${c}`)];
  for (const id of ["x-model", "x-compare"]) {
    const select = $(id);
    const keep = id === "x-model" ? (chosen?.model || select.value) : null;
    const picked = id === "x-compare" ? new Set(chosen?.compare ?? compareKeys()) : null;
    select.replaceChildren(...keys.map((key) => new Option(labelOf(key), key)));
    if (keep && keys.includes(keep)) select.value = keep;
    if (picked) for (const option of select.options) option.selected = picked.has(option.value);
  }
  $("x-empty").hidden = keys.length > 0;
  offerExamples();
}

function compareKeys() {
  return [...$("x-compare").selectedOptions].map((o) => o.value).filter((key) => key !== $("x-model").value);
}

/** The chosen model's held-out sentences, to pick from while typing. */
function offerExamples() {
  const m = state.models.find((x) => x.key === $("x-model").value);
  $("x-examples").replaceChildren(...(m?.examples ?? []).map((e) => new Option(e)));
  $("x-probe").querySelector("option[value=gold]").disabled = !m;
}

async function translate() {
  const key = $("x-model").value;
  const sentence = $("x-sentence").value;
  if (!key) return say("No model yet: train one above, or save a checkpoint into the lab's folder.", true);
  writeUrl();
  state.busy = true;
  const body = (k, probe) => ({ model: refOf(k), sentence, beam: Number($("x-beam").value), probe });
  const started = performance.now();
  const asked = [post("/api/explore", body(key, $("x-probe").value)), ...compareKeys().map((k) => post("/api/explore", body(k, "unchanged")))];
  const [main, ...others] = await Promise.all(asked);
  state.busy = false;
  if (!main.ok) {
    say(`${main.answer.field}: ${main.answer.error}`, true);
    return;
  }
  state.answer = main.answer;
  state.compared = compareKeys().map((k, i) => ({ key: k, answer: others[i].ok ? others[i].answer : null, error: others[i].ok ? null : others[i].answer }));
  fitView();
  draw();
  const ms = performance.now() - started;
  say(`answered and drawn in ${Math.round(ms)} ms`);
  $("x-message").dataset.ms = ms;
  if (state.cell) explain(...state.cell);
  if ($("x-probe").value !== "unchanged") scoreProbes();
}

/** The view asked for, kept inside what the model has. */
function fitView() {
  const maps = state.answer.maps;
  if (!maps[state.view.kind]) state.view.kind = "cross";
  const map = maps[state.view.kind];
  if (!map) return;
  const [layers, heads, rows, cols] = map.dim;
  if (state.view.layer >= layers) state.view.layer = layers - 1;
  if (state.view.head !== "mean" && state.view.head >= heads) state.view.head = "mean";
  if (state.cell && (state.cell[0] >= rows || state.cell[1] >= cols)) state.cell = null;
}

// ---- what the rows and columns are

/** Rows attend, columns are attended to: output tokens over the source, or a sequence over itself. */
function axes(answer, kind) {
  const output = answer.translations[0].tokens;
  if (kind === "encoder_self") return { rows: answer.source, cols: answer.source };
  if (kind === "decoder_self") return { rows: output, cols: answer.inputs };
  return { rows: output, cols: answer.source };
}

/** The `(rows, cols)` weights of one layer and head, or their mean over heads. */
function weightsOf(map, layer, head) {
  const [, heads, rows, cols] = map.dim;
  const size = rows * cols;
  const at = (h) => map.data.slice((layer * heads + h) * size, (layer * heads + h + 1) * size);
  if (head !== "mean") return at(head);
  const sum = new Array(size).fill(0);
  for (let h = 0; h < heads; h++) at(h).forEach((w, i) => { sum[i] += w / heads; });
  return sum;
}

// ---- drawing

function draw() {
  const answer = state.answer;
  if (!answer) return;
  drawControls(answer);
  drawPane($("x-main"), answer, state.view, true);
  drawCompared();
  drawBeam(answer);
  drawProbes();
  writeUrl();
}

function drawControls(answer) {
  const unknown = answer.unknown.map(([, w]) => `“${w}”`);
  $("x-unknown").textContent = unknown.length ? `Not in the model's vocabulary, read as <unk>: ${unknown.join(", ")}.` : "";
  const kinds = Object.keys(answer.maps);
  const kindSelect = $("x-kind");
  kindSelect.replaceChildren(...kinds.map((k) => new Option(KIND_NAMES[k], k)));
  kindSelect.value = state.view.kind;
  const map = answer.maps[state.view.kind];
  const [layers, heads] = map ? map.dim : [1, 1];
  $("x-layer").replaceChildren(...Array.from({ length: layers }, (_, l) => new Option(`layer ${l + 1}`, l)));
  $("x-layer").value = state.view.layer;
  $("x-head").replaceChildren(new Option(heads > 1 ? "mean of heads" : "its one head", "mean"), ...(heads > 1 ? Array.from({ length: heads }, (_, h) => new Option(`head ${h + 1}`, h)) : []));
  $("x-head").value = state.view.head;
  for (const id of ["x-kind", "x-layer", "x-head"]) $(id).disabled = !map;
}

/** One model's translation, its heatmap and links, and (the main model) its heads' overview. */
function drawPane(box, answer, view, main) {
  const best = answer.translations[0];
  const model = answer.model;
  const heading = box.querySelector(".pane-model");
  const attention = model.attention === null ? "no attention" : model.placement ? `${model.attention} attention, ${model.placement} placement` : model.attention;
  heading.textContent = `${model.kind} · ${attention}${model.trained ? "" : ` · step ${model.step}, training`}${answer.probe !== "unchanged" ? ` · probe: ${answer.probe}` : ""}`;
  const translation = box.querySelector(".translation");
  translation.textContent = best.text || "(nothing)";
  translation.title = `log p ${best.log_prob.toFixed(3)}, score ${best.score.toFixed(3)}${best.finished ? "" : ", cut at the length limit"}`;
  const others = box.querySelector(".others");
  if (others) others.textContent = answer.translations.slice(1).map((t) => `${t.text || "(nothing)"} (${t.score.toFixed(2)})`).join(" · ");
  const map = answer.maps[view.kind];
  box.querySelector(".no-attention").hidden = Boolean(map);
  const svg = box.querySelector("svg.map");
  const links = box.querySelector("svg.links");
  // A model without attention has nothing to draw: no empty frames either.
  for (const drawing of [svg, links]) drawing.style.display = map ? "" : "none";
  if (!map) {
    svg.replaceChildren();
    links.replaceChildren();
    return;
  }
  const { rows, cols } = axes(answer, view.kind);
  const weights = weightsOf(map, view.layer, view.head);
  const dropped = view.kind === "cross" ? droppedColumns(weights, rows.length, cols.length) : new Set();
  const linked = { svg, links, rows, cols, weights, dropped };
  drawMap(linked, main ? state.cell : null, main ? (i, j) => explain(i, j) : null);
  drawLinks(linked);
  box.querySelector(".dropped").textContent = dropped.size
    ? `Dropped? No output token reads ${[...dropped].map((j) => `“${cols[j]}”`).join(", ")} above ${state.threshold}.`
    : "";
  const grid = box.querySelector(".heads");
  if (!grid) return;
  const [layers, heads] = map.dim;
  grid.hidden = layers * heads <= 1;
  if (layers * heads > 1) {
    const chosen = view.head === "mean" ? null : [view.layer, view.head];
    headGrid(grid, { weights: map, source: cols, target: rows, best: null, chosen, pick: (l, h) => { Object.assign(state.view, { layer: l, head: h }); draw(); } });
  }
}

/** Source columns no row reads above the threshold (`<sos>`, `<eos>` aside). */
function droppedColumns(weights, rows, cols) {
  const dropped = new Set();
  for (let j = 1; j < cols - 1; j++) {
    let most = 0;
    for (let i = 0; i < rows; i++) most = Math.max(most, weights[i * cols + j]);
    if (most < state.threshold) dropped.add(j);
  }
  return dropped;
}

/** The heatmap: hover a cell, a row or a column to light up what it links; click a cell to work it through. */
function drawMap({ svg, rows, cols, weights, dropped }, chosen, pick) {
  svg.replaceChildren();
  const cell = 28;
  const longest = (tokens) => Math.max(...tokens.map((t) => t.length));
  const left = 12 + 7 * longest(rows), top = 12 + 7 * longest(cols);
  const lean = Math.ceil(3.5 * longest(cols));
  const width = left + cols.length * cell + 2 + lean, height = top + rows.length * cell + 2;
  for (const [k, v] of Object.entries({ viewBox: `0 0 ${width} ${height}`, width, height })) svg.setAttribute(k, v);
  const rects = [];
  const colLabels = cols.map((token, j) => {
    const x = left + j * cell + cell / 2 + 4, y = top - 6;
    const text = el(svg, "text", { x, y, transform: `rotate(-60 ${x} ${y})`, class: `token col${dropped.has(j) ? " dropped" : ""}`, "data-col": j }, token);
    text.addEventListener("mouseenter", (event) => light(svg, rects, null, j, event, `${token}: read by ${describe(rows, (i) => weights[i * cols.length + j])}`));
    text.addEventListener("mouseleave", () => light(svg, rects));
    return text;
  });
  rows.forEach((token, i) => {
    const text = el(svg, "text", { x: left - 6, y: top + i * cell + cell / 2 + 4, "text-anchor": "end", class: "token row", "data-row": i }, token);
    text.addEventListener("mouseenter", (event) => light(svg, rects, i, null, event, `${token} reads ${describe(cols, (j) => weights[i * cols.length + j])}`));
    text.addEventListener("mouseleave", () => light(svg, rects));
  });
  rows.forEach((rowToken, i) => cols.forEach((colToken, j) => {
    const w = weights[i * cols.length + j];
    const rect = el(svg, "rect", { x: left + j * cell, y: top + i * cell, width: cell, height: cell, fill: shade(w), class: "cell", "data-row": i, "data-col": j, "data-weight": w });
    if (chosen && chosen[0] === i && chosen[1] === j) rect.classList.add("chosen");
    if (pick) rect.addEventListener("click", () => pick(i, j));
    rect.addEventListener("mouseenter", (event) => light(svg, rects, i, j, event, `${rowToken} → ${colToken}: ${w.toFixed(4)}${pick ? "\nclick: this score, step by step" : ""}`));
    rect.addEventListener("mouseleave", () => light(svg, rects));
    rects.push(rect);
  }));
  svg.colLabels = colLabels;
}

/** The `k` largest of `weight(index)` over `tokens`, as text. */
function describe(tokens, weight, k = 4) {
  const ranked = tokens.map((t, i) => [t, weight(i)]).sort((a, b) => b[1] - a[1]).slice(0, k);
  return ranked.map(([t, w]) => `${t} ${w.toFixed(3)}`).join(", ");
}

/** Lights the cells of row `i` and column `j` (either may be null; both null: none) and shows `text`. */
function light(svg, rects, i = null, j = null, event = null, text = "") {
  const on = i !== null || j !== null;
  svg.classList.toggle("lit", on);
  for (const rect of rects) {
    const r = Number(rect.dataset.row), c = Number(rect.dataset.col);
    rect.classList.toggle("on", on && (i === null || r === i) && (j === null || c === j));
  }
  for (const label of svg.querySelectorAll("text.token")) {
    const r = label.dataset.row, c = label.dataset.col;
    label.classList.toggle("on", on && ((r !== undefined && Number(r) === i) || (c !== undefined && Number(c) === j)));
  }
  if (on && event) tip.show(event, text);
  else tip.hide();
}

/** BertViz's head view: rows on the left, columns on the right, a line for each weight; hover a token for its lines alone. */
function drawLinks({ links, rows, cols, weights, dropped }) {
  links.replaceChildren();
  const step = 22, gap = 150;
  const longest = (tokens) => Math.max(...tokens.map((t) => t.length));
  const left = 8 + 7.5 * longest(rows), right = left + gap;
  const width = right + 16 + 7.5 * longest(cols), height = 16 + step * Math.max(rows.length, cols.length);
  for (const [k, v] of Object.entries({ viewBox: `0 0 ${width} ${height}`, width, height })) links.setAttribute(k, v);
  const y = (i) => 14 + i * step;
  const lines = [];
  rows.forEach((_, i) => cols.forEach((__, j) => {
    const w = weights[i * cols.length + j];
    if (w < 0.02) return;
    const line = el(links, "line", { x1: left + 4, y1: y(i) - 4, x2: right - 4, y2: y(j) - 4, class: "link", "stroke-opacity": w.toFixed(3), "stroke-width": (0.5 + 3 * w).toFixed(2) });
    line.dataset.row = i;
    line.dataset.col = j;
    lines.push(line);
  }));
  const labels = [];
  const focus = (side, index, event) => {
    for (const line of lines) line.classList.toggle("hidden", side !== null && Number(line.dataset[side]) !== index);
    for (const label of labels) {
      const other = side === "row" ? label.dataset.col : side === "col" ? label.dataset.row : undefined;
      const w = other === undefined ? null : side === "row" ? weights[index * cols.length + Number(other)] : weights[Number(other) * cols.length + index];
      label.nextSibling.textContent = w === null ? "" : w.toFixed(2);
      label.classList.toggle("on", w !== null && w >= 0.1);
    }
    if (side === null) tip.hide();
    else tip.show(event, side === "row" ? `${rows[index]} reads ${describe(cols, (j) => weights[index * cols.length + j])}` : `${cols[index]}: read by ${describe(rows, (i) => weights[i * cols.length + index])}`);
  };
  rows.forEach((token, i) => {
    const label = el(links, "text", { x: left, y: y(i), "text-anchor": "end", class: "token", "data-row": i }, token);
    el(links, "text", { x: 2, y: y(i), class: "link-weight" });
    label.addEventListener("mouseenter", (event) => focus("row", i, event));
    label.addEventListener("mouseleave", () => focus(null));
    labels.push(label);
  });
  cols.forEach((token, j) => {
    const label = el(links, "text", { x: right, y: y(j), class: `token${dropped.has(j) ? " dropped" : ""}`, "data-col": j }, token);
    el(links, "text", { x: width - 2, y: y(j), "text-anchor": "end", class: "link-weight" });
    label.addEventListener("mouseenter", (event) => focus("col", j, event));
    label.addEventListener("mouseleave", () => focus(null));
    labels.push(label);
  });
}

function drawCompared() {
  const box = $("x-compared");
  box.replaceChildren();
  for (const { key, answer, error } of state.compared) {
    const pane = $("x-pane-template").content.firstElementChild.cloneNode(true);
    pane.querySelector(".pane-name").textContent = labelOf(key);
    box.appendChild(pane);
    if (!answer) {
      pane.querySelector(".translation").textContent = `${error.field}: ${error.error}`;
      continue;
    }
    // The compared models show what the main one shows where they have it: cross-attention, its last layer's mean otherwise.
    const map = answer.maps[state.view.kind] ? state.view : { kind: "cross", layer: Math.max(0, (answer.maps.cross?.dim[0] ?? 1) - 1), head: "mean" };
    const layers = answer.maps[map.kind]?.dim[0] ?? 1;
    drawPane(pane, answer, { ...map, layer: Math.min(map.layer, layers - 1), head: map.head !== "mean" && map.head >= (answer.maps[map.kind]?.dim[1] ?? 1) ? "mean" : map.head }, false);
  }
}

// ---- one score, step by step

async function explain(row, col) {
  const started = performance.now();
  state.cell = [row, col];
  writeUrl();
  const answer = state.answer;
  const body = {
    model: refOf($("x-model").value),
    sentence: $("x-sentence").value,
    output: answer.translations[0].ids,
    kind: state.view.kind,
    layer: state.view.layer,
    row,
    col,
  };
  const { ok, answer: steps } = await post("/api/explore/score", body);
  for (const rect of $("x-main").querySelectorAll("svg.map rect.cell")) {
    rect.classList.toggle("chosen", Number(rect.dataset.row) === row && Number(rect.dataset.col) === col);
  }
  if (!ok) return say(`${steps.field}: ${steps.error}`, true);
  drawSteps(steps, row, col);
  $("x-steps").dataset.ms = performance.now() - started;
}

const fmt = (x) => (x === null || x === undefined ? "−∞" : Math.abs(x) >= 1e4 || (x !== 0 && Math.abs(x) < 1e-4) ? x.toExponential(3) : x.toFixed(4));

function drawSteps(steps, row, col) {
  const box = $("x-steps");
  box.replaceChildren();
  const { rows, cols } = axes(state.answer, state.view.kind);
  const heads = steps.heads.length;
  const shown = state.view.head === "mean" ? 0 : state.view.head;
  const h = steps.heads[shown];
  const add = (tag, text, cls) => {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (cls) node.className = cls;
    box.appendChild(node);
    return node;
  };
  add("h3", `“${rows[row]}” reading “${cols[col]}”: ${steps.scorer}${heads > 1 ? `, head ${shown + 1} of ${heads}` : ""}`);
  if (state.answer.probe !== "unchanged") add("p", `The probe (${state.answer.probe}) replaces these weights when translating; this is the model's own score.`, "hint");
  const additive = h.hidden !== null;
  const table = document.createElement("table");
  table.className = "steps";
  const head = table.createTHead().insertRow();
  const names = additive ? ["i", "W_q q", "W_k k", "sum", "tanh", "v_i · tanh"] : ["i", "query q_i", "key k_i", "q_i · k_i"];
  for (const name of names) head.appendChild(Object.assign(document.createElement("th"), { textContent: name }));
  const body = table.createTBody();
  h.terms.forEach((term, i) => {
    const cells = additive ? [i + 1, h.query[i], h.key[i], h.hidden[i], Math.tanh(h.hidden[i]), term] : [i + 1, h.query[i], h.key[i], term];
    const line = body.insertRow();
    cells.forEach((value, k) => { line.insertCell().textContent = k === 0 ? value : fmt(value); });
  });
  const sum = h.terms.reduce((a, b) => a + b, 0);
  const foot = table.createTFoot().insertRow();
  foot.insertCell().textContent = "Σ";
  foot.insertCell().colSpan = names.length - 2;
  foot.insertCell().textContent = fmt(sum);
  const scale = h.scale === 1 ? "" : ` × ${fmt(h.scale)} (1/√d)`;
  const term = additive ? "v_i · tanh(W_q q + W_k k)_i" : "q_i · k_i";
  add("p", `score = Σ_i ${term} = ${fmt(sum)}${scale}${scale ? ` = ${fmt(sum * h.scale)}` : ""}`, "formula");
  const masked = h.scores.map((s, j) => (s === null ? cols[j] : null)).filter((x) => x !== null);
  if (masked.length) add("p", `masked (score −∞, weight 0): ${masked.join(", ")}`, "formula");
  const live = h.scores.filter((s) => s !== null);
  const top = Math.max(...live);
  const total = live.reduce((a, s) => a + Math.exp(s - top), 0);
  add("p", `softmax over the row: exp(${fmt(h.scores[col])}) / Σ exp(scores) = ${fmt(h.scores[col] === null ? 0 : Math.exp(h.scores[col] - top) / total)}`, "formula");
  const bars = add("div", undefined, "row-bars");
  h.scores.forEach((s, j) => {
    const bar = document.createElement("div");
    bar.className = `bar${j === col ? " chosen" : ""}`;
    bar.title = `${cols[j]}: score ${fmt(s)}, weight ${fmt(h.weights[j])}`;
    bar.innerHTML = `<span class="bar-token"></span><span class="bar-fill"></span><span class="bar-value"></span>`;
    bar.querySelector(".bar-token").textContent = cols[j];
    bar.querySelector(".bar-fill").style.width = `${(100 * h.weights[j]).toFixed(1)}%`;
    bar.querySelector(".bar-value").textContent = h.weights[j].toFixed(4);
    bars.appendChild(bar);
  });
  if (heads > 1) add("p", `The map's ${state.view.head === "mean" ? "mean of the heads" : `head ${shown + 1}`}: ${fmt(state.view.head === "mean" ? steps.weights[col] : h.weights[col])}; every head's weight here: ${steps.heads.map((x) => x.weights[col].toFixed(4)).join(", ")}.`, "formula");
  // The weighted sum that makes the context: each position's value times its weight, summed, first dimensions shown.
  const dims = Math.min(4, h.context.length);
  add("p", `context = Σ_s w_s v_s (${h.context.length} numbers; the first ${dims} here):`, "formula");
  const sums = document.createElement("table");
  sums.className = "steps";
  const heading = sums.createTHead().insertRow();
  for (const name of ["s", "w_s", ...Array.from({ length: dims }, (_, i) => `v_s,${i + 1}`)]) heading.appendChild(Object.assign(document.createElement("th"), { textContent: name }));
  const rowsBody = sums.createTBody();
  h.values.forEach((v, j) => {
    if (h.scores[j] === null) return;
    const line = rowsBody.insertRow();
    if (j === col) line.className = "chosen";
    [cols[j], fmt(h.weights[j]), ...v.slice(0, dims).map(fmt)].forEach((text) => { line.insertCell().textContent = text; });
  });
  const summed = sums.createTFoot().insertRow();
  ["Σ w_s v_s", "", ...h.context.slice(0, dims).map(fmt)].forEach((text) => { summed.insertCell().textContent = text; });
  box.appendChild(sums);
  if (heads > 1 || state.answer.model.kind === "transformer") {
    add("p", `The ${heads > 1 ? "heads' contexts, side by side," : "context"} through W_o: the layer's output (${steps.context.length} numbers): ${steps.context.slice(0, 6).map(fmt).join(", ")}, …`, "formula");
  }
  add("p", `The ${h.terms.length} terms of the sum, one per dimension:`, "hint");
  add("div", undefined, "steps-scroll").appendChild(table);
  box.dataset.weight = String(state.view.head === "mean" ? steps.weights[col] : h.weights[col]);
  box.dataset.terms = String(sum * h.scale);
}

// ---- the beam, as a tree

function drawBeam(answer) {
  const svg = $("x-beam-tree");
  svg.replaceChildren();
  const steps = answer.trace.steps;
  const showPruned = $("x-pruned").checked;
  const name = (id) => answer.token_text[id] ?? String(id);
  const best = answer.translations[0];
  // The winner's path: its candidate's place at each step (lingo-nn's `BeamTrace::path`).
  const path = answer.winner ?? [];
  const colWidth = 96, rowHeight = 20, top = 22;
  const shown = steps.map((step) => step.map((c, at) => ({ ...c, at })).filter((c) => showPruned || c.fate !== "pruned" || path[steps.indexOf(step)] === c.at));
  const height = top + rowHeight * Math.max(1, ...shown.map((s) => s.length)) + 10;
  const width = 60 + colWidth * steps.length;
  for (const [k, v] of Object.entries({ viewBox: `0 0 ${width} ${height}`, width, height })) svg.setAttribute(k, v);
  const place = steps.map(() => new Map());
  shown.forEach((step, t) => step.forEach((c, k) => place[t].set(c.at, [60 + t * colWidth, top + k * rowHeight + 10])));
  el(svg, "text", { x: 4, y: top + 14, class: "beam-start" }, "<sos>");
  shown.forEach((step, t) => {
    el(svg, "text", { x: 60 + t * colWidth, y: 12, class: "beam-step" }, `step ${t + 1}`);
    for (const c of step) {
      const [x, y] = place[t].get(c.at);
      const parentAt = t === 0 ? null : steps[t - 1].findIndex((p) => p.fate?.kept === c.parent);
      const [px, py] = t === 0 ? [40, top + 10] : (place[t - 1].get(parentAt) ?? [x - colWidth, y]);
      const onPath = path[t] === c.at;
      const kind = c.fate === "pruned" ? "pruned" : c.fate.finished ? "finished" : "kept";
      el(svg, "line", { x1: px + 30, y1: py, x2: x - 4, y2: y, class: `beam-edge ${kind}${onPath ? " winner" : ""}` });
      const node = el(svg, "text", { x, y: y + 4, class: `beam-node ${kind}${onPath ? " winner" : ""}` }, name(c.token));
      const fate = kind === "kept" ? `kept as beam ${c.fate.kept + 1}` : kind === "finished" ? `finished: score ${c.fate.finished.score.toFixed(3)} = log p ÷ length penalty` : "pruned";
      const rank = step.indexOf(c) + 1;
      node.addEventListener("mousemove", (event) => tip.show(event, `${tokensOf(steps, t, c.at).map(name).join(" ")}\nlog p ${c.log_prob.toFixed(3)}, ${rank}${rank === 1 ? "st" : rank === 2 ? "nd" : rank === 3 ? "rd" : "th"} of the step\n${fate}${onPath ? "\nthe winner's path" : ""}`));
      node.addEventListener("mouseleave", () => tip.hide());
    }
  });
  const finished = steps.flat().filter((c) => c.fate.finished);
  $("x-beam-note").textContent = `${steps.length} steps, ${steps.flat().length} candidates, ${finished.length} finished. The winner (bold) is ranked by its score, log p divided by the length penalty ((5 + length) / 6)^0.6: ${finished.length > 1 ? `its log p ${best.log_prob.toFixed(3)} is ${finished.some((c) => c.log_prob > best.log_prob) ? "not the highest of the finished ones: the penalty favoured its length" : "also the highest"}` : "the only finished one"}.`;
}

/** The tokens of candidate `at` of step `t`, through its parents. */
function tokensOf(steps, t, at) {
  const tokens = [];
  for (let s = t; s >= 0; s--) {
    const c = steps[s][at];
    tokens.unshift(c.token);
    if (s > 0) at = steps[s - 1].findIndex((p) => p.fate?.kept === c.parent);
  }
  return tokens;
}

// ---- probes

async function scoreProbes() {
  const key = $("x-model").value;
  const m = state.models.find((x) => x.key === key);
  if (!m) {
    state.probeNote = "A checkpoint carries no held-out examples here: `lingo probe --checkpoint FILE --data PAIRS.tsv` scores it.";
    return drawProbes();
  }
  const memo = `${key}@${state.answer?.model.step}`;
  if (!state.probes.has(memo)) {
    state.probeNote = "scoring the held-out examples under every probe…";
    drawProbes();
    const { ok, answer } = await post("/api/explore/probes", { model: refOf(key) });
    if (!ok) {
      state.probeNote = `${answer.field}: ${answer.error}`;
      return drawProbes();
    }
    state.probes.set(memo, answer);
  }
  state.probeNote = null;
  state.shownProbes = state.probes.get(memo);
  drawProbes();
}

function drawProbes() {
  const body = $("x-probe-rows");
  const scored = state.shownProbes;
  $("x-probe-note").textContent = state.probeNote ?? (scored ? `On ${scored.examples} held-out examples, teacher-forced loss and greedy outputs.` : "Apply a probe, or score them all.");
  if (!scored) return body.replaceChildren();
  const chosen = $("x-probe").value;
  const own = scored.rows[0];
  body.replaceChildren(...scored.rows.map((r) => {
    const line = document.createElement("tr");
    line.className = r.probe === chosen ? "chosen" : "";
    const delta = r.probe === "unchanged" ? "" : ` (${r.loss >= own.loss ? "+" : ""}${(r.loss - own.loss).toFixed(3)})`;
    for (const text of [r.probe, `${r.loss.toFixed(3)}${delta}`, `${(100 * r.token_accuracy).toFixed(1)}%`, `${(100 * r.sequence_accuracy).toFixed(1)}%`, r.bleu.toFixed(1)]) {
      line.insertCell().textContent = text;
    }
    return line;
  }));
}

// ---- downloads: the lab draws them (lingo-viz, its embedded font), as the command line does

async function download(figure, format) {
  const head = state.view.head === "mean" ? null : state.view.head;
  const body = { model: refOf($("x-model").value), sentence: $("x-sentence").value, beam: Number($("x-beam").value), probe: $("x-probe").value, figure, format, kind: state.view.kind, layer: state.view.layer, head, pruned: $("x-pruned").checked };
  const response = await fetch("/api/explore/figure", { method: "POST", body: JSON.stringify(body) });
  if (!response.ok) {
    const answer = await response.json().catch(() => ({ error: response.statusText, field: "request" }));
    return say(`${answer.field}: ${answer.error}`, true);
  }
  const link = document.createElement("a");
  link.href = URL.createObjectURL(await response.blob());
  link.download = `explore-${figure}.${format}`;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

function drawDownloads() {
  for (const box of document.querySelectorAll("#explore .downloads[data-explore]")) {
    if (box.children.length) continue;
    box.append(...["svg", "png"].map((format) => {
      const link = document.createElement("a");
      link.href = "#";
      link.textContent = format.toUpperCase();
      link.title = `download as ${format.toUpperCase()}, drawn by the lab as the command line draws its pictures`;
      link.addEventListener("click", (event) => { event.preventDefault(); download(box.dataset.explore, format); });
      return link;
    }));
  }
}

// ---- the page

let following = null;

export async function start() {
  const chosen = readUrl();
  await loadModels(chosen);
  $("x-go").addEventListener("click", translate);
  $("x-sentence").addEventListener("keydown", (event) => { if (event.key === "Enter") translate(); });
  $("x-refresh").addEventListener("click", () => loadModels());
  $("x-model").addEventListener("focus", () => loadModels());
  $("x-model").addEventListener("change", () => { offerExamples(); state.cell = null; translate(); });
  $("x-compare").addEventListener("change", () => translate());
  $("x-probe").addEventListener("change", () => translate());
  $("x-beam").addEventListener("change", () => translate());
  $("x-score-probes").addEventListener("click", scoreProbes);
  $("x-pruned").addEventListener("change", () => state.answer && drawBeam(state.answer));
  $("x-kind").addEventListener("change", () => { Object.assign(state.view, { kind: $("x-kind").value, layer: 0, head: "mean" }); state.cell = null; fitView(); draw(); });
  $("x-layer").addEventListener("change", () => { state.view.layer = Number($("x-layer").value); draw(); });
  $("x-head").addEventListener("change", () => { const h = $("x-head").value; state.view.head = h === "mean" ? "mean" : Number(h); draw(); });
  $("x-threshold").addEventListener("input", () => { state.threshold = Number($("x-threshold").value); $("x-threshold-value").textContent = state.threshold.toFixed(2); draw(); });
  $("x-follow").addEventListener("change", () => {
    clearInterval(following);
    // A model in training is answered as at its last snapshot: asking again shows its attention form.
    if ($("x-follow").checked) following = setInterval(() => { if (!state.busy && $("x-sentence").value) translate(); }, 1000);
  });
  drawDownloads();
  // A link pasted into this tab's address bar: its model, sentence and view.
  window.addEventListener("hashchange", async () => {
    await loadModels(readUrl());
    if ($("x-sentence").value && $("x-model").value) translate();
  });
  if ($("x-sentence").value && $("x-model").value) translate();
}
