/**
 * @module The model side of custom metrics (`args.metrics`, docs/models/typescript.md): it
 * speaks the message protocol of ../custom-metrics.ts, the one the Python stub speaks. A
 * main-thread instance hands each message to its scope directly; a worker-thread
 * instance posts it to the main thread (worker-entry.ts), whose scope answers by message.
 * Self-contained (plain Errors, no server imports): the worker's bundle carries it.
 */
import type { Metric, MetricFamily, MetricKind, ModelMetrics } from "./api.ts";

type Message = { t: string; [key: string]: any };

const KINDS: readonly MetricKind[] = ["counter", "gauge", "histogram"];

const misuse = (message: string) => Object.assign(new Error(message), { code: "INVALID_ARG" });

/** A model's `metrics` over `send`; `receive` takes the scope's `mval` replies. */
export function metricsClient(send: (m: Message) => void): { api: ModelMetrics; receive(m: Message): void } {
  const waiting = new Map<number, { resolve: (v: number) => void; reject: (e: Error) => void }>();
  let nextCall = 0;
  let nextId = 0;
  const call = (m: Message) =>
    new Promise<number>((resolve, reject) => {
      const c = nextCall++;
      waiting.set(c, { resolve, reject });
      send({ ...m, c });
    });

  function metric(family: string, kind: MetricKind, id: number): Metric {
    const op = (name: string, allowed: readonly MetricKind[], v: number) => {
      if (!allowed.includes(kind)) throw misuse(`metric family '${family}' is a ${kind}: ${name}() is for ${allowed.join(" and ")} metrics`);
      if (typeof v !== "number" || !Number.isFinite(v)) throw misuse(`${name}() needs a finite number, not ${String(v)}`);
      if (name === "increment" && kind === "counter" && v < 0) throw misuse(`a counter cannot be decreased (increment(${v}))`);
      send({ t: "mop", id, op: name === "increment" ? "inc" : name, v });
    };
    return {
      increment: (v) => op("increment", ["counter", "gauge"], v),
      set: (v) => op("set", ["gauge"], v),
      observe: (v) => op("observe", ["histogram"], v),
      value: () => {
        if (kind === "histogram") return Promise.reject(misuse(`metric family '${family}' is a histogram: value() is for counter and gauge metrics`));
        return call({ t: "mget", id });
      },
    };
  }

  const api: ModelMetrics = {
    async family(options) {
      const { name, description, kind } = options ?? ({} as never);
      const k = KINDS.indexOf(kind);
      if (k < 0) throw misuse(`metric family kind must be one of ${KINDS.join(", ")}, not '${String(kind)}'`);
      const f = nextId++;
      await call({ t: "mfam", f, n: String(name), d: String(description ?? ""), k });
      const family: MetricFamily = {
        name: String(name),
        kind,
        async metric(o) {
          const labels = o?.labels ?? {};
          if (typeof labels !== "object" || Object.values(labels).some((v) => typeof v !== "string"))
            throw misuse("metric labels must be an object of strings");
          const id = nextId++;
          await call({ t: "mnew", f, id, l: labels, b: o?.buckets });
          return metric(family.name, kind, id);
        },
      };
      return family;
    },
  };

  return {
    api,
    receive(m) {
      const w = waiting.get(m.c);
      if (!w) return;
      waiting.delete(m.c);
      if (typeof m.e === "string") w.reject(misuse(m.e));
      else w.resolve(Number(m.v));
    },
  };
}
