// Redis pub/sub for caches kept fresh across processes: publishing invalidations, and trusting a cache only while its
// subscription is live. The channel names are libs/contracts' (channels.ts).
import { keyInvalidationChannel, taskFinishedChannel } from '@gensvc/contracts';

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

/**
 * Tells the edges that a task has reached a final state, after the transition committed: an edge holding a caller
 * in `Prefer: wait` for it answers with the task. Never throws: a lost notice leaves that caller to its wait's end
 * (a 202, and the task read as usual), so a failure is only logged.
 */
export async function publishTaskFinished(
  redis: { publish(channel: string, message: string): Promise<unknown> },
  queuePrefix: string,
  taskId: string,
  log: { warn(obj: object, msg: string): void },
): Promise<void> {
  try {
    await redis.publish(taskFinishedChannel(queuePrefix), taskId);
  } catch (err) {
    log.warn({ err, taskId }, 'the task-finished notice could not be published');
  }
}

/** The part of an ioredis connection a subscription uses. */
export interface ChannelSubscriber {
  status: string;
  on(event: string, listener: (channel: string, message: string) => void): unknown;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  disconnect(): void;
}

/** One user of the shared subscriber: what it does with its channels' messages, and whether it may trust its cache. */
export interface ChannelConsumer {
  onMessage(channel: string, message: string): void;
  /** Whether what the messages keep fresh (a cache) may be trusted now. */
  setLive?(live: boolean): void;
}

/**
 * The process's one subscriber connection, shared by every consumer of pub/sub messages, each told only its own
 * channels' messages. A consumer's cache is trusted only while its subscription is live: not live as soon as the
 * connection drops (close, reconnecting, error), live again only once the (re)subscription made after the drop is
 * confirmed, so no message can slip between a reconnect and the subscribe.
 */
export class SharedSubscriber {
  private readonly byChannel = new Map<string, Set<ChannelConsumer>>();
  private readonly consumers = new Set<ChannelConsumer>();
  /** Counts the connection's drops: a subscription confirmed for an earlier connection proves nothing now. */
  private drops = 0;

  constructor(
    private readonly connection: ChannelSubscriber,
    private readonly log: { warn(obj: object, msg: string): void },
  ) {
    connection.on('message', (channel: string, message: string) => {
      for (const consumer of this.byChannel.get(channel) ?? []) consumer.onMessage(channel, message);
    });
    connection.on('close', () => this.down());
    connection.on('reconnecting', () => this.down());
    connection.on('error', (err: unknown) => {
      this.down();
      log.warn({ err }, 'redis subscriber error');
    });
    connection.on('ready', () => void this.subscribe([...this.byChannel.keys()], [...this.consumers]));
  }

  /**
   * Subscribes `consumer` to `channels` and resolves once the subscription is confirmed (or has failed, with a
   * warning: the next reconnect tries again). Returns stop(): the consumer is not live and hears nothing more.
   */
  async listen(channels: readonly string[], consumer: ChannelConsumer): Promise<() => Promise<void>> {
    consumer.setLive?.(false);
    this.consumers.add(consumer);
    for (const channel of channels) {
      const set = this.byChannel.get(channel) ?? new Set();
      set.add(consumer);
      this.byChannel.set(channel, set);
    }
    await this.subscribe([...channels], [consumer]);
    return async () => {
      consumer.setLive?.(false);
      this.consumers.delete(consumer);
      const unused = channels.filter((channel) => {
        const set = this.byChannel.get(channel);
        set?.delete(consumer);
        if (set?.size) return false;
        this.byChannel.delete(channel);
        return true;
      });
      if (unused.length && this.connection.status === 'ready') {
        await this.connection.unsubscribe(...unused).catch(() => undefined);
      }
    };
  }

  /** Every consumer not live, the connection closed. */
  close(): void {
    this.down();
    this.consumers.clear();
    this.byChannel.clear();
    this.connection.disconnect();
  }

  private down(): void {
    this.drops++;
    for (const consumer of this.consumers) consumer.setLive?.(false);
  }

  private async subscribe(channels: string[], consumers: ChannelConsumer[]): Promise<void> {
    if (channels.length === 0) return;
    const drops = this.drops;
    try {
      await this.connection.subscribe(...channels);
    } catch (err) {
      this.log.warn({ err, channels }, 'redis subscribe failed');
      return;
    }
    // A drop since the command was sent: the subscribe made on the next 'ready' decides.
    if (drops !== this.drops) return;
    for (const consumer of consumers) if (this.consumers.has(consumer)) consumer.setLive?.(true);
  }
}
