import type { Db, SecretBox } from '@gensvc/db';
import type { RedisConnection } from '@gensvc/queue';
import type { CommandSpec, RawFlags } from './args';
import type { Output } from './output';

/** What a command works with, made by main.ts for one run and closed by it afterwards. */
export interface Deps {
  db: Db;
  /** Null when no Redis is known (no `npm start` running and no REDIS_URL): then no edge is running either. */
  redis: RedisConnection | null;
  queuePrefix: string;
  /** Seals and opens secrets at rest; fails (naming ENCRYPTION_KEYS) when the stores' keys are unknown. */
  secrets(): SecretBox;
  /** For `migrate`, which runs the migrator on its own connection: DIRECT_DATABASE_URL, else DATABASE_URL. */
  migrationUrl: string;
  out: Output;
}

export type Run = (deps: Deps) => Promise<void>;

export interface Command extends CommandSpec {
  /**
   * Validates the flag values and returns the work to do. It reaches no store, so argument mistakes (UsageError)
   * are reported before anything is started.
   */
  prepare(flags: RawFlags, context: { json: boolean }): Run;
}
