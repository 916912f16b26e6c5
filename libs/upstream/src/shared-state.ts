// What the replicas of the fleet share about upstreams, over Redis: admin changes to models and channels (the
// Catalog's cached copies are dropped everywhere at once) and circuit-breaker state (a channel that fails on one
// replica is skipped by all). Decisions stay in memory on the hot path; only changes travel:
//   - a failure: INCR of the channel's consecutive-failure counter (shared: failures on any replica add up);
//   - an opening: the state key `<prefix>:upstream:{breaker}:<channel>` and a message on breakerEventsChannel;
//   - a recovery (first success after failures): the keys removed and a message.
// `channel list` reads the state keys (readBreakerStates). Losing Redis loses nothing but this sharing.
import { breakerEventsChannel, catalogInvalidationChannel } from '@gensvc/contracts';
import type { SharedSubscriber } from '@gensvc/queue';
import type { RedisConnection } from '@gensvc/queue';
import type { BreakerListener, CircuitBreaker, CircuitState } from './breaker';
import type { Catalog } from './catalog';

// One hash tag for every channel's keys: `channel list` reads them all in one MGET, which a Redis Cluster answers
// only within one slot.
const stateKey = (prefix: string, channelId: string) => `${prefix}:upstream:{breaker}:${channelId}`;
const failuresKey = (prefix: string, channelId: string) => `${prefix}:upstream:{breaker}:${channelId}:failures`;
/** Consecutive failures older than this (with no failure since) no longer count towards opening. */
const FAILURE_WINDOW_MS = 60_000;

interface StoredState {
  openedAt: number;
  openMs: number;
}

export interface SharedUpstreamStateOptions {
  /** Commands (INCR, SET, PUBLISH). */
  redis: RedisConnection;
  /** The process's subscriber connection (its owner closes it). */
  subscriber: SharedSubscriber;
  queuePrefix: string;
  catalog?: Catalog;
  breaker?: CircuitBreaker;
  log: { warn(obj: object, msg: string): void };
}

export interface SharedUpstreamState {
  close(): Promise<void>;
}

/**
 * Subscribes the catalog and the breaker to the other replicas' changes and shares the breaker's own. The catalog
 * is trusted only while the subscription is live (confirmed on every reconnect).
 */
export async function shareUpstreamState(opts: SharedUpstreamStateOptions): Promise<SharedUpstreamState> {
  const { redis, subscriber, queuePrefix: prefix, catalog, breaker, log } = opts;
  const catalogChannel = catalogInvalidationChannel(prefix);
  const breakerChannel = breakerEventsChannel(prefix);
  const warn = (what: string) => (err: unknown) => log.warn({ err }, what);

  if (breaker) {
    const listener: BreakerListener = {
      failed(channelId) {
        const key = failuresKey(prefix, channelId);
        redis
          .multi()
          .incr(key)
          .pexpire(key, FAILURE_WINDOW_MS)
          .exec()
          .then((results) => {
            const count = Number(results?.[0]?.[1] ?? 0);
            if (count >= breaker.threshold && breaker.state(channelId) === 'closed') {
              const at = Date.now();
              breaker.openedElsewhere(channelId, at);
              listener.opened(channelId, at);
            }
          })
          .catch(warn('could not count a channel failure in Redis'));
      },
      opened(channelId, at) {
        const state: StoredState = { openedAt: at, openMs: breaker.openMs };
        redis
          .multi()
          .set(stateKey(prefix, channelId), JSON.stringify(state), 'PX', breaker.openMs * 10)
          .publish(breakerChannel, `open ${channelId} ${at}`)
          .exec()
          .catch(warn('could not share an opened circuit'));
      },
      closed(channelId) {
        redis
          .multi()
          .del(stateKey(prefix, channelId), failuresKey(prefix, channelId))
          .publish(breakerChannel, `closed ${channelId}`)
          .exec()
          .catch(warn('could not share a closed circuit'));
      },
    };
    breaker.setListener(listener);
  }

  const unsubscribe = await subscriber.listen([catalogChannel, breakerChannel], {
    onMessage(channel, message) {
      if (channel === catalogChannel) catalog?.invalidate(message);
      else if (channel === breakerChannel && breaker) {
        const [event, channelId, at] = message.split(' ');
        if (!channelId) return;
        if (event === 'open') breaker.openedElsewhere(channelId, Number(at) || Date.now());
        else if (event === 'closed') breaker.closedElsewhere(channelId);
      }
    },
    setLive: (live) => catalog?.setTrusted(live),
  });
  return {
    async close() {
      breaker?.setListener(null);
      await unsubscribe();
    },
  };
}

/** Tells every replica to drop its cached copy of a model or channel (the admin CLI, after a change). */
export function publishCatalogChange(
  redis: RedisConnection,
  queuePrefix: string,
  change: { model: string } | { channel: string },
) {
  const message = 'model' in change ? `model:${change.model}` : `channel:${change.channel}`;
  return redis.publish(catalogInvalidationChannel(queuePrefix), message);
}

export interface SharedCircuit {
  state: CircuitState;
  /** Consecutive failures counted across replicas (within the last minute). */
  failures: number;
  opened_at: string | null;
}

/** The shared circuit state of each channel, as `channel list` shows it. */
export async function readBreakerStates(
  redis: RedisConnection,
  queuePrefix: string,
  channelIds: readonly string[],
  now = Date.now(),
): Promise<Map<string, SharedCircuit>> {
  const out = new Map<string, SharedCircuit>();
  if (channelIds.length === 0) return out;
  const keys = channelIds.flatMap((id) => [stateKey(queuePrefix, id), failuresKey(queuePrefix, id)]);
  const values = await redis.mget(...keys);
  channelIds.forEach((id, i) => {
    const raw = values[2 * i];
    const failures = Number(values[2 * i + 1] ?? 0);
    let state: CircuitState = 'closed';
    let openedAt: string | null = null;
    if (raw) {
      const stored = JSON.parse(raw) as StoredState;
      state = now - stored.openedAt < stored.openMs ? 'open' : 'half_open';
      openedAt = new Date(stored.openedAt).toISOString();
    }
    out.set(id, { state, failures, opened_at: openedAt });
  });
  return out;
}
