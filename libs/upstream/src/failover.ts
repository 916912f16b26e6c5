import { AppError, errors } from '@gensvc/errors';
import type { ChannelCallReport, CircuitBreaker } from './breaker';
import type { CatalogRoute } from './catalog';

/** The routes a call may try: to an enabled channel of positive weight. */
export const usableRoutes = <R extends CatalogRoute>(routes: readonly R[]): R[] =>
  routes.filter((r) => r.channel.enabled && r.channel.weight > 0);

/**
 * The model's enabled channels in the order to try them: higher priority first; within one priority a weighted
 * random order (a channel of weight 3 comes first three times as often as one of weight 1).
 */
export function orderRoutes<R extends CatalogRoute>(routes: readonly R[], random: () => number = Math.random): R[] {
  const enabled = usableRoutes(routes);
  if (enabled.length <= 1) return enabled; // the usual model: nothing to order
  const byPriority = new Map<number, R[]>();
  for (const r of enabled) byPriority.set(r.channel.priority, [...(byPriority.get(r.channel.priority) ?? []), r]);
  return [...byPriority.entries()].sort(([a], [b]) => b - a).flatMap(([, group]) => weightedShuffle(group, random));
}

function weightedShuffle<R extends CatalogRoute>(group: R[], random: () => number): R[] {
  const left = [...group];
  const out: R[] = [];
  while (left.length) {
    const total = left.reduce((s, r) => s + r.channel.weight, 0);
    let pick = random() * total;
    let i = 0;
    while (i < left.length - 1) {
      pick -= left[i]!.channel.weight;
      if (pick < 0) break;
      i++;
    }
    out.push(...left.splice(i, 1));
  }
  return out;
}

/** What went wrong with one channel: `failover` says whether the next channel may be tried. */
export class UpstreamFailure extends Error {
  constructor(
    message: string,
    readonly kind: 'connection' | 'timeout' | 'status' | 'invalid_response',
    readonly failover: boolean,
    readonly status?: number,
    /** An error to answer the caller with as it is (a 4xx the provider gave about the caller's request). */
    readonly answer?: AppError,
  ) {
    super(message);
    this.name = 'UpstreamFailure';
  }
}

/**
 * Whether a non-2xx answer moves on to the next channel: 429 and 5xx do, and so do the statuses that say the
 * channel itself is wrong or unwell (401/403: its credential; 402: our account at the provider is out of credit;
 * 404: its model name or path; 408, 425) and answers that are not errors at all (1xx, 3xx: redirects are not
 * followed). The other 4xx judge the caller's request. The one rule for every upstream call: the edge's proxies,
 * the evaluate-worker and the task-runner's submissions.
 */
const CHANNEL_STATUSES = new Set([401, 402, 403, 404, 408, 425, 429]);
export const failsOverOnStatus = (status: number): boolean =>
  status < 400 || status >= 500 || CHANNEL_STATUSES.has(status);

/** The provider's own error message in the common shapes ({error: {message}}, {error: "…"}, {message}), on one line. */
function providerMessage(text: string): string | null {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown } | null;
    const message = typeof body?.error === 'string' ? body.error : (body?.error?.message ?? body?.message);
    return typeof message === 'string' ? message.replace(/\s+/g, ' ').trim().slice(0, 500) : null;
  } catch {
    return null;
  }
}

/**
 * The failure of a non-2xx upstream answer, `text` being its body (as far as read). One that does not fail over
 * is answered to the caller as 400 (or the provider's 413/422) upstream_rejected_request, with the provider's message.
 */
export function failureFromStatus(status: number, text: string): UpstreamFailure {
  const message = providerMessage(text);
  const detail = `the channel answered ${status}${message ? `: ${message}` : ''}`;
  if (failsOverOnStatus(status)) return new UpstreamFailure(detail, 'status', true, status);
  const answer = errors.upstreamRejectedRequest(
    status,
    `The model provider rejected the request${message ? `: ${message}` : '.'}`,
  );
  return new UpstreamFailure(detail, 'status', false, status, answer);
}

/** `R`: the routes as the caller narrowed them (e.g. to the channel kinds it speaks), handed back as such. */
export interface FailoverOptions<T, R extends CatalogRoute = CatalogRoute> {
  routes: readonly R[];
  breaker: CircuitBreaker;
  call: (route: R) => Promise<T>;
  random?: () => number;
  /** Told of every failed attempt (for logs and metrics). */
  onFailure?: (route: R, error: unknown) => void;
  /** Errors that end the whole call without judging the channel (the caller's deadline passed, shutdown). */
  isAbort?: (error: unknown) => boolean;
}

/**
 * Calls the model's channels in order until one answers. Channels with an open circuit are skipped while another
 * can be tried; when every channel is open, they are tried anyway rather than failing without a call. A channel's
 * health is judged by what it did: a caller's 4xx (`status`, no failover) is healthy; an invalid answer
 * (`invalid_response`, no failover) is not, though no other channel is asked.
 */
export async function withFailover<T, R extends CatalogRoute = CatalogRoute>(opts: FailoverOptions<T, R>): Promise<T> {
  const ordered = orderRoutes(opts.routes, opts.random);
  if (ordered.length === 0) {
    throw errors.noChannelAvailable();
  }
  let last: unknown;
  const attempt = async (route: R): Promise<{ value: T } | null> => {
    const id = route.channel.id;
    const started = performance.now();
    const observe = (outcome: ChannelCallReport['outcome']) =>
      opts.breaker.onCall?.({
        channelId: id,
        channel: route.channel.name,
        model: route.modelId,
        outcome,
        seconds: (performance.now() - started) / 1000,
      });
    try {
      const value = await opts.call(route);
      opts.breaker.success(id);
      observe('ok');
      return { value };
    } catch (e) {
      last = e;
      if (opts.isAbort?.(e)) {
        opts.breaker.release(id);
        observe('aborted');
        throw toAppError(e);
      }
      opts.onFailure?.(route, e);
      if (e instanceof UpstreamFailure && !e.failover) {
        if (e.kind === 'invalid_response') opts.breaker.failure(id);
        else opts.breaker.success(id); // the provider judged the request itself: the channel is fine
        observe(e.kind === 'invalid_response' ? 'invalid_response' : 'rejected');
        throw toAppError(e);
      }
      opts.breaker.failure(id);
      observe('failover');
      return null;
    }
  };
  const skipped: R[] = [];
  for (const route of ordered) {
    // Claimed one at a time: a half-open trial is taken only for a channel that is really called.
    if (!opts.breaker.tryAcquire(route.channel.id)) {
      skipped.push(route);
      continue;
    }
    const done = await attempt(route);
    if (done) return done.value;
  }
  if (skipped.length === ordered.length) {
    for (const route of skipped) {
      const done = await attempt(route);
      if (done) return done.value;
    }
  }
  throw toAppError(last ?? new UpstreamFailure('every channel of the model is failing', 'connection', true));
}

export function toAppError(e: unknown): AppError {
  if (e instanceof AppError) return e;
  if (e instanceof UpstreamFailure) {
    if (e.answer) return e.answer;
    if (e.kind === 'status' && !e.failover && e.status !== undefined && e.status < 500) {
      return errors.upstreamRejected(`The model provider refused the request: ${e.message}`, e);
    }
    if (e.kind === 'timeout') return errors.upstreamTimeout(undefined, e);
    if (e.kind === 'invalid_response')
      return errors.upstreamInvalidResponse(`The model provider gave an invalid answer: ${e.message}`, e);
    return errors.upstreamError(e);
  }
  return errors.upstreamError(e);
}
