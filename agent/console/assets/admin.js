// Strata console, admin: forms for the admin actions of
// ../v1/console/actions/<name> (and ../v1/drain), each sent after a
// confirmation that restates it. Who acts is what ../v1/console/session
// says: a Kafka user signed in here (a cookie the agent keeps the session
// under), an HTTP token kept in this tab's sessionStorage, or an operator's
// client certificate. Changes carry the CSRF token the session answer
// gives; the sections the principal may not use stay hidden, and a refusal
// shows the broker's code and message. The topic and group in the forms
// are kept in the URL's query. Every name from the cluster is inserted as
// text, never as HTML.
"use strict";

const TOKEN_KEY = "strata-http-token";
let session = null; // the last GET ../v1/console/session answer

const $ = id => document.getElementById(id);

function table(id, head, rows) {
  $(id).replaceChildren(el("thead", {}, el("tr", {}, ...head.map(h => el("th", {}, h)))), el("tbody", {}, ...rows));
}

// api sends one request to the agent and returns its JSON; a refusal
// throws an Error carrying status, code and the broker's message.
async function api(method, path, body) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers["Authorization"] = "Bearer " + token;
  if (method !== "GET" && session && session.csrf) headers["X-Strata-CSRF"] = session.csrf;
  const resp = await fetch("../" + path, {method, headers, cache: "no-store", credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body)});
  let data = {};
  try { data = await resp.json(); } catch (_) { /* 204, or not JSON */ }
  if (!resp.ok) {
    const e = new Error(data.error || ("the agent answered " + resp.status));
    Object.assign(e, {status: resp.status, code: data.code || "", brokerMessage: data.message || ""});
    throw e;
  }
  return data;
}

function showResult(ok, text, err) {
  const box = $("result");
  box.hidden = false;
  box.className = "result " + (ok ? "ok" : "refused");
  box.dataset.status = err ? String(err.status || "") : "200";
  box.dataset.code = err ? err.code : "";
  if (ok) {
    box.replaceChildren(text);
  } else {
    box.replaceChildren(err.status ? "Refused (" + err.status + ")" : "Failed", err.code ? ": " : "",
      err.code ? el("span", {class: "code"}, err.code) : "", "\n", err.message,
      err.brokerMessage ? "\nbroker: " + err.brokerMessage : "");
  }
  box.scrollIntoView({block: "nearest"});
}

// confirm shows the dialog with a sentence (and an optional element) and
// resolves true when the operator confirms.
function confirmAction(sentence, detail) {
  const d = $("confirm");
  $("confirm-text").textContent = sentence;
  $("confirm-detail").replaceChildren(...(detail ? [detail] : []));
  d.returnValue = "";
  d.showModal();
  return new Promise(resolve => d.addEventListener("close", () => resolve(d.returnValue === "yes"), {once: true}));
}

// act confirms, then runs one change and reports it.
async function act(sentence, detail, run, done) {
  if (!await confirmAction(sentence, detail)) return;
  try {
    const out = await run();
    showResult(true, done(out));
    await loadLists();
  } catch (e) {
    showResult(false, "", e);
  }
}

function lines(text) {
  return text.split("\n").map(s => s.trim()).filter(s => s !== "");
}
function keyValues(text) {
  const out = {};
  for (const l of lines(text)) {
    const i = l.indexOf("=");
    if (i <= 0) throw new Error("not name=value: " + l);
    out[l.slice(0, i).trim()] = l.slice(i + 1).trim();
  }
  return out;
}

// query keeps a form field in the URL (?topic=, ?group=).
function setQuery(name, value) {
  const u = new URL(location.href);
  if (value) u.searchParams.set(name, value); else u.searchParams.delete(name);
  history.replaceState(null, "", u);
}

async function loadSession() {
  try {
    session = await api("GET", "v1/console/session");
  } catch (e) {
    $("who").textContent = "the agent did not answer: " + e.message;
    return;
  }
  const signedIn = session.via !== "";
  $("who").textContent = signedIn ? "acting as " + session.principal : "not signed in";
  $("sign-out").hidden = !(session.via === "session" || session.via === "token");
  $("login").hidden = signedIn;
  $("login-why").textContent = session.refusal || "";
  const mechs = session.login || [];
  $("login-form").hidden = signedIn || mechs.length === 0;
  $("login-mechanism").replaceChildren(...mechs.map(m => el("option", {}, m)));
  if (mechs.includes("SCRAM-SHA-512")) $("login-mechanism").value = "SCRAM-SHA-512";
  $("token-form").hidden = signedIn || !session.tokens;
  for (const s of document.querySelectorAll("[data-can]")) {
    s.hidden = !signedIn || !s.dataset.can.split(" ").some(k => session.can[k]);
  }
  document.body.dataset.via = session.via;
  if (signedIn) await loadLists();
  document.body.dataset.loaded = "true";
}

// loadLists fills the tables and the topic and group choices, each as
// the principal may describe them.
async function loadLists() {
  const can = session.can;
  const jobs = [];
  if (can.createTopic || can.alterConfigs || can.deleteRecords) jobs.push(loadTopics());
  if (can.resetOffsets) jobs.push(api("GET", "v1/console/admin/groups").then(g =>
    $("group-list").replaceChildren(...g.groups.map(x => el("option", {value: x.name}, x.state))), () => {}));
  if (can.acls) jobs.push(loadACLs());
  if (can.scram) jobs.push(loadUsers());
  await Promise.all(jobs);
}

async function loadTopics() {
  let t;
  try {
    t = await api("GET", "v1/console/admin/topics");
  } catch (e) {
    table("topic-table", ["topics"], [el("tr", {}, el("td", {class: "bad"}, e.code || e.message))]);
    return;
  }
  const topics = t.topics.filter(x => !x.internal);
  table("topic-table", ["topic", "partitions", "replication factor"], topics.map(x =>
    el("tr", {"data-topic": x.name}, el("td", {}, x.name), el("td", {class: "num"}, x.partitions), el("td", {class: "num"}, x.replication_factor))));
  const want = new URL(location.href).searchParams.get("topic");
  for (const sel of document.querySelectorAll(".topic-select")) {
    const keep = sel.value || want;
    sel.replaceChildren(...topics.map(x => el("option", {}, x.name)));
    if (keep && topics.some(x => x.name === keep)) sel.value = keep;
  }
}

async function loadACLs() {
  let a;
  try {
    a = await api("GET", "v1/console/admin/acls");
  } catch (e) {
    table("acl-table", ["ACLs"], [el("tr", {}, el("td", {class: "bad"}, e.code || e.message))]);
    return;
  }
  table("acl-table", ["principal", "host", "permission", "operation", "resource", "name", "pattern", ""], a.acls.map(x => {
    const del = el("button", {type: "button", class: "secondary"}, "delete…");
    del.addEventListener("click", () => act(
      "Delete the ACL " + x.permission.toUpperCase() + " " + x.operation + " to " + x.principal + " from " + x.host +
        " on " + x.pattern_type + " " + x.resource_type + " " + x.resource_name + "?", null,
      () => api("POST", "v1/console/actions/delete-acls", x), out => "deleted " + out.deleted + " ACL: " + out.acl));
    return el("tr", {}, el("td", {}, x.principal), el("td", {}, x.host), el("td", {}, x.permission), el("td", {}, x.operation),
      el("td", {}, x.resource_type), el("td", {}, x.resource_name), el("td", {}, x.pattern_type), el("td", {}, del));
  }));
}

async function loadUsers() {
  let u;
  try {
    u = await api("GET", "v1/console/admin/scram-users");
  } catch (e) {
    table("user-table", ["users"], [el("tr", {}, el("td", {class: "bad"}, e.code || e.message))]);
    return;
  }
  const rows = [];
  for (const x of u.users) {
    x.mechanisms.forEach((m, i) => {
      const del = el("button", {type: "button", class: "secondary"}, "delete…");
      del.addEventListener("click", () => act("Delete the " + m + " credential of user " + x.user + "?", null,
        () => api("POST", "v1/console/actions/delete-scram-user", {user: x.user, mechanism: m}),
        () => "deleted the " + m + " credential of " + x.user));
      rows.push(el("tr", {}, el("td", {}, x.user), el("td", {}, m), el("td", {class: "num"}, x.iterations[i]), el("td", {}, del)));
    });
  }
  table("user-table", ["user", "mechanism", "iterations", ""], rows);
}

function onSubmit(id, fn) {
  $(id).addEventListener("submit", ev => {
    ev.preventDefault();
    try {
      fn();
    } catch (e) {
      showResult(false, "", e);
    }
  });
}

onSubmit("login-form", async () => {
  try {
    await api("POST", "v1/console/session", {username: $("login-user").value, password: $("login-password").value,
      mechanism: $("login-mechanism").value});
    $("login-password").value = "";
    $("result").hidden = true;
    await loadSession();
  } catch (e) {
    showResult(false, "", e);
  }
});

onSubmit("token-form", async () => {
  sessionStorage.setItem(TOKEN_KEY, $("token-value").value.trim());
  $("token-value").value = "";
  await loadSession();
});

$("sign-out").addEventListener("click", async () => {
  sessionStorage.removeItem(TOKEN_KEY);
  try {
    await api("DELETE", "v1/console/session");
  } catch (_) { /* signed in by token only */ }
  location.reload();
});

onSubmit("create-topic", () => {
  const body = {topic: $("ct-topic").value.trim(), partitions: Number($("ct-partitions").value),
    replication_factor: Number($("ct-rf").value), configs: keyValues($("ct-configs").value)};
  const configs = Object.entries(body.configs).map(([k, v]) => k + "=" + v).join(", ");
  act("Create topic " + body.topic + " with " + body.partitions + " partitions, replication factor " + body.replication_factor +
      (configs ? ", configs " + configs : "") + "?", null,
    () => api("POST", "v1/console/actions/create-topic", body),
    out => "created topic " + out.topic + " (" + out.partitions + " partitions, replication factor " + out.replication_factor + ")");
});

onSubmit("configs-load", async () => {
  const topic = $("cf-topic").value;
  setQuery("topic", topic);
  try {
    const c = await api("GET", "v1/console/admin/topic-configs?topic=" + encodeURIComponent(topic));
    table("config-table", ["config", "value", "source"], c.configs.map(x => el("tr", {"data-config": x.name},
      el("td", {}, x.name), el("td", {}, x.sensitive ? "(sensitive)" : (x.value === null ? "-" : x.value)), el("td", {}, x.source))));
    $("alter-configs").hidden = false;
  } catch (e) {
    showResult(false, "", e);
  }
});

onSubmit("alter-configs", () => {
  const body = {topic: $("cf-topic").value, set: keyValues($("cf-set").value), delete: lines($("cf-delete").value)};
  const parts = Object.entries(body.set).map(([k, v]) => "set " + k + "=" + v).concat(body.delete.map(k => "reset " + k + " to its default"));
  act("On topic " + body.topic + ": " + parts.join(", ") + "?", null,
    () => api("POST", "v1/console/actions/alter-topic-configs", body),
    () => "altered the configs of " + body.topic);
});

onSubmit("delete-records", () => {
  const body = {topic: $("dr-topic").value, partition: Number($("dr-partition").value), offset: Number($("dr-offset").value)};
  setQuery("topic", body.topic);
  act("Delete the records of " + body.topic + (body.partition < 0 ? ", every partition," : " partition " + body.partition) +
      " before " + (body.offset < 0 ? "the high watermark" : "offset " + body.offset) + "? They cannot be read again.", null,
    () => api("POST", "v1/console/actions/delete-records", body),
    out => "log start now " + out.partitions.map(p => "partition " + p.partition + ": " + p.low_watermark).join(", "));
});

onSubmit("reset-offsets", async () => {
  const body = {group: $("ro-group").value.trim(), to: $("ro-to").value, value: $("ro-value").value.trim(),
    all_topics: $("ro-all").checked, topics: $("ro-topics").value.split(/\s+/).filter(s => s !== "")};
  setQuery("group", body.group);
  let plan;
  try {
    plan = await api("POST", "v1/console/actions/reset-offsets", body); // a dry run: the plan
  } catch (e) {
    showResult(false, "", e);
    return;
  }
  const t = el("table", {});
  t.append(el("thead", {}, el("tr", {}, ...["topic", "partition", "current", "new", "log start", "log end"].map(h => el("th", {}, h)))),
    el("tbody", {}, ...plan.rows.map(r => el("tr", {}, el("td", {}, r.topic), el("td", {class: "num"}, r.partition),
      el("td", {class: "num"}, r.current < 0 ? "-" : r.current), el("td", {class: "num"}, r.error ? r.error : r.next),
      el("td", {class: "num"}, r.log_start), el("td", {class: "num"}, r.log_end)))));
  act("Commit these offsets for group " + body.group + "?", el("div", {class: "scroll"}, t),
    () => api("POST", "v1/console/actions/reset-offsets", Object.assign({}, body, {execute: true})),
    out => "committed " + out.rows.length + " offsets for group " + out.group);
});

onSubmit("drain-form", () => {
  const agent = $("dn-agent").value, force = $("dn-force").checked, timeout = $("dn-timeout").value.trim();
  const body = {force};
  if (timeout) body.timeout = timeout;
  act("Drain agent " + agent + (force ? ", forced," : "") + " and stop it" + (timeout ? " (time limit " + timeout + ")" : "") + "?", null,
    () => api("POST", "v1/drain?agent=" + encodeURIComponent(agent), body),
    out => "agent " + out.agent_id + " is draining" + (out.error ? ": " + out.error : ""));
});

onSubmit("create-acl", () => {
  const body = {permission: $("acl-permission").value, principal: $("acl-principal").value.trim(), host: $("acl-host").value.trim() || "*",
    operation: $("acl-operation").value, resource_type: $("acl-type").value, resource_name: $("acl-name").value.trim(),
    pattern_type: $("acl-pattern").value};
  act(body.permission.toUpperCase() + " " + body.principal + " to " + body.operation + " from " + body.host + " on " +
      (body.resource_type === "cluster" ? "the cluster" : body.pattern_type + " " + body.resource_type + " " + body.resource_name) + "?", null,
    () => api("POST", "v1/console/actions/create-acls", body), out => "created ACL: " + out.acl);
});

onSubmit("upsert-user", () => {
  const body = {user: $("us-user").value.trim(), mechanism: $("us-mechanism").value, password: $("us-password").value};
  act("Set the " + body.mechanism + " password of user " + body.user + "?", null,
    () => api("POST", "v1/console/actions/upsert-scram-user", body),
    () => { $("us-password").value = ""; return "saved the " + body.mechanism + " credential of " + body.user; });
});

const q = new URL(location.href).searchParams;
if (q.get("group")) $("ro-group").value = q.get("group");
loadSession();
