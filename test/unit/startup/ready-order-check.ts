/**
 * Run under Bun by ready-order.test.ts (the HTTP frontend runs on worker threads only under
 * Bun). The server starts on an empty repository with 2 HTTP worker threads, played here by
 * scripted stand-ins for Web Workers: the first says it listens and at once relays a client's
 * GET /v2/health/ready, as a real one does with a client waiting on the port; the second says
 * it listens only once that answer has come. Prints one JSON line: the answers' statuses
 * and the workers made.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "../../../src/options.ts";
import { startServer } from "../../../src/startup/start.ts";
import { configureLog } from "../../../src/core/logger.ts";

type Message = { t: string; id?: number; status?: number; port?: number };

const answers: number[] = [];
let answered!: () => void;
const firstAnswered = new Promise<void>((resolve) => (answered = resolve));
let made = 0;

class ScriptedWorker {
  onmessage: ((e: MessageEvent) => void) | null = null;
  onerror: ((e: ErrorEvent) => void) | null = null;
  readonly #n = made++;

  postMessage(batch: Message[]): void {
    for (const m of batch) {
      if (m.t === "start" && this.#n === 0)
        this.#post([{ t: "listening", port: 41000 }, { t: "http", id: 1, method: "GET", path: "/v2/health/ready", headers: [] } as Message]);
      else if (m.t === "start")
        void firstAnswered.then(() => {
          this.#post([{ t: "listening", port: 41000 }]);
        });
      else if (m.t === "reply" && m.id === 1) {
        answers.push(m.status!);
        answered();
      } else if (m.t === "stop") this.#post([{ t: "stopped" }]);
    }
  }

  #post(batch: Message[]): void {
    setTimeout(() => this.onmessage?.({ data: batch } as MessageEvent), 1);
  }

  addEventListener(): void {}
  terminate(): void {}
}

(globalThis as { Worker: unknown }).Worker = ScriptedWorker;
const repo = mkdtempSync(join(tmpdir(), "nereid-ready-order-"));
const parsed = parseArgs([`--model-repository=${repo}`, "--http-port=0", "--http-thread-count=2", "--allow-grpc=false", "--allow-metrics=false"]);
if (parsed.kind !== "run") throw new Error(`unexpected ${parsed.kind}`);
configureLog({ info: false });
const running = await startServer(parsed.options);
await running.shutdown();
rmSync(repo, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify({ answers, workers: made })}\n`);
process.exit(0);
