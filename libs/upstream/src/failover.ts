import { AppError } from '@gensvc/errors';
import type { CircuitBreaker } from './breaker';
import type { CatalogRoute } from './catalog';

/**
 * The model's enabled channels in the order to try them: higher priority first; within one priority a weighted
 * random order (a channel of weight 3 comes first three times as often as one of weight 1).
 */
export function orderRoutes(routes: readonly CatalogRoute[], random: () => number = Math.random): CatalogRoute[] {
  const enabled = routes.filter((r) => r.channel.enabled && r.channel.weight > 0);
  const byPriority = new Map<number, CatalogRoute[]>();
  for (const r of enabled) byPriority.set(r.channel.priority, [...(byPriority.get(r.channel.priority) ?? []), r]);
  return [...byPriority.entries()].sort(([a], [b]) => b - a).flatMap(([, group]) => weightedShuffle(group, random));
}

function weightedShuffle(group: CatalogRoute[], random: () => number): CatalogRoute[] {
  const left = [...group];
  const out: CatalogRoute[] = [];
  while (left.length) {
    const total = left.reduce((s, r) => s + r.channel.weight, 0);
    let pick = random() * total;
    let i = 0;
    while (i < left.length - 1 && (pick -= left[i]!.channel.weight) >= 0) i++;
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

/** Connection errors, timeouts, 429 and 5xx move on to the next channel; other answers are the caller's. */
export const failsOverOnStatus = (status: number) => status === 429 || status >= 500;

export interface FailoverOptions<T> {
  routes: readonly CatalogRoute[];
  breaker: CircuitBreaker;
  call: (route: CatalogRoute) => Promise<T>;
  random?: () => number;
  /** Told of every failed attempt (for logs and metrics). */
  onFailure?: (route: CatalogRoute, error: unknown) => void;
}

/**
 * Calls the model's channels in order until one answers. Channels with an open circuit are skipped while another
 * can be tried; when every channel is open, they are tried anyway rather than failing without a call.
 */
export async function withFailover<T>(opts: FailoverOptions<T>): Promise<T> {
  const ordered = orderRoutes(opts.routes, opts.random);
  if (ordered.length === 0) {
    throw new AppError({ status: 503, code: 'no_channel_available', message: 'No enabled channel serves this model.' });
  }
  const admitted = ordered.filter((r) => opts.breaker.tryAcquire(r.channel.id));
  const tryList = admitted.length ? admitted : ordered;
  let last: unknown;
  for (const route of tryList) {
    try {
      const result = await opts.call(route);
      opts.breaker.success(route.channel.id);
      return result;
    } catch (e) {
      last = e;
      opts.onFailure?.(route, e);
      if (e instanceof UpstreamFailure && !e.failover) {
        // The provider judged the request itself: that says nothing about the channel's health.
        opts.breaker.success(route.channel.id);
        throw e.answer ?? toAppError(e);
      }
      opts.breaker.failure(route.channel.id);
    }
  }
  throw toAppError(last);
}

export function toAppError(e: unknown): AppError {
  if (e instanceof AppError) return e;
  if (e instanceof UpstreamFailure) {
    if (e.answer) return e.answer;
    if (e.kind === 'timeout') return new AppError({ status: 504, code: 'upstream_timeout', message: 'The model provider did not answer in time.', cause: e });
    if (e.kind === 'invalid_response') return new AppError({ status: 502, code: 'upstream_invalid_response', message: `The model provider gave an invalid answer: ${e.message}`, cause: e });
    return new AppError({ status: 502, code: 'upstream_error', message: 'The model provider failed to answer.', cause: e });
  }
  return new AppError({ status: 502, code: 'upstream_error', message: 'The model provider failed to answer.', cause: e });
}
