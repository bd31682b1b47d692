/**
 * @module setenv(3) for what a native library reads with getenv(3). Node's process.env
 * writes reach the C environment; Bun's do not, so a variable meant for ONNX Runtime
 * (ORT_DISABLE_TELEMETRY) is also set through the C library itself.
 */
import { loadLibrary, type KoffiFunc } from "../load.ts";

let setenv: KoffiFunc<(name: string, value: string, overwrite: number) => number> | null | undefined;
/** Names this thread has set already: a later call changes nothing and makes no native call. */
const done = new Set<string>();

/**
 * Sets `name` in both process.env and the C environment unless it is already set in
 * either (a value the user exported wins). Returns the value now in force.
 */
export function defaultNativeEnv(name: string, value: string): string {
  const given = process.env[name];
  if (done.has(name)) return given ?? value;
  if (given !== undefined) value = given;
  else process.env[name] = value;
  if (setenv === undefined) {
    try {
      setenv = loadLibrary("the C library", ["libc.so.6"]).lib.func("int setenv(const char *name, const char *value, int overwrite)");
    } catch {
      setenv = null;
    }
  }
  setenv?.(name, value, 0);
  done.add(name);
  return value;
}
