/** Triton's own Python client (tritonclient[http,grpc], pinned) in a cached virtual environment (python-venv.ts). */
import { venvPython } from "./python-venv.ts";

export { SYSTEM_PYTHON } from "./python-venv.ts";
/** The tritonclient release the tests use (PyPI). */
export const TRITONCLIENT_VERSION = "2.73.0";

/** The venv's python, with tritonclient importable; makes the venv first when the cache lacks it. */
export const tritonclientPython = (): string =>
  venvPython({
    name: "tritonclient",
    packages: [`tritonclient[http,grpc]==${TRITONCLIENT_VERSION}`],
    imports: ["numpy", "tritonclient.http", "tritonclient.grpc"],
  });
