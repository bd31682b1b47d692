/** Issue #21 item 4: object-storage repository URL parsing and key safety (unit only; no server). */
import { describe, it, expect } from "vitest";
import { isObjectStoreUrl, parseObjectStoreUrl, safeCachePath } from "../../../src/repository/object-store-url.ts";

describe("parseObjectStoreUrl", () => {
  it("parses s3://bucket/path", () => {
    expect(parseObjectStoreUrl("s3://models/repo/a/")).toEqual({ scheme: "s3", bucket: "models", prefix: "repo/a" });
  });
  it("parses s3 with host:port, default http", () => {
    expect(parseObjectStoreUrl("s3://localhost:9000/models/repo")).toEqual({
      scheme: "s3",
      endpoint: "http://localhost:9000",
      bucket: "models",
      prefix: "repo",
    });
  });
  it("keeps an explicit https endpoint", () => {
    expect(parseObjectStoreUrl("s3://https://minio.example:443/b")).toEqual({
      scheme: "s3",
      endpoint: "https://minio.example:443",
      bucket: "b",
      prefix: "",
    });
  });
  it("parses as:// and gs://", () => {
    expect(parseObjectStoreUrl("as://acct/cont/p/q")).toEqual({ scheme: "as", account: "acct", container: "cont", prefix: "p/q" });
    expect(parseObjectStoreUrl("gs://bkt")).toEqual({ scheme: "gs", bucket: "bkt", prefix: "" });
  });
  it("refuses malformed URLs with INVALID_ARG", () => {
    for (const u of ["s3://", "as://acct", "gs:///", "/local/path"])
      expect(() => parseObjectStoreUrl(u)).toThrow(expect.objectContaining({ code: "INVALID_ARG" }));
    expect(isObjectStoreUrl("/local/path")).toBe(false);
    expect(isObjectStoreUrl("gs://b/p")).toBe(true);
  });
});

describe("safeCachePath", () => {
  it("accepts ordinary keys", () => {
    expect(safeCachePath("simple/1/model.onnx")).toBe("simple/1/model.onnx");
  });
  it("refuses traversal and absolute keys", () => {
    for (const k of ["../x", "a/../../x", "/etc/passwd", "a\\..\\x", "a/..", "x\0"])
      expect(() => safeCachePath(k)).toThrow(expect.objectContaining({ code: "INVALID_ARG" }));
  });
});
