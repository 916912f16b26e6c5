import { queryPrepared, type DbClient } from '../client';
import { newId } from '../ids';

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
/** A first request still "in flight" after this long died with its process: a retry may take its key over. */
const IN_FLIGHT_TAKEOVER_MS = 10 * 60 * 1000;

export type IdempotencyBegin =
  | { state: 'new'; id: string }
  | { state: 'replay'; status: number; body: unknown }
  | { state: 'mismatch' }
  | { state: 'in_flight' };

// A paid call that carries an Idempotency-Key runs these on its path: prepared statements on the pg pool, as the rest
// of the paid path, so that Prisma's query compiler is not loaded by an edge serving paid calls. Times go
// in as ISO strings with Z, read as UTC by `::timestamp(3)`.
const BEGIN = `
  INSERT INTO "IdempotencyRecord" ("id", "workspaceId", "key", "requestHash", "expiresAt", "createdAt")
  VALUES ($1, $2, $3, $4, $5::timestamp(3), $6::timestamp(3))
  ON CONFLICT ("workspaceId", "key") DO UPDATE SET
    "id" = EXCLUDED."id", "requestHash" = EXCLUDED."requestHash", "responseStatus" = NULL, "responseBody" = NULL,
    "expiresAt" = EXCLUDED."expiresAt", "createdAt" = EXCLUDED."createdAt"
  WHERE "IdempotencyRecord"."expiresAt" <= $6::timestamp(3)
     OR ("IdempotencyRecord"."responseStatus" IS NULL AND "IdempotencyRecord"."createdAt" <= $7::timestamp(3))
  RETURNING "id"`;
const EXISTING = `SELECT "requestHash", "responseStatus", "responseBody" FROM "IdempotencyRecord"
  WHERE "workspaceId" = $1 AND "key" = $2`;
const COMPLETE = 'UPDATE "IdempotencyRecord" SET "responseStatus" = $2::int, "responseBody" = $3::json WHERE "id" = $1';
const ABANDON = 'DELETE FROM "IdempotencyRecord" WHERE "id" = $1';

/**
 * Idempotency-Key records, one per (workspace, key) for 24 h. The insert is the lock: of racing requests with one
 * key exactly one gets 'new'; the others see it in flight, then its stored answer.
 */
export const idempotencyRepository = {
  async begin(
    db: DbClient,
    workspaceId: string,
    key: string,
    requestHash: string,
    now = new Date(),
  ): Promise<IdempotencyBegin> {
    const id = newId('idem');
    const expiresAt = new Date(now.getTime() + IDEMPOTENCY_TTL_MS);
    // A record past its 24 h, or in flight for longer than any request lives, is taken over by this request.
    const takeoverBefore = new Date(now.getTime() - IN_FLIGHT_TAKEOVER_MS);
    const rows = await queryPrepared<{ id: string }>(db, 'gensvc_idem_begin', BEGIN, [
      id,
      workspaceId,
      key,
      requestHash,
      expiresAt.toISOString(),
      now.toISOString(),
      takeoverBefore.toISOString(),
    ]);
    if (rows.length) return { state: 'new', id };
    const [existing] = await queryPrepared<{
      requestHash: string;
      responseStatus: number | null;
      responseBody: unknown;
    }>(db, 'gensvc_idem_existing', EXISTING, [workspaceId, key]);
    if (!existing) return idempotencyRepository.begin(db, workspaceId, key, requestHash, now);
    if (existing.requestHash !== requestHash) return { state: 'mismatch' };
    if (existing.responseStatus === null) return { state: 'in_flight' };
    return { state: 'replay', status: existing.responseStatus, body: existing.responseBody };
  },

  /** Stores the answer the first request gave, for replays. */
  complete(db: DbClient, id: string, status: number, body: unknown): Promise<void> {
    return idempotencyRepository.completeText(db, id, status, JSON.stringify(body ?? null));
  },

  /**
   * Stores the answer's very text (the JSON the first request was sent). Raw json, not Prisma's Json (it writes round
   * numbers to 16 significant digits), and json, not jsonb (which reorders keys): a replay answers the same bytes.
   * Text that is not JSON is refused by the column and the record stays in flight, as after any failed write.
   */
  async completeText(db: DbClient, id: string, status: number, text: string): Promise<void> {
    await queryPrepared(db, 'gensvc_idem_complete', COMPLETE, [id, status, text]);
  },

  /** Forgets a first request that did not succeed, so that a retry runs again (it was not charged). */
  async abandon(db: DbClient, id: string): Promise<void> {
    await queryPrepared(db, 'gensvc_idem_abandon', ABANDON, [id]);
  },

  async deleteExpired(db: DbClient, now = new Date()): Promise<number> {
    const { count } = await db.idempotencyRecord.deleteMany({ where: { expiresAt: { lt: now } } });
    return count;
  },
};
