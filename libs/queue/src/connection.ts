import { Redis } from 'ioredis';

/**
 * A Redis connection for queues. BullMQ needs `maxRetriesPerRequest: null` (a blocking worker command must wait
 * out a reconnect instead of failing); the name shows up in `CLIENT LIST`. The caller owns the connection:
 * Queues and Workers built on it leave it open, so close it last.
 */
export function createRedisConnection(url: string, opts: { name: string }): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, connectionName: opts.name });
}
