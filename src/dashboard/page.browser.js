// @ts-check
// The dashboard's script (docs/protocol.md §11): polls the pool's JSON summary
// (`GET …/v1alpha1/dashboard`) and draws it. The Worker inlines this file
// byte for byte into the page, whose CSP admits it by its sha256 hash; it is
// a classic script, so everything stays inside the function below.
//
// It must never load anything from another origin, and never turn data into
// markup: every node id, job name, label and message is attacker-controlled
// and reaches the DOM through textContent or setAttribute only. The token the
// operator types is kept in this tab only (sessionStorage). The constants it
// shares with the server (the pool-name rule, the page size, the task
// states) come from the page's `flashedge-config` meta tag, which the Worker
// fills from their one definition: none is copied here.
//
// Type-checked as a browser script: `tsc --noEmit -p tsconfig.dashboard.json`.

/**
 * @typedef {import("./wire").PageConfig} PageConfig
 * @typedef {import("./wire").Summary} Summary
 * @typedef {import("./wire").PlacementReport} PlacementReport
 * @typedef {import("./wire").NodeItem} NodeItem
 * @typedef {import("./wire").TaskCounts} TaskCounts
 * @typedef {import("./wire").Labels} Labels
 * @typedef {Node | string | number | null | undefined | false | Child[]} Child
 * @typedef {Record<string, string | number | boolean | null | undefined | ((event: MouseEvent) => void)>} Attrs
 */

(() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: the page runs this as a classic script, where strict mode is opt-in.
  "use strict";

  const POLL_MS = 2000;
  const EXPLAIN_ROWS = 50;

  const { $, getToken, setToken, messageOf, setStatus, plural } = pageKit;
  const config = /** @type {PageConfig} */ (pageKit.readConfig());
  const poolName = new RegExp(config.pool_name.source, config.pool_name.flags);
  const segment = /^\/pools\/([^/]+)\/?$/.exec(location.pathname)?.[1];
  const match = segment !== undefined && poolName.test(segment) ? segment : null;
  const pool = match ?? "local";
  const base = match ? `/pools/${match}/v1alpha1` : "/v1alpha1";
  const enrolPage = match ? `/pools/${match}/enrol` : "/enrol";

  /** @type {ReturnType<typeof setTimeout> | null} */
  let timer = null;
  /** The last summary drawn. @type {Summary | null} */
  let last = null;
  let clockOffset = 0; // server clock minus this tab's clock, in ms
  let receivedAt = 0;
  /** The task shown in the placement panel. @type {{ job_id: string, task_id: string } | null} */
  let explained = null;

  /** A response the server refused for want of a valid token. */
  class Unauthorized extends Error {}

  /**
   * Builds an element. Strings become text nodes, never markup.
   * @param {string} tag
   * @param {Attrs | null} attrs
   * @param {...Child} children
   * @returns {HTMLElement}
   */
  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const [key, value] of Object.entries(attrs)) {
        if (value === null || value === undefined || value === false) continue;
        if (typeof value === "function") {
          if (key === "onclick") node.addEventListener("click", value);
        } else if (key === "class") node.className = String(value);
        else if (key === "text") node.textContent = String(value);
        else node.setAttribute(key, String(value));
      }
    }
    append(node, children);
    return node;
  }

  /**
   * @param {Node} node
   * @param {Child} child
   */
  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) {
      for (const item of child) append(node, item);
      return;
    }
    node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }

  /**
   * @param {string} id
   * @param {Child} child
   */
  function replace(id, child) {
    const node = $(id);
    while (node.firstChild) node.removeChild(node.firstChild);
    append(node, child);
  }

  /**
   * A GET of this pool's API with the tab's token; rejects with the server's detail.
   * @param {string} path
   * @returns {Promise<unknown>}
   */
  function api(path) {
    /** @type {Record<string, string>} */
    const headers = { accept: "application/json" };
    const token = getToken();
    if (token) headers.authorization = `Bearer ${token}`;
    return fetch(base + path, { headers, cache: "no-store", credentials: "omit", redirect: "error" }).then((r) => {
      if (r.status === 401) throw new Unauthorized("a valid token is required");
      if (!r.ok) {
        return r
          .json()
          .catch(() => ({}))
          .then((/** @type {unknown} */ body) => {
            const detail =
              typeof body === "object" && body !== null && "detail" in body && typeof body.detail === "string"
                ? body.detail
                : `HTTP ${r.status}`;
            throw new Error(detail);
          });
      }
      return r.json();
    });
  }

  /** @param {number} ms */
  function schedule(ms) {
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(poll, ms);
  }

  function poll() {
    timer = null;
    if (document.hidden) {
      schedule(POLL_MS);
      return;
    }
    api(`/dashboard?limit=${config.page_size}`).then(
      (body) => {
        const data = /** @type {Summary} */ (body);
        $("auth").hidden = true;
        clockOffset = Date.parse(data.generated_at) - Date.now();
        receivedAt = Date.now();
        last = data;
        render(data);
        schedule(POLL_MS);
      },
      (err) => {
        if (err instanceof Unauthorized) {
          $("auth").hidden = false;
          $("auth-error").textContent = getToken() ? "That token was refused." : "";
          setStatus("waiting for a token", true);
          return; // resumes when a token is entered
        }
        setStatus(`update failed: ${messageOf(err)} — retrying`, true);
        schedule(POLL_MS * 2);
      },
    );
  }

  // ---- drawing -------------------------------------------------------------

  /** @param {string} iso */
  function when(iso) {
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? "" : d.toLocaleTimeString([], { hour12: false });
  }

  /**
   * A time of day, with its date unless that is today: a credential outlives a day.
   * @param {string} iso
   */
  function whenDated(iso) {
    const d = new Date(iso);
    if (Number.isNaN(d.getTime()) || d.toDateString() === new Date().toDateString()) return when(iso);
    return `${d.toLocaleDateString()} ${when(iso)}`;
  }

  /** @param {number} seconds */
  function age(seconds) {
    if (seconds < 1) return "just now";
    if (seconds < 90) return `${Math.round(seconds)}s ago`;
    if (seconds < 5400) return `${Math.round(seconds / 60)}m ago`;
    return `${Math.round(seconds / 3600)}h ago`;
  }

  /**
   * @param {number} n
   * @param {string} noun
   * @param {string} [hint]
   */
  function more(n, noun, hint) {
    return n > 0 ? h("div", { class: "more", text: `… and ${n} more ${noun}${hint ? ` (${hint})` : ""}` }) : null;
  }

  /**
   * @param {string[]} headers
   * @param {HTMLElement[]} rows
   */
  function table(headers, rows) {
    if (rows.length === 0) return null;
    return h(
      "table",
      null,
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          headers.map((t) => h("th", { text: t })),
        ),
      ),
      h("tbody", null, rows),
    );
  }

  /** @param {Labels} labels */
  function labelChips(labels) {
    return Object.entries(labels).map(([key, value]) => h("span", { class: "chip", text: `${key}=${value}` }));
  }

  /** @param {string} jobId */
  function jobLabel(jobId) {
    return last?.jobs.items.find((j) => j.job_id === jobId)?.name ?? null;
  }

  /** @param {Summary} d */
  function render(d) {
    $("pool-name").textContent = d.pool;
    document.title = `flashedge · ${d.pool}`;
    renderTiles(d);
    renderStuck(d);
    renderDemand(d);
    renderJobs(d);
    renderNodes(d);
    renderGpus(d);
    renderEnrolment(d);
    renderLeases(d);
    renderEvents(d);
    tick();
  }

  /**
   * @param {number | string} value
   * @param {string} label
   * @param {string | null} detail
   * @param {boolean} [warn]
   */
  function tile(value, label, detail, warn) {
    return h(
      "div",
      { class: warn ? "tile warn" : "tile" },
      h("div", { class: "n", text: value }),
      h("div", { class: "l", text: label }),
      detail ? h("div", { class: "d", text: detail }) : null,
    );
  }

  /** @param {Summary} d */
  function renderTiles(d) {
    const c = d.counts;
    replace("overview", [
      tile(
        `${c.nodes.online}/${c.nodes.total}`,
        "nodes online",
        [
          c.nodes.not_accepting ? `${c.nodes.not_accepting} draining or terminating` : "",
          c.nodes.held_back ? `${c.nodes.held_back} held back` : "",
        ]
          .filter(Boolean)
          .join(" · ") || null,
        c.nodes.held_back > 0,
      ),
      tile(
        c.enrolment.enrolled,
        "enrolled machines",
        [
          c.enrolment.pending_requests ? `${plural(c.enrolment.pending_requests, "request")} awaiting an operator` : "",
          c.enrolment.revoked ? `${c.enrolment.revoked} revoked` : "",
        ]
          .filter(Boolean)
          .join(" · ") || null,
        c.enrolment.pending_requests > 0,
      ),
      tile(
        c.jobs.RUNNING,
        "jobs running",
        `${c.jobs.SUCCEEDED} succeeded · ${c.jobs.FAILED} failed · ${c.jobs.CANCELLED} cancelled`,
      ),
      tile(c.tasks.PENDING, "tasks pending", `${c.tasks.total} tasks in all`),
      tile(c.tasks.LEASED, "tasks running", `${c.leases_live} live leases`),
      tile(c.tasks.COMPLETED, "tasks completed", `${c.tasks.FAILED} failed · ${c.tasks.CANCELLED} cancelled`),
      tile(
        c.stuck_tasks,
        "tasks no online node can take",
        c.stuck_tasks ? "see Needs attention" : "every pending task is placeable",
        c.stuck_tasks > 0,
      ),
      tile(
        `${Math.round((d.storage.bytes / d.storage.limit_bytes) * 1000) / 10}%`,
        "storage used",
        `${megabytes(d.storage.bytes)} of ${megabytes(d.storage.limit_bytes)}${d.storage.warning ? " — past 80%: shorten retention or split the pool" : ""}`,
        d.storage.warning,
      ),
    ]);
  }

  /** @param {number} bytes */
  function megabytes(bytes) {
    return bytes >= 1e9 ? `${Math.round(bytes / 1e8) / 10} GB` : `${Math.round(bytes / 1e5) / 10} MB`;
  }

  /**
   * @param {string} jobId
   * @param {string} taskId
   */
  function explainButton(jobId, taskId) {
    return h("button", {
      type: "button",
      text: "Why?",
      title: `Show every node's answer for ${taskId}`,
      onclick: () => explainTask(jobId, taskId),
    });
  }

  /** @param {Summary} d */
  function renderStuck(d) {
    const s = d.stuck;
    const rows = s.items.map((e) =>
      h(
        "tr",
        null,
        h(
          "td",
          null,
          h("div", { text: e.job_name || e.job_id }),
          h("div", { class: "mono muted small", text: e.job_id }),
        ),
        h("td", { class: "mono", text: e.task_id }),
        h("td", { class: "num", text: e.pending }),
        h("td", { class: "summary", text: e.summary || "" }),
        h("td", null, explainButton(e.job_id, e.task_id)),
      ),
    );
    const notes =
      s.classes_unchecked > 0
        ? h("div", { class: "more", text: `${s.classes_unchecked} more kinds of pending task were not checked` })
        : null;
    replace(
      "stuck",
      rows.length
        ? [
            table(["job", "earliest task", "pending", "why no online node takes it", ""], rows),
            more(s.more, "entries"),
            notes,
          ]
        : [h("div", { class: "ok", text: "Every pending task can be taken by an online node." }), notes],
    );
    $("stuck-section").className = rows.length ? "attention" : "";
  }

  /** @param {Summary} d */
  function renderDemand(d) {
    const m = d.demand;
    const rows = m.classes.map((c) =>
      h(
        "tr",
        { class: c.servable ? null : "flagged" },
        h("td", { class: "num", text: c.pending }),
        h("td", { text: c.needs }),
        h("td", { class: "num", text: c.online_nodes_able }),
        h("td", { class: "summary", text: c.servable ? c.summary : `⚠ ${c.summary}` }),
      ),
    );
    const notes = [
      m.classes_unchecked > 0
        ? h("div", { class: "more", text: `${m.classes_unchecked} more kinds of pending task were not checked` })
        : null,
      m.nodes_unchecked > 0
        ? h("div", { class: "more", text: `${m.nodes_unchecked} more registered nodes were not checked` })
        : null,
    ];
    replace(
      "demand",
      rows.length
        ? [table(["pending", "needs", "online nodes able", ""], rows), notes]
        : [h("div", { class: "ok", text: "Nothing is pending." }), notes],
    );
    $("demand-section").className = m.unservable_classes > 0 ? "attention" : "";
  }

  /** @param {Summary} d */
  function renderGpus(d) {
    const g = d.gpus;
    const rows = g.items.map((r) =>
      h(
        "tr",
        null,
        h("td", { text: r.model || "(unnamed)" }),
        h("td", { class: "num", text: r.memory_total_mb === null ? "?" : `${r.memory_total_mb} MB` }),
        h("td", { class: "mono", text: r.compute_capability || "?" }),
        h("td", { class: "num", text: r.gpus }),
        h("td", { class: "num", text: r.nodes }),
        h("td", { class: "num", text: r.online }),
        h("td", { class: "num", text: r.busy }),
      ),
    );
    replace(
      "gpus",
      rows.length
        ? [
            table(["model", "memory", "compute capability", "GPUs", "nodes", "online", "busy"], rows),
            more(g.more, "kinds"),
          ]
        : h("div", { class: "muted", text: "No registered node reports a GPU." }),
    );
  }

  /**
   * @param {TaskCounts} counts
   * @param {number} total
   */
  function progressBar(counts, total) {
    const bar = h("div", { class: "bar", title: `completed / failed / running / cancelled of ${total}` });
    for (const state of config.progress_states) {
      if (!counts[state] || !total) continue;
      const seg = h("span", { class: state });
      seg.style.width = `${(100 * counts[state]) / total}%`;
      bar.appendChild(seg);
    }
    return bar;
  }

  /** @param {Summary} d */
  function renderJobs(d) {
    const rows = d.jobs.items.map((j) => {
      const c = j.task_counts;
      const done = c.COMPLETED + c.FAILED + c.CANCELLED;
      const counts = config.task_states
        .filter((s) => c[s] > 0)
        .map((s) => h("span", { class: "chip", text: `${s.toLowerCase()} ${c[s]}` }));
      // A lost worker (an expired lease) uses no attempt, so it shows apart from the failures.
      const losses = j.worker_losses
        ? h("span", {
            class: "chip warn losses",
            title: "leases that expired because their node went away; they used no attempt",
            text: `${j.worker_losses} worker loss${j.worker_losses === 1 ? "" : "es"}`,
          })
        : null;
      const nameCell = h(
        "td",
        null,
        h("div", { text: j.name || "(unnamed)" }),
        h("div", { class: "mono muted small", text: `${j.job_id} · ${j.workload_type}` }),
        labelChips(j.labels),
        j.stuck
          ? h(
              "div",
              { class: "flag" },
              `⚠ ${plural(j.stuck.pending, "pending task")} no online node can take `,
              explainButton(j.job_id, j.stuck.task_id),
            )
          : null,
      );
      return h(
        "tr",
        { class: j.stuck ? "flagged" : null, "data-job": j.job_id },
        nameCell,
        h("td", null, h("span", { class: `badge ${j.state}`, text: j.state })),
        h("td", { class: "num priority", text: j.priority }),
        h("td", { class: "mono tenant", text: j.tenant }),
        h(
          "td",
          null,
          progressBar(c, j.total_tasks),
          h("div", {
            class: "progress-label",
            text: `${c.COMPLETED}/${j.total_tasks} completed${done < j.total_tasks ? "" : " · done"}`,
          }),
        ),
        h("td", null, counts, losses),
        h("td", { class: "small muted", text: when(j.created_at) }),
      );
    });
    replace("jobs", [
      table(["job", "state", "priority", "tenant", "progress", "tasks", "created"], rows) ||
        h("div", { class: "empty", text: `No jobs yet. Submit one with POST ${base}/jobs.` }),
      more(d.jobs.more, "jobs", `GET ${base}/jobs lists all`),
    ]);
  }

  /** @param {Summary} d */
  function renderNodes(d) {
    const rows = d.nodes.items.map((n) => {
      /** @type {Array<[string, boolean]>} */
      const capabilities = [
        ["argv", n.argv_capable],
        ["sandbox", n.sandbox_capable],
        ["module", n.module_capable],
        ["unsandboxed argv", n.unsandboxed_argv_capable],
      ];
      const flags = capabilities.map(([name, on]) =>
        h("span", { class: on ? "chip on" : "chip", text: (on ? "" : "no ") + name }),
      );
      const liveness = n.online ? "online" : "offline";
      const gpus = n.gpu_count
        ? h("span", {
            title: n.gpus.join(", "),
            text: `${n.gpu_count} × ${n.gpus[0] || "GPU"}${n.gpus.length > 1 && n.gpus[1] !== n.gpus[0] ? " …" : ""}`,
          })
        : h("span", { class: "muted", text: "none" });
      /** @type {HTMLElement[]} */
      const datasets = n.local_datasets.map((s) => h("span", { class: "chip", text: s }));
      if (n.local_dataset_count > n.local_datasets.length) {
        datasets.push(h("span", { class: "muted small", text: `+${n.local_dataset_count - n.local_datasets.length}` }));
      }
      // Held back (docs/protocol.md §13): its claims get nothing until then, unless an operator releases it.
      const held = n.held_until
        ? [
            " ",
            h("span", {
              class: "badge held",
              title: `${plural(n.consecutive_failures, "failed attempt")} in a row; an operator may release it early: POST ${base}/nodes/${encodeURIComponent(n.node_id)}/release`,
              text: `held back until ${when(n.held_until)}`,
            }),
          ]
        : null;
      return h(
        "tr",
        { class: n.held_until ? "flagged" : null, "data-node": n.node_id },
        h(
          "td",
          null,
          h("div", { class: "mono", text: n.node_id }),
          n.hostname && n.hostname !== n.node_id ? h("div", { class: "muted small", text: n.hostname }) : null,
          labelChips(n.labels),
        ),
        h(
          "td",
          null,
          h("span", { class: `badge ${liveness}` }, h("span", { class: `dot ${liveness}` }), liveness),
          n.status !== "online" ? [" ", h("span", { class: `badge ${n.status}`, text: n.status })] : null,
          held,
          h("div", { class: "muted small", text: `seen ${age(n.last_heartbeat_age_s)}` }),
        ),
        h(
          "td",
          null,
          gpus,
          h("div", {
            class: "muted small",
            text: [n.cpu_cores !== null ? `${n.cpu_cores} cores` : "", n.architecture].filter(Boolean).join(" · "),
          }),
        ),
        h("td", null, datasets.length ? datasets : h("span", { class: "muted", text: "—" })),
        h(
          "td",
          null,
          flags,
          n.pools.map((p) => h("span", { class: "chip warn", text: `pool ${p}` })),
          n.pool_assignment
            ? h("div", {
                class: "muted small",
                text: `pools assigned by ${n.pool_assignment.assigned_by}, ${whenDated(n.pool_assignment.assigned_at)}`,
              })
            : null,
        ),
        h("td", { class: "num", text: n.accepted_tasks }),
        h("td", { class: n.consecutive_failures ? "num failures bad" : "num failures", text: n.consecutive_failures }),
        validityCell(n),
        h("td", { class: "num", text: n.live_leases }),
      );
    });
    replace("nodes", [
      table(
        [
          "node",
          "state",
          "hardware",
          "local datasets",
          "capabilities",
          "accepted",
          "failed in a row",
          "replica results",
          "leases",
        ],
        rows,
      ) || h("div", { class: "empty", text: "No nodes registered in this pool yet." }),
      more(d.nodes.more, "nodes", `GET ${base}/nodes lists all`),
    ]);
    const c = d.counts.nodes;
    $("nodes-sub").textContent = `${c.online} online of ${c.total}${c.held_back ? ` · ${c.held_back} held back` : ""}`;
  }

  /**
   * A node's validity record (docs/protocol.md §14): its replicas a quorum agreed with and
   * those it lost. A node with any invalid result is flagged.
   * @param {NodeItem} n
   */
  function validityCell(n) {
    if (n.distrusted !== null) {
      // docs/protocol.md §14: caught lying or outvoted too often; never alone again until released.
      return h("td", {
        class: "validity bad",
        title: `distrusted: ${n.distrusted}. It runs no task alone until an operator releases it: POST ${base}/nodes/${encodeURIComponent(n.node_id)}/release`,
        text: `⚠ distrusted · ${n.valid_results} valid · ${n.invalid_results} invalid`,
      });
    }
    if (n.valid_results === 0 && n.invalid_results === 0) {
      return h("td", { class: "validity muted", title: "no replicated result judged yet", text: "—" });
    }
    return h("td", {
      class: n.invalid_results ? "validity bad" : "validity",
      title: n.invalid_results
        ? `${plural(n.invalid_results, "result")} outvoted by a quorum or with evidence claiming more time than passed`
        : "every judged result agreed with its quorum",
      text: `${n.invalid_results ? "⚠ " : ""}${n.valid_results} valid · ${n.invalid_results} invalid`,
    });
  }

  /** @param {Summary} d */
  function renderEnrolment(d) {
    const { credentials, requests } = d.enrolment;
    const credentialRows = credentials.items.map((c) =>
      h(
        "tr",
        { "data-node": c.node_id },
        h("td", { class: "mono", text: c.node_id }),
        h("td", { text: c.owner }),
        h("td", { class: "mono", text: c.hostname }),
        h("td", { class: "small", text: c.platform }),
        h("td", { text: c.approved_by }),
        h("td", { class: "small muted nowrap", text: whenDated(c.approved_at) }),
        h(
          "td",
          null,
          c.revoked_at === null
            ? h("span", { class: "badge active", text: `active since ${whenDated(c.issued_at)}` })
            : h("span", { class: "badge revoked", text: `revoked by ${c.revoked_by} ${whenDated(c.revoked_at)}` }),
        ),
      ),
    );
    const requestRows = requests.items.map((r) => {
      const lapse = r.state === "pending" ? "expires" : "expired";
      return h(
        "tr",
        { "data-node": r.node_id },
        h("td", { class: "mono", text: r.node_id }),
        h("td", { class: "mono", text: r.hostname }),
        h("td", { class: "small", text: r.platform }),
        h("td", { class: "small muted nowrap", text: whenDated(r.requested_at) }),
        h("td", null, h("span", { class: `badge ${r.state}`, text: r.state })),
        h("td", { text: r.decided_by ?? "—" }),
        h("td", {
          class: "small muted nowrap",
          text: r.decided_at === null ? `${lapse} ${when(r.expires_at)}` : whenDated(r.decided_at),
        }),
      );
    });
    replace("credentials", [
      table(["node", "owner", "host", "platform", "approved by", "approved", "credential"], credentialRows) ||
        h("div", { class: "empty", text: "No enrolled machines." }),
      more(credentials.more, "credentials"),
    ]);
    replace("requests", [
      table(["node", "host", "platform", "asked", "state", "decided by", "decided"], requestRows) ||
        h("div", { class: "empty", text: "No enrolment requests in the last day." }),
      more(requests.more, "requests"),
    ]);
  }

  /** @param {Summary} d */
  function renderLeases(d) {
    const rows = d.leases.items.map((l) => {
      const bar = h("div", { class: "bar" }, h("span", { class: "left" }));
      const name = jobLabel(l.job_id);
      return h(
        "tr",
        { "data-deadline": l.deadline, "data-window": l.lease_seconds },
        h(
          "td",
          null,
          h(
            "div",
            null,
            h("span", { class: "mono", text: l.task_id }),
            // A replica's task has several leases at once: its placement report lists them all.
            l.replica > 0
              ? [
                  " ",
                  h("span", { class: "chip replica", text: `replica ${l.replica}` }),
                  " ",
                  explainButton(l.job_id, l.task_id),
                ]
              : null,
          ),
          h("div", { class: "muted small", text: name ? `${name} · ${l.job_id}` : l.job_id }),
        ),
        h("td", { class: "mono", text: l.node_id }),
        h("td", { class: "num", text: l.attempt }),
        h("td", null, h("div", { class: "left-text", text: "" }), bar),
      );
    });
    replace("leases", [
      table(["task", "node", "attempt", "time left"], rows) || h("div", { class: "empty", text: "No live leases." }),
      more(d.leases.more, "live leases"),
    ]);
  }

  /** @param {Summary} d */
  function renderEvents(d) {
    const rows = d.events.items.map((e) =>
      h(
        "tr",
        null,
        h("td", { class: "small muted mono nowrap", text: when(e.timestamp) }),
        h("td", null, h("span", { class: "badge", text: e.type })),
        h("td", { text: e.message }),
      ),
    );
    replace(
      "events",
      table(["time", "event", "message"], rows) || h("div", { class: "empty", text: "No events yet." }),
    );
  }

  // Lease countdowns and "updated … ago" move every second between polls.
  function tick() {
    if (!last) return;
    const now = Date.now() + clockOffset;
    for (const row of $("leases").querySelectorAll("tr[data-deadline]")) {
      const text = row.querySelector(".left-text");
      const fill = row.querySelector(".left");
      if (!text || !(fill instanceof HTMLElement)) continue;
      const left = Math.max(0, (Date.parse(row.getAttribute("data-deadline") ?? "") - now) / 1000);
      text.textContent = left > 0 ? `${left.toFixed(0)} s` : "expiring";
      const windowSeconds = Number(row.getAttribute("data-window")) || 60;
      fill.style.width = `${Math.min(100, (left / windowSeconds) * 100)}%`;
      fill.className = left < windowSeconds / 4 ? "left low" : "left";
    }
    const since = (Date.now() - receivedAt) / 1000;
    if (timer !== null || since < 5) setStatus(`live · updated ${age(since)}`);
  }

  // ---- placement explanations ---------------------------------------------

  /**
   * @param {string} jobId
   * @param {string} taskId
   */
  function explainTask(jobId, taskId) {
    explained = { job_id: jobId, task_id: taskId };
    $("explain-section").hidden = false;
    $("explain-title").textContent = `${taskId} of ${jobLabel(jobId) || jobId}`;
    replace("explain", h("div", { class: "muted", text: "asking the coordinator…" }));
    api(`/jobs/${encodeURIComponent(jobId)}/tasks/${encodeURIComponent(taskId)}/placement`).then(
      (body) => {
        if (!explained || explained.job_id !== jobId || explained.task_id !== taskId) return;
        const p = /** @type {PlacementReport} */ (body);
        const rows = p.nodes.slice(0, EXPLAIN_ROWS).map((n) => {
          const liveness = n.online ? "online" : "offline";
          return h(
            "tr",
            null,
            h("td", { class: "mono", text: n.node_id }),
            h(
              "td",
              null,
              h("span", { class: `badge ${liveness}`, text: liveness }),
              n.status !== "online" ? [" ", h("span", { class: `badge ${n.status}`, text: n.status })] : null,
            ),
            h(
              "td",
              null,
              n.eligible
                ? h("span", { class: "ok", text: "eligible" })
                : h("span", { class: "badge FAILED", text: n.gate }),
            ),
            h("td", { class: "small", text: n.eligible ? "" : n.reason }),
          );
        });
        replace("explain", [
          h(
            "p",
            null,
            h("span", { class: `badge ${p.state}`, text: p.state }),
            " ",
            // A finished task needs no node: a replicated one has refused every node that ran it.
            p.unplaceable && (p.state === "PENDING" || p.state === "LEASED")
              ? h("strong", { class: "error", text: "No registered node can take this task. " })
              : null,
            h("span", { class: "summary", text: p.summary }),
          ),
          p.waiting
            ? h("p", { class: "waiting small" }, h("span", { class: "muted", text: "In the queue: " }), p.waiting)
            : null,
          replicasPanel(p),
          h(
            "div",
            { class: "placements" },
            table(["node", "state", "gate", "reason"], rows),
            more(p.nodes.length - rows.length, "nodes"),
          ),
        ]);
        $("explain-section").scrollIntoView({ behavior: "smooth", block: "nearest" });
      },
      (err) => {
        replace("explain", h("div", { class: "error", text: `could not explain: ${messageOf(err)}` }));
      },
    );
  }

  /**
   * A replicated task's replicas (docs/protocol.md §14): who ran each, its state, its
   * output's hash and the verdict on it.
   * @param {PlacementReport} p
   */
  function replicasPanel(p) {
    const r = p.replicas;
    if (!r) return null;
    const rows = r.items.map((item) =>
      h(
        "tr",
        { "data-replica": item.replica },
        h("td", { class: "num", text: item.replica }),
        h("td", { class: "mono", text: item.node_id }),
        h("td", null, h("span", { class: `badge ${item.state}`, text: item.state })),
        h("td", {
          class: "mono",
          title: item.output_sha256 ?? "not committed",
          text: item.output_sha256 ? item.output_sha256.slice(0, 12) : "—",
        }),
        h(
          "td",
          null,
          item.verdict
            ? h("span", { class: `badge ${item.verdict}`, text: item.verdict })
            : h("span", { class: "muted", text: "—" }),
        ),
      ),
    );
    return h(
      "div",
      { class: "replicas" },
      h("h3", { text: `Replicas · ${r.wanted} wanted · ${r.quorum} must agree` }),
      table(["replica", "node", "state", "sha256", "verdict"], rows) ||
        h("div", { class: "empty", text: "No replica issued yet." }),
    );
  }

  // ---- wiring ----------------------------------------------------------------

  const tokenInput = $("token");
  if (!(tokenInput instanceof HTMLInputElement)) throw new Error("#token is not an input");

  $("auth-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = tokenInput.value.trim();
    tokenInput.value = "";
    if (!value) return;
    setToken(value);
    setStatus("checking token…");
    schedule(0);
  });
  $("forget-token").addEventListener("click", () => {
    setToken("");
    last = null;
    schedule(0);
  });
  $("explain-close").addEventListener("click", () => {
    explained = null;
    $("explain-section").hidden = true;
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) schedule(0);
  });
  $("forget-token").hidden = !getToken();
  $("pool-name").textContent = pool;
  replace("enrolment-sub", [
    "codes from flashnode login are approved at ",
    h("a", { href: enrolPage, text: enrolPage }),
    " (operator token only)",
  ]);
  setInterval(tick, 1000);
  poll();
})();
