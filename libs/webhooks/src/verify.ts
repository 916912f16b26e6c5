// Receiving side of SVC-Signature (spec section 6). Dependency-free beyond node:crypto so a receiver can install
// this package alone.
import { timingSafeEqual } from 'node:crypto';
import { DELIVERY_ID_HEADER, SIGNATURE_HEADER, TASK_ID_HEADER } from './headers';
import { bodyBytes, checkedSecret, computeSignature, unixNow, type RawBody } from './signature';

/** The reference check's window (spec section 8): a callback signed further than this from now is refused. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type WebhookVerificationReason =
  | 'missing_header'
  | 'malformed_header'
  | 'timestamp_outside_tolerance'
  | 'no_matching_signature';

/** Every refusal of verifyCallback: answer the request with a 400 and do not act on it. */
export class WebhookVerificationError extends Error {
  readonly reason: WebhookVerificationReason;

  constructor(reason: WebhookVerificationReason, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.reason = reason;
  }
}

export const isWebhookVerificationError = (e: unknown): e is WebhookVerificationError => e instanceof WebhookVerificationError;

/** Node's `req.headers` (any casing of names), or a fetch `Headers`. */
export type CallbackHeaders = { get(name: string): string | null } | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyOptions {
  /** Largest accepted |now - t|, in seconds. */
  toleranceSeconds?: number;
  /** Unix seconds; tests pin it. */
  now?: number;
}

export interface VerifiedCallback {
  /** The signed `t`, unix seconds. */
  timestamp: number;
  /** SVC-Task-Id, if sent. Unsigned: act on the signed envelope's task_id. */
  taskId: string | undefined;
  /**
   * SVC-Delivery-Id, if sent: de-duplicate on it. Unsigned, so a request replayed inside the tolerance window with
   * an altered id passes de-duplication; handling a task's result must therefore also be idempotent per task_id.
   */
  deliveryId: string | undefined;
}

/**
 * Checks a callback before anything reads its body as JSON. `rawBody` must be the exact bytes received (with
 * Express: `express.raw({ type: 'application/json' })`). `secrets` may list several (while rolling a rotated
 * secret): any match is accepted.
 *
 * Order: the header must be present and well formed; then some v1 must equal the HMAC under some secret; only then
 * is the timestamp judged, so `timestamp_outside_tolerance` always concerns a genuine callback (a clock off, or a
 * replay) and never hides a wrong secret. Throws WebhookVerificationError on refusal, TypeError on misuse.
 */
export function verifyCallback(rawBody: RawBody, headers: CallbackHeaders, secrets: string | readonly string[], opts: VerifyOptions = {}): VerifiedCallback {
  const keys = (typeof secrets === 'string' ? [secrets] : [...secrets]).map(checkedSecret);
  if (keys.length === 0) throw new TypeError('verifyCallback: at least one secret is required');
  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!(tolerance >= 0)) throw new TypeError(`verifyCallback: toleranceSeconds must be >= 0, got ${tolerance}`);
  const body = bodyBytes(rawBody);

  const header = headerValue(headers, SIGNATURE_HEADER);
  if (header === undefined) throw new WebhookVerificationError('missing_header', `no ${SIGNATURE_HEADER} header`);
  const { timestamp, signatures } = parseSignatureHeader(header);

  // Every (secret, v1) pair is compared, with no early exit and the same work for a v1 of the wrong length, so the
  // time taken says nothing about which byte, value or secret came close.
  let matched = false;
  for (const key of keys) {
    const expected = Buffer.from(computeSignature(body, key, timestamp), 'hex');
    for (const candidate of signatures) {
      const sameLength = candidate.length === expected.length;
      const equal = timingSafeEqual(expected, sameLength ? candidate : Buffer.alloc(expected.length));
      matched = (equal && sameLength) || matched;
    }
  }
  if (!matched) throw new WebhookVerificationError('no_matching_signature', `no ${SIGNATURE_HEADER} v1 matches the body under the given secret(s)`);

  const now = opts.now ?? unixNow();
  const skew = now - timestamp;
  if (Math.abs(skew) > tolerance) {
    throw new WebhookVerificationError('timestamp_outside_tolerance', `signed ${Math.abs(skew)} s ${skew > 0 ? 'ago' : 'ahead'}; tolerance is ${tolerance} s`);
  }
  return { timestamp, taskId: headerValue(headers, TASK_ID_HEADER), deliveryId: headerValue(headers, DELIVERY_ID_HEADER) };
}

/**
 * Strict reading of `t=<digits>,v1=<hex>[,...]`: comma-separated `name=value` elements with no spaces, exactly one
 * t, at least one v1 of whole hex bytes. Other names (v0, a future v2) are skipped, as Stripe does, so a scheme can
 * be added beside v1 without breaking receivers.
 */
function parseSignatureHeader(header: string): { timestamp: number; signatures: Buffer[] } {
  let timestamp: number | undefined;
  const signatures: Buffer[] = [];
  for (const element of header.split(',')) {
    const m = /^([a-z][a-z0-9]*)=(\S+)$/.exec(element);
    if (!m) throw malformed('every element must be name=value, separated by commas without spaces');
    const [, name, value] = m as unknown as [string, string, string];
    if (name === 't') {
      if (timestamp !== undefined) throw malformed('t appears more than once');
      // 15 digits keep it a safe integer; leading zeros would give one timestamp two spellings.
      if (!/^(?:0|[1-9][0-9]{0,14})$/.test(value)) throw malformed('t is not whole unix seconds');
      timestamp = Number(value);
    } else if (name === 'v1') {
      if (!/^(?:[0-9a-fA-F]{2})+$/.test(value)) throw malformed('a v1 value is not hex');
      signatures.push(Buffer.from(value, 'hex'));
    }
  }
  if (timestamp === undefined) throw malformed('no t');
  if (signatures.length === 0) throw malformed('no v1');
  return { timestamp, signatures };
}

function malformed(why: string): WebhookVerificationError {
  return new WebhookVerificationError('malformed_header', `malformed ${SIGNATURE_HEADER} header: ${why}`);
}

/**
 * A header's value by case-insensitive name, or undefined when absent or empty. Repeated values are joined with
 * ", " as fetch and Node do, which a strict parser then refuses rather than picking one.
 */
function headerValue(headers: CallbackHeaders, name: string): string | undefined {
  let value: string | null | undefined;
  if (typeof headers.get === 'function') {
    value = (headers as { get(name: string): string | null }).get(name);
  } else {
    const wanted = name.toLowerCase();
    const found: string[] = [];
    for (const [key, v] of Object.entries(headers as Readonly<Record<string, string | readonly string[] | undefined>>)) {
      if (key.toLowerCase() !== wanted || v === undefined) continue;
      found.push(...(typeof v === 'string' ? [v] : v));
    }
    value = found.length === 0 ? undefined : found.join(', ');
  }
  return value === null || value === undefined || value === '' ? undefined : value;
}
