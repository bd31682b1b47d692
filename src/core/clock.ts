/**
 * @module A monotonic nanosecond clock as a plain number (no BigInt allocation per
 * reading), for request timing and statistics.
 */
export function nowNs(): number {
  return performance.now() * 1e6;
}
