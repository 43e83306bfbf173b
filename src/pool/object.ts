import { DurableObject } from "cloudflare:workers";
export class PoolObject extends DurableObject<Env> {
  ping(): string { return "pong"; }
}
