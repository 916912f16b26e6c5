// Redis pub/sub for caches kept fresh across processes: publishing invalidations, and trusting a cache only while its
// subscription is live. The channel names are libs/contracts' (channels.ts).
import { keyInvalidationChannel } from '@gensvc/contracts';

/**
 * Tells every edge replica to drop these keys' cached look-ups (a revocation, a rotation, a cap change, a change of
 * the creator's membership). Never throws: a failed publish is handed to `onFailure` (with the keys not yet told),
 * and caches then drop those look-ups when they expire (KEY_CACHE_TTL_MS).
 */
export async function publishKeyInvalidations(
  redis: { publish(channel: string, message: string): Promise<unknown> },
  queuePrefix: string,
  keyIds: readonly string[],
  onFailure: (err: Error, keyIds: readonly string[]) => void,
): Promise<void> {
  const channel = keyInvalidationChannel(queuePrefix);
  for (let i = 0; i < keyIds.length; i++) {
    try {
      await redis.publish(channel, keyIds[i]!);
    } catch (e) {
      onFailure(e instanceof Error ? e : new Error(String(e)), keyIds.slice(i));
      return;
    }
  }
}

/** The part of an ioredis connection a subscription uses. */
export interface ChannelSubscriber {
  status: string;
  on(event: string, listener: (...args: any[]) => void): unknown;
  subscribe(...channels: string[]): Promise<unknown>;
  disconnect(): void;
}

export interface TrustWhileSubscribedOptions {
  /** Names the subscription in its warnings ("key invalidation", "upstream state"). */
  name: string;
  onMessage(channel: string, message: string): void;
  /** Whether what the messages keep fresh (a cache) may be trusted now. */
  setLive(live: boolean): void;
  log: { warn(obj: object, msg: string): void };
}

/**
 * Subscribes a dedicated connection to `channels` for a cache their messages keep fresh, and trusts the cache only
 * while the subscription is live: not live as soon as the connection drops (close, reconnecting, error), live again
 * only once the (re)subscription is confirmed, so no message can slip between a reconnect and the subscribe. Returns
 * close(): not live, connection closed.
 */
export async function trustWhileSubscribed(subscriber: ChannelSubscriber, channels: readonly string[], opts: TrustWhileSubscribedOptions): Promise<() => Promise<void>> {
  subscriber.on('message', (channel: string, message: string) => {
    if (channels.includes(channel)) opts.onMessage(channel, message);
  });
  const down = () => opts.setLive(false);
  subscriber.on('close', down);
  subscriber.on('reconnecting', down);
  subscriber.on('error', (err: unknown) => {
    down();
    opts.log.warn({ err }, `${opts.name} subscriber error`);
  });
  const subscribe = () =>
    subscriber.subscribe(...channels).then(
      () => opts.setLive(true),
      (err: unknown) => opts.log.warn({ err }, `${opts.name} subscribe failed`),
    );
  down();
  subscriber.on('ready', subscribe);
  if (subscriber.status === 'ready') await subscribe();
  return async () => {
    down();
    subscriber.disconnect();
  };
}
