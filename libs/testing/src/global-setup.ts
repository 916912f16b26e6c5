// Runs once before the suite: brings up whatever the environment does not name (embedded Postgres, redis-server,
// s3rver, in a temporary directory), an SMTP server of its own whose inbox tests read (mail.ts), a PgBouncer in
// transaction mode in front of the Postgres (the suites run through it: throughPooler), a three-primary Redis
// Cluster (the suites that run on it: onCluster), and migrates one template database that every test file clones.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  newEncryptionKeys,
  startMailCatcher,
  startPgBouncer,
  startRedisCluster,
  startStack,
} from '@gensvc/local-stack';
import { migrate } from '@gensvc/db';
import { adminUrl, withAdmin } from './databases';

export default async function globalSetup() {
  const runId = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-test-'));
  const stack = await startStack({
    dataDir,
    persistent: false,
    env: process.env,
    log: (m) => process.stderr.write(`[test stack] ${m}\n`),
  });
  (globalThis as Record<string, unknown>).__gensvcStack = stack;
  Object.assign(process.env, stack.env);
  // Always its own, even where SMTP_URL names a server: the tests read what was sent from this one's inbox.
  const mail = await startMailCatcher();
  (globalThis as Record<string, unknown>).__gensvcMail = mail;
  process.env.SMTP_URL = mail.smtpUrl;
  process.env.GENSVC_TEST_MAIL_INBOX = mail.inboxUrl;
  // Its failure (not installed) fails only the suites that run through it, with the reason: the others still run.
  try {
    const bouncer = await startPgBouncer({
      databaseUrl: stack.env.DATABASE_URL,
      dir: join(dataDir, 'pgbouncer'),
      log: (m) => process.stderr.write(`[test stack] ${m}\n`),
    });
    (globalThis as Record<string, unknown>).__gensvcPgBouncer = bouncer;
    process.env.GENSVC_TEST_POOLER_URL = bouncer.url;
    process.env.GENSVC_TEST_POOLER_ADMIN_URL = bouncer.adminUrl;
  } catch (e) {
    process.env.GENSVC_TEST_POOLER_ERROR = (e as Error).message;
  }
  // Likewise: only the suites that run on the cluster fail without it.
  try {
    const cluster = await startRedisCluster({
      dir: join(dataDir, 'redis-cluster'),
      log: (m) => process.stderr.write(`[test stack] ${m}\n`),
    });
    (globalThis as Record<string, unknown>).__gensvcRedisCluster = cluster;
    process.env.GENSVC_TEST_CLUSTER_URL = cluster.url;
  } catch (e) {
    process.env.GENSVC_TEST_CLUSTER_ERROR = (e as Error).message;
  }
  const template = `gensvc_t${runId}_tpl`;
  await withAdmin(adminUrl(stack.env.DATABASE_URL), (c) => c.query(`CREATE DATABASE "${template}"`));
  const url = new URL(stack.env.DATABASE_URL);
  url.pathname = `/${template}`;
  await migrate(url.toString());
  process.env.GENSVC_TEST_RUN = runId;
  // A key of this run's own, unless the caller set theirs: every test context and helper seals under it.
  process.env.ENCRYPTION_KEYS ||= newEncryptionKeys('test');
  process.env.GENSVC_TEST_TEMPLATE = template;
}
