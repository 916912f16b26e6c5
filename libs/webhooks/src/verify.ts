// Receiving side of SVC-Signature (spec section 6). Dependency-free beyond node:crypto so a receiver can install
// this package alone.
import { DELIVERY_ID_HEADER, SIGNATURE_HEADER, TASK_ID_HEADER } from './headers';
import { bodyBytes, checkedSecret, computeSignature, type RawBody } from './signature';
import {
  anyMacMatches,
  DEFAULT_TOLERANCE_SECONDS,
  headerValue,
  outsideTolerance,
  type CallbackHeaders,
  type VerifyOptions,
} from './signature-checks';

export { DEFAULT_TOLERANCE_SECONDS, type CallbackHeaders, type VerifyOptions };

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

export const isWebhookVerificationError = (e: unknown): e is WebhookVerificationError =>
  e instanceof WebhookVerificationError;

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
export function verifyCallback(
  rawBody: RawBody,
  headers: CallbackHeaders,
  secrets: string | readonly string[],
  opts: VerifyOptions = {},
): VerifiedCallback {
  const keys = (typeof secrets === 'string' ? [secrets] : [...secrets]).map(checkedSecret);
  if (keys.length === 0) throw new TypeError('verifyCallback: at least one secret is required');
  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!(tolerance >= 0)) throw new TypeError(`verifyCallback: toleranceSeconds must be >= 0, got ${tolerance}`);
  const body = bodyBytes(rawBody);

  const header = headerValue(headers, SIGNATURE_HEADER);
  if (header === undefined) throw new WebhookVerificationError('missing_header', `no ${SIGNATURE_HEADER} header`);
  const { timestamp, signatures } = parseSignatureHeader(header);

  const expected = keys.map((key) => Buffer.from(computeSignature(body, key, timestamp), 'hex'));
  if (!anyMacMatches(expected, signatures))
    throw new WebhookVerificationError(
      'no_matching_signature',
      `no ${SIGNATURE_HEADER} v1 matches the body under the given secret(s)`,
    );

  const skew = outsideTolerance(timestamp, { ...opts, toleranceSeconds: tolerance });
  if (skew !== null) {
    throw new WebhookVerificationError(
      'timestamp_outside_tolerance',
      `signed ${Math.abs(skew)} s ${skew > 0 ? 'ago' : 'ahead'}; tolerance is ${tolerance} s`,
    );
  }
  return {
    timestamp,
    taskId: headerValue(headers, TASK_ID_HEADER),
    deliveryId: headerValue(headers, DELIVERY_ID_HEADER),
  };
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
