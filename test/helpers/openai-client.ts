/**
 * The official `openai` Python client (PyPI, pinned) for end-to-end tests of the
 * OpenAI-compatible frontend (#35), and a server started with it (--openai-port).
 */
import { spawn } from "node:child_process";
import { startServerProcess, type ServerProcess } from "./server-process.ts";
import { venvPython } from "./python-venv.ts";

const STARTED = /Started OpenAI-compatible HTTPService at [^\s:]+:(\d+)/;

/** The venv's python with the pinned client (made on first use, then cached). */
export const openaiPython = (): string => venvPython({ name: "openai", packages: ["openai==3.51.0"], imports: ["openai"] });

/** The server with an OpenAI listener on 127.0.0.1 (its `url`), and the HTTP (/v2) frontend's base URL. */
export async function startOpenAiServer(args: string[], opts: { timeoutMs?: number } = {}): Promise<{ server: ServerProcess; http: string }> {
  const server = await startServerProcess([...args, "--openai-port=0", "--openai-address=127.0.0.1"], { ...opts, started: STARTED });
  return { server, http: `http://127.0.0.1:${/Started HTTPService at [^\s:]+:(\d+)/.exec(server.log())![1]}` };
}

/** Runs `script` with `python`, the client made as `client` (base_url `url`/v1, no retries); its last stdout line is JSON. */
export function runOpenAiClient(python: string, url: string, script: string): Promise<any> {
  const prelude = `import json, sys, openai\nclient = openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key="unused", max_retries=0, timeout=60)\n`;
  return new Promise((resolve, reject) => {
    const child = spawn(python, ["-c", prelude + script, url], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`python exited ${code}:\n${err}${out}`));
      resolve(JSON.parse(out.trim().split("\n").at(-1)!));
    });
  });
}
