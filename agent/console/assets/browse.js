// Strata console, message browser: shows one page of a topic's records
// from ../v1/console/records and pages through them. The whole state is
// the URL's query (topic, partition, from, limit, isolation, decode, key),
// so a page can be shared; the form writes it and the page reads it back.
// Keys, values and headers reach the page as text, never as HTML.
"use strict";

const params = ["topic", "partition", "from", "limit", "isolation", "decode", "key"];
const $ = id => document.getElementById(id);
let topics = []; // [{name, partitions}] from ../v1/console

// localInput is ms as a datetime-local value, in the browser's zone.
function localInput(ms) {
  const d = new Date(ms);
  return new Date(ms - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
}

// state is the URL's query, with the page's defaults.
function state() {
  const q = new URLSearchParams(location.search);
  const s = {};
  for (const p of params) s[p] = q.get(p) || "";
  s.partition = s.partition || "all";
  s.from = s.from || "end";
  s.limit = s.limit || "50";
  s.isolation = s.isolation || "read_uncommitted";
  s.decode = s.decode || "auto";
  return s;
}

function query(s) {
  const q = new URLSearchParams();
  for (const p of params) if (s[p] !== "") q.set(p, s[p]);
  return q.toString();
}

// go makes s the page's state (a new history entry unless replace) and
// loads it.
function go(s, replace) {
  const url = "?" + query(s);
  if (replace) history.replaceState(null, "", url); else history.pushState(null, "", url);
  load();
}

function fillPartitions(topic, selected) {
  const t = topics.find(t => t.name === topic);
  const n = t ? t.partitions : 0;
  const opts = [el("option", {value: "all"}, "all")];
  for (let i = 0; i < n; i++) opts.push(el("option", {value: String(i)}, String(i)));
  $("partition").replaceChildren(...opts);
  $("partition").value = selected !== undefined && (selected === "all" || Number(selected) < n) ? selected : "all";
}

// showForm puts s into the form.
function showForm(s) {
  if (s.topic && !topics.some(t => t.name === s.topic)) topics.push({name: s.topic, partitions: 0});
  $("topic").replaceChildren(...topics.map(t => el("option", {value: t.name}, t.name)));
  $("topic").value = s.topic;
  fillPartitions(s.topic, s.partition);
  if (s.partition !== "all" && $("partition").value !== s.partition) {
    $("partition").append(el("option", {value: s.partition}, s.partition));
    $("partition").value = s.partition;
  }
  const [kind, value] = s.from.split(":");
  $("from-kind").value = kind === "before" ? "offset" : kind;
  $("from-offset").value = kind === "offset" || kind === "before" ? value : "";
  $("from-time").value = kind === "timestamp" ? localInput(Number(value)) : "";
  $("limit").value = s.limit;
  $("isolation").value = s.isolation;
  $("decode").value = s.decode;
  $("key").value = s.key;
  showFromInputs();
}

function showFromInputs() {
  // Offsets are one partition's: all partitions start at the start, the
  // end or a time.
  const offset = $("from-kind").querySelector('option[value="offset"]');
  offset.disabled = $("partition").value === "all";
  if (offset.disabled && $("from-kind").value === "offset") $("from-kind").value = "end";
  const kind = $("from-kind").value;
  $("from-offset").hidden = kind !== "offset";
  $("from-time").hidden = kind !== "timestamp";
}

// formState reads the form.
function formState() {
  const kind = $("from-kind").value;
  let from = kind;
  if (kind === "offset") from = "offset:" + Math.max(0, Math.floor(Number($("from-offset").value) || 0));
  if (kind === "timestamp") {
    const ms = new Date($("from-time").value).getTime();
    from = "timestamp:" + (isNaN(ms) ? Date.now() : Math.max(0, ms));
  }
  return {topic: $("topic").value, partition: $("partition").value, from: from, limit: $("limit").value,
    isolation: $("isolation").value, decode: $("decode").value, key: $("key").value};
}

// shown is a key or value cell: its text, and under it how it was
// decoded (left out for a key shown as text), why, and whether it was cut.
function shown(v, cls) {
  if (!v) return el("td", {class: cls});
  if (v.encoding === "null") return el("td", {class: cls}, el("span", {class: "muted"}, "null"));
  const out = el("td", {class: cls}, el("pre", {class: "text enc-" + v.encoding}, v.text));
  const tags = cls === "key" && v.encoding === "text" ? [] : [v.encoding];
  if (v.note) tags.push(v.note);
  if (v.truncated) tags.push("truncated, " + v.size + " bytes");
  else if (v.size >= 1024) tags.push(human(v.size));
  if (tags.length) out.append(el("div", {class: "h tags"}, tags.join(" · ")));
  return out;
}

// span is the offsets [from, to) as "from–last", or "none".
function span(from, to) { return to > from ? from + "–" + (to - 1) : "none"; }

function txnBadge(r) {
  switch (r.txn) {
    case "aborted": return el("span", {class: "badge bad aborted"}, "aborted");
    case "committed": return el("span", {class: "badge committed"}, "committed");
    case "unknown": return el("span", {class: "badge unknown", title: "no marker of producer " + r.producer_id + " follows in what this page read"}, "transaction: outcome not read");
  }
  return null;
}

function row(r, all) {
  const when = new Date(r.timestamp);
  const cells = [
    all ? el("td", {class: "num partition"}, r.partition) : null,
    el("td", {class: "num offset"}, r.offset),
    el("td", {class: "time", title: r.log_append_time ? "log append time" : "create time"},
      isNaN(when) ? r.timestamp : when.toISOString().replace("T", " ").replace("Z", " UTC")),
  ];
  if (r.control) {
    const c = r.control;
    const what = c.type === "COMMIT" || c.type === "ABORT" ? c.type + " marker, producer " + r.producer_id : c.type + (c.error ? ": " + c.error : "");
    return el("tr", {class: "control", "data-offset": r.offset, "data-partition": r.partition}, ...cells,
      el("td", {colspan: "3", class: "marker " + (c.type === "ABORT" ? "bad" : "")}, what,
        c.type === "COMMIT" || c.type === "ABORT" ? el("span", {class: "h"}, "coordinator epoch " + c.coordinator_epoch) : null));
  }
  const headers = el("td", {class: "headers"}, ...(r.headers || []).map(h =>
    el("div", {}, el("span", {class: "hkey"}, h.key), ": ", h.value.encoding === "null" ? el("span", {class: "muted"}, "null") : h.value.text)),
    r.headers_left_out ? el("div", {class: "muted"}, "and " + r.headers_left_out + " more") : null);
  const key = shown(r.key, "key");
  const badge = txnBadge(r);
  if (badge) key.prepend(badge, " ");
  return el("tr", {class: r.txn === "aborted" ? "aborted" : "", "data-offset": r.offset, "data-partition": r.partition},
    ...cells, key, headers, shown(r.value, "value"));
}

const stopped = {
  end: "read to the end of the range",
  limit: "the page has its rows",
  page_bytes: "the page has its 1 MiB of text",
  scan_records: "stopped after the records a page may look at; Next continues",
  scan_bytes: "stopped after the bytes a page may fetch; Next continues",
  time: "stopped: no more records came in time",
};

function render(p, s) {
  const all = p.partition < 0;
  const head = [all ? "partition" : null, "offset", "timestamp", "key", "headers", "value"].filter(h => h);
  $("records").replaceChildren(
    el("thead", {}, el("tr", {}, ...head.map(h => el("th", {class: h === "offset" || h === "partition" ? "num" : ""}, h)))),
    el("tbody", {}, ...(p.records.length ? p.records.map(r => row(r, all))
      : [el("tr", {}, el("td", {colspan: String(head.length), class: "muted"}, "no records"))])));
  const parts = p.partitions.map(pp => (all ? "partition " + pp.partition + ": " : "") +
    "offsets " + span(pp.read_from, pp.read_to) + " of " + span(pp.log_start_offset, pp.end_offset));
  $("summary").textContent = p.records.length + " rows · " + (all ? "all partitions by time · " : "") +
    parts.join(", ") + " · " + (stopped[p.stopped] || p.stopped);
  const notes = (p.notes || []).map(n => el("div", {}, n));
  if (all) notes.push(el("div", {}, "Paging needs one partition: pick one to go back or forth."));
  $("notes").replaceChildren(...notes);
  for (const [id, from] of [["prev", p.prev], ["next", p.next]]) {
    const b = $(id);
    b.disabled = !from;
    b.onclick = () => go({...s, from: from});
  }
}

async function load() {
  const s = state();
  showForm(s);
  $("errors").hidden = true;
  document.body.dataset.loaded = "false";
  if (!s.topic) {
    $("records").replaceChildren();
    $("summary").textContent = "pick a topic";
    document.body.dataset.loaded = "true";
    return;
  }
  try {
    const resp = await fetch("../v1/console/records?" + query(s), {cache: "no-store"});
    const body = await resp.json().catch(() => ({error: "the agent answered " + resp.status}));
    if (!resp.ok) throw new Error(body.error || "the agent answered " + resp.status);
    render(body, s);
    $("updated").textContent = "read " + new Date().toLocaleTimeString();
  } catch (e) {
    $("errors").hidden = false;
    $("errors").replaceChildren(el("div", {}, e.message));
    $("records").replaceChildren();
    $("summary").textContent = "";
  }
  document.body.dataset.loaded = "true";
}

async function start() {
  try {
    const resp = await fetch("../v1/console", {cache: "no-store"});
    const v = await resp.json();
    $("served-by").textContent = "messages · served by agent " + v.served_by;
    topics = v.topics.filter(t => !t.internal).concat(v.topics.filter(t => t.internal))
      .map(t => ({name: t.name, partitions: t.partitions.length}));
  } catch (e) {
    topics = []; // a topic typed in the URL still works
  }
  const s = state();
  if (!s.topic && topics.length) {
    go({...s, topic: topics[0].name}, true);
    return;
  }
  load();
}

$("topic").addEventListener("change", () => { fillPartitions($("topic").value, "all"); showFromInputs(); });
$("partition").addEventListener("change", showFromInputs);
$("from-kind").addEventListener("change", showFromInputs);
$("browse").addEventListener("submit", e => { e.preventDefault(); go(formState()); });
window.addEventListener("popstate", load);
start();
