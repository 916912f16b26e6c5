// The one rate limiter: an exact sliding window counted in Redis, so that every edge replica shares it. Each
// accepted call is a member of a sorted set scored by Redis's own clock (TIME), so replicas with skewed clocks
// still agree; a call is accepted only if fewer than `limit` calls were accepted in the last `windowMs`.
import { randomBytes } from 'node:crypto';
import { type AppError, errors } from '@gensvc/errors';
import type { NextFunction, Request, Response } from 'express';
import type { RedisConnection } from '@gensvc/queue';
import { authOf, type AuthContext } from '../auth/authenticate';

// ARGV: limit, window, member prefix, want, lease ms. With want = 1 one slot is taken for a call made now (scored
// now). With want > 1 (a slot lease, see SlotLeases) up to `want` slots are taken for calls this replica makes within
// the next `lease ms`: they are scored at the lease's end, so each counts for at least a whole window after the call
// that uses it, whenever in the lease that is — never less than a slot taken per call. Only while more than half of
// the window is free is more than one slot granted, and never more than an eighth of what is free.
const SLIDING_WINDOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local want = tonumber(ARGV[4])
local leaseMs = tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local room = limit - count
local grant = 0
if room > 0 then
  grant = 1
  if want > 1 and room * 2 > limit then grant = math.max(1, math.min(want, math.floor(room / 8))) end
  local score = now
  if grant > 1 then score = now + leaseMs end
  local args = {}
  for i = 1, grant do
    args[#args + 1] = score
    args[#args + 1] = ARGV[3] .. ':' .. i
  end
  redis.call('ZADD', KEYS[1], unpack(args))
  redis.call('PEXPIRE', KEYS[1], window + leaseMs)
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local frees = now + window
if oldest[2] then frees = tonumber(oldest[2]) + window end
return {grant, room - grant, frees, now}
`;

// A call limited twice (its workspace's window and its key's own): one slot taken in both windows or in
// neither, atomically, so a refusal by one never uses up the other and racing replicas cannot overshoot either.
// KEYS: workspace window, key window. ARGV: workspace limit, key limit, window, member, lease ms (the workspace window
// may hold leased slots dated up to lease ms ahead: its expiry keeps them). Answers grant, the least room left, when
// the binding window frees a slot, Redis's clock, and 1 when the key's window is the binding one.
const SLIDING_WINDOW_PAIR = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
local roomW = tonumber(ARGV[1]) - redis.call('ZCARD', KEYS[1])
local roomK = tonumber(ARGV[2]) - redis.call('ZCARD', KEYS[2])
local grant = 0
if roomW > 0 and roomK > 0 then
  grant = 1
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('ZADD', KEYS[2], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], window + tonumber(ARGV[5]))
  redis.call('PEXPIRE', KEYS[2], window)
end
local binding = 1
if roomK <= roomW then binding = 2 end
local oldest = redis.call('ZRANGE', KEYS[binding], 0, 0, 'WITHSCORES')
local frees = now + window
if oldest[2] then frees = tonumber(oldest[2]) + window end
return {grant, math.min(roomW, roomK) - grant, frees, now, binding - 1}
`;

type WithWindow = RedisConnection & {
  gensvcSlidingWindow(
    key: string,
    limit: number,
    windowMs: number,
    member: string,
    want: number,
    leaseMs: number,
  ): Promise<[number, number, number, number]>;
  gensvcSlidingWindowPair(
    workspaceKey: string,
    keyKey: string,
    workspaceLimit: number,
    keyLimit: number,
    windowMs: number,
    member: string,
    leaseMs: number,
  ): Promise<[number, number, number, number, number]>;
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
export async function takeSlot(
  redis: RedisConnection,
  key: string,
  limit: number,
  windowMs: number,
): Promise<WindowDecision> {
  const granted = await takeSlots(redis, key, limit, windowMs, 1, 0);
  return {
    accepted: granted.members.length === 1,
    remaining: granted.remaining,
    resetAtMs: granted.resetAtMs,
    nowMs: granted.nowMs,
  };
}

/** Which window decided a call limited twice: its workspace's or its key's. */
interface PairDecision extends WindowDecision {
  binding: 'workspace' | 'key';
}

/** Counts one call in both windows if both have room, else in neither (SLIDING_WINDOW_PAIR). */
export async function takeSlotPair(
  redis: RedisConnection,
  workspaceKey: string,
  workspaceLimit: number,
  keyKey: string,
  keyLimit: number,
  windowMs: number,
): Promise<PairDecision> {
  const r = redis as WithWindow;
  if (typeof r.gensvcSlidingWindowPair !== 'function')
    r.defineCommand('gensvcSlidingWindowPair', { numberOfKeys: 2, lua: SLIDING_WINDOW_PAIR });
  sequence = (sequence + 1) % Number.MAX_SAFE_INTEGER;
  const member = `${memberPrefix}:${sequence}:1`;
  const [granted, remaining, resetAtMs, nowMs, binding] = await r.gensvcSlidingWindowPair(
    workspaceKey,
    keyKey,
    workspaceLimit,
    keyLimit,
    windowMs,
    member,
    SLOT_LEASE_MS,
  );
  return {
    accepted: granted === 1,
    remaining: Math.max(0, remaining),
    resetAtMs,
    nowMs,
    binding: binding === 1 ? 'key' : 'workspace',
  };
}

interface SlotGrant {
  /** The sorted-set members taken, one per call that may be accepted. */
  members: string[];
  /** Slots still free in the window after this grant. */
  remaining: number;
  resetAtMs: number;
  nowMs: number;
}

/** Takes up to `want` slots for calls within the next `leaseMs` (one slot, for a call now, when want is 1). */
async function takeSlots(
  redis: RedisConnection,
  key: string,
  limit: number,
  windowMs: number,
  want: number,
  leaseMs: number,
): Promise<SlotGrant> {
  const r = redis as WithWindow;
  if (typeof r.gensvcSlidingWindow !== 'function')
    r.defineCommand('gensvcSlidingWindow', { numberOfKeys: 1, lua: SLIDING_WINDOW });
  sequence = (sequence + 1) % Number.MAX_SAFE_INTEGER;
  const prefix = `${memberPrefix}:${sequence}`;
  const [granted, remaining, resetAtMs, nowMs] = await r.gensvcSlidingWindow(
    key,
    limit,
    windowMs,
    prefix,
    want,
    leaseMs,
  );
  return {
    members: Array.from({ length: granted }, (_, i) => `${prefix}:${i + 1}`),
    remaining: Math.max(0, remaining),
    resetAtMs,
    nowMs,
  };
}

/** Workspaces whose limit is at least this lease slots; below it every call takes its own slot (exact headers). */
const SLOT_LEASE_MIN_LIMIT = 1000;
const SLOTS_PER_LEASE = 32;
const SLOT_LEASE_MS = 200;

interface SlotLease {
  members: string[];
  /** performance.now() after which the lease's slots are no longer used (they are returned). */
  validUntil: number;
  remainingAtGrant: number;
  resetAtMs: number;
}

/**
 * Rate-limit slots leased in blocks: for a workspace with a large limit, this replica takes up to 32 slots
 * in one Redis call and accepts calls against them in memory for 200 ms; the slots it did not use go back to the
 * window (ZREM) when the lease ends. The window stays exact — Redis never holds more than the limit, and each slot is
 * dated at its lease's end — and X-RateLimit-Remaining counts, conservatively, other replicas' unused leased slots as
 * used. Below SLOT_LEASE_MIN_LIMIT, and whenever less than half of the window is free, a call takes its own slot.
 * One per process (EdgeDeps.rateSlots).
 */
export class SlotLeases {
  private readonly leases = new Map<string, SlotLease>();
  private readonly pending = new Map<string, Promise<void>>();
  /** Redis calls made and calls accepted from a lease (tests). */
  readonly stats = { redisCalls: 0, leased: 0 };

  constructor(readonly redis: RedisConnection) {}

  async take(key: string, limit: number, windowMs: number): Promise<WindowDecision> {
    if (limit < SLOT_LEASE_MIN_LIMIT) {
      this.stats.redisCalls++;
      return takeSlot(this.redis, key, limit, windowMs);
    }
    for (;;) {
      const lease = this.leases.get(key);
      if (lease && lease.members.length > 0 && performance.now() < lease.validUntil) {
        lease.members.pop();
        this.stats.leased++;
        return {
          accepted: true,
          remaining: lease.remainingAtGrant + lease.members.length,
          resetAtMs: lease.resetAtMs,
          nowMs: Date.now(),
        };
      }
      const inFlight = this.pending.get(key);
      if (inFlight) {
        await inFlight;
        continue;
      }
      const refill = this.refill(key, limit, windowMs);
      this.pending.set(
        key,
        refill
          .then(
            () => undefined,
            () => undefined,
          )
          .finally(() => this.pending.delete(key)),
      );
      const decision = await refill;
      if (decision) return decision;
    }
  }

  /** A new lease for `key` (the old one's unused slots given back); a refusal when the window is full. */
  private async refill(key: string, limit: number, windowMs: number): Promise<WindowDecision | null> {
    this.giveBack(key);
    const started = performance.now();
    this.stats.redisCalls++;
    const g = await takeSlots(this.redis, key, limit, windowMs, SLOTS_PER_LEASE, SLOT_LEASE_MS);
    if (g.members.length === 0) return { accepted: false, remaining: 0, resetAtMs: g.resetAtMs, nowMs: g.nowMs };
    if (g.members.length === 1)
      return { accepted: true, remaining: g.remaining, resetAtMs: g.resetAtMs, nowMs: g.nowMs };
    // Measured from before the request: the lease ends here no later than its slots' date in Redis.
    this.leases.set(key, {
      members: g.members.slice(1),
      validUntil: started + SLOT_LEASE_MS,
      remainingAtGrant: g.remaining,
      resetAtMs: g.resetAtMs,
    });
    setTimeout(() => this.giveBack(key), SLOT_LEASE_MS).unref();
    return { accepted: true, remaining: g.remaining + g.members.length - 1, resetAtMs: g.resetAtMs, nowMs: g.nowMs };
  }

  /** The unused slots of `key`'s lease go back to the window: calls never made are not counted. */
  private giveBack(key: string) {
    const lease = this.leases.get(key);
    if (!lease) return;
    this.leases.delete(key);
    if (lease.members.length) this.redis.zrem(key, ...lease.members).catch(() => undefined); // else they age out
  }

  /** Shutdown: every unused slot back. */
  close() {
    for (const key of [...this.leases.keys()]) this.giveBack(key);
  }
}

export interface RateLimitDeps {
  rateSlots: SlotLeases;
  config: { queuePrefix: string };
}

export interface RateLimitOptions {
  /** What is counted: 'paid' (spec §8: paid API calls) or 'uploads'. Buckets are counted separately. */
  bucket: string;
  /** The workspace's limit per window (workspace.rpm, workspace.uploadRpm). */
  limitOf: (auth: AuthContext) => number;
  /** The key's own limit per window, counted beside the workspace's (key.rpm); null: the workspace's only. */
  keyLimitOf?: (auth: AuthContext) => number | null;
  windowMs?: number;
}

const MINUTE_MS = 60_000;

/**
 * The window of a workspace's `bucket`, or of one key's within it. The workspace id is a hash tag: a pair of
 * windows counted by one script (takeSlotPair) must sit in one slot of a Redis Cluster.
 */
export function rateWindowKey(prefix: string, bucket: string, workspaceId: string, keyId?: string): string {
  return `${prefix}:rl:${bucket}:{${workspaceId}}${keyId === undefined ? '' : `:key:${keyId}`}`;
}

/**
 * Middleware after authentication: counts the call against the workspace, sets X-RateLimit-Limit-RPM,
 * X-RateLimit-Remaining-RPM and X-RateLimit-Reset (Unix seconds when a slot frees) on every answer, and answers
 * 429 with Retry-After (seconds) when the window is full. A key with a limit of its own is counted in its own
 * window too, one slot in both or in neither (takeSlotPair; such calls take their slots one by one, never leased);
 * the headers then speak of the window with less room left.
 */
export function rateLimit(deps: RateLimitDeps, options: RateLimitOptions) {
  const windowMs = options.windowMs ?? MINUTE_MS;
  return async (_req: Request, res: Response, next: NextFunction) => {
    try {
      const auth = authOf(res);
      const workspaceLimit = options.limitOf(auth);
      const keyLimit = options.keyLimitOf?.(auth) ?? null;
      const key = rateWindowKey(deps.config.queuePrefix, options.bucket, auth.workspace.id);
      const d: WindowDecision & { binding?: PairDecision['binding'] } =
        keyLimit === null
          ? await deps.rateSlots.take(key, workspaceLimit, windowMs)
          : await takeSlotPair(
              deps.rateSlots.redis,
              key,
              workspaceLimit,
              rateWindowKey(deps.config.queuePrefix, options.bucket, auth.workspace.id, auth.key.id),
              keyLimit,
              windowMs,
            );
      const byKey = d.binding === 'key';
      const calls = options.bucket === 'uploads' ? 'uploads' : 'paid calls';
      const what = `${calls} per minute for this ${byKey ? 'API key' : 'workspace'}`;
      next(windowVerdict(res, d, byKey ? keyLimit! : workspaceLimit, what) ?? undefined);
    } catch (e) {
      next(e);
    }
  };
}

/**
 * Sets X-RateLimit-Limit-RPM, X-RateLimit-Remaining-RPM and X-RateLimit-Reset from a decision; a refusal is the 429
 * to answer, with Retry-After (seconds). `what` completes "at most <limit> …".
 */
function windowVerdict(res: Response, d: WindowDecision, limit: number, what: string): AppError | null {
  const headers: Record<string, string> = {
    'X-RateLimit-Limit-RPM': String(limit),
    'X-RateLimit-Remaining-RPM': String(d.remaining),
    'X-RateLimit-Reset': String(Math.ceil(d.resetAtMs / 1000)),
  };
  for (const name in headers) res.setHeader(name, headers[name]!);
  if (d.accepted) return null;
  const retryAfter = Math.max(1, Math.ceil((d.resetAtMs - d.nowMs) / 1000));
  return errors.rateLimited(`Rate limit exceeded: at most ${limit} ${what}. Retry in ${retryAfter} s.`, {
    ...headers,
    'Retry-After': String(retryAfter),
  });
}

/**
 * One call counted in a workspace's window of its own `bucket`, apart from its paid calls (a tool such as the test
 * callback, for API keys and sessions alike), with rateLimit's headers; throws the 429 when the window is full.
 */
export async function takeWorkspaceSlot(
  deps: RateLimitDeps,
  res: Response,
  o: { bucket: string; workspaceId: string; limit: number; what: string },
): Promise<void> {
  const key = rateWindowKey(deps.config.queuePrefix, o.bucket, o.workspaceId);
  const refusal = windowVerdict(
    res,
    await deps.rateSlots.take(key, o.limit, MINUTE_MS),
    o.limit,
    `${o.what} per minute for this workspace`,
  );
  if (refusal) throw refusal;
}
