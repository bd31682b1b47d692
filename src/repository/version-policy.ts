/**
 * @module version_policy: which of the version folders on disk are served.
 */
import type { ModelVersionPolicy } from "../core/model-config-types.ts";

export function selectVersions(available: readonly number[], policy: ModelVersionPolicy | undefined): number[] {
  const sorted = [...available].sort((a, b) => a - b);
  if (policy?.all) return sorted;
  if (policy?.specific) {
    const wanted = new Set((policy.specific.versions ?? []).map(Number));
    return sorted.filter((v) => wanted.has(v));
  }
  const n = Math.max(1, policy?.latest?.num_versions ?? 1);
  return sorted.slice(-n);
}

/** Versions named by a `specific` policy that have no folder on disk. */
export function missingSpecificVersions(available: readonly number[], policy: ModelVersionPolicy | undefined): number[] {
  if (!policy?.specific) return [];
  const have = new Set(available);
  return (policy.specific.versions ?? []).map(Number).filter((v) => !have.has(v));
}
