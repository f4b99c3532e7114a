// Sluice console: one page, hash routing, vanilla JS. Everything it shows
// comes from the JSON API under /api/ (README, "HTTP"). Data from the API
// reaches the DOM through textContent and attributes only, never parsed as
// HTML (ui_test.go checks).
"use strict";

// ---- DOM and API helpers ----

// el builds an element: attrs sets attributes ("class", "data-*", ...) and
// on* handlers; children are nodes, strings (as text) or null (skipped).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "value") e.value = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

class APIError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code || "";
  }
}

// api fetches path and returns its JSON, or throws an APIError. The
// browser's own basic-auth prompt handles a 401 with WWW-Authenticate.
async function api(path, init) {
  let res;
  try {
    res = await fetch(path, Object.assign({ credentials: "same-origin", headers: { Accept: "application/json" } }, init || {}));
  } catch (e) {
    throw new APIError(0, "the broker did not answer (" + e.message + ")");
  }
  let body = null;
  try { body = await res.json(); } catch (e) { /* not JSON */ }
  if (!res.ok) {
    const msg = body && body.error ? body.error : res.statusText || "request failed";
    throw new APIError(res.status, msg, body && body.code);
  }
  return body;
}

function post(path, obj) {
  return api(path, { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify(obj) });
}

const statusHint = {
  0: "Network error",
  400: "Bad request",
  401: "Not signed in: reload the page to log in with a user of the broker",
  403: "Not authorized",
  404: "Not found",
  409: "Conflict",
  503: "Not ready or the cluster is unreachable",
  500: "Server error",
};

// errorBox shows an API error (or any error) clearly, with its status.
function errorBox(err) {
  const status = err instanceof APIError ? err.status : 0;
  const hint = statusHint[status] || "Error";
  const text = (status ? status + " " : "") + hint + ": " + err.message + (err.code ? " (" + err.code + ")" : "");
  return el("div", { class: "error", role: "alert", "data-error-status": status }, text);
}

const enc = encodeURIComponent;
const num = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));

function bytes(n) {
  if (n === null || n === undefined) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = Number(n);
  while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i === 0 ? v.toFixed(0) : v.toFixed(1).replace(/\.0$/, "")) + " " + u[i];
}

function table(headers, rows) {
  return el("table", {},
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { class: h.num ? "num" : null }, h.label || h)))),
    el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: headers.length, class: "muted" }, "None"))));
}

function facts(pairs) {
  return el("dl", { class: "facts" }, pairs.map(([k, v, id]) => el("div", {}, el("dt", {}, k), el("dd", { id: id || null }, v))));
}

// ---- routing ----

const view = document.getElementById("view");
let renderSeq = 0;
let whoami = null;

// route parses "#/topics/orders?x=1" into path segments and a query.
function route() {
  const h = location.hash.replace(/^#\/?/, "");
  const [p, q] = h.split("?");
  const decode = (s) => { try { return decodeURIComponent(s); } catch (e) { return s; } };
  const segs = p.split("/").filter((s) => s !== "").map(decode);
  return { segs, query: new URLSearchParams(q || "") };
}

const routes = {
  "": overview,
  topics: (r) => (r.segs.length > 1 ? topicPage(r.segs[1]) : topicsPage()),
  groups: (r) => (r.segs.length > 1 ? groupPage(r.segs[1]) : groupsPage()),
  messages: (r) => messagesPage(r.query),
  create: createPage,
  schemas: (r) => (r.segs.length > 1 ? schemaSubjectPage(r.segs[1], r.query) : schemasPage()),
};

async function render() {
  const seq = ++renderSeq;
  const r = route();
  const name = r.segs[0] || "";
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", a.dataset.nav === (name || "overview"));
  }
  const page = routes[name];
  let node;
  try {
    node = page ? await page(r) : el("div", {}, el("h1", {}, "Not found"), el("p", {}, "No page " + location.hash));
  } catch (err) {
    node = el("div", {}, errorBox(err), el("button", { class: "secondary", id: "retry", onclick: render }, "Retry"));
  }
  if (seq !== renderSeq) return; // the user went elsewhere meanwhile
  if (!whoami) loadWhoami(); // it failed before (the broker starting, say)
  view.replaceChildren(node);
  if (name === "") drawCharts();
}

// ---- overview and throughput ----

const windowMs = 120 * 1000;
const samples = []; // raw /api/throughput answers, oldest first
let rates = []; // {t, msgs, bin, bout} per second between samples
let throughputError = null;

async function sample() {
  try {
    const s = await api("/api/throughput");
    throughputError = null;
    const prev = samples[samples.length - 1];
    samples.push(s);
    if (prev && s.time > prev.time && s.messagesIn >= prev.messagesIn) {
      const dt = (s.time - prev.time) / 1000;
      rates.push({
        t: s.time,
        msgs: (s.messagesIn - prev.messagesIn) / dt,
        bin: (s.bytesIn - prev.bytesIn) / dt,
        bout: (s.bytesOut - prev.bytesOut) / dt,
      });
    }
    const cut = s.time - windowMs;
    while (samples.length > 2 && samples[0].time < cut) samples.shift();
    rates = rates.filter((r) => r.t >= cut);
  } catch (err) {
    throughputError = err;
  }
  drawCharts();
}

function rateNum(id, v, fmt) {
  const e = document.getElementById(id);
  if (!e) return;
  e.textContent = v === null ? "–" : fmt(v);
  e.dataset.value = v === null ? "" : String(v);
}

const perSec = (v) => num(Math.round(v)) + " /s";
const bytesPerSec = (v) => bytes(v) + "/s";

// drawCharts updates the current numbers and both charts, when the overview
// is on screen.
function drawCharts() {
  const errBox = document.getElementById("throughput-error");
  if (!errBox) return;
  errBox.replaceChildren(throughputError ? errorBox(throughputError) : "");
  const last = rates[rates.length - 1] || null;
  rateNum("rate-messages-in", last && last.msgs, perSec);
  rateNum("rate-bytes-in", last && last.bin, bytesPerSec);
  rateNum("rate-bytes-out", last && last.bout, bytesPerSec);
  chart(document.getElementById("throughput-chart"), [{ key: "msgs", color: "#1f6feb" }], perSec);
  chart(document.getElementById("bytes-chart"), [{ key: "bin", color: "#2b8a3e" }, { key: "bout", color: "#d9480f" }], bytesPerSec, 1024);
}

// niceMax rounds v up to 1, 2, 4, 5 or 8 times a power of ten, after
// scaling by powers of unit (1024 for bytes), so that axis labels are round.
function niceMax(v, unit) {
  if (v <= 0) return 1;
  let scale = 1;
  while (unit && v / scale >= unit) scale *= unit;
  const x = v / scale;
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  for (const m of [1, 2, 4, 5, 8, 10]) if (x <= m * p) return m * p * scale;
  return 10 * p * scale;
}

// chart draws series of rates over the last two minutes on a canvas and
// records the points it drew in data-points (for tests and curious users).
function chart(canvas, series, fmt, unit) {
  if (!canvas) return;
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 500;
  const h = canvas.clientHeight || 180;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(h * dpr);
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const padL = 78, padR = 14, padT = 8, padB = 22;
  const pw = w - padL - padR, ph = h - padT - padB;
  const now = rates.length ? rates[rates.length - 1].t : Date.now();
  let max = 0;
  for (const r of rates) for (const s of series) max = Math.max(max, r[s.key]);
  max = niceMax(max, unit);
  g.font = "11px system-ui, sans-serif";
  g.fillStyle = "#667085";
  g.strokeStyle = "#e4e7ec";
  g.lineWidth = 1;
  g.textAlign = "right";
  g.textBaseline = "middle";
  for (let i = 0; i <= 4; i++) {
    const y = padT + ph - (ph * i) / 4;
    g.beginPath(); g.moveTo(padL, y + 0.5); g.lineTo(padL + pw, y + 0.5); g.stroke();
    g.fillText(fmt((max * i) / 4), padL - 6, y);
  }
  g.textAlign = "center";
  g.textBaseline = "top";
  for (let s = 0; s <= 120; s += 30) {
    const x = padL + pw - (pw * s * 1000) / windowMs;
    g.textAlign = s === 0 ? "right" : s === 120 ? "left" : "center";
    g.fillText(s === 0 ? "now" : "-" + s + "s", x, padT + ph + 6);
  }
  const x = (t) => padL + pw - (pw * (now - t)) / windowMs;
  const y = (v) => padT + ph - (ph * v) / max;
  for (const s of series) {
    g.strokeStyle = s.color;
    g.lineWidth = 2;
    g.beginPath();
    rates.forEach((r, i) => (i ? g.lineTo(x(r.t), y(r[s.key])) : g.moveTo(x(r.t), y(r[s.key]))));
    g.stroke();
  }
  canvas.dataset.points = rates.map((r) => series.map((s) => Math.round(r[s.key])).join("/")).join(",");
  canvas.dataset.samples = String(rates.length);
}

// readiness reads /readyz, whose 503 carries the same JSON as its 200.
async function readiness() {
  try {
    const res = await fetch("/readyz", { credentials: "same-origin", headers: { Accept: "application/json" } });
    const body = await res.json();
    return { ready: !!body.ready, notReady: body.notReady || [] };
  } catch (e) {
    return { ready: false, notReady: ["/readyz did not answer: " + e.message] };
  }
}

async function overview() {
  const [c, ready] = await Promise.all([api("/api/cluster"), readiness()]);
  const brokers = c.brokers.slice().sort((a, b) => a.id - b.id).map((b) =>
    el("tr", { "data-broker": b.id },
      el("td", {}, String(b.id),
        b.id === c.controller ? el("span", { class: "badge" }, "controller") : null,
        b.id === c.thisBroker ? el("span", { class: "badge" }, "this broker") : null),
      el("td", {}, b.host), el("td", { class: "num" }, String(b.port)), el("td", {}, b.rack || "–")));
  const legend = (cls, text) => el("span", { class: "muted" }, el("span", { class: "legend " + cls }), text, " ");
  return el("div", {},
    el("h1", {}, "Overview"),
    el("div", { class: "card" }, facts([
      ["Cluster id", c.clusterId, "cluster-id"],
      ["Controller", String(c.controller), "controller"],
      ["This broker", String(c.thisBroker), "this-broker"],
      ["Brokers", String(c.brokers.length), "broker-count"],
      ["Ready", el("span", { class: ready.ready ? "good" : "bad", "data-ready": ready.ready }, ready.ready ? "yes" : "no"), "ready"],
    ]),
    ready.notReady.length ? el("ul", { class: "not-ready", id: "not-ready" }, ready.notReady.map((r) => el("li", {}, r))) : null),
    el("h2", {}, "Brokers"),
    table(["Id", "Host", { label: "Port", num: true }, "Rack"], brokers),
    el("h2", {}, "Throughput of this broker"),
    el("div", { class: "card", id: "throughput" },
      el("div", { id: "throughput-error" }),
      el("dl", { class: "facts rates" },
        el("div", { class: "rate" }, el("dt", {}, "Messages in"), el("dd", { id: "rate-messages-in" }, "–")),
        el("div", { class: "rate" }, el("dt", {}, "Bytes in"), el("dd", { id: "rate-bytes-in" }, "–")),
        el("div", { class: "rate" }, el("dt", {}, "Bytes out"), el("dd", { id: "rate-bytes-out" }, "–"))),
      el("div", { class: "charts" },
        el("div", {}, el("div", { class: "chart-title" }, legend("l-msgs", "messages in/s"), "(last 2 minutes)"),
          el("canvas", { class: "chart", id: "throughput-chart", "aria-label": "messages in per second" })),
        el("div", {}, el("div", { class: "chart-title" }, legend("l-bin", "bytes in/s"), legend("l-bout", "bytes out/s")),
          el("canvas", { class: "chart", id: "bytes-chart", "aria-label": "bytes in and out per second" })))));
}

// ---- topics ----

async function topicsPage() {
  const { topics } = await api("/api/topics");
  topics.sort((a, b) => a.name.localeCompare(b.name));
  const rows = topics.map((t) => el("tr", { "data-topic": t.name },
    el("td", {}, el("a", { href: "#/topics/" + enc(t.name) }, t.name), t.internal ? el("span", { class: "badge" }, "internal") : null),
    el("td", { class: "num", "data-col": "partitions" }, num(t.partitions)),
    el("td", { class: "num", "data-col": "rf" }, num(t.replicationFactor)),
    el("td", { class: "num" + (t.underReplicated ? " bad" : ""), "data-col": "under-replicated" }, num(t.underReplicated)),
    el("td", { class: "num", "data-col": "size" }, bytes(t.size)),
    el("td", { class: "num", "data-col": "messages" }, num(t.messages))));
  const filter = el("input", { type: "search", placeholder: "Filter topics", id: "topic-filter", oninput: (e) => {
    const f = e.target.value.toLowerCase();
    for (const r of rows) r.hidden = !r.dataset.topic.toLowerCase().includes(f);
  } });
  return el("div", {},
    el("h1", {}, "Topics"),
    el("div", { class: "toolbar" }, filter,
      el("button", { class: "secondary", onclick: render }, "Refresh"),
      whoami && whoami.mayCreateTopics ? el("a", { href: "#/create" }, "Create topic") : null),
    table(["Topic", { label: "Partitions", num: true }, { label: "RF", num: true }, { label: "Under-replicated", num: true },
      { label: "Size", num: true }, { label: "Messages", num: true }], rows));
}

const list = (a) => (a && a.length ? a.join(", ") : "–");

async function topicPage(name) {
  const t = await api("/api/topics/" + enc(name));
  const parts = t.partitions.slice().sort((a, b) => a.partition - b.partition);
  const rows = parts.map((p) => el("tr", { "data-partition": p.partition },
    el("td", { class: "num" }, String(p.partition)),
    el("td", { class: "num" + (p.leader < 0 ? " bad" : ""), "data-col": "leader" }, p.leader < 0 ? "none" : String(p.leader)),
    el("td", { "data-col": "replicas" }, list(p.replicas)),
    el("td", { "data-col": "isr", class: (p.isr || []).length < (p.replicas || []).length ? "bad" : null }, list(p.isr)),
    el("td", { "data-col": "offline", class: p.offline && p.offline.length ? "bad" : null }, list(p.offline)),
    el("td", { class: "num", "data-col": "start" }, num(p.startOffset)),
    el("td", { class: "num", "data-col": "end" }, num(p.endOffset)),
    el("td", { class: "num", "data-col": "size" }, bytes(p.size)),
    // A tiered topic's split: where the local log starts, and what is remote.
    t.tiered ? el("td", { class: "num", "data-col": "local-start" }, num(p.localStartOffset)) : null,
    t.tiered ? el("td", { class: "num", "data-col": "remote-size" }, bytes(p.remoteSize)) : null,
    el("td", {}, el("a", { href: "#/messages?topic=" + enc(name) + "&partition=" + p.partition + "&offset=-20" }, "browse"))));
  const configs = (t.configs || []).slice().sort((a, b) => a.name.localeCompare(b.name)).map((c) =>
    el("tr", { "data-config": c.name, class: c.source && c.source !== "DEFAULT_CONFIG" ? "set" : null },
      el("td", {}, c.name),
      el("td", {}, c.sensitive ? el("span", { class: "null" }, "(sensitive)") : c.value === null ? el("span", { class: "null" }, "null") : c.value),
      el("td", { class: "muted" }, c.source || "")));
  const messages = parts.reduce((n, p) => n + (p.endOffset - p.startOffset), 0);
  const size = parts.reduce((n, p) => n + (p.size || 0), 0);
  const remote = parts.reduce((n, p) => n + (p.remoteSize || 0), 0);
  return el("div", {},
    el("h1", { id: "topic-name" }, t.name, t.internal ? el("span", { class: "badge" }, "internal") : null),
    el("div", { class: "card" }, facts([
      ["Partitions", String(parts.length), "topic-partitions"],
      ["Replication factor", String(parts.length ? parts[0].replicas.length : 0)],
      ["Messages", num(messages)],
      ["Size", bytes(size)],
    ].concat(t.tiered ? [["Local size", bytes(size), "topic-local-size"], ["Remote size", bytes(remote), "topic-remote-size"]] : []))),
    el("h2", {}, "Partitions"),
    table([{ label: "Partition", num: true }, { label: "Leader", num: true }, "Replicas", "ISR", "Offline",
      { label: "Start offset", num: true }, { label: "End offset", num: true }, { label: t.tiered ? "Local size" : "Size", num: true }]
      .concat(t.tiered ? [{ label: "Local start", num: true }, { label: "Remote size", num: true }] : [], [""]), rows),
    el("h2", {}, "Produce a test record"),
    produceForm(name, parts.length),
    el("h2", {}, "Configs"),
    t.configsHidden ? el("p", { class: "muted", id: "configs-hidden" }, "not authorized to describe configs")
      : table(["Name", "Value", "Source"], configs));
}

// parseLines reads "key=value" lines (blank lines skipped) into pairs.
function parseLines(text) {
  const out = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const i = line.indexOf("=");
    if (i <= 0) throw new Error("\"" + line + "\" is not key=value");
    out.push([line.slice(0, i).trim(), line.slice(i + 1)]);
  }
  return out;
}

function produceForm(topic, partitions) {
  const result = el("div", { id: "produce-result" });
  const form = el("form", { class: "stack card", id: "produce-form" },
    el("label", {}, "Partition (empty: the default partitioner)",
      el("input", { name: "partition", type: "number", min: 0, max: Math.max(0, partitions - 1) })),
    el("label", {}, "Key (empty: none)", el("input", { name: "key" })),
    el("label", {}, "Value", el("textarea", { name: "value" })),
    el("label", {}, "Headers (key=value, one a line)", el("textarea", { name: "headers", rows: 2 })),
    el("div", {}, el("button", { type: "submit" }, "Produce")),
    result);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const f = form.elements;
    const body = { value: f.value.value };
    if (f.partition.value !== "") body.partition = Number(f.partition.value);
    if (f.key.value !== "") body.key = f.key.value;
    try {
      body.headers = parseLines(f.headers.value).map(([key, value]) => ({ key, value }));
    } catch (err) {
      result.replaceChildren(errorBox(err));
      return;
    }
    try {
      const r = await post("/api/topics/" + enc(topic) + "/records", body);
      result.replaceChildren(el("div", { class: "ok", "data-partition": r.partition, "data-offset": r.offset },
        "Produced to partition " + r.partition + " at offset " + r.offset + ". ",
        el("a", { href: "#/messages?topic=" + enc(topic) + "&partition=" + r.partition + "&offset=" + r.offset }, "View it")));
    } catch (err) {
      result.replaceChildren(errorBox(err));
    }
  });
  return form;
}

// ---- consumer groups ----

async function groupsPage() {
  const { groups } = await api("/api/groups");
  groups.sort((a, b) => a.groupId.localeCompare(b.groupId));
  const rows = groups.map((g) => el("tr", { "data-group": g.groupId },
    el("td", {}, el("a", { href: "#/groups/" + enc(g.groupId) }, g.groupId)),
    el("td", { "data-col": "type" }, g.type || "–"),
    el("td", { "data-col": "state" }, g.state),
    el("td", {}, g.protocolType || "–"),
    el("td", { "data-col": "protocol" }, g.protocol || "–"),
    el("td", { class: "num", "data-col": "members" }, num(g.members)),
    el("td", { class: "num" }, String(g.coordinator)),
    el("td", { class: "num", "data-col": "lag", "data-lag-group": g.groupId, "data-lag": g.lag }, num(g.lag))));
  return el("div", {},
    el("h1", {}, "Consumer groups"),
    el("div", { class: "toolbar" }, el("button", { class: "secondary", onclick: render }, "Refresh")),
    table(["Group", "Type", "State", "Protocol type", "Protocol", { label: "Members", num: true }, { label: "Coordinator", num: true },
      { label: "Lag", num: true }], rows));
}

// assignmentText writes an assignment as `sluice group describe` does:
// "orders:0,1 payments:2", "–" when empty.
function assignmentText(as) {
  const parts = (as || []).filter((a) => a.partitions.length > 0)
    .map((a) => a.topic + ":" + a.partitions.slice().sort((x, y) => x - y).join(","));
  return parts.length ? parts.join(" ") : "–";
}

// assignmentCell shows an assignment one topic a line; data-assignment
// holds it as assignmentText writes it.
function assignmentCell(col, as) {
  return el("td", { "data-col": col, "data-assignment": assignmentText(as) },
    (as || []).map((a) => el("div", {}, a.topic + ": " + a.partitions.join(", "))));
}

async function groupPage(id) {
  const g = await api("/api/groups/" + enc(id));
  // A consumer group (KIP-848) has epochs: the group's, the target
  // assignment's and each member's, and a target assignment per member
  // that its current assignment converges to.
  const consumer = g.type === "consumer";
  const members = (g.members || []).map((m) => el("tr", { "data-member": m.memberId },
    el("td", {}, m.memberId), el("td", {}, m.instanceId || "–"), el("td", { "data-col": "client" }, m.clientId),
    el("td", { "data-col": "host" }, m.clientHost),
    consumer ? el("td", { class: "num", "data-col": "epoch" }, String(m.memberEpoch)) : null,
    assignmentCell("assignments", m.assignments),
    consumer ? assignmentCell("target", m.targetAssignments) : null));
  const offsets = (g.offsets || []).slice().sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition).map((o) =>
    el("tr", { "data-topic": o.topic, "data-lag-partition": o.partition },
      el("td", {}, el("a", { href: "#/topics/" + enc(o.topic) }, o.topic)),
      el("td", { class: "num" }, String(o.partition)),
      el("td", { class: "num", "data-col": "committed" }, num(o.committed)),
      el("td", { class: "num", "data-col": "end" }, num(o.endOffset)),
      el("td", { class: "num", "data-col": "lag", "data-lag": o.lag }, num(o.lag)),
      el("td", { class: "muted" }, o.metadata || "")));
  const facts_ = [
    ["Type", g.type || "classic", "group-type"],
    ["State", g.state, "group-state"],
    ["Protocol", (g.protocolType || "–") + (g.protocol ? " / " + g.protocol : ""), "group-protocol"],
    ["Coordinator", String(g.coordinator)],
    ["Members", String((g.members || []).length)],
    ["Lag", num(g.lag), "group-lag"],
  ];
  if (consumer) {
    facts_.splice(3, 0, ["Group epoch", String(g.groupEpoch), "group-epoch"],
      ["Assignment epoch", String(g.assignmentEpoch), "group-assignment-epoch"]);
  }
  const memberHeaders = consumer
    ? ["Member id", "Instance id", "Client id", "Host", { label: "Member epoch", num: true }, "Assignment", "Target assignment"]
    : ["Member id", "Instance id", "Client id", "Host", "Assignments"];
  return el("div", {},
    el("h1", { id: "group-id" }, g.groupId),
    el("div", { class: "card" }, facts(facts_)),
    el("h2", {}, "Members"),
    table(memberHeaders, members),
    el("h2", {}, "Committed offsets"),
    table(["Topic", { label: "Partition", num: true }, { label: "Committed", num: true }, { label: "End offset", num: true },
      { label: "Lag", num: true }, "Metadata"], offsets));
}

// ---- message browser ----

function b64(s) {
  if (s === null || s === undefined) return null;
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function asText(b) {
  try { return new TextDecoder("utf-8", { fatal: true }).decode(b); } catch (e) { return null; }
}

function hex(b) {
  const lines = [];
  for (let i = 0; i < b.length; i += 16) {
    const row = Array.from(b.subarray(i, i + 16));
    lines.push(i.toString(16).padStart(6, "0") + "  " + row.map((x) => x.toString(16).padStart(2, "0")).join(" ").padEnd(48) +
      " " + row.map((x) => (x >= 32 && x < 127 ? String.fromCharCode(x) : ".")).join(""));
  }
  return lines.join("\n");
}

function prettyJSON(text) {
  if (text === null) return null;
  const t = text.trim();
  if (!(t.startsWith("{") || t.startsWith("["))) return null;
  try { return JSON.stringify(JSON.parse(t), null, 2); } catch (e) { return null; }
}

// bytesView shows bytes as text, pretty JSON (when they parse) or hex, with
// buttons to switch; it starts with JSON, else text, else hex.
function bytesView(field, data) {
  if (data === null) return el("span", { class: "null", "data-field": field, "data-format": "null" }, "null");
  const text = asText(data);
  const json = prettyJSON(text);
  const forms = { text: text, json: json, hex: hex(data) };
  const pre = el("pre", {});
  const box = el("div", { "data-field": field });
  const buttons = {};
  const show = (f) => {
    pre.textContent = forms[f];
    box.dataset.format = f;
    for (const [k, b] of Object.entries(buttons)) b.classList.toggle("on", k === f);
  };
  for (const f of ["text", "json", "hex"]) {
    buttons[f] = el("button", { type: "button", disabled: forms[f] === null, "data-show": f, onclick: () => show(f) }, f === "json" ? "JSON" : f);
  }
  box.append(el("div", { class: "fmt" }, Object.values(buttons)), pre);
  show(json !== null ? "json" : text !== null ? "text" : "hex");
  return box;
}

function localInput(ms) {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
  return d.toISOString().slice(0, 19);
}

async function messagesPage(q) {
  let topics = [];
  let listErr = null;
  try { topics = (await api("/api/topics")).topics.map((t) => t.name).sort(); } catch (err) { listErr = err; }
  const topic = q.get("topic") || topics[0] || "";
  const mode = q.has("timestamp") ? "timestamp" : Number(q.get("offset")) < 0 ? "latest" : "offset";
  const limit = q.get("limit") || "50";
  const f = {
    topic: el("select", { name: "topic", id: "browse-topic" }, topics.map((t) => el("option", { value: t, selected: t === topic }, t))),
    partition: el("input", { name: "partition", type: "number", min: 0, value: q.get("partition") || "0", id: "browse-partition" }),
    mode: el("select", { name: "mode", id: "browse-mode" },
      el("option", { value: "offset", selected: mode === "offset" }, "From offset"),
      el("option", { value: "latest", selected: mode === "latest" }, "Latest N"),
      el("option", { value: "timestamp", selected: mode === "timestamp" }, "From timestamp")),
    offset: el("input", { name: "offset", type: "number", min: 0, value: mode === "offset" ? q.get("offset") || "0" : "0", id: "browse-offset" }),
    latest: el("input", { name: "latest", type: "number", min: 1, max: 500, value: mode === "latest" ? String(-Number(q.get("offset"))) : "20", id: "browse-latest" }),
    timestamp: el("input", { name: "timestamp", type: "datetime-local", step: 1, id: "browse-timestamp",
      value: mode === "timestamp" ? localInput(Number(q.get("timestamp"))) : localInput(Date.now() - 3600 * 1000) }),
    limit: el("input", { name: "limit", type: "number", min: 1, max: 500, value: limit, id: "browse-limit" }),
  };
  if (topic && !topics.includes(topic)) f.topic.append(el("option", { value: topic, selected: true }, topic));
  const fields = {
    offset: el("label", {}, "Offset", f.offset),
    latest: el("label", {}, "Last N records", f.latest),
    timestamp: el("label", {}, "From time (local)", f.timestamp),
  };
  const showMode = () => { for (const [k, l] of Object.entries(fields)) l.hidden = k !== f.mode.value; };
  f.mode.addEventListener("change", showMode);
  showMode();
  const form = el("form", { class: "toolbar", id: "browse-form" },
    el("label", {}, "Topic", f.topic), el("label", {}, "Partition", f.partition), el("label", {}, "Read", f.mode),
    fields.offset, fields.latest, fields.timestamp, el("label", {}, "Limit", f.limit),
    el("button", { type: "submit", id: "browse-go" }, "Fetch"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const p = new URLSearchParams({ topic: f.topic.value, partition: f.partition.value || "0" });
    if (f.mode.value === "offset") p.set("offset", f.offset.value || "0");
    if (f.mode.value === "latest") p.set("offset", String(-Math.max(1, Number(f.latest.value) || 1)));
    if (f.mode.value === "timestamp") p.set("timestamp", String(new Date(f.timestamp.value).getTime()));
    p.set("limit", f.limit.value || "50");
    go("#/messages?" + p.toString());
  });
  const page = el("div", {}, el("h1", {}, "Messages"), listErr ? errorBox(listErr) : null, form);
  if (!topic || !(q.has("offset") || q.has("timestamp"))) {
    page.append(el("p", { class: "muted" }, topics.length ? "Pick a topic and partition, then Fetch." : "No topics to browse."));
    return page;
  }
  const params = new URLSearchParams({ partition: q.get("partition") || "0", limit });
  if (q.has("timestamp")) params.set("timestamp", q.get("timestamp"));
  else params.set("offset", q.get("offset"));
  try {
    const r = await api("/api/topics/" + enc(topic) + "/records?" + params.toString());
    page.append(records(r, limit));
  } catch (err) {
    page.append(errorBox(err));
  }
  return page;
}

// ---- schema registry ----

async function schemasPage() {
  const { enabled, subjects } = await api("/api/schemas");
  if (!enabled) {
    return el("div", {}, el("h1", {}, "Schemas"),
      el("p", { class: "muted", id: "schemas-off" }, "This broker runs no schema registry (schema.registry.listeners is empty)."));
  }
  const rows = subjects.map((s) => el("tr", { "data-subject": s.subject },
    el("td", {}, el("a", { href: "#/schemas/" + enc(s.subject) }, s.subject)),
    el("td", { "data-col": "type" }, s.type),
    el("td", { class: "num", "data-col": "versions" }, num(s.versions.length)),
    el("td", { class: "num", "data-col": "latest" }, String(s.versions[s.versions.length - 1])),
    el("td", { class: "num", "data-col": "id" }, String(s.latestId))));
  const filter = el("input", { type: "search", placeholder: "Filter subjects", id: "subject-filter", oninput: (e) => {
    const f = e.target.value.toLowerCase();
    for (const r of rows) r.hidden = !r.dataset.subject.toLowerCase().includes(f);
  } });
  return el("div", {},
    el("h1", {}, "Schemas"),
    el("div", { class: "toolbar" }, filter, el("button", { class: "secondary", onclick: render }, "Refresh")),
    table(["Subject", "Type", { label: "Versions", num: true }, { label: "Latest version", num: true }, { label: "Latest id", num: true }], rows));
}

// schemaSubjectPage shows one version of a subject (?version=N, else the
// latest) with links to the others.
async function schemaSubjectPage(subject, query) {
  const d = await api("/api/schemas/" + enc(subject));
  const want = Number(query.get("version"));
  const v = d.versions.find((x) => x.version === want) || d.versions[d.versions.length - 1];
  const versions = d.versions.map((x) => x.version === v.version
    ? el("strong", { "data-version": x.version }, String(x.version))
    : el("a", { href: "#/schemas/" + enc(subject) + "?version=" + x.version, "data-version": x.version }, String(x.version)));
  const refs = v.references.map((r) => el("tr", { "data-reference": r.name },
    el("td", {}, r.name),
    el("td", {}, el("a", { href: "#/schemas/" + enc(r.subject) + "?version=" + r.version }, r.subject)),
    el("td", { class: "num" }, String(r.version))));
  const text = v.type === "PROTOBUF" ? v.schema : (prettyJSON(v.schema) || v.schema);
  return el("div", {},
    el("h1", { id: "schema-subject" }, d.subject),
    el("div", { class: "card" }, facts([
      ["Version", String(v.version), "schema-version"],
      ["Id", String(v.id), "schema-id"],
      ["Type", v.type, "schema-type"],
      ["Versions", String(d.versions.length)],
    ])),
    el("div", { class: "toolbar", id: "schema-versions" }, "Versions: ", versions.flatMap((n, i) => (i ? [" ", n] : [n]))),
    el("h2", {}, "Schema"),
    el("div", { class: "card" }, el("pre", { id: "schema-text", "data-schema-type": v.type }, text)),
    refs.length ? el("h2", {}, "References") : null,
    refs.length ? table(["Name", "Subject", { label: "Version", num: true }], refs) : null);
}

// go navigates to hash, rendering again when it is the current one.
function go(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

function records(r, limit) {
  const here = (off) => "#/messages?" + new URLSearchParams({ topic: r.topic, partition: String(r.partition), offset: String(off), limit }).toString();
  const first = r.records.length ? r.records[0].offset : r.nextOffset;
  const prev = Math.max(r.startOffset, first - Number(limit));
  const pager = () => el("div", { class: "pager" },
    el("button", { type: "button", class: "secondary", "data-page": "prev", disabled: first <= r.startOffset, onclick: () => go(here(prev)) }, "‹ Older"),
    el("button", { type: "button", class: "secondary", "data-page": "next", disabled: r.nextOffset >= r.endOffset, onclick: () => go(here(r.nextOffset)) }, "Newer ›"),
    el("span", { class: "muted", id: "browse-range" },
      r.topic + " / " + r.partition + ": offsets " + num(r.startOffset) + " to " + num(r.endOffset) +
      (r.records.length ? "; showing " + num(first) + " to " + num(r.records[r.records.length - 1].offset) : "; no records here")));
  const rows = r.records.map((m) => el("tr", { "data-offset": m.offset },
    el("td", { class: "num" }, String(m.offset)),
    el("td", { "data-field": "timestamp", title: String(m.timestamp) }, new Date(m.timestamp).toISOString().replace("T", " ").replace("Z", " UTC")),
    el("td", { class: "rec" }, bytesView("key", b64(m.key))),
    el("td", { class: "rec" }, bytesView("value", b64(m.value))),
    el("td", { class: "rec", "data-field": "headers" }, (m.headers || []).map((h) =>
      el("div", { class: "header", "data-header": h.key }, el("span", { class: "hkey" }, h.key), bytesView("header-value", b64(h.value)))))));
  return el("div", { id: "records", "data-next-offset": r.nextOffset },
    pager(),
    table([{ label: "Offset", num: true }, "Timestamp", "Key", "Value", "Headers"], rows),
    r.records.length > 5 ? pager() : null);
}

// ---- create topic ----

async function createPage() {
  if (!whoami || !whoami.mayCreateTopics) {
    return el("div", {}, el("h1", {}, "Create topic"), el("p", { class: "muted" }, "You may not create topics."));
  }
  const result = el("div", { id: "create-result" });
  const form = el("form", { class: "stack card", id: "create-form" },
    el("label", {}, "Name", el("input", { name: "name", required: true, pattern: "[a-zA-Z0-9._-]+", maxlength: 249 })),
    el("label", {}, "Partitions", el("input", { name: "partitions", type: "number", min: 1, placeholder: "broker default" })),
    el("label", {}, "Replication factor", el("input", { name: "replicationFactor", type: "number", min: 1, placeholder: "broker default" })),
    el("label", {}, "Configs (key=value, one a line)", el("textarea", { name: "configs", placeholder: "cleanup.policy=compact" })),
    el("div", {}, el("button", { type: "submit" }, "Create")),
    result);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const f = form.elements;
    let configs;
    try { configs = Object.fromEntries(parseLines(f.configs.value)); } catch (err) { result.replaceChildren(errorBox(err)); return; }
    try {
      // Empty (0): the broker's num.partitions and default.replication.factor.
      const t = await post("/api/topics", { name: f.name.value, partitions: Number(f.partitions.value) || 0,
        replicationFactor: Number(f.replicationFactor.value) || 0, configs });
      go("#/topics/" + enc(t.name || f.name.value));
    } catch (err) {
      result.replaceChildren(errorBox(err));
    }
  });
  return el("div", {}, el("h1", {}, "Create topic"), form);
}

// ---- start ----

// loadWhoami learns the principal and whether it may create topics.
async function loadWhoami() {
  try {
    whoami = await api("/api/whoami");
    document.getElementById("principal").textContent = whoami.principal;
    document.getElementById("nav-create").hidden = !whoami.mayCreateTopics;
  } catch (err) {
    whoami = null;
  }
}

async function start() {
  await loadWhoami();
  window.addEventListener("hashchange", render);
  await render();
  // One sample a second, the next only after the last answered, so that
  // a slow broker never has requests piling up.
  for (;;) {
    const next = new Promise((resolve) => setTimeout(resolve, 1000));
    await sample();
    await next;
  }
}

start();
