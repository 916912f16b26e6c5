import { Redis } from 'ioredis';

/**
 * A Redis connection for queues. BullMQ needs `maxRetriesPerRequest: null` (a blocking worker command must wait
 * out a reconnect instead of failing); the name shows up in `CLIENT LIST`. The caller owns the connection:
 * Queues and Workers built on it leave it open, so close it last.
 */
export function createRedisConnection(url: string, opts: { name: string }): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, connectionName: opts.name });
}

const corked = new WeakSet<object>();

/**
 * Holds this connection's socket writes until the end of the current turn of the event loop (setImmediate), so the
 * commands issued meanwhile — by the caller and by BullMQ on the same connection (a job's completion right after its
 * reply, the adds of requests read in the same turn) — leave in one system call instead of one each. On this kind of
 * machine a socket write costs more CPU than the Lua script it carries (bench/hot-path-profile: a quarter of the
 * evaluate worker's busy time was socket writes). The bytes and their order are what they would have been: ioredis
 * and Redis see no difference, unlike ioredis auto-pipelining, which changes how commands are queued and which
 * BullMQ's users report losing jobs with. A connection not yet open is left alone (ioredis queues offline).
 * `turns` > 1 holds them that many turns (for a command that is only sent in the next turn).
 */
export function coalesceWrites(connection: Redis, turns = 1): void {
  const stream = (connection as unknown as { stream?: NodeJS.WritableStream & { cork(): void; uncork(): void; writable: boolean } }).stream;
  if (!stream || !stream.writable || corked.has(stream) || connection.status !== 'ready') return;
  corked.add(stream);
  stream.cork();
  const release = (left: number) => {
    if (left > 1) return void setImmediate(release, left - 1);
    corked.delete(stream);
    stream.uncork();
  };
  setImmediate(release, turns);
}
