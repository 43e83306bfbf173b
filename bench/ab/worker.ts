// The Worker of the interleaved S = 1 bench (bench/ab/s1.ab.test.ts): today's,
// plus the pool object of an earlier commit as BasePoolObject. That code is
// extracted to bench/.base/src by bench/shards-s1.mjs and imported under the
// `flashedge-base` alias (bench/vitest.ab.config.ts); tsc checks it against
// today's src (tsconfig.json `paths`), whose calls the bench uses are the same.

export { PoolObject as BasePoolObject } from "flashedge-base/pool/object";
export { default, PoolObject, PoolSummary } from "../../src/index";
