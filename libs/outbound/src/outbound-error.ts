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

/**
 * What the sender of a URL is told when no server there completed an HTTPS handshake: the same words whether the
 * port was closed, filtered, reset, slow or spoke something else than TLS, so that refusals cannot be used to map
 * ports and hosts through the gateway.
 */
export const UNREACHABLE_RULE =
  "The server must accept an HTTPS connection at the URL's host and port and complete a TLS handshake; " +
  'no server there did.';

/** The rule each reason stands for, in words that carry nothing the network answered. */
const RULES: Record<OutboundReason, string | null> = {
  scheme: null, // these three describe the URL itself: their message is the rule
  userinfo: null,
  port: null,
  private_address:
    'Every address the host resolves to must be a public unicast address; this host resolves to one that is not.',
  dns: 'The host must resolve to at least one IP address; this one does not.',
  tls: UNREACHABLE_RULE,
  timeout: UNREACHABLE_RULE,
  connection: UNREACHABLE_RULE,
  redirect: 'The server answered with a redirect; redirects are not followed.',
  too_large: null,
  http_status: null,
};

export class OutboundError extends Error {
  readonly reason: OutboundReason;
  /** The HTTP status, for `redirect` and `http_status`. */
  readonly status: number | undefined;
  /**
   * The rule that failed, for the URL's sender (an API caller): never the addresses the host resolved to or the
   * error the network gave, which `message` keeps for the service's own logs.
   */
  readonly rule: string;
  /**
   * For `private_address`: ipaddr.js's name of the range that refused the address ('loopback', 'private',
   * 'linkLocal', ...). Names the rule without the address, for logs the workspace reads.
   */
  readonly range: string | undefined;

  constructor(
    reason: OutboundReason,
    message: string,
    extra: { status?: number; cause?: unknown; rule?: string; range?: string } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'OutboundError';
    this.reason = reason;
    this.status = extra.status;
    this.range = extra.range;
    this.rule =
      extra.rule ??
      RULES[reason] ??
      (reason === 'http_status'
        ? `The server must answer with a 2xx status; it answered ${extra.status ?? 'otherwise'}.`
        : message);
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
  return (
    e.reason === 'http_status' && e.status !== undefined && (e.status === 408 || e.status === 429 || e.status >= 500)
  );
}
