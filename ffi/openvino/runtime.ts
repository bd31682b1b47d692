/**
 * @module OpenVinoRuntime: one loaded libopenvino_c, its version and the
 * ov_element_type_e table that version uses. Loading refuses a library older than the
 * oldest known table (types.ts) with the reason, as a LibraryLoadError like a missing
 * one. The library stays loaded until the process ends (OpenVINO's plugins are
 * libraries it loads itself).
 */
import { getKoffi, loadLibrary, LibraryLoadError, type Unusable } from "../load.ts";
import { declareOpenVino, type OvApi, type OvVersionStruct } from "./symbols.ts";
import { check } from "./status.ts";
import { ElementTypes, elementTypeTableFor } from "./types.ts";
import { openVinoLibraryCandidates } from "./library.ts";

const loaded = new Map<string, OpenVinoRuntime>();

export class OpenVinoRuntime {
  readonly api: OvApi;
  readonly path: string;
  /** ov_get_openvino_version()'s buildNumber, e.g. "2025.1.0-18503-6fec06580ab-releases/2025/1". */
  readonly version: string;
  readonly elementTypes: ElementTypes;

  private constructor(api: OvApi, path: string, version: string, elementTypes: ElementTypes) {
    this.api = api;
    this.path = path;
    this.version = version;
    this.elementTypes = elementTypes;
  }

  /**
   * The runtime for `explicitLibrary` (else NEREID_OPENVINO_LIBRARY, else the search in
   * library.ts), loaded once per choice; a failed load is not remembered.
   */
  static get(explicitLibrary?: string): OpenVinoRuntime {
    const key = explicitLibrary || process.env.NEREID_OPENVINO_LIBRARY || "";
    let rt = loaded.get(key);
    if (!rt) {
      rt = OpenVinoRuntime.load(openVinoLibraryCandidates(explicitLibrary));
      loaded.set(key, rt);
    }
    return rt;
  }

  /** Loads the first candidate that opens, declares the API and reads the version (uncached). */
  static load(candidates: readonly (string | Unusable)[]): OpenVinoRuntime {
    const { lib, path } = loadLibrary("OpenVINO's C library (libopenvino_c.so)", candidates);
    const api = declareOpenVino(lib, path);
    const version = readVersion(api);
    try {
      return new OpenVinoRuntime(api, path, version, new ElementTypes(elementTypeTableFor(version)));
    } catch (err) {
      throw new LibraryLoadError(`${path}: ${(err as Error).message}`, { library: "OpenVINO", call: "ov_get_openvino_version", cause: err });
    }
  }
}

function readVersion(api: OvApi): string {
  const v: Partial<OvVersionStruct> = {};
  check(api, api.ov_get_openvino_version(v), "ov_get_openvino_version");
  const version = v as OvVersionStruct;
  try {
    return version.buildNumber ? (getKoffi().decode(version.buildNumber, "char", -1) as string) : "";
  } finally {
    api.ov_version_free(version);
  }
}
