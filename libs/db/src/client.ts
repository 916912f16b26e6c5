import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient, type Prisma } from './generated/prisma/client';

export type Db = PrismaClient;
/** A client or an open transaction: every repository method accepts either. */
export type DbClient = PrismaClient | Prisma.TransactionClient;

export interface DbOptions {
  /** Connections in the pool. */
  max?: number;
}

/** The only place a Prisma client is made (STYLE.md: only libs/db imports Prisma). */
export function createDb(databaseUrl: string, options: DbOptions = {}): Db {
  const adapter = new PrismaPg({ connectionString: databaseUrl, max: options.max ?? 10 });
  return new PrismaClient({ adapter });
}

/** Runs fn in a transaction; inside one already (db is a transaction client), fn joins it. */
export function withTx<T>(db: DbClient, fn: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
  return '$transaction' in db ? db.$transaction(fn) : fn(db);
}

export async function pingDb(db: Db): Promise<void> {
  await db.$queryRaw`SELECT 1`;
}
