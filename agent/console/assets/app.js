// Strata console: polls ../v1/console every few seconds and redraws. The
// agent gathers the numbers from every agent; this page only lays them out
// and derives rates from successive samples of the byte counters. Every
// name from the cluster is inserted as text, never as HTML.
"use strict";

const REFRESH_MS = 3000;
let previous = null; // {at, topics: {name: {in, out}}} of the last sample

// bytesCell shows the exact count (class n, which tests read) and, for
// larger values, a readable size.
function bytesCell(cls, bytes) {
  return el("td", {class: "num " + cls}, el("span", {class: "n"}, Math.round(bytes)),
    bytes >= 1024 ? el("span", {class: "h"}, human(bytes)) : null);
}
function numCell(cls, n) { return el("td", {class: "num " + cls}, el("span", {class: "n"}, n)); }
function money(x) { return "$" + (x < 1 ? x.toFixed(4) : x.toFixed(2)); }
function ids(a) { return (a && a.length) ? a.join(",") : "-"; }
function card(label, value, id) {
  return el("div", {class: "card", id: id || ""}, el("div", {class: "label"}, label), el("div", {class: "value"}, value));
}
function table(id, head, rows) {
  const t = document.getElementById(id) || el("table", {id: id});
  t.replaceChildren(el("thead", {}, el("tr", {}, ...head.map(h => el("th", {class: h.endsWith(" ") ? "num" : ""}, h.trim())))),
    el("tbody", {}, ...rows));
  return t;
}
function wrap(t) { return el("div", {class: "scroll"}, t); }

function renderCluster(v) {
  const c = v.counts;
  document.getElementById("cluster-cards").replaceChildren(
    card("agents", c.agents, "agent-count"), card("partitions", c.partitions),
    card("leaderless", c.leaderless), card("under-replicated", c.under_replicated),
    card("moves in flight", v.moves.length));
  table("agents", ["agent", "state", "rack", "kafka", "http", "replicas ", "leaders ", "in/s ", "out/s ", "utilization "],
    v.agents.map(a => el("tr", {"data-agent": a.id},
      el("td", {}, a.id, a.reporting ? null : el("span", {class: "h bad"}, "no report")),
      el("td", {class: "state-" + a.state}, a.state), el("td", {}, a.rack || "-"),
      el("td", {}, a.kafka_addr), el("td", {}, a.http_addr),
      numCell("replicas", a.replicas), numCell("leaders", a.leaders),
      el("td", {class: "num", "data-col": "in"}, human(a.load.in_bytes_per_second)),
      el("td", {class: "num", "data-col": "out"}, human(a.load.out_bytes_per_second)),
      el("td", {class: "num", "data-col": "utilization"},
        a.load.utilization === undefined ? "-" : (100 * a.load.utilization).toFixed(0) + "%"))));
  const moves = document.getElementById("moves");
  if (!v.moves.length) {
    moves.replaceChildren(el("p", {class: "muted"}, "none"));
  } else {
    moves.replaceChildren(wrap(table("moves-table", ["topic", "partition ", "replicas", "target"],
      v.moves.map(m => el("tr", {}, el("td", {}, m.topic), numCell("", m.partition), el("td", {}, ids(m.replicas)), el("td", {}, ids(m.target)))))));
  }
}

function renderTopics(v, rates) {
  const showInternal = document.getElementById("show-internal").checked;
  const blocks = v.topics.filter(t => showInternal || !t.internal).map(t => {
    const r = rates[t.name];
    const summary = el("table", {class: "topic-summary"},
      el("thead", {}, el("tr", {}, ...["records", "local bytes", "bucket bytes", "in/s", "out/s"].map(h => el("th", {class: "num"}, h)))),
      el("tbody", {}, el("tr", {"data-topic": t.name},
        numCell("records", t.records), bytesCell("local-bytes", t.local_bytes), bytesCell("bucket-bytes", t.bucket_bytes),
        el("td", {class: "num in-rate"}, r ? human(r.in) + "/s" : "-"),
        el("td", {class: "num out-rate"}, r ? human(r.out) + "/s" : "-"))));
    const parts = table("", ["partition ", "leader ", "replicas", "ISR", "log start ", "high watermark ", "records ",
      "local bytes ", "bucket bytes ", "bucket offsets", "upload lag "],
      t.partitions.map(p => {
        const ti = p.tiering;
        const known = p.reported;
        return el("tr", {"data-partition": t.name + "-" + p.partition},
          numCell("", p.partition), numCell("leader", p.leader < 0 ? "none" : p.leader),
          el("td", {}, ids(p.replicas)), el("td", {class: p.isr.length < p.replicas.length ? "bad" : ""}, ids(p.isr)),
          numCell("log-start", known ? p.log_start_offset : "?"), numCell("high-watermark", known ? p.high_watermark : "?"),
          numCell("records", known ? p.records : "?"), known ? bytesCell("local-bytes", p.local_bytes) : numCell("", "?"),
          ti ? bytesCell("bucket-bytes", ti.remote_bytes) : numCell("bucket-bytes", "-"),
          el("td", {class: "bucket-offsets"}, ti && ti.remote_segments > 0 ? ti.remote_start_offset + "–" + (ti.remote_next_offset - 1) : "-"),
          ti ? el("td", {class: "num upload-lag"}, human(ti.upload_lag_bytes), ti.upload_lag_seconds > 0 ? el("span", {class: "h"}, ti.upload_lag_seconds.toFixed(0) + " s") : null)
            : numCell("upload-lag", "-"));
      }));
    return el("div", {class: "block topic", "data-topic-block": t.name},
      el("div", {class: "title"}, el("strong", {}, t.name), t.internal ? el("span", {class: "muted"}, "internal") : null,
        el("span", {class: "muted"}, t.partitions.length + " partitions"),
        el("a", {class: "browse", href: "browse.html?topic=" + encodeURIComponent(t.name)}, "browse messages")),
      wrap(summary), wrap(parts));
  });
  document.getElementById("topic-list").replaceChildren(...(blocks.length ? blocks : [el("p", {class: "muted"}, "no topics")]));
}

function renderGroups(v) {
  const blocks = v.groups.map(g => el("div", {class: "block group", "data-group": g.name},
    el("div", {class: "title"}, el("strong", {}, g.name), el("span", {}, g.state),
      el("span", {class: "muted"}, g.protocol || ""), el("span", {class: "muted"}, "coordinator " + g.coordinator),
      el("span", {class: "total-lag"}, "lag ", el("span", {class: "n"}, g.total_lag)),
      g.error ? el("span", {class: "bad"}, g.error) : null),
    g.members.length ? wrap(table("", ["member", "client", "host", "assigned"],
      g.members.map(m => el("tr", {}, el("td", {}, m.id), el("td", {}, m.client_id || "-"), el("td", {}, m.host || "-"), el("td", {}, m.assigned || "-")))))
      : el("p", {class: "muted"}, "no members"),
    wrap(table("", ["topic", "partition ", "committed ", "end ", "lag ", "member"],
      g.lag.map(l => el("tr", {"data-lag": l.topic + "-" + l.partition},
        el("td", {}, l.topic), numCell("", l.partition), numCell("committed", l.committed < 0 ? "-" : l.committed),
        numCell("end", l.end < 0 ? "-" : l.end), numCell("lag", l.lag < 0 ? "-" : l.lag), el("td", {}, l.member || "-")))))));
  document.getElementById("group-list").replaceChildren(...(blocks.length ? blocks : [el("p", {class: "muted"}, "no consumer groups")]));
}

function renderStore(v) {
  const s = v.store, u = s.usage;
  document.getElementById("store-cards").replaceChildren(
    card("bucket bytes", human(s.bucket_bytes), "store-bucket-bytes"),
    card("PUTs / GiB written", s.puts_per_gib === undefined ? "-" : s.puts_per_gib.toFixed(0), "store-puts-per-gib"),
    card("errors", s.errors, "store-errors"),
    card("est. cost / month", money(s.monthly_cost.total), "store-monthly-cost"));
  const ops = Object.keys(s.requests).sort();
  const outcomes = [...new Set(ops.flatMap(op => Object.keys(s.requests[op])))].sort();
  table("store-requests", ["op", ...outcomes.map(o => o + " ")],
    ops.map(op => el("tr", {"data-op": op}, el("td", {}, op), ...outcomes.map(o => numCell(o, s.requests[op][o] || 0)))));
  table("store-topics", ["topic", "PUT ", "GET ", "LIST ", "DELETE ", "written ", "read ", "PUTs/GiB ", "requests/mo ", "storage/mo ", "total/mo "],
    v.topics.filter(t => t.store_usage.puts + t.store_usage.gets + t.store_usage.lists + t.store_usage.deletes > 0 || t.bucket_bytes > 0)
      .map(t => { const tu = t.store_usage, c = t.monthly_cost; return el("tr", {"data-store-topic": t.name}, el("td", {}, t.name),
        numCell("put", tu.puts), numCell("get", tu.gets), numCell("list", tu.lists), numCell("delete", tu.deletes),
        bytesCell("written", tu.bytes_written), bytesCell("read", tu.bytes_read),
        numCell("puts-per-gib", t.puts_per_gib === undefined ? "-" : t.puts_per_gib.toFixed(0)),
        numCell("", money(c.requests)), numCell("", money(c.storage)), numCell("cost", money(c.total))); }));
  const p = v.prices;
  document.getElementById("prices").textContent = "Estimate at the request rate since each agent started and today's bucket bytes, for 30 days: PUT/LIST " +
    money(p.put_per_1000) + " per 1,000, GET " + money(p.get_per_1000) + " per 1,000, storage " + money(p.storage_gb_month) +
    " per GB-month (agent flags --cost-*). Totals so far: " + u.puts + " PUT, " + u.gets + " GET, " + u.lists + " LIST, " + u.deletes + " DELETE.";
}

function rates(v) {
  const now = Date.now(), cur = {};
  for (const t of v.topics) cur[t.name] = {in: t.bytes_in, out: t.bytes_out};
  const out = {};
  if (previous) {
    const dt = (now - previous.at) / 1000;
    for (const [name, c] of Object.entries(cur)) {
      const p = previous.topics[name];
      if (p && dt > 0) out[name] = {in: Math.max(c.in - p.in, 0) / dt, out: Math.max(c.out - p.out, 0) / dt};
    }
  }
  previous = {at: now, topics: cur};
  return out;
}

async function refresh() {
  try {
    const resp = await fetch("../v1/console", {cache: "no-store"});
    if (!resp.ok) throw new Error("the agent answered " + resp.status);
    const v = await resp.json();
    document.getElementById("served-by").textContent = "served by agent " + v.served_by;
    renderCluster(v);
    renderTopics(v, rates(v));
    renderGroups(v);
    renderStore(v);
    const errs = document.getElementById("errors");
    errs.hidden = !v.errors.length;
    errs.replaceChildren(...v.errors.map(e => el("div", {}, e)));
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.loaded = "true";
  } catch (e) {
    document.getElementById("updated").textContent = "update failed: " + e.message;
  }
}

document.getElementById("show-internal").addEventListener("change", refresh);
refresh();
setInterval(refresh, REFRESH_MS);
