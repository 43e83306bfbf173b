// @ts-check
// The dashboard's placement panel (docs/protocol.md §4): a task's placement
// report, `GET …/jobs/{job}/tasks/{task}/placement`, asked for by a "Why?"
// button and drawn as every node's answer at the gate, with a replicated
// task's replicas (§14). Inlined after domKit and apiKit, ahead of the
// panels that hold the buttons (src/dashboard/page.ts); its one global,
// `placementKit`, is what they read.
//
// The report's summaries, reasons and node ids are attacker-controlled and
// reach the DOM through domKit's `h` only (textContent, setAttribute).
//
// Type-checked as a browser script: `tsc --noEmit -p tsconfig.dashboard.json`.

// biome-ignore lint/correctness/noUnusedVariables: read by the dashboard scripts inlined after this one.
const placementKit = (() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: the page runs this as a classic script, where strict mode is opt-in.
  "use strict";

  /** @typedef {import("./wire").PlacementReport} PlacementReport */

  const EXPLAIN_ROWS = 50;

  const { $, messageOf } = pageKit;
  const { h, replace, table, more } = domKit;
  const { api, jobLabel } = apiKit;

  /** The task shown in the placement panel. @type {{ job_id: string, task_id: string } | null} */
  let explained = null;

  /**
   * A "Why?" button that opens the panel on the task.
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

  /**
   * Opens the panel on the task and draws its report when it comes.
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

  /** Closes the panel; a report that arrives after is not drawn. */
  function closeExplain() {
    explained = null;
    $("explain-section").hidden = true;
  }

  return { explainButton, closeExplain };
})();
