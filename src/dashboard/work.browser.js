// @ts-check
// The dashboard's panels on the pool's work (docs/protocol.md §11): the
// overview tiles, what needs attention (tasks no online node can take, the
// pending demand), the jobs, the live leases and their countdowns, and the
// events. Inlined after domKit, apiKit and placementKit (src/dashboard/page.ts);
// its one global, `workKit`, is what the poll loop reads.
//
// Job names, labels, tenants, summaries and messages are attacker-controlled
// and reach the DOM through domKit's `h` only (textContent, setAttribute).
//
// Type-checked as a browser script: `tsc --noEmit -p tsconfig.dashboard.json`.

// biome-ignore lint/correctness/noUnusedVariables: read by the poll loop inlined after this one.
const workKit = (() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: the page runs this as a classic script, where strict mode is opt-in.
  "use strict";

  /**
   * @typedef {import("./wire").Summary} Summary
   * @typedef {import("./wire").TaskCounts} TaskCounts
   */

  const { $, plural } = pageKit;
  const { h, replace, table, more, labelChips, when, megabytes } = domKit;
  const { config, base, jobLabel } = apiKit;
  const { explainButton } = placementKit;

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

  /**
   * Moves the lease countdowns to `now`, the server's clock; they tick every
   * second between polls.
   * @param {number} now
   */
  function countDown(now) {
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
  }

  return { renderTiles, renderStuck, renderDemand, renderJobs, renderLeases, renderEvents, countDown };
})();
