// @ts-check
// The dashboard's panel on the pool's hosted runs (docs/protocol.md §17): the
// first page of `GET …/v1alpha1/runs`, newest first, each run with its kind,
// its state (and why, when it failed or was cancelled), its rounds, its live
// round and that round's job, and its mean loss (federated averaging) or
// inertia (K-means) per aggregated round: a small SVG polyline the page
// draws itself, with the last values beside it as text. Inlined after domKit
// and apiKit (src/dashboard/page.ts); its one global, `runsKit`, is what the
// poll loop reads.
//
// A run's labels and reason (an operator's name, an error's text) are
// attacker-controlled and reach the DOM through domKit's `h` and `svg` only
// (textContent, setAttribute); the chart's attributes are numbers computed
// here, never strings from the server.
//
// Type-checked as a browser script: `tsc --noEmit -p tsconfig.dashboard.json`.

// biome-ignore lint/correctness/noUnusedVariables: read by the poll loop inlined after this one.
const runsKit = (() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: the page runs this as a classic script, where strict mode is opt-in.
  "use strict";

  /**
   * @typedef {import("./wire").RunRecord} RunRecord
   * @typedef {import("./wire").Labels} Labels
   */

  /** The chart's box in CSS pixels, and the margin that keeps its line and dot inside it. */
  const CHART = { width: 160, height: 40, pad: 4 };
  /** Rounds whose value is spelled out beside the chart: the last ones. */
  const TEXT_ROUNDS = 6;

  const { messageOf, plural } = pageKit;
  const { h, svg, replace, table, labelChips, when } = domKit;
  const { config, base, Unauthorized, list, jobLabel } = apiKit;

  /** Whether a request for the runs is out: the next poll does not ask again until it answers. */
  let asking = false;

  /** Asks for the first page of the runs and draws it, or draws why it could not. */
  function refreshRuns() {
    if (asking) return;
    asking = true;
    list(`/runs?limit=${config.page_size}`).then(
      ({ items, next }) => {
        asking = false;
        renderRuns(/** @type {RunRecord[]} */ (items), next);
      },
      (err) => {
        asking = false;
        // The poll loop asks for a token; the panel keeps what it drew until one is given.
        if (err instanceof Unauthorized) return;
        replace("runs", h("div", { class: "error", text: `could not list runs: ${messageOf(err)}` }));
      },
    );
  }

  /**
   * @param {RunRecord[]} items
   * @param {boolean} more  whether the server has a next page
   */
  function renderRuns(items, more) {
    // A page lists each shard's runs oldest first, shard after shard: the newest are drawn first.
    const runs = [...items].sort(
      (a, b) => Date.parse(b.created_at) - Date.parse(a.created_at) || (a.run_id < b.run_id ? 1 : -1),
    );
    replace("runs", [
      table(["run", "state", "rounds", "live round", "loss or inertia per round"], runs.map(runRow)) ||
        h("div", { class: "empty", text: `No runs yet. Start one with POST ${base}/runs.` }),
      more
        ? h("div", {
            class: "more",
            text: `… the first ${plural(runs.length, "run")} of the pool are shown (GET ${base}/runs lists all)`,
          })
        : null,
    ]);
  }

  /** @param {RunRecord} r */
  function runRow(r) {
    const ended = r.state === "FAILED" || r.state === "CANCELLED";
    const unit = r.kind === "sharded_kmeans" ? "iterations" : "rounds";
    return h(
      "tr",
      { class: r.state === "FAILED" ? "flagged" : null, "data-run": r.run_id },
      h(
        "td",
        null,
        h("div", { class: "mono", text: r.run_id }),
        h("div", {
          class: "muted small",
          text: [r.kind, r.started_by ? `started by ${r.started_by}` : "", when(r.created_at)]
            .filter(Boolean)
            .join(" · "),
        }),
        labelChips(labelsOf(r)),
      ),
      h(
        "td",
        null,
        h("span", { class: `badge ${r.state}`, text: r.state }),
        ended && r.reason ? h("div", { class: "reason small", text: r.reason }) : null,
      ),
      h(
        "td",
        null,
        roundsBar(r),
        h("div", { class: "progress-label", text: `${r.rounds_completed}/${r.rounds} ${unit}` }),
      ),
      h("td", { class: "live" }, liveRound(r)),
      h("td", { class: "trend" }, trend(r)),
    );
  }

  /**
   * The run's labels: its request is the run as started, read as untrusted JSON.
   * @param {RunRecord} r
   * @returns {Labels}
   */
  function labelsOf(r) {
    const labels = r.request.labels;
    if (typeof labels !== "object" || labels === null || Array.isArray(labels)) return {};
    /** @type {Labels} */
    const out = {};
    for (const [key, value] of Object.entries(labels)) if (typeof value === "string") out[key] = value;
    return out;
  }

  /** @param {RunRecord} r */
  function roundsBar(r) {
    const bar = h("div", { class: "bar" });
    if (r.rounds_completed > 0) {
      const done = h("span", { class: "COMPLETED" });
      done.style.width = `${Math.min(100, (100 * r.rounds_completed) / r.rounds)}%`;
      bar.appendChild(done);
    }
    return bar;
  }

  /** @param {RunRecord} r */
  function liveRound(r) {
    const live = r.live_round;
    if (!live) return h("span", { class: "muted", text: "—" });
    const name = jobLabel(live.job_id);
    return [
      h("div", {
        text: `round ${live.round} · quorum ${live.quorum}${live.frozen ? " · aggregating" : ""}`,
      }),
      h("div", { class: "mono muted small", text: name ? `${name} · ${live.job_id}` : live.job_id }),
    ];
  }

  /**
   * The run's mean loss (federated averaging) or inertia (K-means) per
   * aggregated round that reported one: a polyline with a dot on the last
   * round, and the last values as text.
   * @param {RunRecord} r
   */
  function trend(r) {
    const metric = r.kind === "sharded_kmeans" ? "inertia" : "mean loss";
    /** @type {Array<{ round: number, value: number }>} */
    const points = [];
    for (const round of r.history) {
      const value = r.kind === "sharded_kmeans" ? round.inertia : round.mean_loss;
      if (typeof value === "number" && Number.isFinite(value)) points.push({ round: round.round, value });
    }
    const last = points.at(-1);
    if (!last) {
      return h("span", {
        class: "muted small",
        text: r.history.length ? `no ${metric} reported` : "no round aggregated yet",
      });
    }
    const { width, height, pad } = CHART;
    const rounds = points.map((p) => p.round);
    const values = points.map((p) => p.value);
    const [first, final] = [Math.min(...rounds), Math.max(...rounds)];
    const [low, high] = [Math.min(...values), Math.max(...values)];
    /** @param {number} round */
    const x = (round) => (final === first ? width / 2 : pad + ((round - first) / (final - first)) * (width - 2 * pad));
    /** @param {number} value */
    const y = (value) => (high === low ? height / 2 : pad + ((high - value) / (high - low)) * (height - 2 * pad));
    const shown = points.slice(-TEXT_ROUNDS);
    const text = `${points.length > shown.length ? "… " : ""}${shown.map((p) => `r${p.round} ${number(p.value)}`).join(" · ")}`;
    return [
      svg(
        "svg",
        {
          class: "chart",
          width,
          height,
          viewBox: `0 0 ${width} ${height}`,
          role: "img",
          "aria-label": `${metric} per round, from ${number(points[0]?.value ?? last.value)} to ${number(last.value)}`,
        },
        svg("polyline", { points: points.map((p) => `${dp(x(p.round))},${dp(y(p.value))}`).join(" ") }),
        svg(
          "circle",
          { cx: dp(x(last.round)), cy: dp(y(last.value)), r: 2.5 },
          svg("title", {}, `round ${last.round}: ${number(last.value)}`),
        ),
      ),
      h("div", { class: "small muted values", text: `${metric}: ${text}` }),
    ];
  }

  /** @param {number} value */
  function number(value) {
    return String(Number(value.toPrecision(4)));
  }

  /** A coordinate to one decimal: enough at this size. @param {number} value */
  function dp(value) {
    return Math.round(value * 10) / 10;
  }

  return { refreshRuns };
})();
