const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "500ms", "30s", "2m", "1h", "30d"; a bare number is seconds. Returns milliseconds, or null when unreadable. */
export function parseDuration(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!m) return null;
  return Math.round(Number(m[1]) * UNIT_MS[m[2] ?? 's']!);
}
