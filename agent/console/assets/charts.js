// Strata console, charts: polls ../v1/console/history and draws the last
// hour with uPlot (vendor/uplot, served by the agent like this file). The
// agent merges every agent's history ring; this page keeps the points it
// has, asks only for the newer ones, and redraws. ?topic=, ?group= or
// ?agent= (the links of an item's own page) narrow the charts to one
// topic, group or agent. Names from the cluster reach the page as uPlot
// labels and table text, never as HTML.
"use strict";

const REFRESH_MS = 5000;
const HOUR_MS = 3600 * 1000;
const MAX_LINES = 10; // lines per chart: the largest, the rest are listed as left out
const SEP = "\u0001"; // no topic, group or operation name holds it
const PALETTE = ["#2457c5", "#d9480f", "#2b8a3e", "#ae3ec9", "#e8590c", "#0b7285", "#c2255c", "#5f3dc4", "#868e96", "#a61e4d"];

// state is every point the page holds: times (unix ms) and, by key, one
// value (or null) per time. window.strataHistory shows it to tests.
const state = {times: [], series: {}, internal: new Set(), resolution: 5, view: null};
// charts are the uPlot instances by element id, with the labels they
// were made for: window.strataCharts shows them to tests.
const charts = {};
window.strataHistory = state;
window.strataCharts = charts;

function num(v) {
  if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (Math.abs(v) >= 1e4) return (v / 1e3).toFixed(1) + "k";
  return Math.abs(v) >= 100 || v === Math.round(v) ? v.toFixed(0) : v.toPrecision(2);
}
const formats = {
  bytesPerSecond: v => human(v) + "/s",
  perSecond: v => num(v) + "/s",
  count: v => num(v),
  seconds: v => v < 1 ? (v * 1000).toPrecision(3) + " ms" : v.toFixed(2) + " s",
  dollars: v => "$" + (v < 1 ? v.toFixed(4) : v.toFixed(2)),
  bytes: v => human(v),
};

// flatten turns a view into key -> values.
function flatten(v) {
  const f = {};
  const put = (values, ...key) => { if (values) f[key.join(SEP)] = values; };
  for (const t of v.topics) {
    if (t.internal) state.internal.add(t.name);
    for (const m of ["bytes_in", "bytes_out", "records_in", "records_out"]) put(t[m], "topic", t.name, m);
  }
  for (const g of v.groups) {
    put(g.total_lag, "group", g.name);
    for (const p of g.partitions) put(p.lag, "lag", g.name, p.topic + "-" + p.partition);
  }
  const s = v.store;
  for (const [op, values] of Object.entries(s.requests)) put(values, "store-requests", op);
  put(s.write_bytes, "store-bytes", "written");
  put(s.read_bytes, "store-bytes", "read");
  put(s.request_cost_per_hour, "store-cost", "requests");
  put(s.storage_cost_per_hour, "store-cost", "storage");
  put(s.cost_per_hour, "store-cost", "total");
  for (const a of v.agents) {
    for (const m of ["produce_p50_seconds", "produce_p99_seconds", "produce_p999_seconds", "fsync_mean_seconds", "fsyncs", "isr_shrinks"]) {
      put(a[m], "agent", m, "agent " + a.id);
    }
  }
  return f;
}

// absorb adds the points of v, which are those after since, to state:
// the page's own points after since are replaced, and points older than
// an hour before the newest are dropped.
function absorb(v, since) {
  let keep = state.times.findIndex(t => t > since);
  if (keep < 0) keep = state.times.length;
  const fresh = flatten(v);
  const nulls = n => new Array(n).fill(null);
  for (const key of new Set([...Object.keys(state.series), ...Object.keys(fresh)])) {
    const old = (state.series[key] || nulls(keep)).slice(0, keep);
    state.series[key] = old.concat(fresh[key] || nulls(v.times.length));
  }
  state.times = state.times.slice(0, keep).concat(v.times);
  const newest = state.times.length ? state.times[state.times.length - 1] : 0;
  const first = state.times.findIndex(t => t > newest - HOUR_MS);
  if (first > 0) {
    state.times = state.times.slice(first);
    for (const key of Object.keys(state.series)) state.series[key] = state.series[key].slice(first);
  }
  for (const [key, values] of Object.entries(state.series)) {
    if (values.every(x => x === null)) delete state.series[key];
  }
  state.resolution = v.resolution_seconds || state.resolution;
  state.view = v;
}

// only is what the links of a topic's, group's and agent's own page
// (?topic=, ?group=, ?agent=) narrow the charts to; null: everything.
const only = (() => {
  const q = new URLSearchParams(location.search);
  return {topic: q.get("topic"), group: q.get("group"), agent: q.get("agent")};
})();
const onlyAgent = label => only.agent === null || label === "agent " + only.agent;
const onlyGroup = label => only.group === null || label === only.group;

// linesOf is the series whose keys start with prefix, as {label, key}:
// label is the key's last part; keep, when given, chooses among labels.
function linesOf(prefix, keep) {
  const start = prefix.join(SEP) + SEP;
  const lines = [];
  for (const [key, values] of Object.entries(state.series)) {
    if (key.startsWith(start) && (!keep || keep(key.slice(start.length)))) lines.push({label: key.slice(start.length), key, weight: values.reduce((a, x) => a + (x || 0), 0)});
  }
  return largest(lines);
}

// largest keeps the MAX_LINES lines of the largest sums, in label order:
// a line keeps its colour from one refresh, and one chart, to the next.
function largest(lines) {
  const byName = (a, b) => a.label.localeCompare(b.label, undefined, {numeric: true});
  lines.sort((a, b) => b.weight - a.weight || byName(a, b));
  return {lines: lines.slice(0, MAX_LINES).sort(byName), left: Math.max(lines.length - MAX_LINES, 0)};
}

function chartWidth(box) { return Math.max(box.clientWidth, 200); }

// draw puts lines in the chart element id (titled by its data-title),
// making the uPlot anew when the lines changed; data-points on the
// element counts the values drawn.
function draw(id, {lines, left}, fmt) {
  const box = document.getElementById(id);
  const title = box.dataset.title + (left ? " (" + left + " more not drawn)" : "");
  const data = [state.times.map(t => t / 1000), ...lines.map(l => state.series[l.key])];
  let points = 0;
  for (const values of data.slice(1)) points += values.filter(x => x !== null).length;
  box.dataset.points = points;
  const signature = title + SEP + lines.map(l => l.label).join(SEP);
  let c = charts[id];
  if (!lines.length) {
    if (c) c.u.destroy();
    delete charts[id];
    box.replaceChildren(el("div", {class: "chart-title"}, box.dataset.title), el("p", {class: "muted"}, "no data yet"));
    return;
  }
  if (c && c.signature === signature) {
    c.u.setData(data);
    return;
  }
  if (c) c.u.destroy();
  box.replaceChildren();
  const opts = {
    title, width: chartWidth(box), height: 200,
    scales: {x: {time: true}},
    series: [{}, ...lines.map((l, i) => ({label: l.label, stroke: PALETTE[i % PALETTE.length], width: 1.5,
      spanGaps: false, value: (u, v) => v === null || v === undefined ? "-" : fmt(v)}))],
    axes: [{}, {size: 84, values: (u, vals) => vals.map(fmt)}],
  };
  charts[id] = {u: new uPlot(opts, data, box), signature, labels: lines.map(l => l.label)};
}

function render() {
  const showInternal = document.getElementById("show-internal").checked;
  const topic = name => only.topic !== null ? name === only.topic : showInternal || !state.internal.has(name);
  draw("topic-bytes-in", topicLines("bytes_in", topic), formats.bytesPerSecond);
  draw("topic-bytes-out", topicLines("bytes_out", topic), formats.bytesPerSecond);
  draw("topic-records-in", topicLines("records_in", topic), formats.perSecond);
  draw("topic-records-out", topicLines("records_out", topic), formats.perSecond);
  draw("group-lag", linesOf(["group"], onlyGroup), formats.count);
  renderGroups();
  draw("store-requests", linesOf(["store-requests"]), formats.perSecond);
  draw("store-bytes", linesOf(["store-bytes"]), formats.bytesPerSecond);
  draw("store-cost", linesOf(["store-cost"]), formats.dollars);
  draw("agent-p50", linesOf(["agent", "produce_p50_seconds"], onlyAgent), formats.seconds);
  draw("agent-p99", linesOf(["agent", "produce_p99_seconds"], onlyAgent), formats.seconds);
  draw("agent-p999", linesOf(["agent", "produce_p999_seconds"], onlyAgent), formats.seconds);
  draw("agent-fsync", linesOf(["agent", "fsync_mean_seconds"], onlyAgent), formats.seconds);
  draw("agent-fsyncs", linesOf(["agent", "fsyncs"], onlyAgent), formats.perSecond);
  draw("agent-isr", linesOf(["agent", "isr_shrinks"], onlyAgent), formats.count);
  renderTables();
}

// topicLines is the topics' lines of metric m, keyed topic/<name>/<m>.
function topicLines(m, keep) {
  const lines = [];
  for (const [key, values] of Object.entries(state.series)) {
    const [kind, name, metric] = key.split(SEP);
    if (kind !== "topic" || metric !== m || !keep(name)) continue;
    lines.push({label: name, key, weight: values.reduce((a, x) => a + (x || 0), 0)});
  }
  return largest(lines);
}

// renderGroups keeps one chart of lag by partition per group.
function renderGroups() {
  const holder = document.getElementById("group-charts");
  const groups = [...new Set(Object.keys(state.series).filter(k => k.startsWith("lag" + SEP)).map(k => k.split(SEP)[1]))].filter(onlyGroup).sort();
  const wanted = new Set(groups.map((g, i) => "group-" + i));
  for (const box of [...holder.children]) {
    if (!wanted.has(box.id) || box.dataset.group !== groups[Number(box.id.slice(6))]) {
      if (charts[box.id]) charts[box.id].u.destroy();
      delete charts[box.id];
      box.remove();
    }
  }
  groups.forEach((g, i) => {
    const id = "group-" + i;
    if (!document.getElementById(id)) {
      const box = el("div", {class: "chart", id});
      box.dataset.group = g;
      box.dataset.title = "Lag of " + g + " by partition";
      holder.append(box);
    }
    draw(id, linesOf(["lag", g]), formats.count);
  });
}

function renderTables() {
  const v = state.view;
  const rings = document.getElementById("rings");
  rings.replaceChildren(el("thead", {}, el("tr", {}, el("th", {}, "agent"), el("th", {class: "num"}, "ring bytes"),
    el("th", {class: "num"}, "series"), el("th", {}, "left out by the caps"))),
  el("tbody", {}, ...v.agents.map(a => el("tr", {"data-agent": a.id}, el("td", {}, a.id),
    el("td", {class: "num ring-bytes"}, el("span", {class: "n"}, a.ring_bytes), el("span", {class: "h"}, human(a.ring_bytes))),
    el("td", {class: "num"}, a.ring_series),
    el("td", {}, a.dropped.topics + a.dropped.partitions + a.dropped.group_partitions === 0 ? "nothing" :
      a.dropped.topics + " topics, " + a.dropped.partitions + " partitions, " + a.dropped.group_partitions + " group partitions")))));
  document.getElementById("notes").replaceChildren(...v.notes.map(n => el("p", {}, n)));
  const errs = document.getElementById("errors");
  errs.hidden = !v.errors.length;
  errs.replaceChildren(...v.errors.map(e => el("div", {}, e)));
  const p = v.prices;
  document.getElementById("prices").textContent = "Cost per hour: requests at each point's rate, PUT and LIST at " +
    formats.dollars(p.put_per_1000) + " per 1,000, GET and HEAD at " + formats.dollars(p.get_per_1000) +
    " per 1,000, DELETE free; storage at " + formats.dollars(p.storage_gb_month) + " per GB-month (agent flags --cost-*).";
  document.getElementById("resolution").textContent = state.resolution;
  document.getElementById("served-by").textContent = "served by agent " + v.served_by;
}

let since = 0;
async function refresh() {
  try {
    const resp = await fetch("../v1/console/history?since=" + since, {cache: "no-store"});
    if (!resp.ok) throw new Error("the agent answered " + resp.status);
    const v = await resp.json();
    absorb(v, since);
    // Ask again for the last two points too: an agent that had not
    // sampled its share of them yet has now.
    if (state.times.length) since = Math.max(state.times[state.times.length - 1] - 2 * state.resolution * 1000, 0);
    render();
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.loaded = "true";
  } catch (e) {
    document.getElementById("updated").textContent = "update failed: " + e.message;
  }
}

window.addEventListener("resize", () => {
  for (const [id, c] of Object.entries(charts)) c.u.setSize({width: chartWidth(document.getElementById(id)), height: 200});
});
document.getElementById("show-internal").addEventListener("change", render);
{
  const narrowed = Object.entries(only).filter(([, v]) => v !== null).map(([k, v]) => k + " " + v);
  const box = document.getElementById("only");
  box.hidden = !narrowed.length;
  box.prepend("Only " + narrowed.join(", ") + ". ");
}
refresh();
setInterval(refresh, REFRESH_MS);
