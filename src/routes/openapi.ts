// GET /openapi.json: the OpenAPI 3.1 description of this Worker's API.
// Public like /healthz (it describes routes and holds no pool data), so it is
// mounted on the root app, outside the identity middleware.

import { Hono } from "hono";
import { openApiDocument } from "../protocol/openapi";
import type { AppEnv } from "./context";

// The document depends only on the code: built once per isolate, on first use.
let text: string | undefined;

export const openapi = new Hono<AppEnv>().get("/", (c) => {
  text ??= JSON.stringify(openApiDocument());
  return c.body(text, 200, { "content-type": "application/json; charset=utf-8" });
});
