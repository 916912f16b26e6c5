// Cached key look-ups. Correctness rests on invalidation, not on the TTL: every change to a key or to what bounds it
// (revocation, rotation, limits, its creator's role, removal from the workspace or deletion) publishes the key id on
// a Redis channel and each replica drops that key at once. The cache is trusted only while this
// replica's subscription is live; while it is down (Redis restart, network cut) every look-up goes to Postgres,
// and on reconnect the cache starts empty. So a revoked key stops working on every replica within the pub/sub
// delivery time, and never later than one request after the subscription returns.
import { keyInvalidationChannel } from '@gensvc/contracts';
import type { SharedSubscriber } from '@gensvc/queue';
import type { ApiKeyLookup } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';

interface Entry {
  value: ApiKeyLookup | null;
  at: number;
}

/** A key's lastUsedAt is written at most once per this long per process. */
const LAST_USED_RESOLUTION_MS = 60_000;

export interface KeyCacheOptions {
  ttlMs: number;
  maxEntries?: number;
  now?: () => number;
}

export class KeyCache {
  private readonly entries = new Map<string, Entry>();
  /** When this process last recorded each key's use; one map per process, shared by every route's authenticate(). */
  private readonly touched = new Map<string, number>();
  private live = false;
  /**
   * Bumped by every invalidation. A look-up notes it before reading Postgres and may cache its answer only if no
   * invalidation came in between: otherwise a read that raced a revocation would cache the stale row.
   */
  private epoch = 0;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(options: KeyCacheOptions) {
    this.ttlMs = options.ttlMs;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** undefined: not cached (or the cache cannot be trusted right now); null: known not to exist. */
  get(hash: string): ApiKeyLookup | null | undefined {
    if (!this.live) return undefined;
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (this.now() - entry.at >= this.ttlMs) {
      this.entries.delete(hash);
      return undefined;
    }
    return entry.value;
  }

  /** The epoch to hand back to set() with the answer of a look-up started now. */
  begin(): number {
    return this.epoch;
  }

  set(hash: string, value: ApiKeyLookup | null, epoch: number) {
    if (!this.live || this.ttlMs === 0 || epoch !== this.epoch) return;
    // Oldest first: Map keeps insertion order, so this bounds memory against floods of random keys.
    while (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(hash, { value, at: this.now() });
  }

  invalidate(keyId: string) {
    this.epoch++;
    for (const [hash, entry] of this.entries) if (entry.value?.key.id === keyId) this.entries.delete(hash);
  }

  /** Called as the invalidation subscription comes and goes. */
  setLive(live: boolean) {
    this.epoch++;
    this.live = live;
    this.entries.clear();
  }

  /** Whether this use of the key is to be recorded (its lastUsedAt written); if so, it is noted as recorded now. */
  touchDue(keyId: string): boolean {
    const now = this.now();
    if (now - (this.touched.get(keyId) ?? Number.NEGATIVE_INFINITY) < LAST_USED_RESOLUTION_MS) return false;
    this.touched.set(keyId, now);
    return true;
  }

  get size() {
    return this.entries.size;
  }
}

/** Listens on the invalidation channel and keeps the cache's liveness in step with it. Returns stop(). */
export function subscribeInvalidations(subscriber: SharedSubscriber, cache: KeyCache, queuePrefix: string) {
  return subscriber.listen([keyInvalidationChannel(queuePrefix)], {
    onMessage: (_channel, keyId) => cache.invalidate(keyId),
    setLive: (live) => cache.setLive(live),
  });
}

/** How the edge reports a key invalidation it could not publish (publishKeyInvalidations' onFailure). */
export const warnUnpublished = (log: Logger) => (err: Error, keyIds: readonly string[]) =>
  log.warn({ err, key_ids: keyIds }, 'could not publish key invalidations; caches expire on their TTL');
