// The enrolment page's routes (SPEC §9, "Enrolled machines"): `GET /enrol`
// (the pool `local`) and `GET /pools/{pool}/enrol` serve the self-contained
// page (src/enrol/page.ts) where an operator approves or denies a machine's
// `flashnode login`, its code prefilled from `?code=`. Mounted on the root
// app. The page holds no data, so serving it needs no credential; the device
// API it calls checks the operator's token. It is served exactly as the
// dashboard is: a CSP admitting only its own two inline blocks by hash and
// requests to this origin, never framed, never cached.

import { Hono } from "hono";
import { ENROL_HTML, ENROL_SCRIPT, ENROL_STYLE } from "../enrol/page";
import type { AppEnv } from "./context";
import { contentSecurityPolicy, servePage } from "./dashboard";

const enrolPolicy = contentSecurityPolicy(ENROL_SCRIPT, ENROL_STYLE);

export const enrolPage = new Hono<AppEnv>()
  .get("/enrol", (c) => servePage(c, ENROL_HTML, enrolPolicy))
  .get("/pools/:pool/enrol", (c) => servePage(c, ENROL_HTML, enrolPolicy));
