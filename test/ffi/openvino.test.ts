/**
 * The OpenVINO C API binding (ffi/openvino) and the openvino backend, without OpenVINO
 * (test/e2e/openvino/real-library.test.ts runs the real library from its PyPI wheel):
 *
 * - the declarations are checked against facts taken from the published headers
 *   (struct layouts, ov_status_e, the ov_element_type_e table of each release range);
 * - a missing library gives one clear error;
 * - everything else runs against test/ffi/doubles/fake_openvino_c.c, a TEST DOUBLE with
 *   the same C signatures and a fixed INPUT0 + 1 model. Passing here says the binding
 *   calls the C API the way the headers declare it; it is no evidence about how real
 *   OpenVINO behaves. It stays for what the real library cannot be made to do on demand:
 *   a too-old release, no ov_get_last_err_msg, counting live handles, a slow inference.
 */
import { LateRunner } from "../../src/core/runner.ts";
import { describe, it, expect, beforeAll, afterAll, afterEach } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getKoffi, LibraryLoadError } from "../../ffi/load.ts";
import { ELEMENT_TYPE_TABLES, ElementTypes, OV_STATUS, OLDEST_SUPPORTED, elementTypeTableFor, ovStructTypes } from "../../ffi/openvino/types.ts";
import { openVinoLibraryCandidates, versionOf } from "../../ffi/openvino/library.ts";
import { OpenVinoRuntime } from "../../ffi/openvino/runtime.ts";
import { OvCore } from "../../ffi/openvino/core.ts";
import { OpenVinoBackend } from "../../src/backends/openvino/backend.ts";
import { borrowOpenVinoInstance } from "../../src/backends/openvino/direct.ts";
import type { PreparedRequest } from "../../src/core/request-validate.ts";
import type { InferenceRequest } from "../../src/core/request.ts";
import { openVinoReport } from "../../src/devices.ts";
import { ServerError } from "../../src/core/errors.ts";
import type { ModelConfig } from "../../src/core/model-config-types.ts";
import type { Tensor } from "../../src/core/tensor.ts";

const DOUBLE_SOURCE = join(import.meta.dirname, "doubles", "fake_openvino_c.c");
const hasCompiler = spawnSync("cc", ["--version"], { stdio: "ignore" }).status === 0;
const saved = { ...process.env };

afterEach(() => {
  for (const key of [
    "FAKE_OV_VERSION",
    "FAKE_OV_INFER_MS",
    "NEREID_OPENVINO_LIBRARY",
    "LD_LIBRARY_PATH",
    "INTEL_OPENVINO_DIR",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "HOME",
  ]) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
});

describe("declarations against the OpenVINO C headers", () => {
  it("lays out the structs as ov_dimension.h, ov_partial_shape.h, ov_shape.h and ov_core.h do (LP64)", () => {
    const k = getKoffi();
    const t = ovStructTypes();
    expect([k.sizeof(t.dimension), k.alignof(t.dimension), k.offsetof(t.dimension, "min"), k.offsetof(t.dimension, "max")]).toEqual([16, 8, 0, 8]);
    expect([k.sizeof(t.partialShape), k.offsetof(t.partialShape, "rank"), k.offsetof(t.partialShape, "dims")]).toEqual([24, 0, 16]);
    expect([k.sizeof(t.shape), k.offsetof(t.shape, "rank"), k.offsetof(t.shape, "dims")]).toEqual([16, 0, 8]);
    expect([k.sizeof(t.version), k.offsetof(t.version, "buildNumber"), k.offsetof(t.version, "description")]).toEqual([16, 0, 8]);
  });

  it("has ov_common.h's ov_status_e", () => {
    expect(OV_STATUS).toEqual({
      OK: 0,
      GENERAL_ERROR: -1,
      NOT_IMPLEMENTED: -2,
      NETWORK_NOT_LOADED: -3,
      PARAMETER_MISMATCH: -4,
      NOT_FOUND: -5,
      OUT_OF_BOUNDS: -6,
      UNEXPECTED: -7,
      REQUEST_BUSY: -8,
      RESULT_NOT_READY: -9,
      NOT_ALLOCATED: -10,
      INFER_NOT_STARTED: -11,
      NETWORK_NOT_READ: -12,
      INFER_CANCELLED: -13,
      INVALID_C_PARAM: -14,
      UNKNOWN_C_ERROR: -15,
      NOT_IMPLEMENT_C_METHOD: -16,
      UNKNOW_EXCEPTION: -17,
    });
  });

  const values = (label: string, names: string[]) => {
    const types = new ElementTypes(ELEMENT_TYPE_TABLES.find((t) => t.label === label)!);
    return Object.fromEntries(names.map((n) => [n, types.value(n)]));
  };
  const SERVED = ["BOOLEAN", "BF16", "F16", "F32", "F64", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64"];

  it("has ov_element_type_e as 2023.0 - 2024.1 declare it", () => {
    expect(values("2023.0 - 2024.1", ["UNDEFINED", "DYNAMIC", ...SERVED, "I4", "U1", "U4", "NF4"])).toEqual({
      UNDEFINED: 0,
      DYNAMIC: 1,
      BOOLEAN: 2,
      BF16: 3,
      F16: 4,
      F32: 5,
      F64: 6,
      I8: 8,
      I16: 9,
      I32: 10,
      I64: 11,
      U8: 14,
      U16: 15,
      U32: 16,
      U64: 17,
      I4: 7,
      U1: 12,
      U4: 13,
      NF4: 18,
    });
  });

  it("has ov_element_type_e as 2024.2 - 2025.0 declare it (u2, u3, u6 inserted)", () => {
    expect(values("2024.2 - 2025.0", ["UNDEFINED", "DYNAMIC", ...SERVED, "U1", "U2", "U3", "U4", "U6", "NF4", "STRING", "F8E8M0"])).toEqual({
      UNDEFINED: 0,
      DYNAMIC: 1,
      BOOLEAN: 2,
      BF16: 3,
      F16: 4,
      F32: 5,
      F64: 6,
      I8: 8,
      I16: 9,
      I32: 10,
      I64: 11,
      U8: 17,
      U16: 18,
      U32: 19,
      U64: 20,
      U1: 12,
      U2: 13,
      U3: 14,
      U4: 15,
      U6: 16,
      NF4: 21,
      STRING: 24,
      F8E8M0: 26,
    });
  });

  it("has ov_element_type_e as 2025.1 on declare it (DYNAMIC folded into 0)", () => {
    expect(values("2025.1 and later", ["UNDEFINED", "DYNAMIC", ...SERVED, "U1", "U4", "STRING", "F8E8M0"])).toEqual({
      UNDEFINED: 0,
      DYNAMIC: undefined,
      BOOLEAN: 1,
      BF16: 2,
      F16: 3,
      F32: 4,
      F64: 5,
      I8: 7,
      I16: 8,
      I32: 9,
      I64: 10,
      U8: 16,
      U16: 17,
      U32: 18,
      U64: 19,
      U1: 11,
      U4: 14,
      STRING: 23,
      F8E8M0: 25,
    });
  });

  // Version strings in the official "<version>-<build>-<hash>-<branch>" form; the build
  // numbers and hashes are illustrative: only "<year>.<minor>" is read.
  it("picks the table from ov_get_openvino_version's buildNumber and refuses older releases", () => {
    const label = (v: string) => elementTypeTableFor(v).label;
    expect(label("2023.0.0-10926-b4452d56304-releases/2023/0")).toBe("2023.0 - 2024.1");
    expect(label("2023.3.0-13775-ceeafaf64f3-releases/2023/3")).toBe("2023.0 - 2024.1");
    expect(label("2024.1.0-15008-f4afc983258-releases/2024/1")).toBe("2023.0 - 2024.1");
    expect(label("2024.2.0-15519-5c0f38f83f6-releases/2024/2")).toBe("2024.2 - 2025.0");
    expect(label("2024.6.0-17404-4c0f47d2335-releases/2024/6")).toBe("2024.2 - 2025.0");
    expect(label("2025.0.0-17942-1f68be9f594-releases/2025/0")).toBe("2024.2 - 2025.0");
    expect(label("2025.1.0-18503-6fec06580ab-releases/2025/1")).toBe("2025.1 and later");
    expect(label("2026.1.2-0-abcdef-HEAD")).toBe("2025.1 and later");
    expect(OLDEST_SUPPORTED).toEqual([2023, 0]);
    expect(() => elementTypeTableFor("2022.3.0-9052-9752fafe8eb-releases/2022/3")).toThrow(
      /^OpenVINO 2022\.3\.0-9052-9752fafe8eb-releases\/2022\/3 is older than 2023\.0/,
    );
    expect(() => elementTypeTableFor("custom_master_build")).toThrow(/cannot tell the OpenVINO release from its version string 'custom_master_build'/);
  });

  it("maps the served element types to Triton datatypes both ways in every table, and nothing else", () => {
    for (const table of ELEMENT_TYPE_TABLES) {
      const types = new ElementTypes(table);
      const triton = {
        BOOLEAN: "BOOL",
        BF16: "BF16",
        F16: "FP16",
        F32: "FP32",
        F64: "FP64",
        I8: "INT8",
        I16: "INT16",
        I32: "INT32",
        I64: "INT64",
        U8: "UINT8",
        U16: "UINT16",
        U32: "UINT32",
        U64: "UINT64",
      } as const;
      for (const [ov, dt] of Object.entries(triton)) {
        expect(types.toTriton(types.value(ov)!)).toBe(dt);
        expect(types.fromTriton(dt)).toBe(types.value(ov));
      }
      expect(types.fromTriton("BYTES")).toBeUndefined();
      for (const other of ["UNDEFINED", "I4", "U1", "U4", "NF4"]) expect(types.toTriton(types.value(other)!)).toBeUndefined();
      expect(types.name(99)).toBe("ov_element_type_e(99)");
    }
  });
});

describe("where libopenvino_c is looked for", () => {
  let dir = "";
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), "nereid-ovlib-"))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("uses only the explicit --backend-config library, then only NEREID_OPENVINO_LIBRARY", () => {
    process.env.NEREID_OPENVINO_LIBRARY = "/env/libopenvino_c.so";
    expect(openVinoLibraryCandidates("/opt/ov/libopenvino_c.so.2025.1.0")).toEqual(["/opt/ov/libopenvino_c.so.2025.1.0"]);
    expect(openVinoLibraryCandidates(undefined)).toEqual(["/env/libopenvino_c.so"]);
  });

  it("otherwise: the bare name, the archive install, then versioned files newest first", () => {
    delete process.env.NEREID_OPENVINO_LIBRARY;
    const install = join(dir, "openvino");
    const lib = join(install, "runtime", "lib", process.arch === "arm64" ? "aarch64" : "intel64");
    mkdirSync(lib, { recursive: true });
    const wheel = join(dir, "wheel");
    mkdirSync(wheel);
    for (const n of ["libopenvino_c.so.2024.6.0", "libopenvino_c.so.2025.4.1", "libopenvino_c.so.2500", "libopenvino.so.2541", "libopenvino_c.so.bak"])
      writeFileSync(join(wheel, n), "");
    symlinkSync(join(wheel, "libopenvino_c.so.2025.4.1"), join(wheel, "libopenvino_c.so.2541")); // soname link: same file
    process.env.INTEL_OPENVINO_DIR = install;
    process.env.LD_LIBRARY_PATH = wheel;
    const c = openVinoLibraryCandidates(undefined);
    expect(c[0]).toBe("libopenvino_c.so");
    expect(c[1]).toEqual({ path: join(lib, "libopenvino_c.so"), reason: "no such file" });
    const versioned = c.filter((x): x is string => typeof x === "string" && x.startsWith(wheel));
    expect(versioned).toEqual([join(wheel, "libopenvino_c.so.2025.4.1"), join(wheel, "libopenvino_c.so.2500"), join(wheel, "libopenvino_c.so.2024.6.0")]);
    expect(versionOf("2541")).toEqual([2025, 4, 1]);
    expect(versionOf("2026.1.2")).toEqual([2026, 1, 2]);
  });

  it("finds a pip-installed openvino: the active environment's after the archive install, the user's and the system's last", () => {
    delete process.env.NEREID_OPENVINO_LIBRARY;
    process.env.INTEL_OPENVINO_DIR = join(dir, "none");
    process.env.LD_LIBRARY_PATH = join(dir, "none");
    const wheelLibs = (prefix: string, python: string) => {
      const libs = join(prefix, "lib", python, "site-packages", "openvino", "libs");
      mkdirSync(libs, { recursive: true });
      return libs;
    };
    const venv = join(dir, "venv");
    const older = wheelLibs(venv, "python3.9");
    const newer = wheelLibs(venv, "python3.12");
    writeFileSync(join(older, "libopenvino_c.so.2530"), "");
    writeFileSync(join(newer, "libopenvino_c.so.2641"), "");
    writeFileSync(join(newer, "libopenvino.so.2641"), "");
    const conda = join(dir, "conda");
    writeFileSync(join(wheelLibs(conda, "python3.11"), "libopenvino_c.so.2650"), "");
    const home = join(dir, "home");
    writeFileSync(join(wheelLibs(join(home, ".local"), "python3.11"), "libopenvino_c.so.2700"), "");
    process.env.VIRTUAL_ENV = venv;
    process.env.CONDA_PREFIX = conda;
    process.env.HOME = home;
    const c = openVinoLibraryCandidates(undefined);
    const strings = c.filter((x): x is string => typeof x === "string" && x.startsWith(dir));
    // The venv's newest Python first, then conda's; the user's site-packages after every system place.
    expect(strings).toEqual([
      join(newer, "libopenvino_c.so.2641"),
      join(older, "libopenvino_c.so.2530"),
      join(conda, "lib", "python3.11", "site-packages", "openvino", "libs", "libopenvino_c.so.2650"),
      join(home, ".local", "lib", "python3.11", "site-packages", "openvino", "libs", "libopenvino_c.so.2700"),
    ]);
    // Right after the bare name and the archive installs ($INTEL_OPENVINO_DIR, /opt/intel/openvino).
    const before = c.slice(0, c.indexOf(strings[0]!));
    expect(before[0]).toBe("libopenvino_c.so");
    expect(before.slice(1).map((x) => (typeof x === "string" ? x : x.path))).toEqual([
      join(dir, "none", "runtime", "lib", process.arch === "arm64" ? "aarch64" : "intel64", "libopenvino_c.so"),
      ...(process.arch === "arm64" ? [join(dir, "none", "runtime", "lib", "arm64", "libopenvino_c.so")] : []),
      ...(process.arch === "arm64" ? ["aarch64", "arm64"] : ["intel64"]).map((a) => `/opt/intel/openvino/runtime/lib/${a}/libopenvino_c.so`),
    ]);
    const versioned = c.findIndex((x) => typeof x !== "string" && x.path === "libopenvino_c.so.<version>");
    expect(versioned === -1 || versioned < c.indexOf(strings[3]!)).toBe(true);
    expect(versioned === -1 || versioned > c.indexOf(strings[2]!)).toBe(true);

    process.env.VIRTUAL_ENV = join(dir, "novenv");
    delete process.env.CONDA_PREFIX;
    process.env.HOME = join(dir, "nohome");
    const none = openVinoLibraryCandidates(undefined);
    const last = none[none.length - 1];
    if (typeof last !== "string" && last?.path === "openvino/libs/libopenvino_c.so.<version>") {
      expect(last.reason).toMatch(
        /^no pip-installed openvino in .*\/usr\/lib\/python3\/dist-packages\/openvino\/libs \(no \$VIRTUAL_ENV or \$CONDA_PREFIX with a python3 lib folder\)$/,
      );
    } else {
      expect(none.some((x) => typeof x === "string" && x.includes("/openvino/libs/"))).toBe(true); // this host has a system-wide wheel
    }
  });

  it("a missing library is one LibraryLoadError naming every place tried, and no crash", () => {
    let err: unknown;
    try {
      OpenVinoRuntime.load(openVinoLibraryCandidates("/nonexistent/libopenvino_c.so"));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LibraryLoadError);
    expect((err as Error).message).toMatch(/^cannot load OpenVINO's C library \(libopenvino_c\.so\); tried:\n  \/nonexistent\/libopenvino_c\.so: .+$/);

    delete process.env.NEREID_OPENVINO_LIBRARY;
    process.env.INTEL_OPENVINO_DIR = join(dir, "none");
    process.env.LD_LIBRARY_PATH = join(dir, "none");
    process.env.VIRTUAL_ENV = join(dir, "none");
    delete process.env.CONDA_PREFIX;
    process.env.HOME = join(dir, "none");
    const candidates = openVinoLibraryCandidates(undefined);
    const found = candidates.some((c) => typeof c === "string" && c !== "libopenvino_c.so");
    if (found) return; // this host has OpenVINO somewhere: the default search is not "missing" here
    try {
      OpenVinoRuntime.load(candidates);
      return; // libopenvino_c.so on the search path
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LibraryLoadError);
    const lines = (err as Error).message.split("\n");
    expect(lines[1]).toMatch(/^  libopenvino_c\.so: /);
    expect((err as Error).message).toContain(`${join(dir, "none", "runtime", "lib")}`);
    expect((err as Error).message).toContain("/opt/intel/openvino/runtime/lib/");
    expect(lines[lines.length - 2]).toMatch(/^  libopenvino_c\.so\.<version>: no versioned library in /);
    expect(lines[lines.length - 1]).toMatch(/^  openvino\/libs\/libopenvino_c\.so\.<version>: no pip-installed openvino in /);
  });

  it("refuses a library that is not OpenVINO's C library", () => {
    expect(() => OpenVinoRuntime.load(["libc.so.6"])).toThrow(/libc\.so\.6 does not export ov_get_error_info, so it is not OpenVINO's C library/);
  });
});

describe.skipIf(!hasCompiler)("with the test double (fake_openvino_c.c, not OpenVINO)", () => {
  let dir = "";
  let fake = "";
  let fakeWithoutLastError = "";
  let modelXml = "";
  let live: () => number;
  let lastDevice: () => string;
  let lastProperties: () => string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "nereid-fakeov-"));
    fake = join(dir, "libfake_openvino_c.so");
    fakeWithoutLastError = join(dir, "libfake_openvino_c_nolasterr.so");
    execFileSync("cc", ["-shared", "-fPIC", "-O1", "-o", fake, DOUBLE_SOURCE]);
    execFileSync("cc", ["-shared", "-fPIC", "-O1", "-DFAKE_OV_NO_LAST_ERR", "-o", fakeWithoutLastError, DOUBLE_SOURCE]);
    const versionDir = join(dir, "repo", "ov_double", "1");
    mkdirSync(versionDir, { recursive: true });
    modelXml = join(versionDir, "model.xml");
    writeFileSync(modelXml, "<net/>\n");
    writeFileSync(join(versionDir, "model.bin"), "");
    const lib = getKoffi().load(fake);
    const liveFn = lib.func("long fake_live_handles()");
    const deviceFn = lib.func("const char *fake_last_device()");
    live = () => Number(liveFn());
    lastDevice = () => deviceFn() as string;
    const propertiesFn = lib.func("const char *fake_last_properties()");
    lastProperties = () => propertiesFn() as string;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const f32 = (values: number[], shape: number[]): Tensor => ({
    name: "INPUT0",
    datatype: "FP32",
    shape,
    data: new Uint8Array(new Float32Array(values).buffer),
  });
  const floats = (t: Tensor) => Array.from(new Float32Array(t.data.buffer, t.data.byteOffset, t.data.byteLength / 4));
  const config = (extra: Partial<ModelConfig> = {}): ModelConfig => ({
    name: "ov_double",
    backend: "openvino",
    max_batch_size: 8,
    input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [4] }],
    output: [{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [4] }],
    ...extra,
  });
  const load = (cfg: ModelConfig, library = fake) =>
    new OpenVinoBackend().load({
      config: cfg,
      modelName: cfg.name!,
      version: 1,
      modelDir: join(dir, "repo", "ov_double"),
      modelPath: modelXml,
      runner: new LateRunner(),
      backendConfig: { library },
    });

  it("reads the version and picks the element-type table from it", async () => {
    for (const [version, label, f32Value] of [
      ["2024.0.0-14509-34caeefd078-releases/2024/0", "2023.0 - 2024.1", 5],
      ["2024.6.0-17404-4c0f47d2335-releases/2024/6", "2024.2 - 2025.0", 5],
      ["2025.2.0-19140-c01cd93e24d-releases/2025/2", "2025.1 and later", 4],
    ] as const) {
      process.env.FAKE_OV_VERSION = version;
      const rt = OpenVinoRuntime.load([fake]);
      expect(rt.version).toBe(version);
      expect(rt.path).toBe(fake);
      expect(rt.elementTypes.table.label).toBe(label);
      using core = OvCore.acquire(rt);
      using model = await core.readModel(modelXml, null);
      // The double reports f32 with this release's value; the table must read it as FP32.
      expect(model.inputs).toEqual([{ index: 0, name: "INPUT0", elementType: f32Value, shape: [-1, 4] }]);
      expect(rt.elementTypes.toTriton(model.inputs[0]!.elementType)).toBe("FP32");
      using compiled = core.compile(model, "CPU");
      using request = compiled.createInferRequest();
      const r = await request.run(
        [{ index: 0, name: "INPUT0", elementType: rt.elementTypes.fromTriton("FP32")!, elementSize: 4, shape: [1, 4], data: f32([1, 2, 3, 4], [1, 4]).data }],
        [{ index: 0, name: "OUTPUT0" }],
      );
      expect(r.outputs[0]!.shape).toEqual([1, 4]);
      expect(Array.from(new Float32Array(r.outputs[0]!.data.buffer))).toEqual([2, 3, 4, 5]);
    }
    expect(live()).toBe(0);
  });

  it("`nereid devices` names the library, its release and the element-type table it uses", () => {
    process.env.FAKE_OV_VERSION = "2025.2.0-19140-c01cd93e24d-releases/2025/2";
    process.env.NEREID_OPENVINO_LIBRARY = fake;
    expect(openVinoReport()).toBe(`OpenVINO 2025.2.0-19140-c01cd93e24d-releases/2025/2 (${fake}), element types of 2025.1 and later`);
    process.env.NEREID_OPENVINO_LIBRARY = join(dir, "missing.so");
    expect(openVinoReport().startsWith(`no OpenVINO: cannot load OpenVINO's C library (libopenvino_c.so); tried:\n  ${join(dir, "missing.so")}: `)).toBe(true);
  });

  it("refuses a release older than the oldest table, with the version and the path", () => {
    process.env.FAKE_OV_VERSION = "2022.3.0-9052-9752fafe8eb-releases/2022/3";
    expect(() => OpenVinoRuntime.load([fake])).toThrow(LibraryLoadError);
    expect(() => OpenVinoRuntime.load([fake])).toThrow(
      `${fake}: OpenVINO 2022.3.0-9052-9752fafe8eb-releases/2022/3 is older than 2023.0, the oldest release whose C API this server knows`,
    );
    expect(live()).toBe(0);
  });

  it("reports ov_core_read_model's failure with the library's last error message, or the status text without one", async () => {
    for (const [library, text] of [
      [fake, "[fake openvino] Unable to read the model: /nonexistent/model.xml: no such file"],
      [fakeWithoutLastError, "general error"],
    ] as const) {
      const rt = OpenVinoRuntime.load([library]);
      expect(rt.api.ov_get_last_err_msg === undefined).toBe(library === fakeWithoutLastError);
      using core = OvCore.acquire(rt);
      const err = await core.readModel("/nonexistent/model.xml", null).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ServerError);
      expect((err as ServerError).code).toBe("INTERNAL");
      expect((err as Error).message).toBe(`openvino: ov_core_read_model(/nonexistent/model.xml): GENERAL_ERROR: ${text}`);
    }
    expect(live()).toBe(0);
  });

  it("describe() gives the ports for auto-complete", async () => {
    const io = await new OpenVinoBackend().describe(modelXml, { library: fake });
    expect(io).toEqual({
      inputs: [{ name: "INPUT0", datatype: "FP32", shape: [-1, 4] }],
      outputs: [{ name: "OUTPUT0", datatype: "FP32", shape: [-1, 4] }],
    });
    expect(live()).toBe(0);
  });

  it("runs through the backend with exact outputs at batch 1 and 3, then frees every handle", async () => {
    const model = await load(config({ instance_group: [{ kind: "KIND_CPU", count: 2 }] }));
    const a = await model.createInstance("ov_double_0", "KIND_CPU", 0);
    const b = await model.createInstance("ov_double_1", "KIND_CPU", 0);
    expect(lastDevice()).toBe("CPU");
    const one = await a.execute([f32([1, 2, 3, 4], [1, 4])], []);
    expect(one.outputs.map((o) => [o.name, o.datatype, o.shape])).toEqual([["OUTPUT0", "FP32", [1, 4]]]);
    expect(floats(one.outputs[0]!)).toEqual([2, 3, 4, 5]);
    for (const k of ["computeInputNs", "computeInferNs", "computeOutputNs"] as const) expect(one[k]).toBeGreaterThanOrEqual(0);
    const values = [0.5, -1, 2.25, 1e6, 7, 8, 9, 10, -3.5, 0, 0.125, 42];
    const three = await b.execute([f32(values, [3, 4])], ["OUTPUT0"]);
    expect(three.outputs[0]!.shape).toEqual([3, 4]);
    expect(floats(three.outputs[0]!)).toEqual(values.map((v) => Math.fround(v + 1)));
    // Both instances at once: each has its own infer request.
    const [x, y] = await Promise.all([a.execute([f32([1, 1, 1, 1], [1, 4])], []), b.execute([f32([2, 2, 2, 2, 3, 3, 3, 3], [2, 4])], [])]);
    expect(floats(x.outputs[0]!)).toEqual([2, 2, 2, 2]);
    expect(floats(y.outputs[0]!)).toEqual([3, 3, 3, 3, 4, 4, 4, 4]);
    expect(live()).toBeGreaterThan(0);
    a.close();
    b.close();
    a.close(); // twice is harmless
    model.close();
    model.close();
    expect(live()).toBe(0);
  });

  it("keeps the event loop free while the inference runs", async () => {
    process.env.FAKE_OV_INFER_MS = "300";
    const model = await load(config());
    const inst = await model.createInstance("i", "KIND_CPU", 0);
    try {
      let ticks = 0;
      const timer = setInterval(() => ticks++, 10);
      const started = performance.now();
      const r = await inst.execute([f32([1, 2, 3, 4], [1, 4])], []);
      clearInterval(timer);
      expect(performance.now() - started).toBeGreaterThanOrEqual(290);
      expect(ticks).toBeGreaterThanOrEqual(10);
      expect(floats(r.outputs[0]!)).toEqual([2, 3, 4, 5]);
    } finally {
      inst.close();
      model.close();
    }
    expect(live()).toBe(0);
  });

  it("frees an instance closed during its run once the run ends", async () => {
    process.env.FAKE_OV_INFER_MS = "100";
    const model = await load(config());
    const inst = await model.createInstance("i", "KIND_CPU", 0);
    const run = inst.execute([f32([1, 2, 3, 4], [1, 4])], []);
    inst.close();
    expect(floats((await run).outputs[0]!)).toEqual([2, 3, 4, 5]);
    model.close();
    expect(live()).toBe(0);
  });

  it("a frontend worker's borrowed instance (#30): an infer request of its own, turns in arrival order with their wait as queue time, a cancelled waiter never run, handed back once the owner retires the compiled model, which is freed after the borrower's run; every handle freed once", async () => {
    process.env.FAKE_OV_INFER_MS = "80";
    const model = await load(config());
    const inst = await model.createInstance("i", "KIND_CPU", 0);
    const borrowed = borrowOpenVinoInstance(inst.share!());
    const prepared = (values: number[], signal?: AbortSignal): PreparedRequest =>
      ({
        request: { id: "r", modelName: "ov_double", inputs: [], signal } as unknown as InferenceRequest,
        control: {},
        batchSize: 1,
        inputs: [f32(values, [1, 4])],
        outputNames: ["OUTPUT0"],
        classification: new Map(),
      }) as unknown as PreparedRequest;
    const before = live();
    expect(borrowed.load()).toBe(0);
    const aborted = new AbortController();
    const first = borrowed.runPrepared(prepared([1, 2, 3, 4]));
    const second = borrowed.runPrepared(prepared([5, 6, 7, 8]));
    const third = borrowed.runPrepared(prepared([0, 0, 0, 0], aborted.signal));
    expect(borrowed.load()).toBe(3);
    aborted.abort();
    const [a, b] = [(await first)!, (await second)!];
    expect(floats(a.outcome.outputs![0]!)).toEqual([2, 3, 4, 5]);
    expect(floats(b.outcome.outputs![0]!)).toEqual([6, 7, 8, 9]);
    expect(a.queueNs).toBeLessThan(40e6);
    expect(b.queueNs).toBeGreaterThanOrEqual(70e6); // behind the first's 80 ms inference
    expect(b.computeInferNs).toBeGreaterThanOrEqual(70e6);
    await expect(third).rejects.toMatchObject({ code: "CANCELLED" });
    // The borrower's own infer request (and the input tensor it holds until its next run).
    const own = live() - before;
    expect(own).toBeGreaterThanOrEqual(1);
    // The owner unloads while the borrower runs: the compiled model waits for the run.
    const running = borrowed.runPrepared(prepared([1, 1, 1, 1]));
    await new Promise((r) => setTimeout(r, 20));
    inst.close();
    model.close();
    expect(live()).toBeGreaterThan(own); // the compiled model, the model and the core are still held
    expect(floats((await running)!.outcome.outputs![0]!)).toEqual([2, 2, 2, 2]);
    for (let i = 0; i < 100 && live() > own; i++) await new Promise((r) => setTimeout(r, 5));
    expect(live()).toBe(own); // only the borrower's idle infer request, which it frees itself
    expect(await borrowed.runPrepared(prepared([1, 2, 3, 4]))).toBeUndefined(); // retired: the main thread answers
    borrowed.close();
    borrowed.close();
    expect(live()).toBe(0);
  });

  it("compiles for the instance kind, or for the model's `device` parameter", async () => {
    const gpu = await load(config());
    (await gpu.createInstance("g", "KIND_GPU", 0)).close();
    expect(lastDevice()).toBe("GPU");
    gpu.close();
    const auto = await load(config({ parameters: { device: { string_value: "AUTO" } } }));
    (await auto.createInstance("a", "KIND_CPU", 0)).close();
    expect(lastDevice()).toBe("AUTO");
    auto.close();
    const npu = await load(config({ parameters: { device: { string_value: "NPU" } } }));
    const err = await npu.createInstance("n", "KIND_CPU", 0).catch((e: unknown) => e);
    expect((err as Error).message).toBe(
      `model 'ov_double': compiling for OpenVINO device 'NPU': openvino: ov_core_compile_model(NPU): GENERAL_ERROR: [fake openvino] Device with "NPU" name is not registered in the OpenVINO Runtime`,
    );
    npu.close();
    expect(live()).toBe(0);
  });

  it("passes the model's OpenVINO compile properties as variadic key/value strings, and nothing else", async () => {
    const tuned = await load(
      config({
        parameters: {
          INFERENCE_NUM_THREADS: { string_value: "2" },
          INFERENCE_PRECISION_HINT: { string_value: " f32 " },
          CACHE_DIR: { string_value: "/tmp/x" },
          device: { string_value: "CPU" },
        },
      }),
    );
    (await tuned.createInstance("t", "KIND_CPU", 0)).close();
    expect(lastProperties()).toBe("INFERENCE_NUM_THREADS=2;INFERENCE_PRECISION_HINT=f32;");
    tuned.close();
    const plain = await load(config());
    (await plain.createInstance("p", "KIND_CPU", 0)).close();
    expect(lastProperties()).toBe("");
    plain.close();
    const empty = await load(config({ parameters: { NUM_STREAMS: { string_value: " " } } })).catch((e: unknown) => e);
    expect((empty as ServerError).code).toBe("INVALID_ARG");
    expect((empty as Error).message).toBe("model 'ov_double': parameter 'NUM_STREAMS' must have a value for OpenVINO, got ''");
    expect(live()).toBe(0);
  });

  it("checks the config against the model's ports at load, and refuses BYTES", async () => {
    const wrongName = await load(config({ input: [{ name: "IN", data_type: "TYPE_FP32", dims: [4] }] })).catch((e: unknown) => e);
    expect((wrongName as ServerError).code).toBe("INVALID_ARG");
    expect((wrongName as Error).message).toBe("model 'ov_double': input 'IN' is not an input of the OpenVINO model (its inputs: 'INPUT0')");
    const wrongType = await load(config({ output: [{ name: "OUTPUT0", data_type: "TYPE_FP16", dims: [4] }] })).catch((e: unknown) => e);
    expect((wrongType as Error).message).toBe("model 'ov_double': output 'OUTPUT0' is TYPE_FP16 in config.pbtxt but F32 (TYPE_FP32) in the OpenVINO model");
    const strings = await load(config({ input: [{ name: "INPUT0", data_type: "TYPE_STRING", dims: [4] }] })).catch((e: unknown) => e);
    expect((strings as ServerError).code).toBe("UNSUPPORTED");
    expect(live()).toBe(0);

    const model = await load(config());
    const inst = await model.createInstance("i", "KIND_CPU", 0);
    const bytes = await inst
      .execute([{ name: "INPUT0", datatype: "BYTES", shape: [1, 1], data: new Uint8Array([1, 0, 0, 0, 65]) }], [])
      .catch((e: unknown) => e);
    expect((bytes as ServerError).code).toBe("UNSUPPORTED");
    // A shape the model refuses: the library's message comes back, the instance still serves.
    const bad = await inst.execute([f32([1, 2, 3], [1, 3])], []).catch((e: unknown) => e);
    expect((bad as Error).message).toMatch(
      /^openvino: ov_infer_request_set_input_tensor_by_index\(INPUT0\): GENERAL_ERROR: \[fake openvino\] The tensor shape is not compatible/,
    );
    expect(floats((await inst.execute([f32([0, 0, 0, 0], [1, 4])], [])).outputs[0]!)).toEqual([1, 1, 1, 1]);
    inst.close();
    model.close();
    expect(live()).toBe(0);
  });

  it("a model whose library is missing is UNAVAILABLE with the reason", async () => {
    const err = await load(config(), "/nonexistent/libopenvino_c.so").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect((err as ServerError).code).toBe("UNAVAILABLE");
    expect((err as Error).message).toMatch(
      /^model 'ov_double': the openvino backend needs OpenVINO's C library: cannot load OpenVINO's C library \(libopenvino_c\.so\); tried:\n  \/nonexistent\/libopenvino_c\.so: /,
    );
  });
});
