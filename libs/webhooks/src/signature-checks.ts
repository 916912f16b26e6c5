// What every webhook signature this package verifies (SVC-Signature callbacks, Replicate's Standard Webhooks, fal's
// ED25519) checks the same way: reading a header, comparing MACs in constant time, judging the timestamp's age.
import { timingSafeEqual } from 'node:crypto';
import { unixNow } from './signature';

/** The reference check's window (spec section 8): a webhook signed further than this from now is refused. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Node's `req.headers` (any casing of names), or a fetch `Headers`. */
export type CallbackHeaders =
  | { get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyOptions {
  /** Largest accepted |now - t|, in seconds. */
  toleranceSeconds?: number;
  /** Unix seconds; tests pin it. */
  now?: number;
}

/**
 * A header's value by case-insensitive name, or undefined when absent or empty. Repeated values are joined with
 * ", " as fetch and Node do, which a strict parser then refuses rather than picking one.
 */
export function headerValue(headers: CallbackHeaders, name: string): string | undefined {
  let value: string | null | undefined;
  if (typeof headers.get === 'function') {
    value = (headers as { get(name: string): string | null }).get(name);
  } else {
    const wanted = name.toLowerCase();
    const found: string[] = [];
    for (const [key, v] of Object.entries(
      headers as Readonly<Record<string, string | readonly string[] | undefined>>,
    )) {
      if (key.toLowerCase() !== wanted || v === undefined) continue;
      found.push(...(typeof v === 'string' ? [v] : v));
    }
    value = found.length === 0 ? undefined : found.join(', ');
  }
  return value === null || value === undefined || value === '' ? undefined : value;
}

/**
 * Whether some candidate equals some expected MAC. Every pair is compared, with no early exit and the same work for
 * a candidate of the wrong length, so the time taken says nothing about which byte, value or key came close.
 */
export function anyMacMatches(expected: readonly Buffer[], candidates: readonly Buffer[]): boolean {
  let matched = false;
  for (const mac of expected) {
    for (const candidate of candidates) {
      const sameLength = candidate.length === mac.length;
      const equal = timingSafeEqual(mac, sameLength ? candidate : Buffer.alloc(mac.length));
      matched = (equal && sameLength) || matched;
    }
  }
  return matched;
}

/** now - timestamp in seconds when its magnitude exceeds the tolerance (a clock off, or a replay); else null. */
export function outsideTolerance(timestamp: number, opts: VerifyOptions): number | null {
  const skew = (opts.now ?? unixNow()) - timestamp;
  return Math.abs(skew) > (opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS) ? skew : null;
}
