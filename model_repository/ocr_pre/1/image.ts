/**
 * @module Image bytes → RGB pixels for the OCR pipeline: recognises PNG and JPEG by their
 * signatures, reads the size from the header before decoding (so a huge image is refused
 * without allocating it), and decodes with pngjs / jpeg-js into 8-bit RGB, row-major
 * [height, width, 3]. Alpha is composited over white (text on a transparent background
 * reads as dark on light); pngjs turns every PNG colour type and depth into 8-bit RGBA.
 */
import { createRequire } from "node:module";
import type * as PngJs from "pngjs";
import type * as JpegJs from "jpeg-js";

// Both are packages the server carries for TypeScript models: from the compiled binary
// they need no node_modules (src/backends/typescript/embedded-packages.ts); from the
// checkout they come from the project's node_modules.
const require = createRequire(import.meta.url);
const { PNG } = require("pngjs") as typeof PngJs;
const { decode: decodeJpeg } = require("jpeg-js") as typeof JpegJs;

export type ImageFormat = "png" | "jpeg";

/** A decoded image: `data` is RGB, row-major, `width * height * 3` bytes. */
export interface RgbImage {
  width: number;
  height: number;
  data: Uint8Array;
}

/** Bad input from the client: the model answers it as INVALID_ARG. */
export class ImageInputError extends Error {
  readonly code = "INVALID_ARG" as const;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

const startsWith = (b: Uint8Array, sig: readonly number[], at = 0) => b.length >= at + sig.length && sig.every((v, i) => b[at + i] === v);
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));

/** PNG or JPEG by signature; undefined for anything else. */
export function sniffFormat(bytes: Uint8Array): ImageFormat | undefined {
  if (startsWith(bytes, PNG_SIGNATURE)) return "png";
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "jpeg";
  return undefined;
}

/** Names formats we recognise but do not decode, for the error message. */
function otherFormat(bytes: Uint8Array): string | undefined {
  if (startsWith(bytes, ascii("GIF8"))) return "GIF";
  if (startsWith(bytes, ascii("RIFF")) && startsWith(bytes, ascii("WEBP"), 8)) return "WebP";
  if (startsWith(bytes, ascii("BM"))) return "BMP";
  if (startsWith(bytes, [0x49, 0x49, 0x2a, 0x00]) || startsWith(bytes, [0x4d, 0x4d, 0x00, 0x2a])) return "TIFF";
  if (startsWith(bytes, ascii("ftyp"), 4)) return "HEIF/AVIF";
  if (startsWith(bytes, [0x00, 0x00, 0x01, 0x00])) return "ICO";
  if (startsWith(bytes, ascii("%PDF"))) return "PDF";
  if (startsWith(bytes, ascii("<svg")) || startsWith(bytes, ascii("<?xml"))) return "SVG/XML";
  return undefined;
}

/** Width and height from the header alone (PNG IHDR, JPEG SOFn), without decoding. */
export function imageSize(bytes: Uint8Array, format: ImageFormat): { width: number; height: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (format === "png") {
    if (bytes.length < 24 || !startsWith(bytes, ascii("IHDR"), 12)) throw new ImageInputError("malformed PNG: no IHDR header");
    return { width: view.getUint32(16), height: view.getUint32(20) };
  }
  // JPEG: walk the marker segments up to the first start-of-frame.
  let i = 2;
  while (i + 4 <= bytes.length) {
    if (bytes[i] !== 0xff) throw new ImageInputError(`malformed JPEG: expected a marker at byte ${i}`);
    const marker = bytes[i + 1]!;
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2; // no length
      continue;
    }
    const length = view.getUint16(i + 2);
    const isSof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isSof) {
      if (i + 9 > bytes.length) break;
      return { width: view.getUint16(i + 7), height: view.getUint16(i + 5) };
    }
    if (marker === 0xd9 || marker === 0xda) break; // end of image / start of scan before any frame
    i += 2 + length;
  }
  throw new ImageInputError("malformed JPEG: no frame header (SOF) found");
}

export interface DecodeOptions {
  /** Refuse images with more pixels than this (checked from the header, before decoding). */
  maxPixels: number;
}

/**
 * Decodes PNG or JPEG bytes into RGB. Throws ImageInputError (INVALID_ARG) for empty
 * input, another format, a malformed file, a zero-sized image or one over `maxPixels`.
 */
export function decodeImage(bytes: Uint8Array, opts: DecodeOptions): RgbImage {
  if (bytes.length === 0) throw new ImageInputError("'image' is empty: send the bytes of a PNG or JPEG file");
  const format = sniffFormat(bytes);
  if (!format) {
    const other = otherFormat(bytes);
    throw new ImageInputError(
      other
        ? `unsupported image format ${other}: send PNG or JPEG`
        : "'image' is not a PNG or JPEG file (unknown signature): send the bytes of a PNG or JPEG file",
    );
  }
  const { width, height } = imageSize(bytes, format);
  if (width === 0 || height === 0) throw new ImageInputError(`${format.toUpperCase()} image has no pixels (${width}x${height})`);
  if (width * height > opts.maxPixels) {
    throw new ImageInputError(`image is ${width}x${height} = ${width * height} pixels, over the limit of ${opts.maxPixels} (ocr_pre's max_pixels)`);
  }
  try {
    return format === "png" ? decodePngRgb(bytes) : decodeJpegRgb(bytes, opts.maxPixels);
  } catch (err) {
    if (err instanceof ImageInputError) throw err;
    throw new ImageInputError(`malformed ${format.toUpperCase()}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function decodeJpegRgb(bytes: Uint8Array, maxPixels: number): RgbImage {
  const img = decodeJpeg(bytes, {
    useTArray: true,
    formatAsRGBA: false,
    maxResolutionInMP: Math.ceil(maxPixels / 1e6),
    maxMemoryUsageInMB: Math.max(512, Math.ceil((maxPixels * 8) / 2 ** 20)),
  });
  return { width: img.width, height: img.height, data: img.data };
}

function decodePngRgb(bytes: Uint8Array): RgbImage {
  const png = PNG.sync.read(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  const { width, height, data } = png; // RGBA, 8 bits
  const n = width * height;
  const out = new Uint8Array(n * 3);
  for (let p = 0; p < n; p++) {
    const a = data[p * 4 + 3]!;
    if (a === 255) {
      out[p * 3] = data[p * 4]!;
      out[p * 3 + 1] = data[p * 4 + 1]!;
      out[p * 3 + 2] = data[p * 4 + 2]!;
    } else {
      const k = a / 255;
      out[p * 3] = Math.round(data[p * 4]! * k + 255 * (1 - k));
      out[p * 3 + 1] = Math.round(data[p * 4 + 1]! * k + 255 * (1 - k));
      out[p * 3 + 2] = Math.round(data[p * 4 + 2]! * k + 255 * (1 - k));
    }
  }
  return { width, height, data: out };
}
