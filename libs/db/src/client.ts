import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient, type Prisma } from './generated/prisma/client';

declare const handle: unique symbol;
/**
 * The database a service holds (createDb): opaque outside libs/db, with no query method on its type, so a service
 * reaches rows only through a repository. Inside libs/db it is the Prisma client itself (clientOf).
 */
export interface Db {
  readonly [handle]: 'Db';
}
/** An open transaction (withTx), opaque like Db: repositories called with it join the transaction. */
export interface Tx {
  readonly [handle]: 'Tx';
}
/** What every repository method takes outside libs/db: the database or an open transaction. */
export type DbHandle = Db | Tx;

/** Inside libs/db, what a handle is: the client or an open transaction; every repository method accepts either. */
export type DbClient = PrismaClient | Prisma.TransactionClient;

/** The one unwrapping of a handle into Prisma's client: libs/db only (index.ts does not export it). */
export function clientOf(db: Db): PrismaClient;
export function clientOf(db: DbHandle): DbClient;
export function clientOf(db: DbHandle): DbClient {
  return db as unknown as DbClient;
}

/**
 * A repository as services see it (index.ts): each method takes a handle where its file takes the client, and
 * answers a plain Promise (not Prisma's, whose fluent methods would run queries). The object is the same: a handle
 * is the client, so this is a type at the export boundary and no repository body changes.
 */
export type Published<R> = {
  readonly [K in keyof R]: R[K] extends (db: DbClient, ...args: infer A) => infer T
    ? (db: DbHandle, ...args: A) => T extends PromiseLike<infer V> ? Promise<V> : T
    : never;
};

export const published = <R extends Record<string, (db: DbClient, ...args: never[]) => unknown>>(
  repository: R,
): Published<R> => repository as unknown as Published<R>;

/** The JSON a repository stores in a Json column (a task's input), as a plain data type for services. */
export type JsonInput = Prisma.InputJsonValue;

export interface DbOptions {
  /** Connections in the pool. */
  max?: number;
  /** Where an idle connection's error is reported (the service's logger); unset, it is dropped silently. */
  log?: { warn(fields: object, msg: string): void };
  /**
   * The service these connections serve: their `application_name` is `gensvc-<service>` (`gensvc-edge`), so
   * `pg_stat_activity` and Postgres's logs say which service holds each connection, and bench/tasks what each one's
   * statements cost. An `application_name` the URL sets wins.
   */
  service?: string;
  /**
   * `transaction` when the URL reaches a transaction-mode pooler (DATABASE_POOLER): statements are sent unnamed, as
   * a pooler without prepared-statement tracking (PgBouncer before 1.21) hands each transaction any server
   * connection, where a name prepared on another is unknown or already taken.
   */
  pooler?: 'none' | 'transaction';
}

/**
 * The only place a Prisma client is made (STYLE.md: only libs/db imports Prisma).
 *
 * Behind a transaction-mode pooler Prisma needs nothing more: the pg driver adapter sends every statement unnamed
 * and runs an interactive transaction on one client from BEGIN to COMMIT (Prisma's `pgbouncer=true` URL flag is for
 * its Rust engine's own connections, which a driver adapter replaces).
 *
 * Hot paths use findUnique: Prisma 6's query compiler (engine "client") caches the plan of findUnique queries but
 * compiles findFirst/findMany in WASM on every call, several times slower.
 */
export function createDb(databaseUrl: string, options: DbOptions = {}): Db {
  // node-postgres lets the URL's own parameters override these: a DATABASE_URL with `application_name` keeps it.
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.max ?? 10,
    ...(options.service && { application_name: `gensvc-${options.service}` }),
  });
  // An idle connection's error (Postgres restarted, the connection terminated) is nobody's query's: pg drops that
  // client and the next query connects anew. Without a listener the pool's 'error' event would end the process, and
  // Prisma adds its own only when it first connects, which an edge serving paid calls may never do. It is
  // logged: a run of them says Postgres restarts or drops connections.
  pool.on('error', (err) => options.log?.warn({ err }, 'postgres: an idle connection failed; the pool connects anew'));
  const db = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
  pools.set(db, { pool, named: options.pooler !== 'transaction' });
  return db as unknown as Db;
}

/** Closes the database's connections (its pool with them): the last step of a service's shutdown. */
export async function closeDb(db: Db): Promise<void> {
  const client = clientOf(db);
  await client.$disconnect(); // ends the pool when Prisma had connected (disposeExternalPool)
  const pool = pools.get(client)?.pool;
  if (pool && !pool.ended) await pool.end();
}

/** Each client's pg pool, and whether statements on it may be named (no transaction-mode pooler in between). */
const pools = new WeakMap<object, { pool: pg.Pool; named: boolean }>();

/**
 * The pg pool under a client made by createDb (undefined for a transaction client), shared with Prisma. The few
 * statements on every paid request (billing) run on it as named prepared statements, cheaper per call than Prisma's
 * $queryRaw; unnamed behind a transaction-mode pooler.
 */
const poolOf = (db: DbClient) => pools.get(db);

/**
 * A `timestamp` column (UTC wall time) as epoch milliseconds, in SQL: pg and Prisma's raw path both answer it as a
 * number, whatever the connection's or the process's time zone.
 */
export const epochMs = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8`;

/**
 * Runs a statement with positional parameters ($1, $2…): prepared on the pool when `db` is a root client, through
 * Prisma (joining its transaction) otherwise. Callers cast parameters in SQL; bigint values go as text.
 */
export async function queryPrepared<T>(db: DbClient, name: string, text: string, values: unknown[]): Promise<T[]> {
  const held = poolOf(db);
  if (held) return (await held.pool.query(held.named ? { name, text, values } : { text, values })).rows as T[];
  return db.$queryRawUnsafe<T[]>(text, ...values);
}

/** Runs fn in a transaction; inside one already (db is a transaction client), fn joins it. */
export function withTx<T>(db: DbClient, fn: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
  return '$transaction' in db ? db.$transaction(fn) : fn(db);
}

/** withTx for services (exported as withTx): fn gets the transaction's handle, to pass to repositories. */
export function withTxHandle<T>(db: DbHandle, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return withTx(clientOf(db), (tx) => fn(tx as unknown as Tx));
}

/** Readiness: on the pool, not through Prisma, whose query compiler loads at a client's first query. */
export async function pingDb(db: Db): Promise<void> {
  await queryPrepared(clientOf(db), 'gensvc_ping', 'SELECT 1', []);
}

/** A unique constraint refused the write (Prisma P2002): the row was made concurrently, or already exists. */
export const isUniqueViolation = (e: unknown): boolean =>
  typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'P2002';
