// @ts-check
// The dashboard's panels on the pool's machines (docs/protocol.md §11): the
// nodes (their state, hardware, capabilities, holds and validity record),
// the GPUs they report, and the enrolled machines with the enrolment
// requests. Inlined after domKit and apiKit (src/dashboard/page.ts); its one
// global, `fleetKit`, is what the poll loop reads.
//
// Node ids, hostnames, labels, owners and platforms are chosen by whoever
// runs a node or asks for a code: they reach the DOM through domKit's `h`
// only (textContent, setAttribute).
//
// Type-checked as a browser script: `tsc --noEmit -p tsconfig.dashboard.json`.

// biome-ignore lint/correctness/noUnusedVariables: read by the poll loop inlined after this one.
const fleetKit = (() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: the page runs this as a classic script, where strict mode is opt-in.
  "use strict";

  /**
   * @typedef {import("./wire").Summary} Summary
   * @typedef {import("./wire").NodeItem} NodeItem
   */

  const { $, plural } = pageKit;
  const { h, replace, table, more, labelChips, when, whenDated, age } = domKit;
  const { base } = apiKit;

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

  return { renderNodes, renderGpus, renderEnrolment };
})();
