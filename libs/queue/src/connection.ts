import { parseRedisTarget } from '@gensvc/config';
import { Cluster, Redis } from 'ioredis';

/** One Redis or a Redis Cluster: both take the same commands, pub/sub included (a cluster broadcasts PUBLISH). */
export type RedisConnection = Redis | Cluster;

/**
 * A Redis connection for queues: a `Cluster` when the URL names one (`redis+cluster://`, config's redisUrl), else a
 * `Redis`. BullMQ needs `maxRetriesPerRequest: null` (a blocking worker command must wait out a reconnect instead
 * of failing); the name shows up in `CLIENT LIST`. The caller owns the connection: Queues and Workers built on it
 * leave it open, so close it last.
 */
export function createRedisConnection(url: string, opts: { name: string }): RedisConnection {
  const options = { maxRetriesPerRequest: null, enableReadyCheck: true, connectionName: opts.name };
  const target = parseRedisTarget(url);
  if ('error' in target) throw new Error(`REDIS_URL ${target.error}`);
  if (!target.cluster) return new Redis(url, options);
  const { username, password, tls } = target;
  return new Cluster(target.nodes, {
    redisOptions: { ...options, username, password, ...(tls ? { tls: {} } : {}) },
    enableReadyCheck: true,
  });
}

/**
 * BullMQ's key prefix on this connection. On a cluster every key of a queue must hash to one slot (its scripts
 * touch many), so the prefix is a hash tag, as BullMQ documents; one Redis keeps the plain prefix and its keys.
 */
export function bullPrefix(connection: RedisConnection, prefix: string): string {
  return connection.isCluster ? `{${prefix}}` : prefix;
}

/** The primaries behind a connection (itself for one Redis), for what reads each node: SCAN, INFO. */
export function primariesOf(connection: RedisConnection): Redis[] {
  return connection instanceof Cluster ? connection.nodes('master') : [connection];
}

/**
 * The connection a SharedSubscriber listens on. On a cluster it is a plain connection to the first seed: classic
 * pub/sub reaches every node, and a plain connection reports its drops (close, reconnecting), which caches must hear
 * of to stop trusting themselves; a Cluster's own subscriber moves to another node silently, messages lost between.
 * While that seed is down the caches stay distrusted (they read the database), never wrongly trusted.
 */
export function createSubscriberConnection(url: string, opts: { name: string }): Redis {
  const target = parseRedisTarget(url);
  if ('error' in target || !target.cluster) return createRedisConnection(url, opts) as Redis;
  const { username, password, tls } = target;
  return new Redis({
    ...target.nodes[0]!,
    username,
    password,
    ...(tls ? { tls: {} } : {}),
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    connectionName: opts.name,
  });
}
