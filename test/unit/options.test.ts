/** CLI flags with tritonserver's names and defaults (L-01..L-03, L-05, L-07, L-10). */
import { describe, it, expect } from "vitest";
import { parseArgs, UsageError } from "../../src/options.ts";

const run = (...args: string[]) => {
  const r = parseArgs(args);
  if (r.kind !== "run") throw new Error("expected run");
  return r.options;
};

describe("parseArgs", () => {
  it("applies Triton's defaults", () => {
    const o = run("--model-repository=/m");
    expect(o).toMatchObject({
      modelRepositories: ["/m"],
      httpPort: 8000,
      grpcPort: 8001,
      metricsPort: 8002,
      exitOnError: true,
      strictReadiness: true,
      id: "triton",
      httpMaxInputSize: 64 * 1024 * 1024,
      modelControlMode: "none",
      repositoryPollSecs: 0,
    });
  });

  it("frontend threads: unset by default (one per core, at most 8, chosen at start); 1 to 128 taken as given (#30)", () => {
    expect(run("--model-repository=/m")).toMatchObject({ httpThreadCount: undefined, grpcInferThreadCount: undefined });
    for (const n of [1, 2, 4, 16, 128]) {
      expect(run("--model-repository=/m", `--http-thread-count=${n}`, `--grpc-infer-thread-count=${n}`)).toMatchObject({
        httpThreadCount: n,
        grpcInferThreadCount: n,
      });
    }
    for (const flag of ["http-thread-count", "grpc-infer-thread-count"]) {
      for (const v of ["0", "-1", "129", "100000"]) {
        expect(() => run("--model-repository=/m", `--${flag}=${v}`)).toThrow(new UsageError(`invalid value '${v}' for --${flag}: expected 1..128`));
      }
      expect(() => run("--model-repository=/m", `--${flag}=two`)).toThrow(new UsageError(`invalid value 'two' for --${flag}: expected an integer`));
    }
  });

  it("keeps model code out of load overrides unless --allow-model-code-overrides=true (#29)", () => {
    expect(run("--model-repository=/m").allowModelCodeOverrides).toBe(false);
    expect(run("--model-repository=/m", "--allow-model-code-overrides=true").allowModelCodeOverrides).toBe(true);
    expect(run("--model-repository=/m", "--allow-model-code-overrides=false").allowModelCodeOverrides).toBe(false);
    expect(() => run("--model-repository=/m", "--allow-model-code-overrides=maybe")).toThrow("allow-model-code-overrides");
  });

  it("accepts --flag=value and --flag value, repeats and backend configs", () => {
    const o = run(
      "--model-repository",
      "/a",
      "--model-store=/b",
      "--http-port",
      "9000",
      "--allow-grpc=false",
      "--backend-config=onnxruntime,library=/x/libonnxruntime.so.1",
      "--backend-config=default-max-batch-size=8",
      "--id=nereid",
    );
    expect(o.modelRepositories).toEqual(["/a", "/b"]);
    expect(o.httpPort).toBe(9000);
    expect(o.allowGrpc).toBe(false);
    expect(o.backendConfig).toEqual({ onnxruntime: { library: "/x/libonnxruntime.so.1" }, "": { "default-max-batch-size": "8" } });
    expect(o.id).toBe("nereid");
  });

  it("reads --cache-config local,size=N, the deprecated --response-cache-byte-size, and --metrics-config (S-17, M-04, M-05)", () => {
    expect(run("--model-repository=/m").cacheSizeBytes).toBeUndefined();
    expect(run("--model-repository=/m", "--cache-config=local,size=1048576").cacheSizeBytes).toBe(1048576);
    expect(run("--model-repository=/m", "--response-cache-byte-size=4096").cacheSizeBytes).toBe(4096);
    expect(() => run("--model-repository=/m", "--cache-config=memcached,host=localhost")).toThrow(
      "--cache-config: cache 'memcached' is not available; Nereid has the 'local' and 'redis' caches",
    );
    expect(() => run("--model-repository=/m", "--cache-config=local,bytes=5")).toThrow("unknown key 'bytes' for the local cache");
    expect(() => run("--model-repository=/m", "--cache-config=local")).toThrow("--cache-config must be <cache>,<key>=<value>, got 'local'");
    const o = run("--model-repository=/m", "--metrics-config=counter_latencies=false", "--metrics-config=summary_latencies=true");
    expect(o.metricsConfig).toEqual({ counter_latencies: "false", summary_latencies: "true" });
    expect(() => run("--model-repository=/m", "--metrics-config=bogus=1")).toThrow("--metrics-config: unknown key 'bogus'");
  });

  it("reads Triton's redis cache keys, one per --cache-config, and its credentials from the environment (S-17)", () => {
    const parse = (env: Record<string, string>, ...args: string[]) => {
      const r = parseArgs(["--model-repository=/m", ...args], env);
      if (r.kind !== "run") throw new Error("expected run");
      return r.options;
    };
    const flags = [
      "--cache-config=redis,host=cache.local",
      "--cache-config",
      "redis,port=6380",
      "--cache-config=redis,db=2",
      "--cache-config=redis,tls_enabled=true",
      "--cache-config=redis,sni=cache",
    ];
    expect(parse({}, ...flags).redisCacheConfig).toEqual({ host: "cache.local", port: "6380", db: "2", tls_enabled: "true", sni: "cache" });
    expect(parse({}, ...flags).cacheSizeBytes).toBeUndefined();
    const env = { TRITONCACHE_REDIS_USERNAME: "envuser", TRITONCACHE_REDIS_PASSWORD: "envpass" };
    expect(parse(env, ...flags.slice(0, 3)).redisCacheConfig).toEqual({ host: "cache.local", port: "6380", user: "envuser", password: "envpass" });
    // The flags win over the environment, as in Triton.
    expect(parse(env, ...flags.slice(0, 3), "--cache-config=redis,password=flagpass").redisCacheConfig!.password).toBe("flagpass");
    expect(parse({}, "--cache-config=local,size=1024").redisCacheConfig).toBeUndefined();
    expect(() => parse({}, "--cache-config=redis,host=h")).toThrow(
      "Failed to initialize RedisCache, didn't specify address. Must at a minimum specify 'host' and 'port' in the configuration",
    );
    expect(() => parse({}, "--cache-config=redis,host=h", "--cache-config=redis,port=x")).toThrow(
      "invalid value 'x' for --cache-config redis port: expected an integer",
    );
    expect(() => parse({}, "--cache-config=redis,host=h", "--cache-config=redis,username=u")).toThrow(
      "--cache-config: unknown key 'username' for the redis cache (expected one of host, port, user, password, db, connect_timeout, socket_timeout, pool_size, wait_timeout, tls_enabled, cert, key, cacert, cacert_dir, sni)",
    );
    expect(() => parse({}, "--cache-config=redis,host=h", "--cache-config=redis,port=1", "--cache-config=local,size=10")).toThrow(
      "--cache-config: only one cache may be configured, got both 'local' and 'redis'",
    );
  });

  it("reads the health subcommand the container image's HEALTHCHECK runs", () => {
    expect(parseArgs(["health"])).toEqual({ kind: "health" });
    expect(parseArgs(["health", "--url=http://127.0.0.1:9000"])).toEqual({ kind: "health", url: "http://127.0.0.1:9000" });
    expect(() => parseArgs(["health", "--port=9000"])).toThrow("unexpected argument '--port=9000' for 'health' (expected --url=<http://host:port>)");
  });

  it("maps the deprecated --strict-model-config", () => {
    expect(run("--model-repository=/m", "--strict-model-config=true").disableAutoCompleteConfig).toBe(true);
    expect(run("--model-repository=/m", "--disable-auto-complete-config").disableAutoCompleteConfig).toBe(true);
  });

  it("warns of the deprecated --strict-model-config in tritonserver's words; --disable-auto-complete-config wins wherever it stands", () => {
    const deprecated = "Warning: '--strict-model-config' has been deprecated! Please use '--disable-auto-complete-config' instead.";
    const overridden = "Warning: Overriding deprecated '--strict-model-config' from False to True in favor of '--disable-auto-complete-config'!";
    expect(run("--model-repository=/m").warnings).toEqual([]);
    expect(run("--model-repository=/m", "--disable-auto-complete-config").warnings).toEqual([]);
    expect(run("--model-repository=/m", "--strict-model-config=true").warnings).toEqual([deprecated]);
    const off = run("--model-repository=/m", "--strict-model-config=false");
    expect({ warnings: off.warnings, disabled: off.disableAutoCompleteConfig }).toEqual({ warnings: [deprecated], disabled: false });
    for (const order of [
      ["--disable-auto-complete-config", "--strict-model-config=false"],
      ["--strict-model-config=false", "--disable-auto-complete-config"],
    ]) {
      const o = run("--model-repository=/m", ...order);
      expect({ warnings: o.warnings, disabled: o.disableAutoCompleteConfig }).toEqual({ warnings: [deprecated, overridden], disabled: true });
    }
  });

  it("rejects what tritonserver rejects", () => {
    expect(() => parseArgs(["--model-repository=/m", "--bogus"])).toThrow(new UsageError("unknown option '--bogus'"));
    expect(() => parseArgs(["--http-port=80"])).toThrow("--model-repository must be specified");
    expect(() => parseArgs(["--model-repository=/m", "--http-port=70000"])).toThrow("expected 0..65535");
    expect(() => parseArgs(["--model-repository=/m", "--load-model=a"])).toThrow("only allowed with --model-control-mode=explicit");
    expect(() => parseArgs(["--model-repository=/m", "--grpc-port=8000"])).toThrow(
      "The server cannot listen to HTTP requests and GRPC requests at the same address and port 0.0.0.0:8000",
    );
    expect(() => parseArgs(["--model-repository=/m", "stray"])).toThrow("unexpected argument 'stray'");
  });

  it("reads Triton's connection-age flags and Nereid's gRPC connection limits, with their defaults (issue #14)", () => {
    expect(run("--model-repository=/m")).toMatchObject({
      grpcMaxConnectionAgeMs: 0,
      grpcMaxConnectionAgeGraceMs: 0,
      grpcMaxConnections: 1024,
      grpcHandshakeTimeoutSecs: 10,
      grpcIdleTimeoutSecs: 300,
    });
    const o = run(
      "--model-repository=/m",
      "--grpc-max-connection-age=60000",
      "--grpc-max-connection-age-grace=5000",
      "--grpc-max-connections=0",
      "--grpc-handshake-timeout-secs=3",
      "--grpc-idle-timeout-secs=0",
    );
    expect(o).toMatchObject({
      grpcMaxConnectionAgeMs: 60000,
      grpcMaxConnectionAgeGraceMs: 5000,
      grpcMaxConnections: 0,
      grpcHandshakeTimeoutSecs: 3,
      grpcIdleTimeoutSecs: 0,
    });
    expect(() => run("--model-repository=/m", "--grpc-max-connections=-1")).toThrow("invalid value '-1' for --grpc-max-connections: expected 0..");
    expect(() => run("--model-repository=/m", "--grpc-idle-timeout-secs=9999999")).toThrow("expected 0..2147483");
  });

  it("recognises help and version", () => {
    expect(parseArgs(["--help"])).toEqual({ kind: "help" });
    expect(parseArgs(["--version"])).toEqual({ kind: "version" });
  });
});

describe("every tritonserver flag is accepted (#17)", () => {
  // The 40 flags the binary stopped at ("unknown option") before, each with a value in
  // Triton's syntax; the others are covered above.
  const values: [string, string][] = [
    ["model-load-thread-count", "8"],
    ["model-load-retry-count", "2"],
    ["model-namespacing", "false"],
    ["enable-peer-access", "true"],
    ["reuse-http-port", "false"],
    ["http-header-forward-pattern", ""],
    ["http-thread-count", "8"],
    ["reuse-grpc-port", "false"],
    ["grpc-header-forward-pattern", ""],
    ["grpc-infer-thread-count", "2"],
    ["grpc-infer-allocation-pool-size", "8"],
    ["grpc-max-response-pool-size", "100"],
    ["grpc-use-ssl", "false"],
    ["grpc-use-ssl-mutual", "false"],
    ["grpc-server-cert", "server.crt"],
    ["grpc-server-key", "server.key"],
    ["grpc-root-cert", "ca.crt"],
    ["grpc-infer-response-compression-level", "none"],
    ["log-file", ""],
    ["allow-sagemaker", "false"],
    ["sagemaker-port", "8080"],
    ["sagemaker-safe-port-range", "8000-9000"],
    ["sagemaker-thread-count", "8"],
    ["allow-vertex-ai", "false"],
    ["vertex-ai-port", "8080"],
    ["vertex-ai-thread-count", "8"],
    ["vertex-ai-default-model", "simple"],
    ["cache-directory", "/opt/tritonserver/caches"],
    ["rate-limit", "off"],
    ["rate-limit-resource", "R1:10:0"],
    ["pinned-memory-pool-byte-size", "268435456"],
    ["cuda-memory-pool-byte-size", "0:67108864"],
    ["cuda-virtual-address-size", "0:1073741824"],
    ["min-supported-compute-capability", "6.0"],
    ["buffer-manager-thread-count", "0"],
    ["host-policy", "gpu_0,numa-node=0"],
    ["model-load-gpu-limit", "0:0.8"],
    ["backend-directory", "/opt/tritonserver/backends"],
    ["repoagent-directory", "/opt/tritonserver/repoagents"],
    ["trace-log-frequency", "100"],
  ];
  it.each(values)("--%s=%s", (flag, value) => {
    const parsed = parseArgs(["--model-repository=/m", `--${flag}=${value}`], {});
    expect(parsed.kind).toBe("run");
  });

  it("a flag with nothing to act on is recorded with what it means here", () => {
    const parsed = parseArgs(["--model-repository=/m", "--pinned-memory-pool-byte-size=1024", "--host-policy=p,numa-node=0"], {});
    if (parsed.kind !== "run") throw new Error(parsed.kind);
    expect(parsed.options.inertFlags.map((f) => [f.flag, f.value])).toEqual([
      ["pinned-memory-pool-byte-size", "1024"],
      ["host-policy", "p,numa-node=0"],
    ]);
    expect(parsed.options.inertFlags[0]!.meaning).toContain("no pinned pool");
  });

  it("a response compression level other than none is accepted and noted: grpc-js sends responses uncompressed", () => {
    const parsed = parseArgs(["--model-repository=/m", "--grpc-infer-response-compression-level=high"], {});
    if (parsed.kind !== "run") throw new Error(parsed.kind);
    expect(parsed.options.grpcInferResponseCompressionLevel).toBe("high");
    expect(parsed.options.inertFlags.map((f) => f.flag)).toEqual(["grpc-infer-response-compression-level"]);
  });

  it.each([
    ["rate-limit", "sometimes", "invalid value 'sometimes' for --rate-limit: expected off or execution_count"],
    ["rate-limit-resource", "R1", "--rate-limit-resource must be <resource_name>:<count>[:<device>], got 'R1'"],
    ["cuda-memory-pool-byte-size", "64", "invalid value '64' for --cuda-memory-pool-byte-size: expected <GPU device ID>:<integer>"],
    ["model-load-gpu-limit", "0:1.5", "invalid value '0:1.5' for --model-load-gpu-limit: expected <device_id>:<fraction between 0 and 1>"],
    ["grpc-infer-response-compression-level", "max", "invalid value 'max' for --grpc-infer-response-compression-level: expected none, low, medium or high"],
  ])("--%s=%s is refused", (flag, value, message) => {
    expect(() => parseArgs(["--model-repository=/m", `--${flag}=${value}`], {})).toThrow(new UsageError(message));
  });

  it("Vertex AI's defaults come from AIP_MODE and AIP_HTTP_PORT unless the flags are given", () => {
    const env = { AIP_MODE: "PREDICTION", AIP_HTTP_PORT: "9090", AIP_PREDICT_ROUTE: "/p", AIP_HEALTH_ROUTE: "/h", AIP_STORAGE_URI: "/models" };
    const a = parseArgs([], env);
    const b = parseArgs(["--model-repository=/m", "--allow-vertex-ai=false", "--vertex-ai-port=7070", "--allow-http=true"], env);
    if (a.kind !== "run" || b.kind !== "run") throw new Error("run expected");
    // In a Vertex AI container Triton serves Vertex AI only, from AIP_STORAGE_URI.
    expect([a.options.allowVertexAi, a.options.vertexAiPort, a.options.allowHttp, a.options.allowGrpc, a.options.modelRepositories]).toEqual([
      true,
      9090,
      false,
      false,
      ["/models"],
    ]);
    expect([a.options.vertexAiPredictRoute, a.options.vertexAiHealthRoute]).toEqual(["/p", "/h"]);
    expect([b.options.allowVertexAi, b.options.vertexAiPort, b.options.allowHttp, b.options.allowGrpc, b.options.modelRepositories]).toEqual([
      false,
      7070,
      true,
      false,
      ["/m"],
    ]);
  });

  it("reads AIP_STORAGE_URI when no repository is named, with Vertex AI off too, as Triton's code does (#17)", () => {
    const r = parseArgs([], { AIP_STORAGE_URI: "/models" });
    if (r.kind !== "run") throw new Error("run expected");
    expect([r.options.allowVertexAi, r.options.modelRepositories]).toEqual([false, ["/models"]]);
  });

  it.each([
    [
      ["--http-port=8080", "--allow-sagemaker=true"],
      "The server cannot listen to HTTP requests and SageMaker requests at the same address and port 0.0.0.0:8080",
    ],
    [
      ["--grpc-port=9000", "--allow-vertex-ai=true", "--vertex-ai-port=9000"],
      "The server cannot listen to GRPC requests and Vertex AI requests at the same address and port 0.0.0.0:9000",
    ],
    [
      ["--allow-sagemaker=true", "--allow-vertex-ai=true"],
      "The server cannot listen to SageMaker requests and Vertex AI requests at the same address and port 0.0.0.0:8080",
    ],
    [["--metrics-port=8000"], "The server cannot listen to HTTP requests and metrics requests at the same address and port 0.0.0.0:8000"],
    [
      ["--allow-sagemaker=true", "--sagemaker-safe-port-range=8000-8001"],
      "The server cannot listen to metrics requests at port 8002, allowed port range is [8000, 8001]",
    ],
    [
      ["--allow-sagemaker=true", "--sagemaker-safe-port-range=8000-8002", "--allow-vertex-ai=true", "--vertex-ai-port=9000"],
      "The server cannot listen to Vertex AI requests at port 9000, allowed port range is [8000, 8002]",
    ],
  ])("refuses colliding ports as Triton's CheckPortCollision: %j (#17)", (args, message) => {
    expect(() => parseArgs(["--model-repository=/m", ...args], { AIP_PREDICT_ROUTE: "/p", AIP_HEALTH_ROUTE: "/h" })).toThrow(new UsageError(message));
  });

  it("lets services on different addresses share a port, and the safe range bind only SageMaker's address, as Triton compares addresses (#17)", () => {
    const o = run(
      "--model-repository=/m",
      "--http-address=127.0.0.1",
      "--http-port=8080",
      "--metrics-address=127.0.0.1",
      "--allow-sagemaker=true",
      "--sagemaker-safe-port-range=8080-8081",
      "--grpc-port=8081",
    );
    expect([o.httpPort, o.sagemakerPort, o.metricsPort, o.grpcPort]).toEqual([8080, 8080, 8002, 8081]);
  });

  it("keeps the OpenAI-compatible frontend off unless --openai-port is given; its address defaults to the HTTP one (#35)", () => {
    expect([run("--model-repository=/m").openaiPort, run("--model-repository=/m").openaiAddress]).toEqual([undefined, "0.0.0.0"]);
    const o = run("--model-repository=/m", "--openai-port=9000", "--http-address=127.0.0.1");
    expect([o.openaiPort, o.openaiAddress]).toEqual([9000, "127.0.0.1"]);
    expect(run("--model-repository=/m", "--openai-port", "0", "--openai-address=::1").openaiAddress).toBe("::1");
    expect(() => run("--model-repository=/m", "--openai-port=70000")).toThrow(UsageError);
    expect(() => run("--model-repository=/m", "--openai-port=abc")).toThrow(UsageError);
  });

  it("refuses the OpenAI port on another service's address and port (#35)", () => {
    expect(() => run("--model-repository=/m", "--openai-port=8000")).toThrow(
      new UsageError("The server cannot listen to HTTP requests and OpenAI requests at the same address and port 0.0.0.0:8000"),
    );
    expect(run("--model-repository=/m", "--openai-port=8000", "--openai-address=127.0.0.1").openaiPort).toBe(8000);
  });
});
