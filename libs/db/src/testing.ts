// The test-only entry (@gensvc/db/testing): fixtures and assertions set rows up and read them back through the
// Prisma client under a handle. Production code never imports it (boundaries.test.ts), so the only way it reaches
// a row is a repository.
import { createDb, type Db, type DbClient, type DbOptions } from './client';
import type { PrismaClient } from './generated/prisma/client';
import { callbackRepository, type AttemptContext } from './repositories/callback.repository';
import type { SecretBox } from './secret-box';

/** A test's database: the Db handle the code under test takes, and the Prisma client for the test's own rows. */
export type TestDb = Db & PrismaClient;

export const createTestDb = (databaseUrl: string, options?: DbOptions): TestDb =>
  createDb(databaseUrl, options) as TestDb;

/** One attempt's context, as the dispatcher reads it among others (callbackRepository.attemptContexts). */
export async function readAttemptContext(
  db: DbClient,
  box: SecretBox,
  taskId: string,
  now = new Date(),
): Promise<AttemptContext | null> {
  const [context] = await callbackRepository.attemptContexts(db, box, [{ taskId, now }]);
  return context ?? null;
}
