/**
 * Renders lines of text into PNG/JPEG images for the OCR tests, with ImageMagick and the
 * DejaVu Sans font. Installs both through apt-get when they are missing (as root, as on
 * CI), and throws, never skips, when that fails. `/usr/local/bin/convert` may be a
 * stand-in that cannot draw text, so only /usr/bin/convert or `magick` count.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

function findConvert(): string[] | undefined {
  if (existsSync("/usr/bin/magick")) return ["/usr/bin/magick"];
  if (existsSync("/usr/bin/convert") && !readFileSync("/usr/bin/convert").subarray(0, 200).toString().includes("python")) return ["/usr/bin/convert"];
  return undefined;
}

function aptInstall(packages: string[]): string {
  const run = (args: string[]) =>
    spawnSync("apt-get", args, { encoding: "utf8", timeout: 480_000, env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  let r = run(["install", "-y", "-qq", "--no-install-recommends", ...packages]);
  if (r.status !== 0) {
    run(["update", "-qq"]);
    r = run(["install", "-y", "-qq", "--no-install-recommends", ...packages]);
  }
  return `${r.error?.message ?? ""}${r.stderr ?? ""}`.slice(-2000);
}

/** The ImageMagick command, installed if need be. */
export function ensureImageMagick(): string[] {
  let cmd = findConvert();
  const missing = [...(cmd ? [] : ["imagemagick"]), ...(existsSync(FONT) ? [] : ["fonts-dejavu-core"])];
  if (missing.length > 0) {
    const log = aptInstall(missing);
    cmd = findConvert();
    if (!cmd || !existsSync(FONT)) {
      throw new Error(`The OCR tests render text with ImageMagick and DejaVu Sans; installing ${missing.join(", ")} with apt-get failed:\n${log}`);
    }
  }
  return cmd!;
}

export interface RenderOptions {
  /** Font size in pixels (ImageMagick's pointsize at 72 dpi); lines are 2 sizes apart. */
  size?: number;
  width?: number;
  /** Degrees, clockwise, applied after drawing. */
  rotate?: number;
  format?: "png" | "jpg";
  quality?: number;
}

/** Black DejaVu Sans text on white; returns the file's bytes. */
export function renderText(lines: readonly string[], opts: RenderOptions = {}): Uint8Array {
  const cmd = ensureImageMagick();
  const size = opts.size ?? 64;
  const width = opts.width ?? size * 18;
  const height = size * (2 * lines.length + 1);
  const out = join(mkdtempSync(join(tmpdir(), "nereid-ocr-")), `text.${opts.format ?? "png"}`);
  const args = [
    "-size",
    `${width}x${height}`,
    "xc:white",
    "-font",
    FONT,
    "-pointsize",
    String(size),
    "-fill",
    "black",
    ...lines.flatMap((l, i) => ["-annotate", `+${size}+${size * 2 * (i + 1)}`, l]),
    ...(opts.rotate ? ["-rotate", String(opts.rotate)] : []),
    ...(opts.quality ? ["-quality", String(opts.quality)] : []),
    out,
  ];
  execFileSync(cmd[0]!, [...cmd.slice(1), ...args], { stdio: ["ignore", "ignore", "pipe"] });
  return new Uint8Array(readFileSync(out));
}
