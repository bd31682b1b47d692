/**
 * ocr_pre's image decoding: PNG (every colour type we turn into RGB) and JPEG bytes made
 * here with the same libraries, the size read from the header alone, and the errors a
 * client gets for anything else.
 */
import { describe, it, expect } from "vitest";
import { encode as encodePng } from "fast-png";
import { encode as encodeJpeg } from "jpeg-js";
import { decodeImage, imageSize, ImageInputError, sniffFormat } from "../../../model_repository/ocr_pre/1/image.ts";

const LIMIT = { maxPixels: 40_000_000 };

/** A 3x2 RGB image: red, green, blue / white, black, grey. */
const RGB = Uint8Array.from([255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 128, 128, 128]);

function errorOf(f: () => unknown): ImageInputError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ImageInputError);
    expect((err as ImageInputError).code).toBe("INVALID_ARG");
    return err as ImageInputError;
  }
  throw new Error("expected an ImageInputError");
}

describe("PNG", () => {
  it("decodes 8-bit RGB exactly", () => {
    const png = encodePng({ width: 3, height: 2, data: RGB, channels: 3, depth: 8 });
    expect(sniffFormat(png)).toBe("png");
    expect(imageSize(png, "png")).toEqual({ width: 3, height: 2 });
    const img = decodeImage(png, LIMIT);
    expect(img.width).toBe(3);
    expect(img.height).toBe(2);
    expect([...img.data]).toEqual([...RGB]);
  });

  it("composites RGBA over white", () => {
    // opaque red, fully transparent black, half-transparent black
    const data = Uint8Array.from([255, 0, 0, 255, 0, 0, 0, 0, 0, 0, 0, 128]);
    const img = decodeImage(encodePng({ width: 3, height: 1, data, channels: 4, depth: 8 }), LIMIT);
    expect([...img.data]).toEqual([255, 0, 0, 255, 255, 255, 127, 127, 127]);
  });

  it("spreads grey, grey+alpha and 16-bit samples to RGB", () => {
    const grey = decodeImage(encodePng({ width: 2, height: 1, data: Uint8Array.from([0, 200]), channels: 1, depth: 8 }), LIMIT);
    expect([...grey.data]).toEqual([0, 0, 0, 200, 200, 200]);
    const greyAlpha = decodeImage(encodePng({ width: 1, height: 1, data: Uint8Array.from([0, 255]), channels: 2, depth: 8 }), LIMIT);
    expect([...greyAlpha.data]).toEqual([0, 0, 0]);
    const deep = decodeImage(encodePng({ width: 2, height: 1, data: Uint16Array.from([65535, 0, 257, 0, 0, 32896]), channels: 3, depth: 16 }), LIMIT);
    expect([...deep.data]).toEqual([255, 0, 1, 0, 0, 128]);
  });

  it("unpacks 1-bit grey rows padded to whole bytes", () => {
    // 10 pixels wide: two bytes a row, the last 6 bits padding.
    const packed = Uint8Array.from([0b10110000, 0b01000000, 0b00000000, 0b11000000]);
    const img = decodeImage(encodePng({ width: 10, height: 2, data: packed, channels: 1, depth: 1 }), LIMIT);
    const grey = [...img.data].filter((_, i) => i % 3 === 0);
    expect(grey).toEqual([255, 0, 255, 255, 0, 0, 0, 0, 0, 255, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255]);
  });

  it("maps palette images through their palette", () => {
    const png = encodePng({
      width: 3,
      height: 1,
      data: Uint8Array.from([2, 0, 1]),
      channels: 1,
      depth: 8,
      palette: [
        [10, 20, 30],
        [40, 50, 60],
        [70, 80, 90],
      ],
    });
    expect([...decodeImage(png, LIMIT).data]).toEqual([70, 80, 90, 10, 20, 30, 40, 50, 60]);
  });
});

describe("JPEG", () => {
  it("decodes a baseline JPEG to RGB within the codec's rounding", () => {
    // 16x8: left 8x8 block dark blue, right block light orange; flat blocks code exactly
    // but for YCbCr rounding.
    const rgba = new Uint8Array(16 * 8 * 4);
    for (let y = 0; y < 8; y++) {
      for (let x = 0; x < 16; x++) rgba.set(x < 8 ? [20, 40, 160, 255] : [250, 200, 100, 255], (y * 16 + x) * 4);
    }
    const jpg = new Uint8Array(encodeJpeg({ width: 16, height: 8, data: rgba }, 100).data);
    expect(sniffFormat(jpg)).toBe("jpeg");
    expect(imageSize(jpg, "jpeg")).toEqual({ width: 16, height: 8 });
    const img = decodeImage(jpg, LIMIT);
    expect([img.width, img.height, img.data.length]).toEqual([16, 8, 16 * 8 * 3]);
    const px = (x: number, y: number) => [...img.data.subarray((y * 16 + x) * 3, (y * 16 + x) * 3 + 3)];
    for (const [x, y, want] of [
      [0, 0, [20, 40, 160]],
      [7, 7, [20, 40, 160]],
      [8, 0, [250, 200, 100]],
      [15, 7, [250, 200, 100]],
    ] as const) {
      px(x, y).forEach((v, c) => expect(Math.abs(v - want[c]!)).toBeLessThanOrEqual(2));
    }
  });
});

describe("refused input", () => {
  it("says what is wrong with bytes that are not PNG or JPEG", () => {
    expect(errorOf(() => decodeImage(new Uint8Array(0), LIMIT)).message).toBe("'image' is empty: send the bytes of a PNG or JPEG file");
    expect(errorOf(() => decodeImage(new TextEncoder().encode("GIF89a......"), LIMIT)).message).toBe("unsupported image format GIF: send PNG or JPEG");
    expect(errorOf(() => decodeImage(new TextEncoder().encode("RIFF\0\0\0\0WEBPVP8 "), LIMIT)).message).toBe("unsupported image format WebP: send PNG or JPEG");
    expect(errorOf(() => decodeImage(new TextEncoder().encode("hello, world"), LIMIT)).message).toBe(
      "'image' is not a PNG or JPEG file (unknown signature): send the bytes of a PNG or JPEG file",
    );
  });

  it("reports a truncated or corrupt file as malformed", () => {
    const png = encodePng({ width: 3, height: 2, data: RGB, channels: 3, depth: 8 });
    expect(errorOf(() => decodeImage(png.subarray(0, 40), LIMIT)).message).toMatch(/^malformed PNG: /);
    expect(errorOf(() => decodeImage(png.subarray(0, 12), LIMIT)).message).toBe("malformed PNG: no IHDR header");
    expect(errorOf(() => decodeImage(Uint8Array.from([0xff, 0xd8, 0xff, 0xd9]), LIMIT)).message).toBe("malformed JPEG: no frame header (SOF) found");
  });

  it("refuses an image over the pixel limit from its header, before decoding", () => {
    // A PNG signature and IHDR claiming 100000 x 50000, and nothing else.
    const header = new Uint8Array(33);
    header.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
    new DataView(header.buffer).setUint32(16, 100_000);
    new DataView(header.buffer).setUint32(20, 50_000);
    expect(errorOf(() => decodeImage(header, LIMIT)).message).toBe(
      "image is 100000x50000 = 5000000000 pixels, over the limit of 40000000 (ocr_pre's max_pixels)",
    );
    const small = encodePng({ width: 3, height: 2, data: RGB, channels: 3, depth: 8 });
    expect(errorOf(() => decodeImage(small, { maxPixels: 5 })).message).toBe("image is 3x2 = 6 pixels, over the limit of 5 (ocr_pre's max_pixels)");
  });
});
