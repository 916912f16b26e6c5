// Money is integer micro-units of the currency (1 USD = 1_000_000) everywhere inside; decimal strings and numbers
// exist only at the edges (CLI arguments, API answers).

export const MICROS_PER_UNIT = 1_000_000n;

/** "10", "10.5", "0.000001" → micro-units; null for anything else (negative, more than 6 decimals, text). */
export function parseAmount(text: string): bigint | null {
  const m = /^\s*(\d{1,12})(?:\.(\d{1,6}))?\s*$/.exec(text);
  if (!m) return null;
  return BigInt(m[1]!) * MICROS_PER_UNIT + BigInt((m[2] ?? '').padEnd(6, '0'));
}

/** Micro-units → a JSON number in currency units (exact for any balance below 2^53 micro-units). */
export function toAmount(micros: bigint): number {
  return Number(micros) / 1_000_000;
}
