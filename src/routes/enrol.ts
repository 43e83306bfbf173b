// The enrolment page's routes (docs/protocol.md §9, "Enrolled machines"): `GET /enrol`
// (the pool `local`) and `GET /pools/{pool}/enrol` serve the self-contained
// page (src/enrol/page.ts) where an operator approves or denies a machine's
// `flashnode login`, its code prefilled from `?code=`. Mounted on the root
// app. The page holds no data, so serving it needs no credential; the device
// API it calls checks the operator's token. It is served exactly as the
// dashboard is: a CSP admitting only its own two inline blocks by hash and
// requests to this origin, never framed, never cached.

import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import { ENROL_HTML, ENROL_SCRIPT, ENROL_STYLE } from "../enrol/page";
import { documented, HTML_PAGE, parameter } from "../protocol/openapi-operations";
import type { AppEnv } from "./context";
import { contentSecurityPolicy, servePage } from "./dashboard";

const enrolPolicy = contentSecurityPolicy(ENROL_SCRIPT, ENROL_STYLE);

export const enrolPage = new Hono<AppEnv>()
  .get(
    "/enrol",
    describeRoute(
      documented({
        id: "enrolPage",
        tag: "enrolment",
        summary: "The page where an operator approves or denies a machine's code, for the pool `local`",
        description:
          "`?code=` prefills the code. The page holds no data; the device API it calls needs an operator token.",
        ok: { 200: HTML_PAGE },
      }),
    ),
    (c) => servePage(c, ENROL_HTML, enrolPolicy),
  )
  .get(
    "/pools/:pool/enrol",
    describeRoute(
      documented({
        id: "poolEnrolPage",
        tag: "enrolment",
        summary: "The page where an operator approves or denies a machine's code (`verification_uri`)",
        description:
          "`?code=` prefills the code. The page holds no data; the device API it calls needs an operator token.",
        parameters: [parameter("pool")],
        ok: { 200: HTML_PAGE },
        refusals: { 404: "The pool name is invalid." },
      }),
    ),
    (c) => servePage(c, ENROL_HTML, enrolPolicy),
  );
