// The coordinator's settings, checked before anything is served. A setting
// that cannot be read (tokens, docs/protocol.md §9; pool locations, docs/protocol.md §2; the claim
// hold, docs/protocol.md §5; retention, docs/protocol.md §12; tenant weights, worker losses and the
// retry-elsewhere window, docs/protocol.md §13; the artifact size limit, docs/protocol.md §7)
// refuses every request, /healthz included, with a 503 naming the problem
// and never a token: a coordinator that would serve the wrong pools, or
// serve them open, must not look healthy. Read once (src/rules/settings.ts);
// the pool object reads the same value.

import type { MiddlewareHandler } from "hono";
import { settingsOf } from "../rules/settings";
import type { AppEnv } from "./context";

export const refuseMisconfigured: MiddlewareHandler<AppEnv> = async (c, next) => {
  const read = settingsOf(c.env);
  if (!read.ok) return c.json({ detail: `coordinator refuses to serve: ${read.detail}` }, 503);
  c.set("settings", read.settings);
  await next();
};
