// Through the run's PgBouncer in transaction mode (no prepared-statement tracking): a named prepared statement
// breaks as soon as its client's next transaction lands on another server connection, and createDb's `pooler:
// 'transaction'` sends the same statements unnamed, which work.
import pg from 'pg';
import { pooledTransactions, throughPooler, useTestContext } from '@gensvc/testing';
import { clientOf, closeDb, createDb, queryPrepared, type Db } from './client';

throughPooler();
const ctx = useTestContext();

/**
 * Runs `name` twice on `db` (one connection) while another client holds, in an open transaction, the server
 * connection the first run prepared it on: PgBouncer reuses the most recent server connection, so the second
 * run is served by another.
 */
async function twiceAcrossServerConnections(db: Db, name: string) {
  const statement = 'SELECT pg_backend_pid() AS pid';
  const [first] = await queryPrepared<{ pid: number }>(clientOf(db), name, statement, []);
  const holder = new pg.Client({ connectionString: ctx.env.DATABASE_URL });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    expect(rows[0]!.pid).toBe(first!.pid);
    const [second] = await queryPrepared<{ pid: number }>(clientOf(db), name, statement, []);
    return [first!.pid, second!.pid];
  } finally {
    await holder.query('ROLLBACK');
    await holder.end();
  }
}

test('goes through PgBouncer: DATABASE_URL names it, in transaction mode', async () => {
  expect(ctx.config.databasePooler).toBe('transaction');
  expect(ctx.config.directDatabaseUrl).not.toBe(ctx.config.databaseUrl);
  const database = new URL(ctx.env.DATABASE_URL!).pathname.slice(1);
  const before = await pooledTransactions(database);
  await ctx.db.workspace.count();
  expect(await pooledTransactions(database)).toBeGreaterThan(before);
});

test('a named prepared statement fails on the next server connection without the pooler mode', async () => {
  const db = createDb(ctx.env.DATABASE_URL!, { max: 1 });
  try {
    await expect(twiceAcrossServerConnections(db, 'test_pooler_named')).rejects.toThrow(
      /prepared statement "test_pooler_named" does not exist/,
    );
  } finally {
    await closeDb(db);
  }
});

test('with DATABASE_POOLER=transaction the same statements run unnamed, on whichever server connection', async () => {
  const db = createDb(ctx.env.DATABASE_URL!, { max: 1, pooler: ctx.config.databasePooler });
  try {
    const [first, second] = await twiceAcrossServerConnections(db, 'test_pooler_unnamed');
    expect(second).not.toBe(first);
  } finally {
    await closeDb(db);
  }
});
