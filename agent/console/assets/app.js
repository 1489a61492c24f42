// Strata console, the overview: polls ../v1/console every few seconds and
// redraws. The agent gathers the numbers from every agent and answers a
// page of the topics and groups (PAGE_SIZE of each) whose names contain
// the search box's text; this page lays them out and derives rates from
// successive samples of the byte counters. What it shows (the search,
// each list's page, internal topics) is kept in the URL's query, so that
// a view can be shared. Every name from the cluster is inserted as text,
// never as HTML.
"use strict";

const REFRESH_MS = 3000;
const PAGE_SIZE = 100;
const SEARCH_DELAY_MS = 250; // typing waits this long before asking
const ROOT = ""; // the console's directory, from this page
const rates = rateTracker();

// state: ?q=ord&topics_page=2&groups_page=1&internal=true
let state = readState();

function readState() {
  const q = new URLSearchParams(location.search);
  const page = name => Math.max(parseInt(q.get(name), 10) || 1, 1);
  return {q: q.get("q") || "", topicsPage: page("topics_page"), groupsPage: page("groups_page"), internal: q.get("internal") === "true"};
}

// writeState puts state in the URL: a new history entry when push (a
// page turned), else the current one changed (each key typed).
function writeState(push) {
  const q = new URLSearchParams();
  if (state.q) q.set("q", state.q);
  if (state.topicsPage > 1) q.set("topics_page", state.topicsPage);
  if (state.groupsPage > 1) q.set("groups_page", state.groupsPage);
  if (state.internal) q.set("internal", "true");
  const query = q.toString();
  const url = location.pathname + (query ? "?" + query : "") + location.hash;
  if (push) history.pushState(null, "", url); else history.replaceState(null, "", url);
}

function showState() {
  document.getElementById("q").value = state.q;
  document.getElementById("show-internal").checked = state.internal;
}

function apiQuery() {
  const q = new URLSearchParams({
    topics_limit: PAGE_SIZE, topics_offset: (state.topicsPage - 1) * PAGE_SIZE,
    groups_limit: PAGE_SIZE, groups_offset: (state.groupsPage - 1) * PAGE_SIZE,
    internal: state.internal ? "true" : "false"});
  if (state.q) q.set("q", state.q);
  return q;
}

function renderCluster(v) {
  const c = v.counts;
  document.getElementById("cluster-cards").replaceChildren(
    card("agents", c.agents, "agent-count"), card("topics", count(c.topics), "topic-count"),
    card("partitions", count(c.partitions)), card("groups", count(c.groups), "group-count"),
    card("leaderless", c.leaderless), card("under-replicated", c.under_replicated),
    card("moves in flight", v.moves.length));
  table("agents", AGENT_HEAD, agentRows(v.agents, ROOT));
  const moves = document.getElementById("moves");
  if (!v.moves.length) {
    moves.replaceChildren(el("p", {class: "muted"}, "none"));
  } else {
    moves.replaceChildren(wrap(table("moves-table", ["topic", "partition ", "replicas", "target"],
      v.moves.map(m => el("tr", {}, el("td", {}, pageLink(ROOT, "topics", m.topic)), numCell("", m.partition), el("td", {}, ids(m.replicas)), el("td", {}, ids(m.target)))))));
  }
}

// renderPaging says which part of a list is shown ("showing 101–200 of
// 4,213 topics", or "12 topics" when one page holds them all) and enables
// its buttons. noun is [singular, plural].
function renderPaging(which, listed, shown, noun, q) {
  const box = document.getElementById(which + "-paging");
  const {offset, limit, matched} = listed;
  const of = n => count(n) + " " + noun[n === 1 ? 0 : 1] + (q ? " matching “" + q + "”" : "");
  let text;
  if (!matched) text = "no " + noun[1] + (q ? " matching “" + q + "”" : "");
  else if (!shown) text = "none on this page, of " + of(matched);
  else if (!offset && shown === matched) text = of(matched);
  else text = "showing " + count(offset + 1) + "–" + count(offset + shown) + " of " + of(matched);
  box.querySelector(".shown").textContent = text;
  box.dataset.matched = matched;
  box.dataset.offset = offset;
  document.getElementById(which + "-prev").disabled = offset <= 0;
  document.getElementById(which + "-next").disabled = offset + limit >= matched;
}

function renderTopics(v, r) {
  renderPaging("topics", v.listed.topics, v.topics.length, ["topic", "topics"], v.listed.q);
  const blocks = v.topics.map(t => topicBlock(t, r[t.name], ROOT));
  document.getElementById("topic-list").replaceChildren(...(blocks.length ? blocks : [el("p", {class: "muted"}, "no topics")]));
}

function renderGroups(v) {
  renderPaging("groups", v.listed.groups, v.groups.length, ["group", "groups"], v.listed.q);
  const blocks = v.groups.map(g => groupBlock(g, ROOT));
  document.getElementById("group-list").replaceChildren(...(blocks.length ? blocks : [el("p", {class: "muted"}, "no consumer groups")]));
}

function renderStore(v) {
  const s = v.store, u = s.usage;
  document.getElementById("store-cards").replaceChildren(
    card("bucket bytes", human(s.bucket_bytes), "store-bucket-bytes"),
    card("PUTs / GiB written", s.puts_per_gib === undefined ? "-" : s.puts_per_gib.toFixed(0), "store-puts-per-gib"),
    card("errors", s.errors, "store-errors"),
    card("est. cost / month", money(s.monthly_cost.total), "store-monthly-cost"),
    card("diskless PUTs / s", s.diskless.puts_per_second.toFixed(2), "store-diskless-puts"),
    card("replication / s", human(s.replication.bytes_per_second) + "/s", "store-replication"));
  const ops = Object.keys(s.requests).sort();
  const outcomes = [...new Set(ops.flatMap(op => Object.keys(s.requests[op])))].sort();
  table("store-requests", ["op", ...outcomes.map(o => o + " ")],
    ops.map(op => el("tr", {"data-op": op}, el("td", {}, op), ...outcomes.map(o => numCell(o, s.requests[op][o] || 0)))));
  table("store-topics", STORE_TOPIC_HEAD,
    v.topics.filter(t => t.store_usage.puts + t.store_usage.gets + t.store_usage.lists + t.store_usage.deletes > 0 || t.bucket_bytes > 0)
      .map(t => storeTopicRow(t, ROOT)));
  const p = v.prices;
  document.getElementById("prices").textContent = "Estimate at the request rate since each agent started and today's bucket bytes, for 30 days: PUT/LIST " +
    money(p.put_per_1000) + " per 1,000, GET " + money(p.get_per_1000) + " per 1,000, storage " + money(p.storage_gb_month) +
    " per GB-month (agent flags --cost-*). Totals so far: " + Math.round(u.puts) + " PUT, " + u.gets + " GET, " + u.lists + " LIST, " + u.deletes + " DELETE.";
  table("cost-model", COST_MODEL_HEAD, v.topics.map(t => costModelRow(t, ROOT)));
  document.getElementById("cost-model-note").textContent = costModelNote(v);
}

// asked counts the requests made: an answer to any but the last is
// dropped, so a slow answer to an older search never replaces a newer one.
let asked = 0;
async function refresh() {
  const mine = ++asked;
  try {
    const resp = await fetch("../v1/console?" + apiQuery(), {cache: "no-store"});
    if (!resp.ok) {
      let msg = "the agent answered " + resp.status;
      try { msg += ": " + (await resp.json()).error; } catch (_) { /* not JSON */ }
      throw new Error(msg);
    }
    const v = await resp.json();
    if (mine !== asked) return;
    document.getElementById("served-by").textContent = "served by agent " + v.served_by;
    renderCluster(v);
    renderTopics(v, rates(v.topics));
    renderGroups(v);
    renderStore(v);
    showErrors(v.errors);
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.query = v.listed.q;
    document.body.dataset.loaded = "true";
  } catch (e) {
    if (mine === asked) document.getElementById("updated").textContent = "update failed: " + e.message;
  }
}

// turn moves a list's page by step (-1, +1).
function turn(which, step) {
  const key = which === "topics" ? "topicsPage" : "groupsPage";
  state[key] = Math.max(state[key] + step, 1);
  writeState(true);
  refresh();
}

let typing = null;
document.getElementById("q").addEventListener("input", e => {
  clearTimeout(typing);
  typing = setTimeout(() => {
    if (e.target.value === state.q) return;
    state.q = e.target.value;
    state.topicsPage = state.groupsPage = 1;
    writeState(false);
    refresh();
  }, SEARCH_DELAY_MS);
});
document.getElementById("show-internal").addEventListener("change", e => {
  state.internal = e.target.checked;
  state.topicsPage = 1;
  writeState(false);
  refresh();
});
for (const which of ["topics", "groups"]) {
  document.getElementById(which + "-prev").addEventListener("click", () => turn(which, -1));
  document.getElementById(which + "-next").addEventListener("click", () => turn(which, +1));
}
window.addEventListener("popstate", () => { state = readState(); showState(); refresh(); });
showState();
refresh();
setInterval(refresh, REFRESH_MS);
