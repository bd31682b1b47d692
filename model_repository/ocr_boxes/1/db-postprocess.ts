/**
 * @module Text boxes from the detector's probability map, after PaddleOCR's DBPostProcess
 * (Differentiable Binarization): threshold the map, take each 8-connected region, fit its
 * minimum-area rectangle, drop regions whose mean probability inside the rectangle is below
 * `boxThresh`, grow ("unclip") the rectangle by area × ratio / perimeter on every side,
 * scale to the original image, and sort top-to-bottom, then left-to-right on a line.
 *
 * Differences from PaddleOCR, all sub-pixel: regions replace OpenCV's contours (the
 * convex hull, hence the rectangle, is the same; holes are not separate candidates), and
 * a rectangle is grown exactly instead of through pyclipper's integer rounded offset.
 */

export type Point = [number, number];
/** Four corners: top-left, top-right, bottom-right, bottom-left. */
export type Quad = [Point, Point, Point, Point];

export interface DbOptions {
  thresh: number;
  boxThresh: number;
  unclipRatio: number;
  /** Rectangles whose shorter side is below this (in map pixels) are dropped. */
  minSize: number;
  maxCandidates: number;
}

export const DB_DEFAULTS: DbOptions = { thresh: 0.3, boxThresh: 0.6, unclipRatio: 1.5, minSize: 3, maxCandidates: 1000 };

export interface Rect {
  corners: Quad;
  /** Side lengths along the rectangle's two axes. */
  width: number;
  height: number;
}

/**
 * 8-connected regions of `mask` (non-zero = on), in raster order of their first pixel;
 * each as the pixels at the two ends of each of its rows (enough for the convex hull).
 */
export function regionOutlines(mask: Uint8Array, w: number, h: number, limit = Infinity): Point[][] {
  const label = new Int32Array(w * h);
  const stack = new Int32Array(w * h);
  const out: Point[][] = [];
  let next = 0;
  for (let start = 0; start < w * h && out.length < limit; start++) {
    if (!mask[start] || label[start]) continue;
    next++;
    let top = 0;
    stack[top++] = start;
    label[start] = next;
    let ymin = h;
    let ymax = -1;
    const minX = new Map<number, number>();
    const maxX = new Map<number, number>();
    while (top > 0) {
      const p = stack[--top]!;
      const x = p % w;
      const y = (p - x) / w;
      if (y < ymin) ymin = y;
      if (y > ymax) ymax = y;
      const lo = minX.get(y);
      if (lo === undefined || x < lo) minX.set(y, x);
      const hi = maxX.get(y);
      if (hi === undefined || x > hi) maxX.set(y, x);
      for (let dy = -1; dy <= 1; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= h) continue;
        for (let dx = -1; dx <= 1; dx++) {
          const nx = x + dx;
          if (nx < 0 || nx >= w) continue;
          const q = ny * w + nx;
          if (mask[q] && !label[q]) {
            label[q] = next;
            stack[top++] = q;
          }
        }
      }
    }
    const pts: Point[] = [];
    for (let y = ymin; y <= ymax; y++) {
      const lo = minX.get(y);
      if (lo === undefined) continue;
      pts.push([lo, y]);
      if (maxX.get(y)! !== lo) pts.push([maxX.get(y)!, y]);
    }
    out.push(pts);
  }
  return out;
}

/** Convex hull (Andrew's monotone chain), counter-clockwise in y-down coordinates; no collinear points. */
export function convexHull(points: readonly Point[]): Point[] {
  const pts = [...points].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  if (pts.length < 3) return pts;
  const cross = (o: Point, a: Point, b: Point) => (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
  const lower: Point[] = [];
  for (const p of pts) {
    while (lower.length >= 2 && cross(lower[lower.length - 2]!, lower[lower.length - 1]!, p) <= 0) lower.pop();
    lower.push(p);
  }
  const upper: Point[] = [];
  for (let i = pts.length - 1; i >= 0; i--) {
    const p = pts[i]!;
    while (upper.length >= 2 && cross(upper[upper.length - 2]!, upper[upper.length - 1]!, p) <= 0) upper.pop();
    upper.push(p);
  }
  lower.pop();
  upper.pop();
  return lower.concat(upper);
}

/**
 * Minimum-area enclosing rectangle (rotating calipers over the hull's edges), corners
 * ordered as PaddleOCR's get_mini_boxes: the two leftmost points give top-left and
 * bottom-left, the two rightmost top-right and bottom-right. Undefined for fewer than
 * three non-collinear points (a region one pixel thick has no area).
 */
export function minAreaRect(points: readonly Point[]): Rect | undefined {
  const hull = convexHull(points);
  if (hull.length < 3) return undefined;
  let best: { area: number; u: Point; v: Point; u0: number; u1: number; v0: number; v1: number } | undefined;
  for (let i = 0; i < hull.length; i++) {
    const a = hull[i]!;
    const b = hull[(i + 1) % hull.length]!;
    const len = Math.hypot(b[0] - a[0], b[1] - a[1]);
    const u: Point = [(b[0] - a[0]) / len, (b[1] - a[1]) / len];
    const v: Point = [-u[1], u[0]];
    let u0 = Infinity;
    let u1 = -Infinity;
    let v0 = Infinity;
    let v1 = -Infinity;
    for (const p of hull) {
      const pu = p[0] * u[0] + p[1] * u[1];
      const pv = p[0] * v[0] + p[1] * v[1];
      if (pu < u0) u0 = pu;
      if (pu > u1) u1 = pu;
      if (pv < v0) v0 = pv;
      if (pv > v1) v1 = pv;
    }
    const area = (u1 - u0) * (v1 - v0);
    if (!best || area < best.area - 1e-9) best = { area, u, v, u0, u1, v0, v1 };
  }
  const { u, v, u0, u1, v0, v1 } = best!;
  const at = (pu: number, pv: number): Point => [clean(pu * u[0] + pv * v[0]), clean(pu * u[1] + pv * v[1])];
  return orderMiniBox([at(u0, v0), at(u1, v0), at(u1, v1), at(u0, v1)]);
}

/** Rounds away floating-point dust (1e-9 of a pixel) so axis-aligned boxes come out exact. */
const clean = (x: number) => {
  const r = Math.round(x);
  return Math.abs(x - r) < 1e-9 ? r : x;
};

/** get_mini_boxes' order: by x; of the two left points the upper is top-left, of the right ones the upper is top-right. */
function orderMiniBox(corners: Point[]): Rect {
  const pts = [...corners].sort((a, b) => a[0] - b[0]);
  const [tl, bl] = pts[1]![1] > pts[0]![1] ? [pts[0]!, pts[1]!] : [pts[1]!, pts[0]!];
  const [tr, br] = pts[3]![1] > pts[2]![1] ? [pts[2]!, pts[3]!] : [pts[3]!, pts[2]!];
  // A rectangle's corners in this order run around it (the diagonal tl–br splits the
  // others), so tl→tr and tl→bl are its two sides.
  return { corners: [tl, tr, br, bl], width: Math.hypot(tr[0] - tl[0], tr[1] - tl[1]), height: Math.hypot(bl[0] - tl[0], bl[1] - tl[1]) };
}

/**
 * Mean of `prob` over the pixels inside `quad` (box_score_fast): the bounding box clipped
 * to the map, pixel centres on or inside the (convex) polygon, corners truncated to
 * integers first as OpenCV's fillPoly gets them.
 */
export function boxScore(prob: Float32Array, w: number, h: number, quad: Quad): number {
  const xs = quad.map((p) => p[0]);
  const ys = quad.map((p) => p[1]);
  const clampTo = (v: number, hi: number) => Math.min(Math.max(v, 0), hi);
  const xmin = clampTo(Math.floor(Math.min(...xs)), w - 1);
  const xmax = clampTo(Math.ceil(Math.max(...xs)), w - 1);
  const ymin = clampTo(Math.floor(Math.min(...ys)), h - 1);
  const ymax = clampTo(Math.ceil(Math.max(...ys)), h - 1);
  const poly = quad.map((p): Point => [Math.trunc(p[0] - xmin) + xmin, Math.trunc(p[1] - ymin) + ymin]);
  let sum = 0;
  let count = 0;
  for (let y = ymin; y <= ymax; y++) {
    // The polygon's span on this row: intersections of the row with every edge.
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < 4; i++) {
      const [x0, y0] = poly[i]!;
      const [x1, y1] = poly[(i + 1) % 4]!;
      if ((y < y0 && y < y1) || (y > y0 && y > y1)) continue;
      if (y0 === y1) {
        lo = Math.min(lo, x0, x1);
        hi = Math.max(hi, x0, x1);
      } else {
        const x = x0 + ((y - y0) * (x1 - x0)) / (y1 - y0);
        lo = Math.min(lo, x);
        hi = Math.max(hi, x);
      }
    }
    if (lo > hi) continue;
    const from = Math.max(Math.ceil(lo - 1e-9), xmin);
    const to = Math.min(Math.floor(hi + 1e-9), xmax);
    for (let x = from; x <= to; x++) {
      sum += prob[y * w + x]!;
      count++;
    }
  }
  return count === 0 ? 0 : sum / count;
}

/** The rectangle grown by `distance` on every side, same centre and axes (unclip). */
export function growRect(rect: Rect, distance: number): Rect {
  const [tl, tr, , bl] = rect.corners;
  const ux = (tr[0] - tl[0]) / (rect.width || 1);
  const uy = (tr[1] - tl[1]) / (rect.width || 1);
  const vx = (bl[0] - tl[0]) / (rect.height || 1);
  const vy = (bl[1] - tl[1]) / (rect.height || 1);
  const cx = (tl[0] + rect.corners[2][0]) / 2;
  const cy = (tl[1] + rect.corners[2][1]) / 2;
  const hw = rect.width / 2 + distance;
  const hh = rect.height / 2 + distance;
  const at = (a: number, b: number): Point => [clean(cx + a * ux + b * vx), clean(cy + a * uy + b * vy)];
  return orderMiniBox([at(-hw, -hh), at(hw, -hh), at(hw, hh), at(-hw, hh)]);
}

/** PaddleOCR's order_points_clockwise: top-left = min x+y, bottom-right = max x+y, top-right = min y−x, bottom-left = max y−x. */
export function orderClockwise(pts: readonly Point[]): Quad {
  const sums = pts.map((p) => p[0] + p[1]);
  const iTl = sums.indexOf(Math.min(...sums));
  const iBr = sums.indexOf(Math.max(...sums));
  const rest = pts.filter((_, i) => i !== iTl && i !== iBr);
  if (rest.length !== 2) return [pts[0]!, pts[1]!, pts[2]!, pts[3]!]; // degenerate: keep the order
  const [tr, bl] = rest[0]![1] - rest[0]![0] <= rest[1]![1] - rest[1]![0] ? [rest[0]!, rest[1]!] : [rest[1]!, rest[0]!];
  return [pts[iTl]!, tr, pts[iBr]!, bl];
}

/** Python's round(): halves go to the even neighbour (numpy's np.round too). */
function roundHalfEven(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** Top-to-bottom by the first corner, then left-to-right among boxes whose tops are within 10 px (sorted_boxes). */
export function sortBoxes(boxes: Quad[]): Quad[] {
  const out = [...boxes].sort((a, b) => a[0][1] - b[0][1] || a[0][0] - b[0][0]);
  for (let i = 0; i < out.length - 1; i++) {
    for (let j = i; j >= 0; j--) {
      if (Math.abs(out[j + 1]![0][1] - out[j]![0][1]) < 10 && out[j + 1]![0][0] < out[j]![0][0]) {
        [out[j], out[j + 1]] = [out[j + 1]!, out[j]!];
      } else break;
    }
  }
  return out;
}

/**
 * Boxes in the original image's pixels, sorted. `prob` is the map [mapH, mapW] for an
 * image of srcW x srcH that was resized to the map's size.
 */
export function detectBoxes(prob: Float32Array, mapW: number, mapH: number, srcW: number, srcH: number, opts: DbOptions = DB_DEFAULTS): Quad[] {
  const mask = new Uint8Array(mapW * mapH);
  for (let i = 0; i < mask.length; i++) mask[i] = prob[i]! > opts.thresh ? 1 : 0;
  const boxes: Quad[] = [];
  for (const outline of regionOutlines(mask, mapW, mapH, opts.maxCandidates)) {
    const rect = minAreaRect(outline);
    if (!rect || Math.min(rect.width, rect.height) < opts.minSize) continue;
    if (boxScore(prob, mapW, mapH, rect.corners) < opts.boxThresh) continue;
    const area = rect.width * rect.height;
    const perimeter = 2 * (rect.width + rect.height);
    const grown = growRect(rect, (area * opts.unclipRatio) / perimeter);
    if (Math.min(grown.width, grown.height) < opts.minSize + 2) continue;
    const scaled = grown.corners.map(
      (p): Point => [Math.min(Math.max(roundHalfEven((p[0] / mapW) * srcW), 0), srcW), Math.min(Math.max(roundHalfEven((p[1] / mapH) * srcH), 0), srcH)],
    );
    // filter_tag_det_res: clockwise order, clip to the image, drop boxes 3 px or thinner.
    const quad = orderClockwise(scaled).map((p): Point => [Math.min(Math.max(p[0], 0), srcW - 1), Math.min(Math.max(p[1], 0), srcH - 1)]) as Quad;
    const width = Math.trunc(Math.hypot(quad[0][0] - quad[1][0], quad[0][1] - quad[1][1]));
    const height = Math.trunc(Math.hypot(quad[0][0] - quad[3][0], quad[0][1] - quad[3][1]));
    if (width <= 3 || height <= 3) continue;
    boxes.push(quad);
  }
  return sortBoxes(boxes);
}
