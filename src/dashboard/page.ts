// The operator's dashboard (SPEC §11): one self-contained HTML page, with its
// CSS and script inline, that polls the pool's JSON summary
// (`GET …/v1alpha1/dashboard`) and draws it. The page itself holds no data,
// so serving it needs no credential; every read it makes carries the token
// the operator typed, kept only in this tab (sessionStorage).
//
// It must never load anything from another origin, and never turn data into
// markup: every node id, job name, label and message is attacker-controlled
// and reaches the DOM through textContent or setAttribute only. The route
// serves it under a Content-Security-Policy that allows exactly these two
// inline blocks by hash, so an injected <script> could not run anyway.
//
// The script is plain ES5-ish JavaScript in a String.raw literal: no
// backticks and no "${" inside it, so the literal holds it byte for byte.

export const DASHBOARD_STYLE = `
:root {
  --bg: #f6f7f9; --panel: #ffffff; --ink: #1c2330; --muted: #667085; --line: #e4e7ec;
  --blue: #2f6fed; --green: #1f9d55; --red: #d64545; --amber: #c27c0e; --gray: #98a2b3;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
}
* { box-sizing: border-box; }
html, body { margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header { display: flex; align-items: center; gap: 16px; padding: 12px 24px; background: #111827; color: #f9fafb; }
header .brand { font-weight: 700; font-size: 17px; letter-spacing: .2px; }
header .pool { font-family: var(--mono); font-weight: 500; background: #1f2937; padding: 2px 8px; border-radius: 6px; margin-left: 6px; }
header .status { margin-left: auto; color: #cbd5e1; font-size: 13px; }
header .status.bad { color: #fca5a5; }
header button { background: transparent; color: #cbd5e1; border: 1px solid #475569; }
main { padding: 18px 24px 40px; max-width: 1500px; margin: 0 auto; }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; margin-bottom: 16px; }
section > h2 { margin: 0 0 10px; font-size: 15px; font-weight: 650; display: flex; gap: 10px; align-items: baseline; }
section > h2 .sub { color: var(--muted); font-weight: 400; font-size: 13px; }
.grid2 { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 16px; }
.grid2 > section { margin-bottom: 0; }
.grid2 { margin-bottom: 16px; }
@media (max-width: 1000px) { .grid2 { grid-template-columns: 1fr; } }
.tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 12px; background: transparent; border: 0; padding: 0; }
.tile { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 10px 14px; }
.tile .n { font-size: 24px; font-weight: 700; }
.tile .l { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .4px; }
.tile .d { color: var(--muted); font-size: 12px; }
.tile.warn { border-color: #f5c26b; background: #fffaf0; }
section.attention { border-color: #f5c26b; }
.tile.warn .n { color: var(--amber); }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; color: var(--muted); font-weight: 600; text-transform: uppercase; letter-spacing: .3px; }
tr:last-child td { border-bottom: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.mono { font-family: var(--mono); font-size: 12.5px; word-break: break-all; }
.muted { color: var(--muted); }
.nowrap { white-space: nowrap; word-break: normal; }
.small { font-size: 12px; }
.more { color: var(--muted); font-size: 12.5px; padding: 8px 8px 0; }
.empty { color: var(--muted); padding: 6px 8px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 600; background: #eef2f6; color: #344054; white-space: nowrap; }
.badge.RUNNING, .badge.LEASED { background: #e8f0ff; color: var(--blue); }
.badge.SUCCEEDED, .badge.COMPLETED, .badge.online { background: #e7f6ee; color: var(--green); }
.badge.FAILED, .badge.offline { background: #fdecec; color: var(--red); }
.badge.PENDING, .badge.draining, .badge.terminating { background: #fff4e0; color: var(--amber); }
.badge.CANCELLED { background: #f0f1f3; color: var(--gray); }
.chip { display: inline-block; margin: 1px 4px 1px 0; padding: 0 6px; border-radius: 5px; background: #f2f4f7; color: #344054; font-size: 12px; max-width: 100%; overflow-wrap: anywhere; }
.chip.on { background: #e8f0ff; color: var(--blue); }
.chip.warn { background: #fff4e0; color: var(--amber); }
.dot { display: inline-block; width: 8px; height: 8px; border-radius: 50%; margin-right: 6px; background: var(--gray); vertical-align: middle; }
.dot.online { background: var(--green); }
.dot.offline { background: var(--red); }
.bar { position: relative; height: 8px; border-radius: 4px; background: #eceff3; overflow: hidden; display: flex; min-width: 120px; }
.bar > span { display: block; height: 100%; }
.bar .COMPLETED { background: var(--green); }
.bar .FAILED { background: var(--red); }
.bar .LEASED { background: var(--blue); }
.bar .CANCELLED { background: var(--gray); }
.bar .left { background: var(--blue); }
.bar .left.low { background: var(--amber); }
.progress-label { font-size: 12px; color: var(--muted); margin-top: 3px; font-variant-numeric: tabular-nums; }
tr.flagged td { background: #fffaf0; }
.flag { color: var(--amber); font-weight: 600; font-size: 12.5px; margin-top: 4px; }
.summary { font-family: var(--mono); font-size: 12.5px; }
button { font: inherit; font-size: 12.5px; padding: 3px 10px; border-radius: 6px; border: 1px solid var(--line); background: #fff; color: var(--ink); cursor: pointer; }
button:hover { border-color: var(--gray); }
.events { max-height: 420px; overflow: auto; }
.events td { font-size: 13px; }
#auth form { display: flex; gap: 8px; }
#auth input { flex: 1; max-width: 420px; font: inherit; padding: 5px 8px; border: 1px solid var(--line); border-radius: 6px; }
.error { color: var(--red); }
.ok { color: var(--green); font-weight: 600; }
footer { color: var(--muted); font-size: 12px; text-align: center; padding: 0 0 24px; }
`;

export const DASHBOARD_SCRIPT = String.raw`
(function () {
  "use strict";
  var match = /^\/pools\/([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)\/?$/.exec(location.pathname);
  var pool = match ? match[1] : "local";
  var base = match ? "/pools/" + pool + "/v1alpha1" : "/v1alpha1";
  var TOKEN_KEY = "flashedge.dashboard.token";
  var POLL_MS = 2000;
  var LIMIT = 25;
  var EXPLAIN_ROWS = 50;
  var memoryToken = "";
  var timer = null;
  var last = null;        // the last summary drawn
  var clockOffset = 0;    // server clock minus this tab's clock, in ms
  var receivedAt = 0;
  var explained = null;   // {job_id, task_id} shown in the placement panel

  function $(id) { return document.getElementById(id); }

  // Builds an element. Strings become text nodes, never markup.
  function h(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      for (var key in attrs) {
        if (!Object.prototype.hasOwnProperty.call(attrs, key)) continue;
        var value = attrs[key];
        if (value === null || value === undefined || value === false) continue;
        if (key === "class") node.className = value;
        else if (key === "text") node.textContent = String(value);
        else if (key === "onclick") node.addEventListener("click", value);
        else node.setAttribute(key, String(value));
      }
    }
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { for (var i = 0; i < child.length; i++) append(node, child[i]); return; }
    node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
  function replace(id, child) {
    var node = $(id);
    while (node.firstChild) node.removeChild(node.firstChild);
    append(node, child);
  }

  function getToken() {
    try { return window.sessionStorage.getItem(TOKEN_KEY) || ""; } catch (e) { return memoryToken; }
  }
  function setToken(value) {
    memoryToken = value;
    try {
      if (value) window.sessionStorage.setItem(TOKEN_KEY, value);
      else window.sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage disabled: the token lives in memory only */ }
    $("forget-token").hidden = !value;
  }

  function api(path) {
    var headers = { accept: "application/json" };
    var token = getToken();
    if (token) headers.authorization = "Bearer " + token;
    return fetch(base + path, { headers: headers, cache: "no-store", credentials: "omit", redirect: "error" }).then(function (r) {
      if (r.status === 401) { var e = new Error("a valid token is required"); e.unauthorized = true; throw e; }
      if (!r.ok) {
        return r.json().catch(function () { return {}; }).then(function (body) {
          var detail = body && typeof body.detail === "string" ? body.detail : "HTTP " + r.status;
          throw new Error(detail);
        });
      }
      return r.json();
    });
  }

  function setStatus(text, bad) {
    var node = $("status");
    node.textContent = text;
    node.className = bad ? "status bad" : "status";
  }

  function schedule(ms) {
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(poll, ms);
  }

  function poll() {
    timer = null;
    if (document.hidden) { schedule(POLL_MS); return; }
    api("/dashboard?limit=" + LIMIT).then(function (data) {
      $("auth").hidden = true;
      clockOffset = Date.parse(data.generated_at) - Date.now();
      receivedAt = Date.now();
      last = data;
      render(data);
      schedule(POLL_MS);
    }, function (err) {
      if (err && err.unauthorized) {
        $("auth").hidden = false;
        $("auth-error").textContent = getToken() ? "That token was refused." : "";
        setStatus("waiting for a token", true);
        return; // resumes when a token is entered
      }
      setStatus("update failed: " + (err && err.message ? err.message : String(err)) + " — retrying", true);
      schedule(POLL_MS * 2);
    });
  }

  // ---- drawing -------------------------------------------------------------

  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }
  function when(iso) {
    var d = new Date(iso);
    return isNaN(d.getTime()) ? "" : d.toLocaleTimeString([], { hour12: false });
  }
  function age(seconds) {
    if (seconds < 1) return "just now";
    if (seconds < 90) return Math.round(seconds) + "s ago";
    if (seconds < 5400) return Math.round(seconds / 60) + "m ago";
    return Math.round(seconds / 3600) + "h ago";
  }
  function more(n, noun, hint) {
    return n > 0 ? h("div", { class: "more", text: "… and " + n + " more " + noun + (hint ? " (" + hint + ")" : "") }) : null;
  }
  function table(headers, rows) {
    if (rows.length === 0) return null;
    return h("table", null,
      h("thead", null, h("tr", null, headers.map(function (t) { return h("th", { text: t }); }))),
      h("tbody", null, rows));
  }
  function labelChips(labels) {
    var out = [];
    for (var key in labels) {
      if (Object.prototype.hasOwnProperty.call(labels, key)) out.push(h("span", { class: "chip", text: key + "=" + labels[key] }));
    }
    return out;
  }
  function jobLabel(jobId) {
    if (last) for (var i = 0; i < last.jobs.items.length; i++) {
      if (last.jobs.items[i].job_id === jobId) return last.jobs.items[i].name;
    }
    return null;
  }

  function render(d) {
    $("pool-name").textContent = d.pool;
    document.title = "flashedge · " + d.pool;
    renderTiles(d);
    renderStuck(d);
    renderJobs(d);
    renderNodes(d);
    renderLeases();
    renderEvents(d);
    tick();
  }

  function tile(value, label, detail, warn) {
    return h("div", { class: warn ? "tile warn" : "tile" },
      h("div", { class: "n", text: value }), h("div", { class: "l", text: label }), detail ? h("div", { class: "d", text: detail }) : null);
  }

  function renderTiles(d) {
    var c = d.counts;
    replace("overview", [
      tile(c.nodes.online + "/" + c.nodes.total, "nodes online", c.nodes.not_accepting ? c.nodes.not_accepting + " draining or terminating" : null),
      tile(c.jobs.RUNNING, "jobs running", c.jobs.SUCCEEDED + " succeeded · " + c.jobs.FAILED + " failed · " + c.jobs.CANCELLED + " cancelled"),
      tile(c.tasks.PENDING, "tasks pending", c.tasks.total + " tasks in all"),
      tile(c.tasks.LEASED, "tasks running", c.leases_live + " live leases"),
      tile(c.tasks.COMPLETED, "tasks completed", c.tasks.FAILED + " failed · " + c.tasks.CANCELLED + " cancelled"),
      tile(c.stuck_tasks, "tasks no online node can take", c.stuck_tasks ? "see Needs attention" : "every pending task is placeable", c.stuck_tasks > 0)
    ]);
  }

  function explainButton(jobId, taskId) {
    return h("button", { type: "button", text: "Why?", title: "Show every node's answer for " + taskId,
      onclick: function () { explainTask(jobId, taskId); } });
  }

  function renderStuck(d) {
    var s = d.stuck;
    var rows = s.items.map(function (e) {
      return h("tr", null,
        h("td", null, h("div", { text: e.job_name || e.job_id }), h("div", { class: "mono muted small", text: e.job_id })),
        h("td", { class: "mono", text: e.task_id }),
        h("td", { class: "num", text: e.pending }),
        h("td", { class: "summary", text: e.summary || "" }),
        h("td", null, explainButton(e.job_id, e.task_id)));
    });
    var notes = [];
    if (s.classes_unchecked > 0) notes.push(h("div", { class: "more", text: s.classes_unchecked + " more kinds of pending task were not checked" }));
    replace("stuck", rows.length
      ? [table(["job", "earliest task", "pending", "why no online node takes it", ""], rows), more(s.more, "entries"), notes]
      : [h("div", { class: "ok", text: "Every pending task can be taken by an online node." }), notes]);
    $("stuck-section").className = rows.length ? "attention" : "";
  }

  function progressBar(counts, total) {
    var bar = h("div", { class: "bar", title: "completed / failed / running / cancelled of " + total });
    ["COMPLETED", "FAILED", "LEASED", "CANCELLED"].forEach(function (state) {
      if (!counts[state] || !total) return;
      var seg = h("span", { class: state });
      seg.style.width = (100 * counts[state] / total) + "%";
      bar.appendChild(seg);
    });
    return bar;
  }

  function renderJobs(d) {
    var rows = d.jobs.items.map(function (j) {
      var c = j.task_counts;
      var done = c.COMPLETED + c.FAILED + c.CANCELLED;
      var counts = ["PENDING", "LEASED", "COMPLETED", "FAILED", "CANCELLED"].filter(function (s) { return c[s] > 0; })
        .map(function (s) { return h("span", { class: "chip", text: s.toLowerCase() + " " + c[s] }); });
      var nameCell = h("td", null,
        h("div", { text: j.name || "(unnamed)" }),
        h("div", { class: "mono muted small", text: j.job_id + " · " + j.workload_type }),
        labelChips(j.labels),
        j.stuck ? h("div", { class: "flag" },
          "⚠ " + plural(j.stuck.pending, "pending task") + " no online node can take ",
          explainButton(j.job_id, j.stuck.task_id)) : null);
      return h("tr", { class: j.stuck ? "flagged" : null, "data-job": j.job_id },
        nameCell,
        h("td", null, h("span", { class: "badge " + j.state, text: j.state })),
        h("td", null, progressBar(c, j.total_tasks),
          h("div", { class: "progress-label", text: c.COMPLETED + "/" + j.total_tasks + " completed" + (done < j.total_tasks ? "" : " · done") })),
        h("td", null, counts),
        h("td", { class: "small muted", text: when(j.created_at) }));
    });
    replace("jobs", [
      table(["job", "state", "progress", "tasks", "created"], rows) || h("div", { class: "empty", text: "No jobs yet. Submit one with POST " + base + "/jobs." }),
      more(d.jobs.more, "jobs", "GET " + base + "/jobs lists all")
    ]);
  }

  function renderNodes(d) {
    var rows = d.nodes.items.map(function (n) {
      var flags = [
        ["argv", n.argv_capable], ["sandbox", n.sandbox_capable], ["module", n.module_capable], ["unsandboxed argv", n.unsandboxed_argv_capable]
      ].map(function (f) { return h("span", { class: f[1] ? "chip on" : "chip", text: (f[1] ? "" : "no ") + f[0] }); });
      var liveness = n.online ? "online" : "offline";
      var gpus = n.gpu_count
        ? h("span", { title: n.gpus.join(", "), text: n.gpu_count + " × " + (n.gpus[0] || "GPU") + (n.gpus.length > 1 && n.gpus[1] !== n.gpus[0] ? " …" : "") })
        : h("span", { class: "muted", text: "none" });
      var datasets = n.local_datasets.map(function (s) { return h("span", { class: "chip", text: s }); });
      if (n.local_dataset_count > n.local_datasets.length) datasets.push(h("span", { class: "muted small", text: "+" + (n.local_dataset_count - n.local_datasets.length) }));
      return h("tr", { "data-node": n.node_id },
        h("td", null, h("div", { class: "mono", text: n.node_id }),
          n.hostname && n.hostname !== n.node_id ? h("div", { class: "muted small", text: n.hostname }) : null, labelChips(n.labels)),
        h("td", null, h("span", { class: "badge " + liveness }, h("span", { class: "dot " + liveness }), liveness),
          n.status !== "online" ? [" ", h("span", { class: "badge " + n.status, text: n.status })] : null,
          h("div", { class: "muted small", text: "seen " + age(n.last_heartbeat_age_s) })),
        h("td", null, gpus, h("div", { class: "muted small", text: [n.cpu_cores !== null ? n.cpu_cores + " cores" : "", n.architecture].filter(Boolean).join(" · ") })),
        h("td", null, datasets.length ? datasets : h("span", { class: "muted", text: "—" })),
        h("td", null, flags, n.pools.map(function (p) { return h("span", { class: "chip warn", text: "pool " + p }); })),
        h("td", { class: "num", text: n.accepted_tasks }),
        h("td", { class: "num", text: n.live_leases }));
    });
    replace("nodes", [
      table(["node", "state", "hardware", "local datasets", "capabilities", "accepted", "leases"], rows) ||
        h("div", { class: "empty", text: "No nodes registered in this pool yet." }),
      more(d.nodes.more, "nodes", "GET " + base + "/nodes lists all")
    ]);
    $("nodes-sub").textContent = d.counts.nodes.online + " online of " + d.counts.nodes.total;
  }

  function renderLeases() {
    var d = last;
    var rows = d.leases.items.map(function (l) {
      var bar = h("div", { class: "bar" }, h("span", { class: "left" }));
      var name = jobLabel(l.job_id);
      return h("tr", { "data-deadline": l.deadline, "data-window": l.lease_seconds },
        h("td", null, h("div", { class: "mono", text: l.task_id }), h("div", { class: "muted small", text: name ? name + " · " + l.job_id : l.job_id })),
        h("td", { class: "mono", text: l.node_id }),
        h("td", { class: "num", text: l.attempt }),
        h("td", null, h("div", { class: "left-text", text: "" }), bar));
    });
    replace("leases", [
      table(["task", "node", "attempt", "time left"], rows) || h("div", { class: "empty", text: "No live leases." }),
      more(d.leases.more, "live leases")
    ]);
  }

  function renderEvents(d) {
    var rows = d.events.items.map(function (e) {
      return h("tr", null,
        h("td", { class: "small muted mono nowrap", text: when(e.timestamp) }),
        h("td", null, h("span", { class: "badge", text: e.type })),
        h("td", { text: e.message }));
    });
    replace("events", table(["time", "event", "message"], rows) || h("div", { class: "empty", text: "No events yet." }));
  }

  // Lease countdowns and "updated … ago" move every second between polls.
  function tick() {
    if (!last) return;
    var now = Date.now() + clockOffset;
    var rows = $("leases").querySelectorAll("tr[data-deadline]");
    for (var i = 0; i < rows.length; i++) {
      var left = Math.max(0, (Date.parse(rows[i].getAttribute("data-deadline")) - now) / 1000);
      rows[i].querySelector(".left-text").textContent = left > 0 ? left.toFixed(0) + " s" : "expiring";
      var fill = rows[i].querySelector(".left");
      var window_s = Number(rows[i].getAttribute("data-window")) || 60;
      fill.style.width = Math.min(100, left / window_s * 100) + "%";
      fill.className = left < window_s / 4 ? "left low" : "left";
    }
    var since = (Date.now() - receivedAt) / 1000;
    if (timer !== null || since < 5) setStatus("live · updated " + age(since));
  }

  // ---- placement explanations ---------------------------------------------

  function explainTask(jobId, taskId) {
    explained = { job_id: jobId, task_id: taskId };
    $("explain-section").hidden = false;
    $("explain-title").textContent = taskId + " of " + (jobLabel(jobId) || jobId);
    replace("explain", h("div", { class: "muted", text: "asking the coordinator…" }));
    api("/jobs/" + encodeURIComponent(jobId) + "/tasks/" + encodeURIComponent(taskId) + "/placement").then(function (p) {
      if (!explained || explained.job_id !== jobId || explained.task_id !== taskId) return;
      var rows = p.nodes.slice(0, EXPLAIN_ROWS).map(function (n) {
        var liveness = n.online ? "online" : "offline";
        return h("tr", null,
          h("td", { class: "mono", text: n.node_id }),
          h("td", null, h("span", { class: "badge " + liveness, text: liveness }), n.status !== "online" ? [" ", h("span", { class: "badge " + n.status, text: n.status })] : null),
          h("td", null, n.eligible ? h("span", { class: "ok", text: "eligible" }) : h("span", { class: "badge FAILED", text: n.gate })),
          h("td", { class: "small", text: n.eligible ? "" : n.reason }));
      });
      replace("explain", [
        h("p", null, h("span", { class: "badge " + p.state, text: p.state }), " ",
          p.unplaceable ? h("strong", { class: "error", text: "No registered node can take this task. " }) : null,
          h("span", { class: "summary", text: p.summary })),
        table(["node", "state", "gate", "reason"], rows),
        more(p.nodes.length - rows.length, "nodes")
      ]);
      $("explain-section").scrollIntoView({ behavior: "smooth", block: "nearest" });
    }, function (err) {
      replace("explain", h("div", { class: "error", text: "could not explain: " + (err && err.message ? err.message : String(err)) }));
    });
  }

  // ---- wiring ----------------------------------------------------------------

  $("auth-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var value = $("token").value.trim();
    $("token").value = "";
    if (!value) return;
    setToken(value);
    setStatus("checking token…");
    schedule(0);
  });
  $("forget-token").addEventListener("click", function () {
    setToken("");
    last = null;
    schedule(0);
  });
  $("explain-close").addEventListener("click", function () {
    explained = null;
    $("explain-section").hidden = true;
  });
  document.addEventListener("visibilitychange", function () { if (!document.hidden) schedule(0); });
  $("forget-token").hidden = !getToken();
  $("pool-name").textContent = pool;
  setInterval(tick, 1000);
  poll();
})();
`;

/** The whole page: markup with the two inline blocks above; no data, no external origin. */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>flashedge</title>
<link rel="icon" href="data:,">
<style>${DASHBOARD_STYLE}</style>
</head>
<body>
<header>
  <div class="brand">flashedge<span id="pool-name" class="pool"></span></div>
  <div id="status" class="status" role="status" aria-live="polite">connecting…</div>
  <button id="forget-token" type="button" hidden>Forget token</button>
</header>
<main>
  <section id="auth" hidden>
    <h2>Token required</h2>
    <p>This coordinator enforces authentication. Paste a node or operator token: it is kept only in this browser tab and sent as a bearer token with each request.</p>
    <form id="auth-form" autocomplete="off">
      <input id="token" type="password" placeholder="token" aria-label="token" spellcheck="false">
      <button type="submit">Use token</button>
    </form>
    <p id="auth-error" class="error"></p>
  </section>
  <section id="overview" class="tiles" aria-label="overview"></section>
  <section id="stuck-section"><h2>Needs attention <span class="sub">pending tasks that no online node can take</span></h2><div id="stuck"></div></section>
  <section id="explain-section" hidden>
    <h2>Placement of <span id="explain-title" class="mono"></span> <button id="explain-close" type="button">Close</button></h2>
    <div id="explain"></div>
  </section>
  <section><h2>Jobs</h2><div id="jobs"></div></section>
  <section><h2>Nodes <span id="nodes-sub" class="sub"></span></h2><div id="nodes"></div></section>
  <div class="grid2">
    <section><h2>Live leases <span class="sub">time left before the task returns to the queue</span></h2><div id="leases"></div></section>
    <section><h2>Recent events</h2><div id="events" class="events"></div></section>
  </div>
</main>
<footer>flashedge · refreshes every 2 s · the page holds no data of its own</footer>
<script>${DASHBOARD_SCRIPT}</script>
</body>
</html>
`;
