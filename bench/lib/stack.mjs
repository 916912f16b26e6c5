// The stores a benchmark runs against: Postgres, Redis and S3 brought up in a temporary directory (what the
// environment names is used instead), migrated, and the environment every gensvc process of the run shares.
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gensvc, service } from './gensvc.mjs';

// Node 20 is this project's runtime; the AWS SDK's notice about its 2027 releases is not a benchmark figure.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const { newEncryptionKeys, startStack } = gensvc('local-stack');
const { parseEncryptionKeys } = gensvc('config');
const { createDb, migrate, workspaceRepository, apiKeyRepository, SecretBox } = gensvc('db');
const { newApiKey, SCOPES } = gensvc('auth');

/** The run's key for secrets at rest, shared by every process of it and by its seeding. */
const BENCH_ENCRYPTION_KEYS = newEncryptionKeys('bench');

/**
 * Runs `fn({ env, db })` with the stores up, and stops them (and removes their data) whatever happens.
 *
 * gensvc records traces only when they go somewhere (OTEL_EXPORTER_OTLP_ENDPOINT), so by default a bench measures
 * it without tracing. BENCH_OTLP=1 measures it as production runs with a collector: every gensvc process exports to
 * an OTLP/HTTP sink of this bench (it reads each export and answers 200), at the default sampling ratio (or
 * OTEL_TRACES_SAMPLER_ARG's). An OTEL_EXPORTER_OTLP_ENDPOINT of the caller's own is used as given.
 */
export async function withStack(fn) {
  const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-bench-'));
  // S3 stands in for a remote object store: its objects are kept in memory (tmpfs) where the machine has one, since
  // s3rver's file calls on disk are the bench's own largest and most uneven cost. Postgres and Redis stay on disk:
  // their writes are the gateway's own cost.
  const s3Dir =
    !process.env.S3_ENDPOINT && existsSync('/dev/shm') ? mkdtempSync('/dev/shm/gensvc-bench-s3-') : undefined;
  // The callback-dispatcher also sends the mail and will not start without an SMTP server: a local one where unset.
  const stack = await startStack({ dataDir, s3Dir, persistent: false, env: process.env, need: { smtp: true } });
  const sink =
    process.env.BENCH_OTLP === '1' && !process.env.OTEL_EXPORTER_OTLP_ENDPOINT ? await otlpSink() : undefined;
  let db;
  try {
    const env = {
      ...stack.env,
      SIGNING_SECRET: 'b'.repeat(64),
      ENCRYPTION_KEYS: BENCH_ENCRYPTION_KEYS,
      QUEUE_PREFIX: `bench${process.pid}`,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      ...pick(process.env, ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_TRACES_SAMPLER_ARG']),
      ...(sink ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } : {}),
    };
    if (env.OTEL_EXPORTER_OTLP_ENDPOINT)
      console.log(
        `traces exported to ${env.OTEL_EXPORTER_OTLP_ENDPOINT} (ratio ${env.OTEL_TRACES_SAMPLER_ARG ?? 'default'})`,
      );
    await migrate(env.DATABASE_URL);
    db = createDb(env.DATABASE_URL, { max: 2 });
    // ownPostgres: this run's own Postgres (none was configured), whose settings the bench may change.
    return await fn({
      env,
      db,
      s3Where: s3Dir ? 's3rver in memory (tmpfs)' : stack.embedded.s3 ? 's3rver on disk' : env.S3_ENDPOINT,
      ownPostgres: stack.embedded.postgres,
    });
  } finally {
    await db?.$disconnect();
    await stack.stop();
    if (sink) console.log(`OTLP sink: ${sink.exports()} exports received`);
    sink?.close();
  }
}

const pick = (from, names) => Object.fromEntries(names.filter((n) => from[n] !== undefined).map((n) => [n, from[n]]));

/** An OTLP/HTTP collector that keeps nothing: reads each export whole and answers 200 (an empty success). */
async function otlpSink() {
  let exports = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      exports++;
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' }).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, exports: () => exports, close: () => server.close() };
}

/**
 * A workspace and a key with every scope. `unlimited` gives it a balance and rate limits no benchmark can exhaust,
 * so that what is measured is the cost of checking them, never a refusal.
 */
export async function seedKey(db, { unlimited = false, balance = 10_000_000n } = {}) {
  const ws = await workspaceRepository.create(db, {
    name: 'bench',
    tier: 'payg',
    balance: unlimited ? 10n ** 15n : balance,
  });
  if (unlimited)
    await db.workspace.update({ where: { id: ws.id }, data: { rpm: 1_000_000_000, uploadRpm: 1_000_000_000 } });
  const k = newApiKey();
  await apiKeyRepository.create(db, {
    workspaceId: ws.id,
    name: 'bench',
    prefix: k.prefix,
    hash: k.hash,
    scopes: [...SCOPES],
    createdVia: 'cli',
  });
  return { workspaceId: ws.id, secret: k.secret, auth: { authorization: `Bearer ${k.secret}` } };
}

/** The sim's channels and models as `npm start` seeds them (services/fleet/src/seed-sim.ts), on the sim at `simUrl`. */
export const seedSim = (db, simUrl) =>
  service('fleet', 'seed-sim').seedSim(db, new SecretBox(parseEncryptionKeys(BENCH_ENCRYPTION_KEYS)), simUrl);
