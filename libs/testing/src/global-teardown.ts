import type { MailCatcher, PgBouncer, RedisCluster, Stack } from '@gensvc/local-stack';
import { adminUrl, dropRunDatabases } from './databases';

export default async function globalTeardown() {
  const runId = process.env.GENSVC_TEST_RUN;
  if (runId && process.env.DATABASE_URL) await dropRunDatabases(adminUrl(process.env.DATABASE_URL), runId);
  await ((globalThis as Record<string, unknown>).__gensvcPgBouncer as PgBouncer | undefined)?.stop();
  await ((globalThis as Record<string, unknown>).__gensvcRedisCluster as RedisCluster | undefined)?.stop();
  const stack = (globalThis as Record<string, unknown>).__gensvcStack as Stack | undefined;
  await stack?.stop();
  await ((globalThis as Record<string, unknown>).__gensvcMail as MailCatcher | undefined)?.stop();
}
