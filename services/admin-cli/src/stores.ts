// Which Postgres and Redis the CLI reaches, the same ones `npm start` uses with no extra set-up:
//   1. DATABASE_URL set in the environment → the environment (REDIS_URL, QUEUE_PREFIX too);
//   2. else, in production (NODE_ENV=production) or outside the local checkout (the image): a refusal naming
//      DATABASE_URL. A throwaway local database there would take a key or a top-up and lose it;
//   3. else a running `npm start` → the environment it recorded in .data/stack.json;
//   4. else the embedded Postgres in .data, started for this command alone and stopped after it. No Redis then
//      (unless REDIS_URL is set), and none is needed: no edge is running to be told about key changes.
// @gensvc/local-stack is a development dependency (the image has no embedded Postgres): loaded only for 3 and 4.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  databasePooler,
  encryptionKeys,
  poolerOf,
  parseRedisTarget,
  queuePrefix,
  urlWithScheme,
  type DatabasePooler,
} from '@gensvc/config';
import { z } from 'zod';

/** The only variables the CLI reads; parsed once, in main.ts. Empty values count as unset. */
const cliEnvSchema = z.object({
  DATABASE_URL: urlWithScheme(['postgres:', 'postgresql:']).optional(),
  DATABASE_POOLER: databasePooler.optional(),
  DIRECT_DATABASE_URL: urlWithScheme(['postgres:', 'postgresql:']).optional(),
  REDIS_URL: z
    .string()
    .refine((v) => !('error' in parseRedisTarget(v)), 'must be a redis://, rediss:// or redis+cluster:// URL')
    .optional(),
  QUEUE_PREFIX: queuePrefix.optional(),
  /** The services' keys for secrets at rest, checked here and kept as text (Stores.encryptionKeys). */
  ENCRYPTION_KEYS: z
    .string()
    .superRefine((value, ctx) => {
      const parsed = encryptionKeys.safeParse(value);
      for (const issue of parsed.error?.issues ?? []) ctx.addIssue({ code: 'custom', message: issue.message });
    })
    .optional(),
  /** Where `npm start` keeps its embedded stores; .data/ in the repository unless set. */
  GENSVC_DATA_DIR: z.string().min(1).optional(),
  NODE_ENV: z.string().optional(),
});
export type CliEnv = z.output<typeof cliEnvSchema>;

export function readCliEnv(env: NodeJS.ProcessEnv): { env: CliEnv } | { problems: string[] } {
  const picked = Object.fromEntries(Object.keys(cliEnvSchema.shape).flatMap((k) => (env[k] ? [[k, env[k]]] : [])));
  const parsed = cliEnvSchema.safeParse(picked);
  if (parsed.success) return { env: parsed.data };
  return { problems: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) };
}

const DEFAULT_QUEUE_PREFIX = 'gensvc';

export interface Stores {
  databaseUrl: string;
  /** Whether databaseUrl is a transaction-mode pooler (DATABASE_POOLER, or `pgbouncer=true` in the URL). */
  pooler: DatabasePooler;
  /** Where `migrate` runs: DIRECT_DATABASE_URL (past the pooler), else databaseUrl. */
  migrationUrl: string;
  redisUrl: string | null;
  queuePrefix: string;
  /**
   * ENCRYPTION_KEYS as the services holding these stores have it: the environment's, else the running npm start's,
   * else the local runs' own (.data/secrets.json); unset for a deployment's stores whose keys were not given.
   */
  encryptionKeys: string | undefined;
  /** Where they came from, for the progress line on stderr. */
  origin: 'environment' | 'npm start' | 'embedded';
  /** Stops what was started for this command (the embedded Postgres); a no-op otherwise. */
  stop(): Promise<void>;
}

/**
 * The local checkout: the workspace with its sources and the local supervisor. The image ships neither (only
 * compiled services, and no services/fleet), so a CLI run there is never "local".
 */
export function isLocalCheckout(repoRoot: string): boolean {
  return (
    existsSync(join(repoRoot, 'pnpm-workspace.yaml')) &&
    existsSync(join(repoRoot, 'services', 'fleet', 'src', 'main.ts'))
  );
}

/** Why the CLI refuses to pick a database itself, or null when it may use the local ones. */
export function localStoresRefusal(env: CliEnv, repoRoot: string): string | null {
  if (env.DATABASE_URL) return null;
  const where =
    env.NODE_ENV === 'production'
      ? 'NODE_ENV is production'
      : !isLocalCheckout(repoRoot)
        ? `${repoRoot} is not a gensvc checkout`
        : null;
  if (!where) return null;
  return (
    `DATABASE_URL is not set and ${where}: the admin CLI will not start or reuse a local database here. ` +
    "Set DATABASE_URL to the deployment's Postgres (and REDIS_URL, so that every edge hears of key, channel and " +
    'model changes).'
  );
}

export async function resolveStores(env: CliEnv, repoRoot: string, log: (message: string) => void): Promise<Stores> {
  const dataDir = env.GENSVC_DATA_DIR ? resolve(env.GENSVC_DATA_DIR) : join(repoRoot, '.data');
  const none = async () => {};
  if (env.DATABASE_URL) {
    return {
      databaseUrl: env.DATABASE_URL,
      pooler: poolerOf(env.DATABASE_URL, env.DATABASE_POOLER),
      migrationUrl: env.DIRECT_DATABASE_URL ?? env.DATABASE_URL,
      redisUrl: env.REDIS_URL ?? null,
      queuePrefix: env.QUEUE_PREFIX ?? DEFAULT_QUEUE_PREFIX,
      encryptionKeys: env.ENCRYPTION_KEYS,
      origin: 'environment',
      stop: none,
    };
  }
  const refusal = localStoresRefusal(env, repoRoot);
  if (refusal) throw new Error(refusal); // main.ts checks first; this keeps the rule where the stores are chosen
  const { localSecrets, readLiveStackRecord, startStack } = await import('@gensvc/local-stack');
  const record = readLiveStackRecord(join(dataDir, 'stack.json'));
  if (record?.env.DATABASE_URL) {
    log(`using the stores of the running npm start (pid ${record.pid})`);
    return {
      databaseUrl: record.env.DATABASE_URL,
      pooler: 'none',
      migrationUrl: record.env.DATABASE_URL,
      redisUrl: record.env.REDIS_URL || null,
      queuePrefix: record.env.QUEUE_PREFIX || DEFAULT_QUEUE_PREFIX,
      encryptionKeys: env.ENCRYPTION_KEYS ?? (record.env.ENCRYPTION_KEYS || localSecrets(dataDir).ENCRYPTION_KEYS),
      origin: 'npm start',
      stop: none,
    };
  }
  log(`no npm start is running: starting the embedded Postgres in ${join(dataDir, 'pg')} for this command`);
  const stack = await startStack({
    dataDir,
    persistent: true,
    env: {},
    need: { postgres: true, redis: false, s3: false },
    log,
  });
  return {
    databaseUrl: stack.env.DATABASE_URL,
    pooler: 'none',
    migrationUrl: stack.env.DATABASE_URL,
    redisUrl: env.REDIS_URL ?? null,
    queuePrefix: env.QUEUE_PREFIX ?? DEFAULT_QUEUE_PREFIX,
    encryptionKeys: env.ENCRYPTION_KEYS ?? localSecrets(dataDir).ENCRYPTION_KEYS,
    origin: 'embedded',
    stop: () => stack.stop(),
  };
}
