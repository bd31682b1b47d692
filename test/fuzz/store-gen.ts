/**
 * Generators and mutators for what Nereid reads from stores other than its clients (#29
 * items 6 and 8): redis response-cache entries (src/cache/entry-codec.ts) and object-store
 * listing pages (S3 and Azure XML, GCS JSON; test/helpers/listing-server.ts serves them).
 * A case starts from a valid entry or page and applies header-structure, token and byte
 * mutations, so that most cases are near misses of the format.
 */
import type { Rng } from "./rng.ts";
import { mutateBytes, mutateStructure, mutateTokens, concat } from "./mutate.ts";
import { toJsonText, type Doc } from "./json-text.ts";
import { encodeEntry } from "../../src/cache/entry-codec.ts";
import { DATA_TYPES, ELEMENT_SIZE, joinBytes, type DataType, type Tensor } from "../../src/core/tensor.ts";
import { listingPage, type ListingApi, type Page } from "../helpers/listing-server.ts";

const NAMES = ["OUTPUT0", "OUTPUT1", "out", "é", "", "a\nb", "__proto__", "x".repeat(70)];

function genTensor(r: Rng, name: string): Tensor {
  const datatype: DataType = r.pick(DATA_TYPES);
  const shape = Array.from({ length: r.int(4) }, () =>
    r.weighted([
      [6, r.range(1, 4)],
      [1, 0],
      [1, r.range(5, 40)],
    ] as const),
  );
  const count = shape.reduce((n, d) => n * d, 1);
  const data =
    datatype === "BYTES"
      ? joinBytes(
          Array.from({ length: count }, () =>
            r.bytes(
              r.weighted([
                [3, r.int(4)],
                [1, r.int(40)],
              ] as const),
            ),
          ),
        )
      : r.bytes(count * ELEMENT_SIZE[datatype]);
  return { name, datatype, shape, data };
}

/** A cache entry: the value and the outputs the lookup asks for. */
export interface EntryCase {
  value: Uint8Array;
  wanted: string[];
}

function frame(header: string, rest: Uint8Array, r: Rng): Uint8Array {
  const json = new TextEncoder().encode(header);
  const len = new Uint8Array(4);
  // The header's length, or now and then one off or anything.
  const n = r.weighted([
    [8, json.byteLength],
    [1, json.byteLength + r.range(-2, 2)],
    [1, r.u32()],
  ] as const);
  new DataView(len.buffer).setUint32(0, Math.max(0, n) >>> 0, true);
  return concat(len, json, rest);
}

/** A valid entry, then 0–3 mutations of its header (structure or tokens) or its bytes. */
export function genEntryCase(r: Rng): EntryCase {
  const names = [...new Set(Array.from({ length: r.range(0, 3) }, () => r.pick(NAMES)))];
  const outputs = names.map((n) => genTensor(r, n));
  const wanted = names.filter(() => r.chance(0.7));
  if (r.chance(0.1)) wanted.push(r.pick(NAMES));
  let value: Uint8Array = encodeEntry(outputs);
  for (
    let n = r.weighted([
      [2, 0],
      [4, 1],
      [2, 2],
      [1, 3],
    ] as const);
    n > 0;
    n--
  ) {
    const headerLength = value.byteLength >= 4 ? new DataView(value.buffer, value.byteOffset, value.byteLength).getUint32(0, true) : 0;
    const within = 4 + headerLength <= value.byteLength;
    const header = within ? new TextDecoder().decode(value.subarray(4, 4 + headerLength)) : "[]";
    const rest = within ? value.subarray(4 + headerLength) : value.subarray(Math.min(4, value.byteLength));
    switch (
      r.weighted([
        [3, "structure"],
        [2, "tokens"],
        [3, "bytes"],
        [1, "data"],
      ] as const)
    ) {
      case "structure": {
        let doc: Doc;
        try {
          doc = JSON.parse(header) as Doc;
        } catch {
          doc = [];
        }
        value = frame(toJsonText(mutateStructure(doc, r)), rest, r);
        break;
      }
      case "tokens":
        value = frame(mutateTokens(header, r, [...DATA_TYPES, "-1", "1e3", "9007199254740993"]), rest, r);
        break;
      case "bytes":
        value = mutateBytes(value, r);
        break;
      default: // the tensors' bytes only: framing of BYTES elements, sizes
        value = concat(value.subarray(0, Math.min(value.byteLength, 4 + headerLength)), mutateBytes(rest, r));
    }
  }
  return { value, wanted };
}

/** One listing: the pages in order (the last says whether the listing goes on). */
export interface ListingCase {
  api: ListingApi;
  pages: Page[];
  /** After the pages run out: the last page again with fresh tokens (a listing that never ends), or an error. */
  then: "repeat" | "error";
}

const KEYS = ["repo/m/config.pbtxt", "repo/m/1/model.onnx", "repo/m/", "repo/../x", "repo/a&b<c>", "repo/é", "", "repo/" + "k".repeat(300)];

function mutateText(text: string, r: Rng): string {
  if (r.chance(0.5))
    return mutateTokens(text, r, ["IsTruncated", "true", "NextContinuationToken", "NextMarker", "nextPageToken", "items", "Size", "-1", "NaN"]);
  if (r.chance(0.5)) return new TextDecoder().decode(mutateBytes(new TextEncoder().encode(text), r));
  try {
    return toJsonText(mutateStructure(JSON.parse(text) as Doc, r));
  } catch {
    return mutateTokens(text, r);
  }
}

export function genListingCase(r: Rng, api: ListingApi): ListingCase {
  const pages: Page[] = [];
  const n = r.range(1, 4);
  for (let p = 0; p < n; p++) {
    const keys = Array.from(
      {
        length: r.weighted([
          [4, r.int(4)],
          [1, r.range(5, 60)],
        ] as const),
      },
      () => r.pick(KEYS) + (r.chance(0.5) ? String(r.int(100)) : ""),
    );
    const last = p === n - 1 && r.chance(0.8);
    const token = last
      ? undefined
      : r.weighted([
          [6, `t${p + 1}`],
          [1, "same"],
          [1, ""],
          [1, "x".repeat(r.range(1, 3000))],
        ] as const);
    pages.push(listingPage(api, keys, token));
  }
  // Most cases mutate one page, 1–3 times; some leave the listing as it is.
  if (r.chance(0.7)) {
    const p = r.int(pages.length);
    for (
      let m = r.weighted([
        [3, 1],
        [1, 2],
        [1, 3],
      ] as const);
      m > 0;
      m--
    )
      pages[p] = { ...pages[p]!, body: mutateText(String(pages[p]!.body), r) };
    if (r.chance(0.05)) pages[p] = { ...pages[p]!, status: r.pick([403, 404]) }; // not 5xx: the clients retry those after a delay
  }
  return { api, pages, then: r.chance(0.5) ? "repeat" : "error" };
}
