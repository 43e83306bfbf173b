// @ts-check
// The dashboard's script (docs/protocol.md §11): polls the pool's JSON summary
// (`GET …/v1alpha1/dashboard`) and draws it, and with each answer asks the
// runs panel to read the pool's runs (`GET …/v1alpha1/runs`). This file is the
// poll loop and the page's wiring; the Worker inlines it last, after the files
// it reads, as one inline script byte for byte (src/dashboard/page.ts:
// common.browser.js, dom.browser.js, api.browser.js, placement.browser.js,
// work.browser.js, fleet.browser.js, runs.browser.js, then this), whose CSP
// admits it by its sha256 hash. It is
// a classic script, so each file keeps everything inside its function and
// adds at most one global, the namespace it returns; this one adds none.
//
// The rules every one of them keeps: never load anything from another origin
// (api.browser.js); never turn data into markup, since every node id, job
// name, label and message is attacker-controlled and reaches the DOM through
// textContent or setAttribute only (dom.browser.js); keep the token the
// operator types in this tab only, in sessionStorage (common.browser.js).
//
// Type-checked as a browser script: `tsc --noEmit -p tsconfig.dashboard.json`.

(() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: the page runs this as a classic script, where strict mode is opt-in.
  "use strict";

  /** @typedef {import("./wire").Summary} Summary */

  const POLL_MS = 2000;

  const { $, getToken, setToken, messageOf, setStatus } = pageKit;
  const { h, replace, age } = domKit;
  const { config, pool, enrolPage, Unauthorized, api, lastSummary, setLastSummary } = apiKit;
  const { closeExplain } = placementKit;
  const { renderTiles, renderStuck, renderDemand, renderJobs, renderLeases, renderEvents, countDown } = workKit;
  const { renderNodes, renderGpus, renderEnrolment } = fleetKit;
  const { refreshRuns } = runsKit;

  /** @type {ReturnType<typeof setTimeout> | null} */
  let timer = null;
  let clockOffset = 0; // server clock minus this tab's clock, in ms
  let receivedAt = 0;

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
        setLastSummary(data);
        render(data);
        // Its own request, drawn when it answers: a failure shows in its panel, not the others'.
        refreshRuns();
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

  // Lease countdowns and "updated … ago" move every second between polls.
  function tick() {
    if (!lastSummary()) return;
    countDown(Date.now() + clockOffset);
    const since = (Date.now() - receivedAt) / 1000;
    if (timer !== null || since < 5) setStatus(`live · updated ${age(since)}`);
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
    setLastSummary(null);
    schedule(0);
  });
  $("explain-close").addEventListener("click", closeExplain);
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
