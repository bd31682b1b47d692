/**
 * @module A monotonic nanosecond clock as a plain number (no BigInt allocation per
 * reading), for request timing and statistics.
 */
export function nowNs(): number {
  // Whole nanoseconds: statistics are uint64 on the wire (Triton writes integers), and the
  // difference of two readings must be one too.
  return Math.round(performance.now() * 1e6);
}
