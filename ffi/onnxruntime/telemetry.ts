/**
 * @module ONNX Runtime's telemetry switch, apart from the binding, so that the CLI can
 * set it before it starts the frontends' threads and evaluates the rest of the server
 * (src/startup/early-workers.ts, src/main.ts).
 */
import { defaultNativeEnv } from "../libc/env.ts";

/**
 * ORT 1.30 otherwise starts its telemetry at CreateEnv: it leaves /tmp/mat-debug-<pid>.log
 * and a database under ~/.cache/Microsoft. It reads the switch with getenv(3), which Bun's
 * process.env does not reach, hence setenv(3). The server calls this before it starts any
 * thread of its own (setenv may move the C environment under another thread's getenv);
 * OrtEnvironment.get() calls it again for the in-process API (a no-op once done).
 */
export function disableOrtTelemetry(): void {
  defaultNativeEnv("ORT_DISABLE_TELEMETRY", "1");
}
