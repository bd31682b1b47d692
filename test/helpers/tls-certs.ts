/**
 * Test certificates made with openssl in a directory of the test's own: a CA, and keys and
 * certificates signed by it (used by the gRPC TLS tests).
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensureDebianProgram } from "./debian.ts";

/** openssl req's arguments for a new prime256v1 elliptic-curve key without a passphrase. */
const NEW_EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

export function certificateMaker(dir: string, what: string) {
  ensureDebianProgram("/usr/bin/openssl", "openssl", what);
  const openssl = (...args: string[]) => void execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  return {
    /** A self-signed CA: `${ca}.key` and `${ca}.crt`. */
    makeCa(ca: string): void {
      openssl("req", "-x509", ...NEW_EC_KEY, "-keyout", `${ca}.key`, "-out", `${ca}.crt`, "-days", "2", "-subj", `/CN=${ca}`);
    },
    /** A key and certificate for `name` signed by `ca` (with the SANs given): `${name}.key` and `${name}.crt`. */
    makeCert(name: string, ca: string, san?: string): void {
      openssl("req", ...NEW_EC_KEY, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`);
      const ext = join(dir, `${name}.ext`);
      writeFileSync(ext, san ? `subjectAltName=${san}\n` : "basicConstraints=CA:FALSE\n");
      openssl(
        "x509",
        "-req",
        "-in",
        `${name}.csr`,
        "-CA",
        `${ca}.crt`,
        "-CAkey",
        `${ca}.key`,
        "-CAcreateserial",
        "-out",
        `${name}.crt`,
        "-days",
        "2",
        "-extfile",
        ext,
      );
    },
  };
}
