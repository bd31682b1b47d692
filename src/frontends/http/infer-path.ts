/**
 * @module The model and version of a plainly written infer path, read the same way by the
 * main thread's HTTP handler (its shortcut past the route table) and by a frontend worker
 * (which decodes and answers inference requests itself).
 */

const MODELS_PREFIX = "/v2/models/";
const INFER_SUFFIX = "/infer";

/**
 * The model and version of `/v2/models/<m>/infer` or `/v2/models/<m>/versions/<digits>/infer`
 * when the path is written plainly (no empty segment, no %-escape); undefined for any other
 * path, which route() reads in full.
 */
export function inferTarget(path: string): { model: string; version: string | undefined } | undefined {
  if (!path.startsWith(MODELS_PREFIX) || !path.endsWith(INFER_SUFFIX) || path.includes("%")) return undefined;
  const end = path.length - INFER_SUFFIX.length;
  const slash = path.indexOf("/", MODELS_PREFIX.length);
  if (slash === end) return slash > MODELS_PREFIX.length ? { model: path.slice(MODELS_PREFIX.length, slash), version: undefined } : undefined;
  // <m>/versions/<digits>
  if (slash <= MODELS_PREFIX.length || !path.startsWith("/versions/", slash)) return undefined;
  const v = slash + "/versions/".length;
  if (v >= end) return undefined;
  for (let i = v; i < end; i++) {
    const c = path.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return undefined;
  }
  return { model: path.slice(MODELS_PREFIX.length, slash), version: path.slice(v, end) };
}
