/**
 * Mutators at three levels: the structure of a JSON document (delete, replace, wrap,
 * duplicate, swap subtrees), the tokens of a text (JSON or config.pbtxt: drop, repeat,
 * swap, respell numbers and strings), and plain bytes (flips, interesting bytes, cuts,
 * repeats, truncation). Each takes the Rng and returns a new value.
 */
import type { Rng } from "./rng.ts";
import { cloneDoc, edgeValue, isObjectDoc, raw, setMember, ODD_NUMBERS, ODD_STRINGS, type Doc } from "./json-text.ts";

export type Path = (string | number)[];

/** Paths to the nodes of `doc` (a few elements of long arrays stand for all). */
export function paths(doc: Doc, prefix: Path = [], out: Path[] = []): Path[] {
  out.push(prefix);
  if (Array.isArray(doc)) {
    // Long data arrays: a few elements stand for all of them.
    const n = doc.length;
    const step = n > 32 ? Math.ceil(n / 16) : 1;
    for (let i = 0; i < n; i += step) paths(doc[i]!, [...prefix, i], out);
  } else if (isObjectDoc(doc)) {
    for (const [k, v] of Object.entries(doc)) paths(v, [...prefix, k], out);
  }
  return out;
}

export function get(doc: Doc, path: Path): Doc {
  let d = doc;
  for (const k of path) d = (d as Record<string | number, Doc>)[k]!;
  return d;
}

/** One structural change to a copy of `doc`. */
export function mutateStructure(doc: Doc, r: Rng): Doc {
  const root = { root: cloneDoc(doc) } as Record<string, Doc>;
  const all = paths(root.root!, ["root"]);
  const path = r.pick(all);
  const key = path[path.length - 1]!;
  const parent = get(root, path.slice(0, -1)) as Record<string | number, Doc> & Doc;
  const node = parent[key]!;
  const other = get(root, r.pick(all));
  switch (r.int(9)) {
    case 0: // delete
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else if (path.length > 1) delete parent[key];
      break;
    case 1:
    case 2:
      parent[key] = edgeValue(r);
      break;
    case 3:
      parent[key] = r.chance(0.5) ? [node] : { [r.pick(["a", "data", "shape", "name", "parameters"])]: node };
      break;
    case 4: // duplicate into an array, or a new member of an object
      if (Array.isArray(node)) node.push(...node.slice(0, 1 + r.int(Math.max(1, node.length))).map(cloneDoc));
      else if (isObjectDoc(node))
        setMember(
          node,
          r.pick(["id", "name", "shape", "datatype", "data", "parameters", "inputs", "outputs", "binary_data_size", "__proto__", "x"]),
          edgeValue(r),
        );
      else if (Array.isArray(parent)) parent.push(cloneDoc(node));
      break;
    case 5: // swap in another subtree
      parent[key] = cloneDoc(other);
      break;
    case 6: // change the type, keeping the value's spelling where possible
      if (typeof node === "number") parent[key] = String(node);
      else if (typeof node === "string") parent[key] = /^-?\d+$/.test(node) ? Number(node) : node.length;
      else if (Array.isArray(node)) parent[key] = Object.fromEntries(node.map((v, i) => [String(i), v]));
      else if (isObjectDoc(node)) parent[key] = Object.values(node);
      else parent[key] = edgeValue(r);
      break;
    case 7: // arrays: cut or grow
      if (Array.isArray(node)) {
        if (r.chance(0.5)) node.length = r.int(node.length + 1);
        else for (let i = r.range(1, 3); i > 0; i--) node.push(node.length > 0 ? cloneDoc(r.pick(node)) : edgeValue(r));
      } else parent[key] = edgeValue(r);
      break;
    default: // respell a number
      parent[key] =
        typeof node === "number" ? raw(r.pick([`${node}.0`, `${node}e0`, `${node}E+0`, `0${node}`, `${node}.000001`, ...ODD_NUMBERS])) : edgeValue(r);
  }
  return root.root!;
}

const TOKEN = /"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|-?(?:0[xX][0-9a-fA-F]+|[0-9][0-9eE.+-]*|\.[0-9]+)|[A-Za-z_][A-Za-z0-9_.]*|#[^\n]*|\s+|[\s\S]/g;

export function tokens(text: string): string[] {
  return text.match(TOKEN) ?? [];
}

const isSpace = (t: string) => /^\s+$/.test(t);

/** One token-level change to `text` (JSON or protobuf text); `words` are identifiers to put in. */
export function mutateTokens(text: string, r: Rng, words: readonly string[] = []): string {
  const ts = tokens(text);
  if (ts.length === 0) return r.pick(["{", "[", "}", '"', "0"]);
  const idx = () => {
    for (let tries = 0; tries < 8; tries++) {
      const i = r.int(ts.length);
      if (!isSpace(ts[i]!)) return i;
    }
    return r.int(ts.length);
  };
  const i = idx();
  const t = ts[i]!;
  switch (r.int(8)) {
    case 0:
      ts.splice(i, 1);
      break;
    case 1:
      ts.splice(i, 0, ...Array(r.range(1, r.chance(0.1) ? 200 : 3)).fill(t));
      break;
    case 2: {
      const j = idx();
      [ts[i], ts[j]] = [ts[j]!, t];
      break;
    }
    case 3: // a range of tokens repeated or dropped
      {
        const j = Math.min(ts.length, i + 1 + r.int(12));
        const slice = ts.slice(i, j);
        if (r.chance(0.5)) ts.splice(i, j - i);
        else ts.splice(j, 0, ...slice);
        break;
      }
    case 4:
      ts[i] = r.pick(ODD_NUMBERS);
      break;
    case 5:
      ts[i] = r.pick(ODD_STRINGS);
      break;
    case 6:
      ts.splice(i, r.int(2), r.pick(["{", "}", "[", "]", ":", ",", ";", "<", ">", "#\n", "\n", " ", "\\", "'", '"', "\0", "\ufeff", "\ud800"]));
      break;
    default:
      ts[i] = words.length > 0 && r.chance(0.7) ? r.pick(words) : r.pick(["true", "false", "null", "nan", "inf", "-inf", "t", "f", "True", "x"]);
  }
  return ts.join("");
}

const INTERESTING = [
  [0x00],
  [0xff],
  [0x80],
  [0x7f],
  [0x22],
  [0x5c],
  [0x7b],
  [0x5b],
  [0x5d],
  [0x7d],
  [0x2c],
  [0x3a],
  [0xef, 0xbb, 0xbf],
  [0xed, 0xa0, 0x80],
  [0xc0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xc3],
  [0xe2, 0x82],
] as const;

/** 1–4 byte-level changes to a copy of `bytes`. */
export function mutateBytes(bytes: Uint8Array, r: Rng): Uint8Array {
  let out: Uint8Array = bytes.slice();
  for (let n = r.range(1, 4); n > 0; n--) {
    const at = r.int(out.length + 1);
    switch (r.int(7)) {
      case 0:
        if (out.length > 0) out[Math.min(at, out.length - 1)]! ^= 1 << r.int(8);
        break;
      case 1:
        if (out.length > 0) out[Math.min(at, out.length - 1)] = r.int(256);
        break;
      case 2:
        out = splice(out, at, 0, Uint8Array.from(r.pick(INTERESTING)));
        break;
      case 3:
        out = splice(out, at, r.range(1, 16), new Uint8Array(0));
        break;
      case 4: {
        const len = r.range(1, 32);
        out = splice(out, at, 0, out.slice(at, at + len));
        break;
      }
      case 5:
        out = out.slice(0, r.int(out.length + 1));
        break;
      default:
        out = splice(out, at, 0, r.bytes(r.range(1, 8)));
    }
  }
  return out;
}

export function splice(b: Uint8Array, at: number, remove: number, insert: Uint8Array): Uint8Array {
  const out = new Uint8Array(b.length - Math.min(remove, b.length - at) + insert.length);
  out.set(b.subarray(0, at), 0);
  out.set(insert, at);
  out.set(b.subarray(at + remove), at + insert.length);
  return out;
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}
