/**
 * Run by shared-cache.test.ts under Bun: three worker threads look up and insert keys in
 * one small SharedResponseCache (about 60 entries of a keyspace of 400, so it evicts and
 * compacts all the time); every entry's bytes are made from its key, so a hit with other
 * bytes (another key's, or an entry half written or half moved) is counted wrong. Prints,
 * as JSON, the lookups, hits, inserts and wrong answers of all three, the cache's counters
 * and its size.
 */
import { isMainThread, parentPort, workerData, Worker } from "node:worker_threads";
import { SharedResponseCache } from "../../../src/cache/shared-cache.ts";
import type { Tensor } from "../../../src/core/tensor.ts";

const SIZE = 60 * 1_200;
const KEYS = 400;
const OPERATIONS = 40_000;

/** Key k's outputs: k's bytes in a tensor whose length also depends on k. */
function outputs(k: number): Tensor[] {
  const n = 500 + (k % 7) * 100;
  const data = new Uint8Array(n);
  for (let i = 0; i < n; i++) data[i] = (k * 31 + i) & 0xff;
  return [{ name: `out${k}`, datatype: "UINT8", shape: [n], data }];
}

function same(a: Tensor[], b: Tensor[]): boolean {
  if (a.length !== b.length) return false;
  for (let t = 0; t < a.length; t++) {
    const [x, y] = [a[t]!, b[t]!];
    if (x.name !== y.name || x.datatype !== y.datatype || x.shape.join() !== y.shape.join() || x.data.length !== y.data.length) return false;
    for (let i = 0; i < x.data.length; i++) if (x.data[i] !== y.data[i]) return false;
  }
  return true;
}

if (isMainThread) {
  const cache = SharedResponseCache.create(SIZE)!;
  const workers = [0, 1, 2].map((seed) => new Worker(new URL(import.meta.url), { workerData: { buffer: cache.buffer, seed } }));
  const results = await Promise.all(
    workers.map((w) => new Promise<{ lookups: number; hits: number; inserts: number; wrong: number }>((r) => w.once("message", r))),
  );
  await Promise.all(workers.map((w) => w.terminate()));
  const sum = (f: (r: (typeof results)[number]) => number) => results.reduce((n, r) => n + f(r), 0);
  console.log(
    JSON.stringify({
      lookups: sum((r) => r.lookups),
      hits: sum((r) => r.hits),
      inserts: sum((r) => r.inserts),
      wrong: sum((r) => r.wrong),
      counters: cache.counters(),
      size: SIZE,
    }),
  );
} else {
  const { buffer, seed } = workerData as { buffer: SharedArrayBuffer; seed: number };
  const cache = new SharedResponseCache(buffer);
  let state = seed + 1;
  const next = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0);
  let [lookups, hits, inserts, wrong] = [0, 0, 0, 0];
  for (let op = 0; op < OPERATIONS; op++) {
    // Skewed: a few keys are hot, so both hits and misses come often.
    const r = next() % 100;
    const k = r < 60 ? next() % 40 : next() % KEYS;
    lookups++;
    const hit = cache.lookup(`=key\0${k}`);
    if (hit) {
      hits++;
      if (!same(hit, outputs(k))) wrong++;
    } else if (cache.insert(`=key\0${k}`, outputs(k))) inserts++;
  }
  parentPort!.postMessage({ lookups, hits, inserts, wrong });
}
