/**
 * @module Where a worker thread's entry module is. Run from source, it sits beside the
 * module that starts it; in the compiled binary every module is bundled into one, and
 * scripts/build.ts embeds each worker entry as an entry point of its own under its path
 * from the project root. The build defines NEREID_COMPILED (`bun build --define`), so no
 * module has to be told at start-up which case it is in.
 */
declare const NEREID_COMPILED: boolean | undefined;

/** The URL to start a Worker from: `projectPath` in the binary, `beside` (`new URL("./x.ts", import.meta.url)`) from source. */
export function workerUrl(projectPath: string, beside: URL): string {
  return typeof NEREID_COMPILED !== "undefined" && NEREID_COMPILED ? `./${projectPath}` : beside.href;
}
