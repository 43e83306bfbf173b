// Settings that are secrets (docs/protocol.md §9) and so never appear in wrangler.toml's
// [vars], which `wrangler types` reads. Set with `wrangler secret put` in
// production and in `.dev.vars` locally; each may be absent.
declare namespace Cloudflare {
  interface Env {
    FLASHML_NODE_TOKENS?: string;
    FLASHML_OPERATOR_TOKENS?: string;
    FLASHML_JOIN_CODE?: string;
    // Not a secret, but configured beside the node tokens it qualifies (docs/protocol.md §14).
    FLASHML_NODE_OWNERS?: string;
  }
}
