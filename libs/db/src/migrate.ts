// Applies prisma/migrations in order, recording them in Prisma's own `_prisma_migrations` table with Prisma's
// checksum, so `prisma migrate status|deploy|dev` see the same history. It exists because the Prisma 6 CLI is slow to
// start (and needs the adapter work-arounds of prisma.config.ts), while tests and `npm start` migrate often. Migrations
// are authored with the CLI (`prisma migrate dev`).
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';

export const MIGRATIONS_DIR = resolve(__dirname, '../../../prisma/migrations');

const LOCK_ID = 7_261_121; // pg_advisory_lock key: one migrator at a time per database.

export interface MigrateResult {
  applied: string[];
}

/**
 * Run it on Postgres itself (DIRECT_DATABASE_URL), never through a transaction-mode pooler: the advisory lock is held
 * by the session across the migrations' transactions.
 */
export async function migrate(databaseUrl: string, dir = MIGRATIONS_DIR): Promise<MigrateResult> {
  const names = readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(dir, d.name, 'migration.sql')))
    .map((d) => d.name)
    .sort();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_ID]);
    await client.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum" VARCHAR(64) NOT NULL,
      "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL,
      "logs" TEXT,
      "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`);
    const { rows } = await client.query<{ migration_name: string; checksum: string }>(
      `SELECT migration_name, checksum FROM "_prisma_migrations"
       WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
    );
    const done = new Map(rows.map((r) => [r.migration_name, r.checksum]));
    for (const name of names) {
      const sql = readFileSync(join(dir, name, 'migration.sql'), 'utf8');
      const checksum = createHash('sha256').update(sql).digest('hex');
      const seen = done.get(name);
      if (seen !== undefined) {
        if (seen !== checksum)
          throw new Error(`Migration ${name} was changed after it was applied (checksum differs).`);
        continue;
      }
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count)
           VALUES ($1, $2, now(), $3, 1)`,
          [randomUUID(), checksum, name],
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`Migration ${name} failed: ${(error as Error).message}`, { cause: error });
      }
      applied.push(name);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_ID]).catch(() => {});
    await client.end();
  }
  return { applied };
}
