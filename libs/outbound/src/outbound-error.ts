/**
 * Why an outbound URL was refused or its request failed. The first four are rules of the URL itself (DESIGN.md §5):
 * a caller who sent it gets a 400 naming the rule; the rest happen while fetching.
 */
export type OutboundReason =
  | 'scheme'
  | 'userinfo'
  | 'port'
  | 'private_address'
  | 'dns'
  | 'tls'
  | 'timeout'
  | 'redirect'
  | 'too_large'
  | 'http_status'
  | 'connection';

export class OutboundError extends Error {
  readonly reason: OutboundReason;
  /** The HTTP status, for `redirect` and `http_status`. */
  readonly status: number | undefined;

  constructor(reason: OutboundReason, message: string, extra: { status?: number; cause?: unknown } = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'OutboundError';
    this.reason = reason;
    this.status = extra.status;
  }
}

export const isOutboundError = (e: unknown): e is OutboundError => e instanceof OutboundError;

/**
 * Failures that another attempt later may not repeat (a flaky network, a provider briefly down or throttling);
 * the rest are properties of the URL or of what it serves.
 */
export function isTransientOutboundError(e: unknown): boolean {
  if (!isOutboundError(e)) return false;
  if (e.reason === 'timeout' || e.reason === 'connection' || e.reason === 'dns') return true;
  return e.reason === 'http_status' && e.status !== undefined && (e.status === 408 || e.status === 429 || e.status >= 500);
}
