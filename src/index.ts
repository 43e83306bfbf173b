import { Hono } from "hono";
export { PoolObject } from "./pool/object";

const app = new Hono<{ Bindings: Env }>();
app.get("/healthz", (c) => c.json({ status: "ok" }));
export default app;
