// The one rate limiter: an exact sliding window counted in Redis, so that every edge replica shares it. Each
// accepted call is a member of a sorted set scored by Redis's own clock (TIME), so replicas with skewed clocks
// still agree; a call is accepted only if fewer than `limit` calls were accepted in the last `windowMs`.
import { randomBytes } from 'node:crypto';
import { errors } from '@gensvc/errors';
import type { NextFunction, Request, Response } from 'express';
import type { Redis } from 'ioredis';
import { authOf, type AuthContext } from '../auth/authenticate';

const SLIDING_WINDOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local accepted = 0
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  count = count + 1
  accepted = 1
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local frees = now + window
if oldest[2] then frees = tonumber(oldest[2]) + window end
return {accepted, limit - count, frees, now}
`;

type WithWindow = Redis & {
  gensvcSlidingWindow(key: string, limit: number, windowMs: number, member: string): Promise<[number, number, number, number]>;
};

export interface WindowDecision {
  accepted: boolean;
  /** Calls still accepted in the current window after this one. */
  remaining: number;
  /** Unix milliseconds (Redis clock) when the oldest counted call leaves the window, freeing a slot. */
  resetAtMs: number;
  /** Redis's clock when the decision was taken. */
  nowMs: number;
}

const memberPrefix = randomBytes(6).toString('hex');
let sequence = 0;

/** Counts one call against `key` if the window has room. Atomic in Redis: racing replicas cannot overshoot. */
export async function takeSlot(redis: Redis, key: string, limit: number, windowMs: number): Promise<WindowDecision> {
  const r = redis as WithWindow;
  if (typeof r.gensvcSlidingWindow !== 'function') r.defineCommand('gensvcSlidingWindow', { numberOfKeys: 1, lua: SLIDING_WINDOW });
  const member = `${memberPrefix}:${(sequence = (sequence + 1) % Number.MAX_SAFE_INTEGER)}`;
  const [accepted, remaining, resetAtMs, nowMs] = await r.gensvcSlidingWindow(key, limit, windowMs, member);
  return { accepted: accepted === 1, remaining: Math.max(0, remaining), resetAtMs, nowMs };
}

export interface RateLimitDeps {
  redis: Redis;
  config: { queuePrefix: string };
}

export interface RateLimitOptions {
  /** What is counted: 'paid' (spec §8: paid API calls) or 'uploads'. Buckets are counted separately. */
  bucket: string;
  /** The workspace's limit per window (workspace.rpm, workspace.uploadRpm). */
  limitOf: (auth: AuthContext) => number;
  windowMs?: number;
}

export const MINUTE_MS = 60_000;

/**
 * Middleware after authentication: counts the call against the workspace, sets X-RateLimit-Limit-RPM,
 * X-RateLimit-Remaining-RPM and X-RateLimit-Reset (Unix seconds when a slot frees) on every answer, and answers
 * 429 with Retry-After (seconds) when the window is full.
 */
export function rateLimit(deps: RateLimitDeps, options: RateLimitOptions) {
  const windowMs = options.windowMs ?? MINUTE_MS;
  return async (_req: Request, res: Response, next: NextFunction) => {
    try {
      const auth = authOf(res);
      const limit = options.limitOf(auth);
      const key = `${deps.config.queuePrefix}:rl:${options.bucket}:${auth.workspace.id}`;
      const d = await takeSlot(deps.redis, key, limit, windowMs);
      const headers: Record<string, string> = {
        'X-RateLimit-Limit-RPM': String(limit),
        'X-RateLimit-Remaining-RPM': String(d.remaining),
        'X-RateLimit-Reset': String(Math.ceil(d.resetAtMs / 1000)),
      };
      res.set(headers);
      if (d.accepted) return next();
      const retryAfter = Math.max(1, Math.ceil((d.resetAtMs - d.nowMs) / 1000));
      next(
        errors.rateLimited(`Rate limit exceeded: at most ${limit} ${options.bucket === 'uploads' ? 'uploads' : 'paid calls'} per minute for this workspace. Retry in ${retryAfter} s.`, {
          ...headers,
          'Retry-After': String(retryAfter),
        }),
      );
    } catch (e) {
      next(e);
    }
  };
}
