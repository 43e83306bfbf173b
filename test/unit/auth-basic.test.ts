// HTTP Basic credentials (docs/protocol.md §9): the password is a token, the user name its
// name. Clients that take credentials from a URL (httpx) send these.

import { describe, expect, it } from "vitest";
import { authenticate, presentedToken } from "../../src/rules/auth";
import { enrolledToken } from "../../src/rules/enrolment";

const config = {
  nodes: [
    { name: "n1", token: "tok-n1" },
    { name: "n2", token: "tok:with:colons" },
  ],
  operators: [{ name: "ops", token: "tok-ops" }],
};

/** What httpx sends for a URL's user name and password (UTF-8, then base64). */
function basic(user: string, password: string, scheme = "Basic"): string {
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  return `${scheme} ${btoa(String.fromCharCode(...bytes))}`;
}

describe("HTTP Basic credentials", () => {
  it.each([
    ["an operator by its name", basic("ops", "tok-ops"), { kind: "operator", name: "ops" }],
    ["a node by its node id", basic("n1", "tok-n1"), { kind: "node", nodeId: "n1" }],
    ["a token holding colons, split at the first one", basic("n2", "tok:with:colons"), { kind: "node", nodeId: "n2" }],
    ["the scheme in any case", basic("ops", "tok-ops", "bAsIc"), { kind: "operator", name: "ops" }],
  ])("identify %s", (_what, header, expected) => {
    expect(authenticate(config, header)).toEqual(expected);
  });

  it.each([
    ["the operator's token under another name", basic("admin", "tok-ops")],
    ["a node token under an operator's name", basic("ops", "tok-n1")],
    ["a node token under another node's id", basic("n2", "tok-n1")],
    ["an operator token under a node's id", basic("n1", "tok-ops")],
    ["a wrong password", basic("ops", "tok-nope")],
    ["an empty password", basic("ops", "")],
    ["an empty user name", basic("", "tok-ops")],
    ["no colon at all", `Basic ${btoa("opstok-ops")}`],
    ["a non-ASCII password", basic("ops", "tök-ops")],
    ["a user name with a control character", basic("o\u0001ps", "tok-ops")],
    ["base64 with a character outside the alphabet", "Basic b3BzOnRvay1vcHM*"],
    ["base64 missing its padding", `Basic ${btoa("ops:tok-ops1").replace(/=+$/, "")}`],
    ["base64 with stray bits in its padding", "Basic b3BzOnRvay1vcHN="],
    ["base64 that is not UTF-8", `Basic ${btoa("ops:\xff\xfe")}`],
    ["an empty Basic value", "Basic "],
    ["the scheme alone", "Basic"],
    ["two values", `${basic("ops", "tok-ops")} extra`],
  ])("refuse %s as invalid, never a throw", (_what, header) => {
    expect(authenticate(config, header)).toBe("invalid");
  });

  it("the stray-bits case decodes to a valid credential's text, whose canonical encoding is accepted", () => {
    expect(atob("b3BzOnRvay1vcHN=")).toBe("ops:tok-ops");
    expect(authenticate(config, "Basic b3BzOnRvay1vcHM=")).toEqual({ kind: "operator", name: "ops" });
  });

  it("an enrolled token counts only under the node id it names", () => {
    const token = enrolledToken("laptop-7", new Uint8Array(32).fill(7));
    expect(authenticate(config, basic("laptop-7", token))).toEqual({ kind: "enrolled", nodeId: "laptop-7", token });
    expect(authenticate(config, basic("laptop-8", token))).toBe("invalid");
    expect(authenticate(config, basic("ops", token))).toBe("invalid");
  });

  it("a node id that is not ASCII works as the user name", () => {
    const unicode = { nodes: [{ name: "nœud-1", token: "tok-u" }], operators: [] };
    expect(authenticate(unicode, basic("nœud-1", "tok-u"))).toEqual({ kind: "node", nodeId: "nœud-1" });
  });

  it("Bearer carries no user name", () => {
    expect(presentedToken("Bearer tok-ops")).toEqual({ token: "tok-ops", user: null });
    expect(presentedToken(basic("ops", "a:b"))).toEqual({ token: "a:b", user: "ops" });
  });
});
