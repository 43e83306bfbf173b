// The dashboard's stuck tasks (docs/protocol.md §11): pending tasks that no claimable
// node can take, with why. Read-only and bounded: the gate runs over at
// most STUCK_CLASSES_CHECKED requirement classes, and only the entries
// shown get a full explanation.

import type { StuckTasks } from "../../protocol/dashboard";
import { gateFor, type Membership } from "../../rules/placement";
import { summarizeCounts, summarizePlacement } from "../../rules/placement-summary";
import type { NodeAnswers } from "../../rules/shard-merge";
import { clip } from "./clipping";
import { claimableNodes, classHeadSql, judgeNode, pendingHeadSql, taskGate } from "./placement-report";

/** Requirement classes with pending tasks checked against the claimable nodes, earliest first. */
export const STUCK_CLASSES_CHECKED = 100;

/**
 * Pending tasks that no claimable node (online, accepting, not held back:
 * one a claim could lease to now) can take, grouped by job and requirement
 * class. The gate runs once per (class, node) and stops at the first node
 * that accepts, over at most STUCK_CLASSES_CHECKED classes (the
 * earliest queued); only the entries shown get a full explanation. In a
 * sharded pool `pool` holds every shard's nodes' answers (docs/sharding.md
 * §10): a class is stuck only if no claimable node of any shard accepts it.
 */
export function stuckTasks(sql: SqlStorage, now: number, limit: number, membership: Membership, pool?: NodeAnswers) {
  const { nodes: claimable, views } = claimableNodes(sql, now, membership);
  // Classes with pending tasks (the classes_queued index), each head an index seek.
  const classes = sql
    .exec<{ class_id: number; class_key: string; requirement: string; head: number }>(
      `SELECT c.class_id, c.class_key, c.requirement,
              ${classHeadSql("c")} AS head
       FROM classes c WHERE c.queued = 1 ORDER BY head LIMIT ?`,
      STUCK_CLASSES_CHECKED,
    )
    .toArray();
  const pendingClasses = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM classes WHERE queued = 1").one().n;
  const items: StuckTasks[] = [];
  const byJob = new Map<string, StuckTasks>();
  const names = new Map<string, string | null>();
  let entries = 0;
  let pending = 0;
  for (const c of classes) {
    const answer = pool?.answers[c.class_key];
    // A class the pool's answers miss (it appeared since they were asked) is judged by this shard's nodes.
    const taken =
      answer !== undefined ? answer.claimable : views.some((view) => gateFor(JSON.parse(c.requirement)).eligible(view));
    if (taken) continue;
    for (const r of sql.exec<{ job_id: string; n: number; head: number }>(
      `SELECT q.job_id, q.pending AS n, ${pendingHeadSql("q")} AS head
       FROM queue_classes q WHERE q.class_id = ? AND q.queued = 1 ORDER BY head`,
      c.class_id,
    )) {
      entries++;
      pending += r.n;
      const known = byJob.get(r.job_id);
      if (known) known.pending += r.n;
      const shown = items.length < limit;
      if (known && !shown) continue;
      // Explained from the earliest such task's own payload, so the reason
      // names what the submitter wrote. Explanations are bounded too: the
      // entries shown, and the first entry of at most `limit` jobs.
      const task = sql
        .exec<{ task_id: string; payload: string }>("SELECT task_id, payload FROM tasks WHERE seq = ?", r.head)
        .one();
      let summary: string | null = null;
      if (shown || byJob.size < limit) {
        // In a sharded pool, why every shard's claimable nodes refuse the class.
        if (answer !== undefined) summary = summarizeCounts(answer.refusals, { scope: "online" }).summary;
        else {
          const gate = taskGate(JSON.parse(task.payload));
          const refusals = claimable.map((node, i) => judgeNode(gate, node, views[i], now, membership).refusal);
          summary = summarizePlacement(refusals, { scope: "online" }).summary;
        }
      }
      const entry: StuckTasks = {
        job_id: r.job_id,
        job_name: jobName(sql, names, r.job_id),
        task_id: clip(task.task_id),
        pending: r.n,
        summary,
      };
      if (shown) items.push(entry);
      if (!known) byJob.set(r.job_id, { ...entry });
    }
  }
  return { items, byJob, entries, pending, classesUnchecked: Math.max(0, pendingClasses - classes.length) };
}

function jobName(sql: SqlStorage, cache: Map<string, string | null>, jobId: string): string | null {
  if (!cache.has(jobId)) {
    const row = sql
      .exec<{ name: string | null }>(
        "SELECT json_extract(spec, '$.metadata.name') AS name FROM jobs WHERE job_id = ?",
        jobId,
      )
      .toArray()[0];
    cache.set(jobId, row?.name == null ? null : clip(row.name));
  }
  return cache.get(jobId) ?? null;
}
