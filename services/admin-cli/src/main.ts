// The platform admin's CLI (`npm run admin -- <command>`). Boot only: arguments → stores → command → answer →
// exit code. Exit codes: 0 done, 1 domain failure (not found, duplicate, ...), 2 wrong arguments. Only `migrate`
// migrates (and the embedded Postgres a local run starts for itself, which nothing else has migrated).
import { resolve } from 'node:path';
import { parseEncryptionKeys, parseRedisTarget } from '@gensvc/config';
import { closeDb, createDb, migrate, SecretBox, type Db } from '@gensvc/db';
import { isAppError } from '@gensvc/errors';
import { Cluster, Redis } from 'ioredis';
import { commandUsage, generalUsage, parseArgv, UsageError } from './args';
import type { Run } from './command';
import { COMMANDS } from './commands';
import { AnsweredFailure } from './failures';
import { createOutput } from './output';
import { localStoresRefusal, readCliEnv, resolveStores, type Stores } from './stores';

/** services/admin-cli/{dist,src}/main → the repository root. */
const REPO_ROOT = resolve(__dirname, '../../..');

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;

async function main(argv: readonly string[]): Promise<number> {
  const { stdout, stderr } = process;
  const log = (message: string) => stderr.write(`[admin] ${message}\n`);

  let json: boolean;
  let run: Run;
  try {
    const parsed = parseArgv(argv, COMMANDS);
    if ('help' in parsed) {
      const text = parsed.command ? commandUsage(parsed.command) : generalUsage(COMMANDS);
      // Help is asked for, so it is the answer; with --json, stdout is reserved for JSON.
      (parsed.json ? stderr : stdout).write(`${text}\n`);
      return EXIT_OK;
    }
    json = parsed.json;
    run = parsed.command.prepare(parsed.flags, { json: parsed.json });
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    stderr.write(`error: ${e.message}\n\n${e.command ? commandUsage(e.command) : generalUsage(COMMANDS)}\n`);
    return EXIT_USAGE;
  }

  const out = createOutput(json, stdout, stderr);
  const cliEnv = readCliEnv(process.env);
  if ('problems' in cliEnv) {
    out.error('invalid_config', `Invalid environment: ${cliEnv.problems.join('; ')}`);
    return EXIT_FAILED;
  }
  const refusal = localStoresRefusal(cliEnv.env, REPO_ROOT);
  if (refusal) {
    out.error('database_url_required', refusal);
    return EXIT_FAILED;
  }

  let stores: Stores | undefined;
  let db: Db | undefined;
  let redis: Redis | Cluster | null = null;
  try {
    stores = await resolveStores(cliEnv.env, REPO_ROOT, log);
    if (stores.origin === 'embedded') {
      const { applied } = await migrate(stores.databaseUrl);
      if (applied.length) log(`applied migrations: ${applied.join(', ')}`);
    }
    db = createDb(stores.databaseUrl, { max: 2, pooler: stores.pooler });
    if (stores.redisUrl) {
      // One attempt, no reconnects: the CLI publishes at most one message and must not hang on a dead Redis.
      const options = { lazyConnect: true, connectTimeout: 3_000, maxRetriesPerRequest: 0, retryStrategy: () => null };
      // A cluster: `channel list` reads breaker keys wherever their slot lives, so a Cluster rather than one node.
      const target = parseRedisTarget(stores.redisUrl);
      redis =
        'nodes' in target
          ? new Cluster(target.nodes, {
              lazyConnect: true,
              clusterRetryStrategy: () => null,
              redisOptions: {
                ...options,
                username: target.username,
                password: target.password,
                ...(target.tls ? { tls: {} } : {}),
              },
            })
          : new Redis(stores.redisUrl, options);
      redis.on('error', () => {}); // surfaces as the rejected command instead
    }
    const { encryptionKeys } = stores;
    let box: SecretBox | undefined;
    // Parsed when a command first needs it: commands that touch no secret run without the keys.
    const secrets = () => {
      try {
        box ??= new SecretBox(parseEncryptionKeys(encryptionKeys));
      } catch (e) {
        out.error('invalid_config', `${(e as Error).message} (the services' own value)`);
        throw new AnsweredFailure((e as Error).message);
      }
      return box;
    };
    await run({ db, redis, queuePrefix: stores.queuePrefix, migrationUrl: stores.migrationUrl, secrets, out });
    return EXIT_OK;
  } catch (e) {
    if (e instanceof AnsweredFailure) {
      log(e.message);
      return EXIT_FAILED;
    }
    if (out.answered) {
      log(`failed after answering: ${(e as Error).stack ?? String(e)}`);
      return EXIT_FAILED;
    }
    if (isAppError(e) && e.expose) {
      out.error(e.code, e.message);
      return EXIT_FAILED;
    }
    log(`failed: ${(e as Error).stack ?? String(e)}`);
    out.error('internal_error', (e as Error).message ?? String(e));
    return EXIT_FAILED;
  } finally {
    redis?.disconnect();
    if (db) await closeDb(db).catch(() => {});
    await stores?.stop().catch((e: unknown) => log(`could not stop the embedded Postgres: ${String(e)}`));
  }
}

// Exit explicitly with the command's code. Every connection is closed by now; the empty write's callback runs once
// stdout is flushed (pipes are asynchronous on macOS), so the answer is never cut short.
main(process.argv.slice(2)).then(
  (code) => process.stdout.write('', () => process.exit(code)),
  (e: unknown) => {
    process.stderr.write(`[admin] ${(e as Error).stack ?? String(e)}\n`);
    process.exit(EXIT_FAILED);
  },
);
