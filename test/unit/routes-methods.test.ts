import { describe, expect, it } from "vitest";
import { allowedMethods } from "../../src/routes/methods";

const ROUTES = [
  { method: "ALL", path: "/v1alpha1/*" },
  { method: "POST", path: "/v1alpha1/leases/claim" },
  { method: "GET", path: "/v1alpha1/jobs" },
  { method: "POST", path: "/v1alpha1/jobs" },
  { method: "GET", path: "/v1alpha1/jobs/:job_id" },
  { method: "POST", path: "/v1alpha1/jobs/:job_id/cancel" },
  { method: "PUT", path: "/v1alpha1/artifacts/*" },
  { method: "GET", path: "/v1alpha1/artifacts/*" },
  { method: "GET", path: "/" },
  { method: "GET", path: "/pools/:pool/" },
];

describe("the methods a path is served under", () => {
  it.each([
    ["/v1alpha1/leases/claim", ["POST"]],
    ["/v1alpha1/jobs", ["GET", "HEAD", "POST"]],
    ["/v1alpha1/jobs/abc", ["GET", "HEAD"]],
    ["/v1alpha1/jobs/abc/cancel", ["POST"]],
    ["/v1alpha1/artifacts/a/b/c", ["GET", "HEAD", "PUT"]],
    ["/v1alpha1/artifacts", ["GET", "HEAD", "PUT"]],
    ["/", ["GET", "HEAD"]],
    ["/pools/p/", ["GET", "HEAD"]],
  ])("%s is served under %j", (path, methods) => {
    expect(allowedMethods(ROUTES, path)).toEqual(methods);
  });

  it.each([
    ["a path only middleware covers", "/v1alpha1/nodes"],
    ["a trailing slash the route does not have", "/v1alpha1/jobs/"],
    ["an empty parameter", "/v1alpha1/jobs//cancel"],
    ["one segment too many", "/v1alpha1/jobs/a/b"],
    ["a prefix of a route", "/v1alpha1/leases"],
    ["regex characters in the path", "/v1alpha1/jobs.*"],
  ])("%s is served under no method (a 404)", (_name, path) => {
    expect(allowedMethods(ROUTES, path)).toEqual([]);
  });
});
