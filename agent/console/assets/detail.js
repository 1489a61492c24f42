// Strata console, the page of one topic, group or agent. Its path says
// which (/console/topics/<name>, /console/groups/<id>, /console/agents/<id>,
// the name escaped as encodeURIComponent writes it), so its URL can be
// copied and opened anywhere. It polls ../../v1/console/<kind>/<name>,
// which reads the gathering the overview reads, and redraws. Every name
// from the cluster is inserted as text, never as HTML.
"use strict";

const REFRESH_MS = 3000;
const ROOT = "../"; // the console's directory, from this page
const KINDS = {topics: "topic", groups: "group", agents: "agent"};
const rates = rateTracker();

// target is what the path names, {kind, name}, or {error}.
function target() {
  const parts = location.pathname.split("/");
  const kind = parts[parts.length - 2], raw = parts[parts.length - 1];
  if (!KINDS[kind] || !raw) {
    return {error: "this page shows one topic, group or agent: /console/topics/<name>, /console/groups/<id> or /console/agents/<id>"};
  }
  try {
    return {kind, name: decodeURIComponent(raw)};
  } catch (_) {
    return {error: "the path's last part, " + raw + ", is not escaped as a URL path"};
  }
}
const shown = target();

// fill replaces the children of element id; null children are left out.
function fill(id, ...children) {
  document.getElementById(id).replaceChildren(...children.filter(c => c !== null && c !== undefined));
}
function setTitle(...parts) { fill("title", ...parts); }
function links(...items) {
  fill("links", ...items.map(([href, text, cls]) => el("a", {href, class: cls || ""}, text)));
}
function rate(bytesPerSecond) { return bytesPerSecond === undefined ? "-" : human(bytesPerSecond) + "/s"; }

function renderTopic(d) {
  const t = d.topic, r = rates([t])[t.name] || {};
  const enc = encodeURIComponent(t.name);
  setTitle("Topic ", el("span", {class: "name"}, t.name), t.internal ? el("span", {class: "muted h"}, "internal") : null);
  links([ROOT + "browse.html?topic=" + enc, "browse messages", "browse"], [ROOT + "charts.html?topic=" + enc, "charts", "charts"],
    [ROOT + "admin.html?topic=" + enc, "configs and records (admin)", "admin"]);
  const under = t.partitions.filter(p => p.isr.length < p.replicas.length).length;
  fill("cards", 
    card("partitions", t.partitions.length, "partition-count"), card("under-replicated", under),
    card("records", count(t.records)), card("local bytes", human(t.local_bytes)), card("bucket bytes", human(t.bucket_bytes)),
    card("in/s", rate(r.in)), card("out/s", rate(r.out)), card("est. cost / month", money(t.monthly_cost.total)));
  const groups = d.groups.length ? wrap(table("topic-groups", ["group", "state", "partitions ", "lag "],
    d.groups.map(g => el("tr", {"data-topic-group": g.name}, el("td", {}, pageLink(ROOT, "groups", g.name)), el("td", {}, g.state),
      numCell("", g.partitions), numCell("lag", g.lag)))))
    : el("p", {class: "muted"}, "no group has committed or been assigned in this topic");
  fill("body", topicBlock(t, r.in === undefined ? undefined : r, ROOT),
    el("h3", {}, "Consumer groups"), groups,
    el("h3", {}, "Object store"), wrap(table("topic-store", STORE_TOPIC_HEAD, [storeTopicRow(t, ROOT)])),
    el("h3", {}, t.diskless ? "Cost model: commit-object PUTs" : "Cost model: replication"),
    wrap(table("topic-cost-model", COST_MODEL_HEAD, [costModelRow(t, ROOT)])), el("p", {class: "muted"}, costModelNote(d)));
}

function renderGroup(d) {
  const g = d.group;
  const enc = encodeURIComponent(g.name);
  setTitle("Group ", el("span", {class: "name"}, g.name));
  links([ROOT + "charts.html?group=" + enc, "lag charts", "charts"], [ROOT + "admin.html?group=" + enc, "reset offsets (admin)", "admin"]);
  fill("cards", 
    card("state", g.state, "group-state"), card("members", g.members.length, "member-count"),
    card("partitions", g.lag.length), card("total lag", count(g.total_lag), "total-lag"),
    card("coordinator", pageLink(ROOT, "agents", g.coordinator)));
  fill("body", groupBlock(g, ROOT));
}

function renderAgent(d) {
  const a = d.agent;
  setTitle("Agent ", el("span", {class: "name"}, a.id), a.reporting ? null : el("span", {class: "h bad"}, "no report"));
  links([ROOT + "charts.html?agent=" + a.id, "charts", "charts"]);
  fill("cards", 
    card("state", a.state, "agent-state"), card("rack", a.rack || "-"),
    card("replicas", count(a.replicas), "replica-count"), card("leaders", count(a.leaders), "leader-count"),
    card("in/s", human(a.load.in_bytes_per_second) + "/s"), card("out/s", human(a.load.out_bytes_per_second) + "/s"),
    card("utilization", a.load.utilization === undefined ? "-" : (100 * a.load.utilization).toFixed(0) + "%"));
  const more = d.replicas.length < a.replicas ? el("p", {class: "muted"}, "the first " + count(d.replicas.length) + " of " + count(a.replicas)) : null;
  const replicas = d.replicas.length ? wrap(table("agent-replicas", ["topic", "partition ", "leader ", "replicas", "role", "in ISR"],
    d.replicas.map(p => el("tr", {"data-replica": p.topic + "-" + p.partition},
      el("td", {}, pageLink(ROOT, "topics", p.topic)), numCell("", p.partition),
      el("td", {class: "num"}, p.leader < 0 ? "none" : pageLink(ROOT, "agents", p.leader)),
      el("td", {}, ids(p.replicas)), el("td", {class: "role"}, p.leader === a.id ? "leader" : "follower"),
      el("td", {class: p.in_isr ? "" : "bad"}, p.in_isr ? "yes" : "no")))))
    : el("p", {class: "muted"}, "none");
  const coordinates = d.coordinates.length
    ? el("p", {class: "coordinates"}, ...d.coordinates.flatMap((g, i) => [i ? ", " : null, pageLink(ROOT, "groups", g)]),
      d.coordinates_total > d.coordinates.length ? " and " + count(d.coordinates_total - d.coordinates.length) + " more" : null)
    : el("p", {class: "muted"}, "none");
  fill("body", 
    wrap(table("agent-row", AGENT_HEAD, agentRows([a], ROOT))),
    el("h3", {}, "Replicas"), more, replicas,
    el("h3", {}, "Groups it coordinates"), coordinates);
}

const RENDER = {topics: renderTopic, groups: renderGroup, agents: renderAgent};

async function refresh() {
  if (shown.error) {
    showProblem(shown.error);
    return;
  }
  try {
    const resp = await fetch(ROOT + "../v1/console/" + shown.kind + "/" + encodeURIComponent(shown.name), {cache: "no-store"});
    let d = {};
    try { d = await resp.json(); } catch (_) { /* not JSON */ }
    if (!resp.ok) {
      // Not found, or not known now: say so, and keep asking (a topic
      // may be created, an agent come back).
      showProblem(d.error || "the agent answered " + resp.status);
      document.body.dataset.found = "false";
    } else {
      document.getElementById("problem").hidden = true;
      document.getElementById("served-by").textContent = "served by agent " + d.served_by;
      RENDER[shown.kind](d);
      showErrors(d.errors);
      document.body.dataset.found = "true";
    }
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.loaded = "true";
  } catch (e) {
    document.getElementById("updated").textContent = "update failed: " + e.message;
  }
}

function showProblem(msg) {
  const p = document.getElementById("problem");
  p.hidden = false;
  p.textContent = msg;
  fill("cards", );
  fill("body", );
}

document.title = shown.error ? "Strata console" : "Strata: " + KINDS[shown.kind] + " " + shown.name;
if (!shown.error) setTitle(KINDS[shown.kind][0].toUpperCase() + KINDS[shown.kind].slice(1) + " ", el("span", {class: "name"}, shown.name));
refresh();
if (!shown.error) setInterval(refresh, REFRESH_MS);
