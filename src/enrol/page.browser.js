// @ts-check
// The enrolment page's script (docs/protocol.md §9, "Enrolled machines"): an operator
// looks up the code a machine's `flashnode login` shows, sees that machine
// and approves or denies it, through the pool's device API
// (`GET …/v1alpha1/device/pending`, `POST …/device/approve` and `/deny`). The
// Worker inlines this file byte for byte into the page, whose CSP admits it by
// its sha256 hash; it is a classic script, so everything stays inside the
// function below.
//
// It must never load anything from another origin, and never turn data into
// markup: node id, hostname and platform are chosen by whoever asked for a
// code, and reach the DOM through textContent only. The operator's token is
// kept in this tab only (sessionStorage), under the dashboard's key, so one
// sign-in in a tab serves both pages. The pool-name rule comes from the
// page's `flashedge-config` meta tag, filled by the Worker from its one
// definition.
//
// Type-checked as a browser script: `tsc --noEmit -p tsconfig.dashboard.json`.

/**
 * @typedef {import("./wire").EnrolConfig} EnrolConfig
 * @typedef {import("./wire").PendingEnrolment} PendingEnrolment
 * @typedef {Node | string} Part
 * @typedef {{ status: number, body: unknown }} Answer
 */

(() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: the page runs this as a classic script, where strict mode is opt-in.
  "use strict";

  const NOT_FOUND = "No pending request with this code (it may have expired, been decided, or never existed).";
  const CODE_MAX = 64;

  const { $, getToken, setToken, messageOf, setStatus, plural } = pageKit;
  const config = /** @type {EnrolConfig} */ (pageKit.readConfig());
  const poolName = new RegExp(config.pool_name.source, config.pool_name.flags);
  const segment = /^\/pools\/([^/]+)\/enrol$/.exec(location.pathname)?.[1];
  const match = segment !== undefined && poolName.test(segment) ? segment : null;
  const pool = match ?? "local";
  const base = match ? `/pools/${match}/v1alpha1` : "/v1alpha1";

  /** The request on screen; Approve and Deny send its code as the server spells it. @type {PendingEnrolment | null} */
  let shown = null;
  /** Bumped by every lookup, so a slow answer never overwrites a newer one. */
  let lookups = 0;

  /**
   * @template {typeof HTMLElement} T
   * @param {string} id
   * @param {T} type
   * @returns {InstanceType<T>}
   */
  function element(id, type) {
    const node = $(id);
    if (!(node instanceof type)) throw new Error(`#${id} is not a ${type.name}`);
    return /** @type {InstanceType<T>} */ (node);
  }

  const tokenInput = element("token", HTMLInputElement);
  const codeInput = element("code", HTMLInputElement);
  const ownerInput = element("owner", HTMLInputElement);
  const approveButton = element("approve", HTMLButtonElement);
  const denyButton = element("deny", HTMLButtonElement);

  /**
   * A code as the operator may type it: any case, with or without spaces and dashes.
   * @param {string} code
   */
  function normalise(code) {
    return code.toUpperCase().replace(/[\s-]+/g, "");
  }

  /**
   * The server's `detail` when it is a sentence, else the status.
   * @param {Answer} answer
   */
  function detailOf(answer) {
    const body = answer.body;
    return typeof body === "object" && body !== null && "detail" in body && typeof body.detail === "string"
      ? body.detail
      : `HTTP ${answer.status}`;
  }

  /**
   * A call to this pool's device API with the tab's token. Resolves with the
   * status and the JSON answer (null when there is none) whatever the status;
   * rejects only when the request could not be made.
   * @param {"GET" | "POST"} method
   * @param {string} path
   * @param {unknown} [body]
   * @returns {Promise<Answer>}
   */
  function request(method, path, body) {
    /** @type {Record<string, string>} */
    const headers = { accept: "application/json" };
    const token = getToken();
    if (token) headers.authorization = `Bearer ${token}`;
    /** @type {RequestInit} */
    const init = { method, headers, cache: "no-store", credentials: "omit", redirect: "error" };
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(base + path, init).then((r) =>
      r
        .json()
        .catch(() => null)
        .then((/** @type {unknown} */ json) => ({ status: r.status, body: json })),
    );
  }

  /**
   * @param {string} id
   * @param {Part[]} parts
   * @param {"" | "ok" | "error"} [kind]
   */
  function say(id, parts, kind = "") {
    const node = $(id);
    node.replaceChildren(...parts);
    node.className = kind ? `message ${kind}` : "message";
  }

  /**
   * An instant as the server wrote it, and how far it is from now.
   * @param {string} iso
   * @param {boolean} deadline
   * @returns {Part[]}
   */
  function instant(iso, deadline) {
    const at = Date.parse(iso);
    if (Number.isNaN(at)) return [iso];
    const minutes = Math.round((at - Date.now()) / 60_000);
    let relative;
    if (deadline && at <= Date.now()) relative = "expired";
    else if (minutes === 0) relative = deadline ? "in under a minute" : "just now";
    else relative = minutes > 0 ? `in ${minutes} min` : `${-minutes} min ago`;
    const hint = document.createElement("span");
    hint.className = "muted";
    hint.textContent = ` (${relative})`;
    return [iso, hint];
  }

  /**
   * Draws the request an operator is deciding on, or hides the panel.
   * @param {PendingEnrolment | null} entry
   */
  function showMachine(entry) {
    shown = entry;
    $("machine").hidden = entry === null;
    say("outcome", []);
    decidable(entry !== null);
    if (entry === null) return;
    $("m-node").textContent = entry.node_id;
    $("m-hostname").textContent = entry.hostname;
    $("m-platform").textContent = entry.platform;
    $("m-requested-at").replaceChildren(...instant(entry.requested_at, false));
    $("m-requested-from").textContent = entry.requested_from ?? "unknown";
    $("m-expires-at").replaceChildren(...instant(entry.expires_at, true));
  }

  /** @param {boolean} on whether Approve and Deny may be pressed */
  function decidable(on) {
    approveButton.disabled = !on;
    denyButton.disabled = !on;
  }

  /**
   * No usable token: forget it and ask for one. The next lookup starts when it is entered.
   * @param {string} problem
   */
  function askForToken(problem) {
    setToken("");
    showMachine(null);
    $("open").hidden = true;
    $("auth").hidden = false;
    $("auth-error").textContent = problem;
    setStatus("waiting for an operator token", true);
    tokenInput.focus();
  }

  /** @param {number} status */
  function refusal(status) {
    return status === 403
      ? "That token was refused: only an operator token may approve or deny a machine."
      : "That token was refused.";
  }

  /** @param {unknown} entry */
  function isPending(entry) {
    return typeof entry === "object" && entry !== null && "user_code" in entry && typeof entry.user_code === "string";
  }

  /**
   * Finds the typed code among the pool's pending requests. Without a code it
   * only checks the token, so the page asks for one before anything else.
   * @param {boolean} asked whether the operator pressed Look up
   */
  function lookUp(asked) {
    const wanted = normalise(codeInput.value);
    const mine = ++lookups;
    say("lookup-message", []);
    setStatus("looking up…");
    request("GET", "/device/pending").then(
      (answer) => {
        if (mine !== lookups) return;
        if (answer.status === 401 || answer.status === 403) {
          askForToken(getToken() ? refusal(answer.status) : "");
          return;
        }
        if (answer.status === 400) {
          // An open pool: anyone may join, so there is nothing to approve.
          showMachine(null);
          $("auth").hidden = true;
          $("lookup").hidden = true;
          $("open").hidden = false;
          $("open-detail").textContent = detailOf(answer);
          setStatus("open pool");
          return;
        }
        if (answer.status !== 200 || !Array.isArray(answer.body)) {
          setStatus(`lookup failed: ${detailOf(answer)}`, true);
          return;
        }
        $("auth").hidden = true;
        $("open").hidden = true;
        $("lookup").hidden = false;
        const pending = /** @type {PendingEnrolment[]} */ (answer.body.filter(isPending));
        setStatus(`${plural(pending.length, "machine")} waiting`);
        if (!wanted) {
          showMachine(null);
          if (asked) say("lookup-message", ["Enter the code ", code("flashnode login"), " shows."], "error");
          return;
        }
        const entry = pending.find((e) => normalise(e.user_code) === wanted) ?? null;
        showMachine(entry);
        if (entry === null) say("lookup-message", [NOT_FOUND], "error");
        else codeInput.value = entry.user_code;
      },
      (err) => {
        if (mine === lookups) setStatus(`lookup failed: ${messageOf(err)}`, true);
      },
    );
  }

  /** @param {string} text */
  function code(text) {
    const node = document.createElement("code");
    node.textContent = text;
    return node;
  }

  /**
   * Approves or denies the request on screen, by the code the server listed it under.
   * @param {"approve" | "deny"} decision
   */
  function decide(decision) {
    const entry = shown;
    if (entry === null) return;
    decidable(false);
    say("outcome", [decision === "approve" ? "Approving…" : "Denying…"]);
    // An owner left blank is the machine's own node id (docs/protocol.md §14).
    const owner = ownerInput.value.trim();
    const body =
      decision === "approve" && owner !== "" ? { user_code: entry.user_code, owner } : { user_code: entry.user_code };
    request("POST", `/device/${decision}`, body).then(
      (answer) => {
        if (shown !== entry) return; // the operator moved on to another code
        if (answer.status === 401 || answer.status === 403) {
          askForToken(refusal(answer.status));
          return;
        }
        if (answer.status === 404) {
          say("outcome", [NOT_FOUND], "error");
          return; // decided, expired or gone: the buttons stay off
        }
        if (answer.status !== 200) {
          say("outcome", [`Could not ${decision}: ${detailOf(answer)}`], "error");
          decidable(true);
          return;
        }
        if (decision === "deny") {
          say("outcome", ["Denied."], "ok");
          return;
        }
        const body = answer.body;
        const nodeId =
          typeof body === "object" && body !== null && "node_id" in body && typeof body.node_id === "string"
            ? body.node_id
            : entry.node_id;
        say("outcome", ["Approved: ", nodeId, " can now finish ", code("flashnode login"), "."], "ok");
      },
      (err) => {
        if (shown !== entry) return;
        say("outcome", [`Could not ${decision}: ${messageOf(err)}`], "error");
        decidable(true);
      },
    );
  }

  // ---- wiring ----------------------------------------------------------------

  $("auth-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = tokenInput.value.trim();
    tokenInput.value = "";
    if (!value) return;
    // A header can carry only this; anything else would make fetch throw.
    if (!/^[\x21-\x7e]+$/.test(value)) {
      $("auth-error").textContent = "A token is printable ASCII without spaces.";
      return;
    }
    setToken(value);
    lookUp(false);
  });
  $("code-form").addEventListener("submit", (event) => {
    event.preventDefault();
    lookUp(true);
  });
  approveButton.addEventListener("click", () => decide("approve"));
  denyButton.addEventListener("click", () => decide("deny"));
  $("forget-token").addEventListener("click", () => {
    setToken("");
    lookUp(false);
  });

  $("pool-name").textContent = pool;
  document.title = `flashedge · ${pool} · enrol a machine`;
  $("forget-token").hidden = !getToken();
  codeInput.value = (new URLSearchParams(location.search).get("code") ?? "").slice(0, CODE_MAX);
  showMachine(null);
  lookUp(false);
})();
