/** Polls `check` every 200 ms until it passes, or throws its last error after `timeoutMs`. */
export async function eventually(check: () => Promise<void>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (err) {
      if (Date.now() > end) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
