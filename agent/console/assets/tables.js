// Strata console, shared by the overview (app.js) and the page of one
// topic, group or agent (detail.js), loaded after dom.js: cells, cards and
// tables, a topic's and a group's block, and the links between pages.
// Every name from the cluster is inserted as text, never as HTML.
"use strict";

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
  const t = (id && document.getElementById(id)) || el("table", id ? {id: id} : {});
  t.replaceChildren(el("thead", {}, el("tr", {}, ...head.map(h => el("th", {class: h.endsWith(" ") ? "num" : ""}, h.trim())))),
    el("tbody", {}, ...rows));
  return t;
}
function wrap(t) { return el("div", {class: "scroll"}, t); }
function count(n) { return Number(n).toLocaleString("en-US"); }

// pageHref is the path of the page of a topic, group or agent, relative to
// root (the console's directory as the current page reaches it: "" from
// the overview, "../" from a page of one item), or null for a name no URL
// path can hold: "", "." and ".." (browsers resolve those segments away).
function pageHref(root, kind, name) {
  const s = String(name);
  if (s === "" || s === "." || s === "..") return null;
  return root + kind + "/" + encodeURIComponent(s);
}

// pageLink is a link to that page showing text (the name by default), or
// the text alone when there can be no page.
function pageLink(root, kind, name, text) {
  const href = pageHref(root, kind, name);
  const shown = text === undefined ? String(name) : text;
  return href ? el("a", {href, class: "item-link", "data-link": kind}, shown) : el("span", {}, shown);
}

// rateTracker returns a function that turns a view's topic byte counters
// into bytes per second since the view before it, by topic name: a topic
// not in the view before (another page of the list) has none yet.
function rateTracker() {
  let previous = null; // {at, topics: {name: {in, out}}}
  return topics => {
    const now = Date.now(), cur = {};
    for (const t of topics) cur[t.name] = {in: t.bytes_in, out: t.bytes_out};
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
  };
}

// agentRows are the agents table's rows, each id linking to its page.
function agentRows(agents, root) {
  return agents.map(a => el("tr", {"data-agent": a.id},
    el("td", {}, pageLink(root, "agents", a.id), a.reporting ? null : el("span", {class: "h bad"}, "no report")),
    el("td", {class: "state-" + a.state}, a.state), el("td", {}, a.rack || "-"),
    el("td", {}, a.kafka_addr || "-"), el("td", {}, a.http_addr || "-"),
    numCell("replicas", a.replicas), numCell("leaders", a.leaders),
    el("td", {class: "num", "data-col": "in"}, human(a.load.in_bytes_per_second)),
    el("td", {class: "num", "data-col": "out"}, human(a.load.out_bytes_per_second)),
    el("td", {class: "num", "data-col": "utilization"},
      a.load.utilization === undefined ? "-" : (100 * a.load.utilization).toFixed(0) + "%")));
}
const AGENT_HEAD = ["agent", "state", "rack", "kafka", "http", "replicas ", "leaders ", "in/s ", "out/s ", "utilization "];

// topicBlock is a topic's totals and partitions; rate is its bytes per
// second ({in, out}) or undefined.
function topicBlock(t, rate, root) {
  const summary = el("table", {class: "topic-summary"},
    el("thead", {}, el("tr", {}, ...["records", "local bytes", "bucket bytes", "in/s", "out/s"].map(h => el("th", {class: "num"}, h)))),
    el("tbody", {}, el("tr", {"data-topic": t.name},
      numCell("records", t.records), bytesCell("local-bytes", t.local_bytes), bytesCell("bucket-bytes", t.bucket_bytes),
      el("td", {class: "num in-rate"}, rate ? human(rate.in) + "/s" : "-"),
      el("td", {class: "num out-rate"}, rate ? human(rate.out) + "/s" : "-"))));
  const parts = table("", ["partition ", "leader ", "replicas", "ISR", "log start ", "high watermark ", "records ",
    "local bytes ", "bucket bytes ", "bucket offsets", "upload lag "],
    t.partitions.map(p => {
      const ti = p.tiering;
      const known = p.reported;
      return el("tr", {"data-partition": t.name + "-" + p.partition},
        numCell("", p.partition), p.leader < 0 ? numCell("leader", t.diskless ? "any agent" : "none") : el("td", {class: "num leader"}, el("span", {class: "n"}, pageLink(root, "agents", p.leader))),
        el("td", {}, ids(p.replicas)), el("td", {class: p.isr.length < p.replicas.length ? "bad" : ""}, ids(p.isr)),
        numCell("log-start", known ? p.log_start_offset : "?"), numCell("high-watermark", known ? p.high_watermark : "?"),
        numCell("records", known ? p.records : "?"), known ? bytesCell("local-bytes", p.local_bytes) : numCell("", "?"),
        ti ? bytesCell("bucket-bytes", ti.remote_bytes) : numCell("bucket-bytes", "-"),
        el("td", {class: "bucket-offsets"}, ti && ti.remote_segments > 0 ? ti.remote_start_offset + "–" + (ti.remote_next_offset - 1) : "-"),
        ti ? el("td", {class: "num upload-lag"}, human(ti.upload_lag_bytes), ti.upload_lag_seconds > 0 ? el("span", {class: "h"}, ti.upload_lag_seconds.toFixed(0) + " s") : null)
          : numCell("upload-lag", "-"));
    }));
  return el("div", {class: "block topic", "data-topic-block": t.name},
    el("div", {class: "title"}, el("strong", {}, pageLink(root, "topics", t.name)), t.internal ? el("span", {class: "muted"}, "internal") : null,
      el("span", {class: "muted"}, t.partitions.length + " partitions"),
      el("a", {class: "browse", href: root + "browse.html?topic=" + encodeURIComponent(t.name)}, "browse messages")),
    wrap(summary), wrap(parts));
}

// groupBlock is a group's state, members and lag by partition.
function groupBlock(g, root) {
  return el("div", {class: "block group", "data-group": g.name},
    el("div", {class: "title"}, el("strong", {}, pageLink(root, "groups", g.name)), el("span", {}, g.state),
      el("span", {class: "muted"}, g.protocol || ""), el("span", {class: "muted"}, "coordinator ", pageLink(root, "agents", g.coordinator)),
      el("span", {class: "total-lag"}, "lag ", el("span", {class: "n"}, g.total_lag)),
      g.error ? el("span", {class: "bad"}, g.error) : null),
    g.members.length ? wrap(table("", ["member", "client", "host", "assigned"],
      g.members.map(m => el("tr", {"data-member": m.id}, el("td", {}, m.id), el("td", {}, m.client_id || "-"), el("td", {}, m.host || "-"), el("td", {}, m.assigned || "-")))))
      : el("p", {class: "muted"}, "no members"),
    wrap(table("", ["topic", "partition ", "committed ", "end ", "lag ", "member"],
      g.lag.map(l => el("tr", {"data-lag": l.topic + "-" + l.partition},
        el("td", {}, pageLink(root, "topics", l.topic)), numCell("", l.partition), numCell("committed", l.committed < 0 ? "-" : l.committed),
        numCell("end", l.end < 0 ? "-" : l.end), numCell("lag", l.lag < 0 ? "-" : l.lag), el("td", {}, l.member || "-"))))));
}

// storeTopicRow is a topic's object store traffic and estimated cost.
function storeTopicRow(t, root) {
  const tu = t.store_usage, c = t.monthly_cost;
  return el("tr", {"data-store-topic": t.name}, el("td", {}, pageLink(root, "topics", t.name)),
    numCell("put", Math.round(tu.puts)), numCell("get", tu.gets), numCell("list", tu.lists), numCell("delete", tu.deletes),
    bytesCell("written", tu.bytes_written), bytesCell("read", tu.bytes_read),
    numCell("puts-per-gib", t.puts_per_gib === undefined ? "-" : t.puts_per_gib.toFixed(0)),
    numCell("", money(c.requests)), numCell("", money(c.storage)), numCell("cost", money(c.total)));
}
const STORE_TOPIC_HEAD = ["topic", "PUT ", "GET ", "LIST ", "DELETE ", "written ", "read ", "PUTs/GiB ", "requests/mo ", "storage/mo ", "total/mo "];

// costModelRow is a topic's line of the cost model (docs/design.md §7a):
// a diskless topic's commit-object PUTs, measured and predicted, or a
// classic topic's replication bytes and their price between zones.
function costModelRow(t, root) {
  const d = t.diskless_cost, r = t.replication;
  const perSecond = x => x.toFixed(x < 10 ? 2 : 1);
  const perGiB = x => x === undefined ? "-" : x.toFixed(0);
  const rf = t.partitions.length ? t.partitions[0].replicas.length : 0;
  const cells = d
    ? [numCell("puts", perSecond(d.puts_per_second)), numCell("predicted-puts", perSecond(d.predicted_puts_per_second)),
       numCell("puts-per-gib", perGiB(d.puts_per_gib)), numCell("predicted-puts-per-gib", perGiB(d.predicted_puts_per_gib)),
       numCell("put-cost", money(d.monthly_put_cost)), numCell("predicted-put-cost", money(d.predicted_monthly_put_cost)),
       numCell("replication", "none"), numCell("replication-cost", "-")]
    : [...["puts", "predicted-puts", "puts-per-gib", "predicted-puts-per-gib", "put-cost", "predicted-put-cost"].map(c => numCell(c, "-")),
       el("td", {class: "num replication"}, human(r ? r.bytes_per_second : 0) + "/s"), numCell("replication-cost", money(r ? r.monthly_cost : 0))];
  return el("tr", {"data-cost-topic": t.name}, el("td", {}, pageLink(root, "topics", t.name)),
    el("td", {class: "mode"}, d ? "diskless" : "classic, RF " + rf),
    el("td", {class: "num in"}, d ? human(d.bytes_per_second) + "/s" : "-"), ...cells);
}
const COST_MODEL_HEAD = ["topic", "mode", "diskless in/s ", "PUTs/s ", "predicted ", "PUTs/GiB ", "predicted ", "PUTs/mo ", "predicted ",
  "replication/s ", "cross-zone/mo "];

// costModelNote says where the cost model's numbers come from.
function costModelNote(v) {
  const c = v.diskless_commit, p = v.prices;
  const settings = c && c.interval_seconds > 0
    ? " (this agent's --diskless-commit-interval " + (c.interval_seconds * 1000).toFixed(0) + " ms and --diskless-commit-bytes " + human(c.bytes) + ")"
    : "";
  return "Diskless topics: commit-object PUTs measured (each object's PUT split among its topics by their bytes in it) and " +
    "predicted from each agent's commit interval T and bytes C" + settings + ": an agent taking r bytes/s makes max(1/T, r/C) PUTs/s, " +
    "1 GiB / min(C, r·T) per GiB; priced at " + money(p.put_per_1000) + " per 1,000 PUTs. Classic topics: the bytes their followers copy, " +
    "priced at " + money(p.cross_zone_per_gb) + " per GB (--cost-cross-zone-per-gb), which applies when racks are zones. " +
    "Rates and costs are over each agent's last minute, the prediction slot by slot (5 s): it assumes batches arrive all through a slot, " +
    "so a producer that sends in shorter bursts makes fewer PUTs than predicted.";
}

// showErrors fills the red box with the view's errors.
function showErrors(errors) {
  const errs = document.getElementById("errors");
  errs.hidden = !errors.length;
  errs.replaceChildren(...errors.map(e => el("div", {}, e)));
}
