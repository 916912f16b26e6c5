// The stores a benchmark runs against: Postgres, Redis and S3 brought up in a temporary directory (what the
// environment names is used instead), migrated, and the environment every gensvc process of the run shares.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gensvc, service } from './gensvc.mjs';

// Node 20 is this project's runtime; the AWS SDK's notice about its 2027 releases is not a benchmark figure.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const { startStack } = gensvc('local-stack');
const { createDb, migrate, workspaceRepository, apiKeyRepository } = gensvc('db');
const { newApiKey, SCOPES } = gensvc('auth');

/** Runs `fn({ env, db })` with the stores up, and stops them (and removes their data) whatever happens. */
export async function withStack(fn) {
  const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-bench-'));
  const stack = await startStack({ dataDir, persistent: false, env: process.env });
  let db;
  try {
    const env = {
      ...stack.env,
      SIGNING_SECRET: 'b'.repeat(64),
      QUEUE_PREFIX: `bench${process.pid}`,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    };
    await migrate(env.DATABASE_URL);
    db = createDb(env.DATABASE_URL, { max: 2 });
    return await fn({ env, db });
  } finally {
    await db?.$disconnect();
    await stack.stop();
  }
}

/**
 * A workspace and a key with every scope. `unlimited` gives it a balance and rate limits no benchmark can exhaust,
 * so that what is measured is the cost of checking them, never a refusal.
 */
export async function seedKey(db, { unlimited = false, balance = 10_000_000n } = {}) {
  const ws = await workspaceRepository.create(db, { name: 'bench', tier: 'payg', balance: unlimited ? 10n ** 15n : balance });
  if (unlimited) await db.workspace.update({ where: { id: ws.id }, data: { rpm: 1_000_000_000, uploadRpm: 1_000_000_000 } });
  const k = newApiKey();
  await apiKeyRepository.create(db, { workspaceId: ws.id, name: 'bench', prefix: k.prefix, hash: k.hash, scopes: [...SCOPES] });
  return { workspaceId: ws.id, secret: k.secret, auth: { authorization: `Bearer ${k.secret}` } };
}

/** The sim's channels and models as `npm start` seeds them (services/fleet/src/seed-sim.ts), on the sim at `simUrl`. */
export const seedSim = (db, simUrl) => service('fleet', 'seed-sim').seedSim(db, simUrl);
