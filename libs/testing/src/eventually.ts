/**
 * Polls `probe` until it returns something truthy, and returns that. A probe may also throw (an assertion not yet
 * true): it is retried, and past the deadline its last error is thrown, so a failed expect() reads as itself.
 */
export async function eventually<T>(
  probe: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  what: string,
  timeoutMs = 5_000,
  /** Between probes; raise it for probes that are queries over many rows. */
  intervalMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let failure: unknown;
    try {
      const value = await probe();
      if (value) return value;
    } catch (e) {
      failure = e;
    }
    if (Date.now() > deadline) throw failure ?? new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
