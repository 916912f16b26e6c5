import type { DbClient } from '../client';
import { newId } from '../ids';

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
/** A first request still "in flight" after this long died with its process: a retry may take its key over. */
const IN_FLIGHT_TAKEOVER_MS = 10 * 60 * 1000;

export type IdempotencyBegin =
  | { state: 'new'; id: string }
  | { state: 'replay'; status: number; body: unknown }
  | { state: 'mismatch' }
  | { state: 'in_flight' };

/**
 * Idempotency-Key records, one per (workspace, key) for 24 h. The insert is the lock: of racing requests with one
 * key exactly one gets 'new'; the others see it in flight, then its stored answer.
 */
export const idempotencyRepository = {
  async begin(db: DbClient, workspaceId: string, key: string, requestHash: string, now = new Date()): Promise<IdempotencyBegin> {
    const id = newId('idem');
    const expiresAt = new Date(now.getTime() + IDEMPOTENCY_TTL_MS);
    // A record past its 24 h, or in flight for longer than any request lives, is taken over by this request.
    const rows = await db.$queryRaw<{ id: string }[]>`
      INSERT INTO "IdempotencyRecord" ("id", "workspaceId", "key", "requestHash", "expiresAt", "createdAt")
      VALUES (${id}, ${workspaceId}, ${key}, ${requestHash}, ${expiresAt}::timestamp(3), ${now}::timestamp(3))
      ON CONFLICT ("workspaceId", "key") DO UPDATE SET
        "id" = EXCLUDED."id", "requestHash" = EXCLUDED."requestHash", "responseStatus" = NULL, "responseBody" = NULL,
        "expiresAt" = EXCLUDED."expiresAt", "createdAt" = EXCLUDED."createdAt"
      WHERE "IdempotencyRecord"."expiresAt" <= ${now}::timestamp(3)
         OR ("IdempotencyRecord"."responseStatus" IS NULL AND "IdempotencyRecord"."createdAt" <= ${new Date(now.getTime() - IN_FLIGHT_TAKEOVER_MS)}::timestamp(3))
      RETURNING "id"`;
    if (rows.length) return { state: 'new', id };
    const existing = await db.idempotencyRecord.findUnique({ where: { workspaceId_key: { workspaceId, key } } });
    if (!existing) return idempotencyRepository.begin(db, workspaceId, key, requestHash, now);
    if (existing.requestHash !== requestHash) return { state: 'mismatch' };
    if (existing.responseStatus === null) return { state: 'in_flight' };
    return { state: 'replay', status: existing.responseStatus, body: existing.responseBody };
  },

  /** Stores the answer the first request gave, for replays. */
  async complete(db: DbClient, id: string, status: number, body: unknown): Promise<void> {
    // Raw json from the exact text: Prisma's Json writes round numbers to 16 significant digits, and json (not jsonb)
    // keeps the text's key order, so a replay answers the very same bytes as the first answer.
    await db.$executeRaw`UPDATE "IdempotencyRecord" SET "responseStatus" = ${status}, "responseBody" = ${JSON.stringify(body ?? null)}::json WHERE "id" = ${id}`;
  },

  /** Forgets a first request that did not succeed, so that a retry runs again (it was not charged). */
  async abandon(db: DbClient, id: string): Promise<void> {
    await db.idempotencyRecord.deleteMany({ where: { id } });
  },

  async deleteExpired(db: DbClient, now = new Date()): Promise<number> {
    const { count } = await db.idempotencyRecord.deleteMany({ where: { expiresAt: { lt: now } } });
    return count;
  },
};
