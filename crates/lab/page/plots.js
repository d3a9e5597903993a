// Pictures of the lab, drawn as SVG in the page: line charts of training
// and attention heatmaps. Every mark shows its numbers on hover; the
// downloads are drawn by the lab itself (lingo-viz), not from here.

const SVG = "http://www.w3.org/2000/svg";

/** An SVG element `name` with attributes `attrs`, appended to `parent`. */
export function el(parent, name, attrs = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

/** The colour of run `i`: a palette that stays apart in print and for common colour blindness. */
export function color(i) {
  return ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000"][i % 7];
}

/** The tooltip every picture shares: `show(event, text)` puts it by the pointer. */
export const tip = {
  node: null,
  show(event, text) {
    if (!this.node) {
      this.node = document.createElement("div");
      this.node.className = "tip";
      document.body.appendChild(this.node);
    }
    this.node.textContent = text;
    this.node.style.display = "block";
    this.node.style.left = `${event.pageX + 12}px`;
    this.node.style.top = `${event.pageY + 12}px`;
  },
  hide() {
    if (this.node) this.node.style.display = "none";
  },
};

/** A round number near `span / 5`: the step between axis ticks. */
function tickStep(span) {
  const raw = span / 5;
  const power = 10 ** Math.floor(Math.log10(raw));
  const unit = raw / power;
  return power * (unit < 1.5 ? 1 : unit < 3.5 ? 2 : unit < 7.5 ? 5 : 10);
}

function format(value) {
  if (!Number.isFinite(value)) return String(value);
  const size = Math.abs(value);
  if (size !== 0 && (size < 1e-3 || size >= 1e5)) return value.toExponential(2);
  return Number(value.toPrecision(4)).toString();
}

/**
 * A line chart in `svg`: `series` is [{label, color, points: [[x, y]], dashed}],
 * x and y named by `xLabel` and `yLabel`; `yRange` fixes the y axis ([0, 1] for shares);
 * `marks` are vertical lines [{x, color, label, title}] (where a setting changed).
 * Hovering shows the nearest point of every series.
 */
export function lineChart(svg, { series, xLabel, yLabel, yRange, percent, marks = [], empty = "nothing yet" }) {
  svg.replaceChildren();
  const width = 420, height = 220, left = 48, right = 10, top = 10, bottom = 34;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const points = series.flatMap((s) => s.points).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  if (points.length === 0) {
    el(svg, "text", { x: width / 2, y: height / 2, class: "empty" }, empty);
    return;
  }
  const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
  let [x0, x1] = [Math.min(0, ...xs), Math.max(...xs)];
  let [y0, y1] = yRange ?? [Math.min(...ys), Math.max(...ys)];
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) [y0, y1] = [y0 - 0.5, y1 + 0.5];
  const sx = (x) => left + ((x - x0) / (x1 - x0)) * (width - left - right);
  const sy = (y) => top + (1 - (y - y0) / (y1 - y0)) * (height - top - bottom);
  const axis = el(svg, "g", { class: "axis" });
  const yStep = tickStep(y1 - y0);
  for (let y = Math.ceil(y0 / yStep) * yStep; y <= y1 + 1e-9; y += yStep) {
    el(axis, "line", { x1: left, x2: width - right, y1: sy(y), y2: sy(y), class: "grid" });
    el(axis, "text", { x: left - 4, y: sy(y) + 3, "text-anchor": "end" }, percent ? `${format(100 * y)}%` : format(y));
  }
  const xStep = Math.max(1, tickStep(x1 - x0));
  for (let x = Math.ceil(x0 / xStep) * xStep; x <= x1 + 1e-9; x += xStep) {
    el(axis, "text", { x: sx(x), y: height - bottom + 14, "text-anchor": "middle" }, format(x));
  }
  el(axis, "text", { x: (left + width - right) / 2, y: height - 4, "text-anchor": "middle", class: "label" }, xLabel);
  el(axis, "text", { x: 10, y: (top + height - bottom) / 2, transform: `rotate(-90 10 ${(top + height - bottom) / 2})`, "text-anchor": "middle", class: "label" }, yLabel);
  for (const s of series) {
    const path = s.points
      .filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y))
      .map(([x, y], i) => `${i ? "L" : "M"}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`)
      .join("");
    if (path) el(svg, "path", { d: path, stroke: s.color, class: s.dashed ? "line dashed" : "line" });
    if (s.points.length === 1) el(svg, "circle", { cx: sx(s.points[0][0]), cy: sy(s.points[0][1]), r: 3, fill: s.color });
  }
  for (const mark of marks) {
    const x = sx(mark.x);
    el(svg, "line", { x1: x, x2: x, y1: top, y2: height - bottom, stroke: mark.color, class: "mark" });
    // The label sits left of a line near the right edge, so it stays inside.
    const end = x > width - right - 40;
    el(svg, "text", { x: end ? x - 3 : x + 3, y: top + 9, "text-anchor": end ? "end" : "start", fill: mark.color, class: "mark-label" }, mark.label);
  }
  const cursor = el(svg, "line", { y1: top, y2: height - bottom, class: "cursor", visibility: "hidden" });
  const hit = el(svg, "rect", { x: left, y: top, width: width - left - right, height: height - top - bottom, class: "hit" });
  hit.addEventListener("mousemove", (event) => {
    const box = svg.getBoundingClientRect();
    const x = x0 + ((event.clientX - box.left) * (width / box.width) - left) / (width - left - right) * (x1 - x0);
    const lines = [];
    for (const s of series) {
      let best = null;
      for (const p of s.points) if (!best || Math.abs(p[0] - x) < Math.abs(best[0] - x)) best = p;
      if (best) lines.push(`${s.label}: ${percent ? `${format(100 * best[1])}%` : format(best[1])} at ${xLabel} ${format(best[0])}`);
    }
    // A mark within a few pixels of the pointer says what it marks.
    for (const mark of marks) if (Math.abs(sx(mark.x) - sx(x)) < 6) lines.push(mark.title);
    cursor.setAttribute("x1", sx(x));
    cursor.setAttribute("x2", sx(x));
    cursor.setAttribute("visibility", "visible");
    tip.show(event, lines.join("\n"));
  });
  hit.addEventListener("mouseleave", () => {
    cursor.setAttribute("visibility", "hidden");
    tip.hide();
  });
}

/** The heatmap colour of a weight in 0..1: white to deep blue, the same scale for every map. */
export function shade(w) {
  const t = Math.max(0, Math.min(1, w));
  const r = Math.round(247 - t * (247 - 8)), g = Math.round(251 - t * (251 - 48)), b = Math.round(255 - t * (255 - 107));
  return `rgb(${r},${g},${b})`;
}

/** Row `i` of a `(rows, cols)` block of `data` starting at `offset`. */
function row(data, offset, cols, i) {
  return data.slice(offset + i * cols, offset + (i + 1) * cols);
}

/**
 * An attention heatmap in `svg`: rows are the decoder's inputs (`target`),
 * columns the source tokens; `weights` is a flat `(tgt_len, src_len)` block of
 * `data` at `offset`. With `labels` false only the cells are drawn (small multiples).
 * Hovering a cell shows its weight and the two tokens.
 */
export function heatmap(svg, { data, offset = 0, source, target, labels = true, caption }) {
  const [rows, cols] = [target.length, source.length];
  // The same sentence drawn again (the next snapshot): only the cells' colours change.
  const layout = JSON.stringify([source, target, labels]);
  if (svg.dataset.layout !== layout) {
    layoutHeatmap(svg, source, target, labels);
    svg.dataset.layout = layout;
  }
  svg.querySelector("title").textContent = caption ?? "";
  const cells = svg.querySelectorAll("rect.cell");
  svg.weights = [];
  for (let i = 0; i < rows; i++) {
    const weights = row(data, offset, cols, i);
    const peak = weights.indexOf(Math.max(...weights));
    svg.weights.push({ weights, peak });
    weights.forEach((w, j) => {
      const rect = cells[i * cols + j];
      rect.setAttribute("fill", shade(w));
      rect.classList.toggle("peak", j === peak && labels);
    });
  }
}

/** The labels and the cells of a heatmap of `target` rows and `source` columns, uncoloured. */
function layoutHeatmap(svg, source, target, labels) {
  svg.replaceChildren();
  const cell = labels ? 26 : 9;
  const longest = (tokens) => Math.max(...tokens.map((t) => t.length));
  const left = labels ? 10 + 7 * longest(target) : 1;
  const top = labels ? 10 + 7 * longest(source) : 1;
  // The column labels lean right, by half their length.
  const lean = labels ? Math.ceil(3.5 * longest(source)) : 0;
  const width = left + source.length * cell + 2 + lean, height = top + target.length * cell + 2;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  el(svg, "title");
  if (labels) {
    source.forEach((token, j) => {
      const x = left + j * cell + cell / 2 + 4, y = top - 6;
      el(svg, "text", { x, y, transform: `rotate(-60 ${x} ${y})`, class: "token" }, token);
    });
    target.forEach((token, i) => el(svg, "text", { x: left - 6, y: top + i * cell + cell / 2 + 4, "text-anchor": "end", class: "token" }, token));
  }
  target.forEach((_, i) => source.forEach((_, j) => {
    const rect = el(svg, "rect", { x: left + j * cell, y: top + i * cell, width: cell, height: cell, class: "cell" });
    // The weights are the latest drawn, read when hovered.
    rect.addEventListener("mousemove", (event) => {
      const { weights, peak } = svg.weights[i];
      tip.show(event, `${target[i]} → ${source[j]}: ${weights[j].toFixed(3)}${j === peak ? " (the row's peak)" : ""}`);
    });
    rect.addEventListener("mouseleave", () => tip.hide());
  }));
}

/**
 * Every head of a `(layers, heads, tgt_len, src_len)` snapshot as small heatmaps
 * in `box`, one row per layer, the `best` [layer, head] marked; `pick(layer, head)`
 * is called when one is clicked.
 */
export function headGrid(box, { weights, source, target, best, chosen, pick }) {
  const [layers, heads, rows, cols] = weights.dim;
  box.pick = pick;
  const layout = JSON.stringify([layers, heads, source, target]);
  if (box.dataset.layout !== layout) {
    box.replaceChildren();
    for (let l = 0; l < layers; l++) {
      const line = document.createElement("div");
      line.className = "grid-row";
      const name = document.createElement("span");
      name.textContent = layers > 1 ? `layer ${l + 1}` : "heads";
      line.appendChild(name);
      for (let h = 0; h < heads; h++) {
        const frame = document.createElement("button");
        const number = document.createElement("span");
        number.className = "head-number";
        frame.append(el(null, "svg", { class: "small" }), number);
        frame.addEventListener("click", () => box.pick(l, h));
        line.appendChild(frame);
      }
      box.appendChild(line);
    }
    box.dataset.layout = layout;
  }
  const frames = box.querySelectorAll("button");
  for (let l = 0; l < layers; l++) {
    for (let h = 0; h < heads; h++) {
      const frame = frames[l * heads + h];
      const isBest = Boolean(best && best[0] === l && best[1] === h);
      const isChosen = Boolean(chosen && chosen[0] === l && chosen[1] === h);
      const marks = [isBest ? "best head" : "", isChosen ? "shown" : ""].filter(Boolean);
      const name = `layer ${l + 1}, head ${h + 1}${marks.length ? ` (${marks.join(", ")})` : ""}`;
      heatmap(frame.firstChild, { data: weights.data, offset: (l * heads + h) * rows * cols, source, target, labels: false, caption: name });
      frame.className = `head${isBest ? " best" : ""}${isChosen ? " chosen" : ""}`;
      frame.title = `${name}: click to show it`;
      frame.lastChild.textContent = `${h + 1}${isBest ? " ★" : ""}`;
    }
  }
}
