// Which Postgres and Redis the CLI reaches, the same ones `npm start` uses with no extra set-up:
//   1. DATABASE_URL set in the environment → the environment (REDIS_URL, QUEUE_PREFIX too);
//   2. else a running `npm start` → the environment it recorded in .data/stack.json;
//   3. else the embedded Postgres in .data, started for this command alone and stopped after it. No Redis then
//      (unless REDIS_URL is set), and none is needed: no edge is running to be told about key changes.
import { join, resolve } from 'node:path';
import { readLiveStackRecord, startStack } from '@gensvc/local-stack';
import { queuePrefix, urlWithScheme } from '@gensvc/config';
import { z } from 'zod';

/** The only variables the CLI reads; parsed once, in main.ts. Empty values count as unset. */
export const cliEnvSchema = z.object({
  DATABASE_URL: urlWithScheme(['postgres:', 'postgresql:']).optional(),
  REDIS_URL: urlWithScheme(['redis:', 'rediss:']).optional(),
  QUEUE_PREFIX: queuePrefix.optional(),
  /** Where `npm start` keeps its embedded stores; .data/ in the repository unless set. */
  GENSVC_DATA_DIR: z.string().min(1).optional(),
});
export type CliEnv = z.output<typeof cliEnvSchema>;

export function readCliEnv(env: NodeJS.ProcessEnv): { env: CliEnv } | { problems: string[] } {
  const picked = Object.fromEntries(
    Object.keys(cliEnvSchema.shape).flatMap((k) => (env[k] ? [[k, env[k]]] : [])),
  );
  const parsed = cliEnvSchema.safeParse(picked);
  if (parsed.success) return { env: parsed.data };
  return { problems: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) };
}

export const DEFAULT_QUEUE_PREFIX = 'gensvc';

export interface Stores {
  databaseUrl: string;
  redisUrl: string | null;
  queuePrefix: string;
  /** Where they came from, for the progress line on stderr. */
  origin: 'environment' | 'npm start' | 'embedded';
  /** Stops what was started for this command (the embedded Postgres); a no-op otherwise. */
  stop(): Promise<void>;
}

export async function resolveStores(env: CliEnv, repoRoot: string, log: (message: string) => void): Promise<Stores> {
  const dataDir = env.GENSVC_DATA_DIR ? resolve(env.GENSVC_DATA_DIR) : join(repoRoot, '.data');
  const none = async () => {};
  if (env.DATABASE_URL) {
    return {
      databaseUrl: env.DATABASE_URL,
      redisUrl: env.REDIS_URL ?? null,
      queuePrefix: env.QUEUE_PREFIX ?? DEFAULT_QUEUE_PREFIX,
      origin: 'environment',
      stop: none,
    };
  }
  const record = readLiveStackRecord(join(dataDir, 'stack.json'));
  if (record?.env.DATABASE_URL) {
    log(`using the stores of the running npm start (pid ${record.pid})`);
    return {
      databaseUrl: record.env.DATABASE_URL,
      redisUrl: record.env.REDIS_URL || null,
      queuePrefix: record.env.QUEUE_PREFIX || DEFAULT_QUEUE_PREFIX,
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
    redisUrl: env.REDIS_URL ?? null,
    queuePrefix: env.QUEUE_PREFIX ?? DEFAULT_QUEUE_PREFIX,
    origin: 'embedded',
    stop: () => stack.stop(),
  };
}
