// @ts-check
// The operator's commands on machines: list nodes, decide enrolment codes
// (docs/protocol.md §9), revoke a credential, release a held-back node (docs/protocol.md §13) and
// assign a node's team pools. Every one is one route; the coordinator
// decides who may, and its refusal is reported as it gave it.

import { CliError, EXIT } from "./errors.mjs";
import { table } from "./render.mjs";

/**
 * @typedef {import("./jobs.mjs").Context} Context
 * @typedef {import("../src/protocol/device").PendingEnrolment} PendingEnrolment
 * @typedef {{ node_id: string, owner: string, status: string, online: boolean, last_heartbeat_age_s: number,
 *   accepted_tasks: number, consecutive_failures: number, held_until: string | null, distrusted: string | null }} ServedNode
 */

/** @param {string} id */
const seg = (id) => encodeURIComponent(id);

/**
 * @param {Context} ctx
 * @param {{ limit?: number }} options
 */
export async function nodes(ctx, { limit }) {
  const all = /** @type {ServedNode[]} */ (await ctx.api.list("/nodes", limit));
  if (ctx.json) return ctx.print(JSON.stringify(all));
  ctx.print(
    table(
      ["node", "owner", "status", "online", "seen", "accepted", "failures", "held until", "distrusted"],
      all.map((n) => [
        n.node_id,
        n.owner,
        n.status,
        n.online ? "yes" : "no",
        `${Math.round(n.last_heartbeat_age_s)} s ago`,
        n.accepted_tasks,
        n.consecutive_failures,
        n.held_until,
        n.distrusted,
      ]),
    ),
  );
}

/** @param {Context} ctx */
export async function codes(ctx) {
  const pending = /** @type {PendingEnrolment[]} */ (await ctx.api.call("GET", "/device/pending"));
  if (ctx.json) return ctx.print(JSON.stringify(pending));
  if (pending.length === 0) return ctx.print("no codes are waiting");
  ctx.print(
    table(
      ["code", "node", "hostname", "platform", "requested", "from", "expires", "replaces"],
      pending.map((p) => [
        p.user_code,
        p.node_id,
        p.hostname,
        p.platform,
        p.requested_at,
        p.requested_from,
        p.expires_at,
        p.replaces_credential ? "yes: its current credential" : "no",
      ]),
    ),
  );
}

/**
 * @param {Context} ctx
 * @param {string} code
 * @param {{ owner?: string }} options
 */
export async function approve(ctx, code, { owner }) {
  const body = owner === undefined ? { user_code: code } : { user_code: code, owner };
  const answer = /** @type {{ node_id: string, owner?: string }} */ (
    await ctx.api.call("POST", "/device/approve", body)
  );
  if (ctx.json) return ctx.print(JSON.stringify(answer));
  ctx.print(
    `approved ${code}: node ${answer.node_id}${answer.owner ? ` (owner ${answer.owner})` : ""} may now redeem it`,
  );
}

/**
 * @param {Context} ctx
 * @param {string | undefined} code
 * @param {{ all?: boolean }} options
 */
export async function deny(ctx, code, { all }) {
  if (Boolean(all) === (code !== undefined)) {
    throw new CliError("deny takes one CODE or --all, not both and not neither", EXIT.usage);
  }
  const answer = /** @type {{ node_id?: string, count?: number }} */ (
    await ctx.api.call("POST", "/device/deny", all ? { all: true } : { user_code: code })
  );
  if (ctx.json) return ctx.print(JSON.stringify(answer));
  ctx.print(all ? `denied ${answer.count ?? 0} waiting code(s)` : `denied ${code} (node ${answer.node_id})`);
}

/**
 * @param {Context} ctx
 * @param {string} node
 */
export async function revoke(ctx, node) {
  const answer = await ctx.api.call("DELETE", `/nodes/${seg(node)}/credential`);
  if (ctx.json) return ctx.print(JSON.stringify(answer));
  ctx.print(`revoked the credential of ${node}: its next request is refused, its leases ended`);
}

/**
 * @param {Context} ctx
 * @param {string} node
 */
export async function release(ctx, node) {
  const answer = await ctx.api.call("POST", `/nodes/${seg(node)}/release`);
  if (ctx.json) return ctx.print(JSON.stringify(answer));
  ctx.print(`released ${node}: its failures are cleared and its next claim is served`);
}

/**
 * Sets the team pools a node is a member of (docs/protocol.md §9, gate 6), replacing what it had.
 * @param {Context} ctx
 * @param {string} node
 * @param {string[]} pools
 * @param {{ clear?: boolean }} options
 */
export async function assignPools(ctx, node, pools, { clear }) {
  if (Boolean(clear) === pools.length > 0) {
    throw new CliError("pools takes NODE and one or more POOLs, or NODE --clear", EXIT.usage);
  }
  const answer = /** @type {{ pools?: unknown }} */ (
    await ctx.api.call("PUT", `/nodes/${seg(node)}/pools`, { pools: clear ? [] : pools })
  );
  if (ctx.json) return ctx.print(JSON.stringify(answer));
  const now = Array.isArray(answer?.pools) ? answer.pools : pools;
  ctx.print(now.length ? `${node} is in the pools: ${now.join(", ")}` : `${node} is in no team pool`);
}
