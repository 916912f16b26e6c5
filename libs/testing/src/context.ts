// Per test file isolation: its own database (cloned from the migrated template), queue prefix and bucket, all
// removed in afterAll. The stores themselves come from global-setup (embedded or named by the environment).
import { randomBytes } from 'node:crypto';
import { CreateBucketCommand, DeleteBucketCommand, DeleteObjectsCommand, type S3Client } from '@aws-sdk/client-s3';
import { loadConfig, parseEncryptionKeys, type Config } from '@gensvc/config';
import { SecretBox } from '@gensvc/db';
import { createTestDb, type TestDb } from '@gensvc/db/testing';
import { createRedisConnection, primariesOf } from '@gensvc/queue';
import { createS3 } from '@gensvc/storage';
import type { RedisConnection } from '@gensvc/queue';
import { adminUrl, withAdmin } from './databases';
import { objectKeys } from './s3';

export interface TestContext {
  /** The full environment a service of this test file would get. */
  env: Record<string, string>;
  config: Config;
  /** A Db handle for the code under test, and the Prisma client for the test's own fixtures and assertions. */
  db: TestDb;
  /** Seals and opens secrets at rest under the context's ENCRYPTION_KEYS. */
  secrets: SecretBox;
  redis: RedisConnection;
  s3: S3Client;
}

/** A box over the test run's ENCRYPTION_KEYS (global setup), for helpers that get no context. */
export const testSecretBox = () => new SecretBox(parseEncryptionKeys(required('ENCRYPTION_KEYS')));

function required(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests with npm test (jest's global setup provides it).`);
  return v;
}

async function cloneDatabase(): Promise<{ url: string; name: string }> {
  const base = required('DATABASE_URL');
  const name = `gensvc_t${required('GENSVC_TEST_RUN')}_${randomBytes(5).toString('hex')}`;
  const template = required('GENSVC_TEST_TEMPLATE');
  // Two clones of one template at the same instant can collide ("source database is being accessed"): retry.
  for (let attempt = 0; ; attempt++) {
    try {
      await withAdmin(adminUrl(base), (c) => c.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`));
      break;
    } catch (e) {
      if (attempt >= 20 || !/being accessed/.test((e as Error).message)) throw e;
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
    }
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return { url: url.toString(), name };
}

let viaPooler = false;

/**
 * Runs every test context of this test file through the run's PgBouncer in transaction mode (global-setup):
 * DATABASE_URL names the bouncer with DATABASE_POOLER=transaction, DIRECT_DATABASE_URL Postgres itself. Call it in a
 * `*.pooler.int.test.ts` file that imports a suite. Each context checks at its end, on PgBouncer's admin console,
 * that its database's transactions went through it. Contexts read it when their beforeAll runs, so it may follow
 * the suite's import.
 */
export function throughPooler() {
  viaPooler = true;
}

function poolerUrl(databaseUrl: string): string {
  const bouncer = process.env.GENSVC_TEST_POOLER_URL;
  const why = process.env.GENSVC_TEST_POOLER_ERROR ?? 'run the tests with npm test';
  if (!bouncer) throw new Error(`the PgBouncer of this run did not start: ${why}`);
  const url = new URL(bouncer);
  url.pathname = new URL(databaseUrl).pathname;
  return url.toString();
}

/** Transactions PgBouncer ran for `database` (SHOW STATS on its admin console, simple-query protocol). */
export async function pooledTransactions(database: string): Promise<number> {
  return withAdmin(required('GENSVC_TEST_POOLER_ADMIN_URL'), async (c) => {
    const { rows } = await c.query<{ database: string; total_xact_count: string }>('SHOW STATS');
    return Number(rows.find((r) => r.database === database)?.total_xact_count ?? 0);
  });
}

let cluster: { minNodes: number } | null = null;

/**
 * Runs every test context of this test file on the run's three-primary Redis Cluster (global-setup): REDIS_URL
 * names it as `redis+cluster://`. Call it in a `*.cluster.int.test.ts` file that imports a suite. Each context checks
 * at its end that its connection was a Cluster and that its keys sat on at least `minNodes` primaries (one, where
 * one hash tag holds them all, as a queue's; none for a suite that leaves no key). Contexts read it when their
 * beforeAll runs.
 */
export function onCluster(opts: { minNodes?: number } = {}) {
  cluster = { minNodes: opts.minNodes ?? 0 };
}

function clusterUrl(): string {
  const url = process.env.GENSVC_TEST_CLUSTER_URL;
  const why = process.env.GENSVC_TEST_CLUSTER_ERROR ?? 'run the tests with npm test';
  if (!url) throw new Error(`the Redis Cluster of this run did not start: ${why}`);
  return url;
}

/** Registers beforeAll/afterAll and returns the context, filled in once beforeAll has run. */
export function useTestContext(overrides: Record<string, string> = {}): TestContext {
  const ctx = {} as TestContext;
  let dbName = '';
  beforeAll(async () => {
    const suffix = randomBytes(4).toString('hex');
    const direct = await cloneDatabase();
    const url = viaPooler ? poolerUrl(direct.url) : direct.url;
    dbName = direct.name;
    const env: Record<string, string> = {
      DATABASE_URL: url,
      ...(viaPooler && { DATABASE_POOLER: 'transaction', DIRECT_DATABASE_URL: direct.url }),
      REDIS_URL: cluster ? clusterUrl() : required('REDIS_URL'),
      QUEUE_PREFIX: `t${suffix}`,
      S3_ENDPOINT: required('S3_ENDPOINT'),
      S3_REGION: process.env.S3_REGION ?? 'us-east-1',
      S3_BUCKET: `gensvc-t${suffix}`,
      S3_FORCE_PATH_STYLE: process.env.S3_FORCE_PATH_STYLE ?? 'true',
      SIGNING_SECRET: randomBytes(32).toString('hex'),
      ENCRYPTION_KEYS: required('ENCRYPTION_KEYS'),
      LOG_LEVEL: 'silent',
      // Each service a test spawns takes a free ops port (/healthz, /readyz, /metrics) instead of the fixed default.
      OPS_PORT: '0',
      // Tests sign many people in at once on a busy machine: as many password hashes at once as libuv's pool runs.
      // The budget itself (1 by default) is tested where it is set back to 1.
      PASSWORD_HASH_CONCURRENCY: '4',
      SMTP_URL: required('SMTP_URL'),
      ...(process.env.S3_ACCESS_KEY_ID ? { S3_ACCESS_KEY_ID: process.env.S3_ACCESS_KEY_ID } : {}),
      ...(process.env.S3_SECRET_ACCESS_KEY ? { S3_SECRET_ACCESS_KEY: process.env.S3_SECRET_ACCESS_KEY } : {}),
      ...overrides,
    };
    ctx.env = env;
    ctx.config = loadConfig(env);
    ctx.db = createTestDb(url, { max: 20, pooler: ctx.config.databasePooler });
    ctx.secrets = new SecretBox(ctx.config.encryptionKeys);
    ctx.redis = createRedisConnection(ctx.config.redisUrl, { name: 'test' });
    ctx.s3 = createS3(ctx.config.s3);
    await ctx.s3.send(new CreateBucketCommand({ Bucket: env.S3_BUCKET }));
  });
  afterAll(async () => {
    if (!ctx.env) return;
    await emptyBucket(ctx.s3, ctx.env.S3_BUCKET!).catch(() => {});
    await ctx.s3.send(new DeleteBucketCommand({ Bucket: ctx.env.S3_BUCKET })).catch(() => {});
    ctx.s3.destroy();
    const prefix = ctx.env.QUEUE_PREFIX!;
    // BullMQ's keys on a cluster start with the prefix as a hash tag (bullPrefix).
    const holders = await deleteKeys(ctx.redis, [`${prefix}*`, `{${prefix}}*`]);
    const isCluster = ctx.redis.isCluster;
    ctx.redis.disconnect();
    await ctx.db.$disconnect();
    const pooled = viaPooler ? await pooledTransactions(dbName) : 0;
    await withAdmin(adminUrl(required('DATABASE_URL')), (c) =>
      c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`),
    );
    if (viaPooler && pooled === 0) throw new Error(`no transaction of ${dbName} went through PgBouncer`);
    if (cluster && !isCluster) throw new Error('the test context was to run on a Redis Cluster, and did not');
    if (cluster && holders < cluster.minNodes)
      throw new Error(`this file's keys sat on ${holders} cluster primaries, fewer than ${cluster.minNodes}`);
  });
  return ctx;
}

/**
 * Deletes the keys matching `patterns`, on every primary of a cluster (SCAN reads one node); answers how many nodes
 * held some. One DEL per key on a cluster: a multi-key DEL must not cross slots.
 */
export async function deleteKeys(redis: RedisConnection, patterns: string | string[]): Promise<number> {
  let holders = 0;
  for (const node of primariesOf(redis)) {
    let held = false;
    for (const pattern of [patterns].flat()) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
        if (keys.length) await (redis.isCluster ? Promise.all(keys.map((k) => node.del(k))) : node.del(...keys));
        held ||= keys.length > 0;
        cursor = next;
      } while (cursor !== '0');
    }
    if (held) holders++;
  }
  return holders;
}

async function emptyBucket(s3: S3Client, bucket: string) {
  const keys = await objectKeys(s3, bucket);
  // DeleteObjects takes at most 1000 keys.
  for (let i = 0; i < keys.length; i += 1000) {
    await s3.send(
      new DeleteObjectsCommand({
        Bucket: bucket,
        Delete: { Objects: keys.slice(i, i + 1000).map((Key) => ({ Key })) },
      }),
    );
  }
}
