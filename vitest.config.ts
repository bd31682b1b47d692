import { defineConfig } from "vitest/config";

/**
 * Tests that bring up a whole system around the binary: release archives, a container
 * image (podman), the arm64 build under qemu, systemd, Deno, a browser (chromium),
 * Prometheus, and the deploy files checked with helm (built with go) and PyPI's
 * kubernetes-validate against Kubernetes' and KServe's schemas. They install Debian
 * packages, Go programs or PyPI wheels and take minutes.
 */
const SYSTEM = [
  "test/e2e/release.test.ts",
  "test/e2e/container.test.ts",
  "test/e2e/arm64.test.ts",
  "test/e2e/systemd.test.ts",
  "test/e2e/deno.test.ts",
  "test/e2e/observe/status-page.test.ts",
  "test/e2e/observe/grafana-dashboard.test.ts",
  "test/e2e/deploy/helm.test.ts",
  "test/e2e/deploy/kserve.test.ts",
];

// `npm test` runs every project; `npm run test:unit`, `test:e2e` and `test:system` one each.
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // End-to-end suites start servers; two cores on CI.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: "unit", include: ["test/unit/**/*.test.ts", "test/ffi/**/*.test.ts"] } },
      { extends: true, test: { name: "e2e", include: ["test/e2e/**/*.test.ts"], exclude: SYSTEM } },
      { extends: true, test: { name: "system", include: SYSTEM } },
    ],
  },
});
