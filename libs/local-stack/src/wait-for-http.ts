/**
 * Resolves once GET `url` answers 2xx. Rejects after `timeoutMs`, or as soon as `gone()` names a reason to stop
 * waiting (the process that should answer has exited).
 */
export async function waitForHttp(
  url: string,
  options: { timeoutMs?: number; gone?: () => string | null } = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reason = options.gone?.();
    if (reason) throw new Error(`${url} will not answer: ${reason}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
