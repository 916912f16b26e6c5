import type { DbClient } from '../client';
import type { ApiKey } from '../generated/prisma/client';
import { newId } from '../ids';

export interface CreateApiKeyInput {
  workspaceId: string;
  name: string;
  prefix: string;
  hash: string;
  scopes: string[];
  spendCap?: bigint | null;
  expiresAt?: Date | null;
  creatorId?: string | null;
}

const withWorkspace = { workspace: { select: { id: true, tier: true, rpm: true, uploadRpm: true, currency: true } } } as const;

export const apiKeyRepository = {
  create(db: DbClient, input: CreateApiKeyInput) {
    return db.apiKey.create({
      data: {
        id: newId('key'),
        workspaceId: input.workspaceId,
        name: input.name,
        prefix: input.prefix,
        hash: input.hash,
        scopes: input.scopes,
        spendCap: input.spendCap ?? null,
        expiresAt: input.expiresAt ?? null,
        creatorId: input.creatorId ?? null,
      },
    });
  },

  /**
   * The key whose current or (within its grace period) previous secret has this SHA-256. Authentication is the one
   * look-up not scoped by workspace: the key is what names the workspace.
   */
  async findBySecretHash(db: DbClient, hash: string) {
    // Two unique look-ups rather than one findFirst with an OR: this is the authentication hot path, and Prisma
    // caches query plans for findUnique only (see client.ts).
    const current = await db.apiKey.findUnique({ where: { hash }, include: withWorkspace });
    if (current) return { key: current, matched: 'current' as const };
    const previous = await db.apiKey.findUnique({ where: { previousHash: hash }, include: withWorkspace });
    return previous ? { key: previous, matched: 'previous' as const } : null;
  },

  /** The key's cap and what it has spent, read fresh; null if the key is not the workspace's. */
  async spending(db: DbClient, id: string, workspaceId: string) {
    const key = await db.apiKey.findUnique({ where: { id }, select: { workspaceId: true, spendCap: true, spent: true } });
    return key && key.workspaceId === workspaceId ? { spendCap: key.spendCap, spent: key.spent } : null;
  },

  listForWorkspace(db: DbClient, workspaceId: string) {
    return db.apiKey.findMany({ where: { workspaceId }, orderBy: { createdAt: 'asc' } });
  },

  get(db: DbClient, id: string, workspaceId?: string) {
    return db.apiKey.findFirst({ where: { id, ...(workspaceId ? { workspaceId } : {}) } });
  },

  /** Revokes at once; revoking a revoked key keeps its first revocation time. */
  async revoke(db: DbClient, id: string, workspaceId?: string) {
    const scope = { id, ...(workspaceId ? { workspaceId } : {}) };
    await db.apiKey.updateMany({ where: { ...scope, revokedAt: null }, data: { revokedAt: new Date() } });
    return db.apiKey.findFirst({ where: scope });
  },

  /**
   * Gives the key a new secret. The row (and so its spend cap and what it has spent) stays the same; the old secret
   * keeps working until now + graceMs, or stops at once when graceMs is 0. A rotation during a grace period ends the
   * older secret's grace.
   */
  async rotate(db: DbClient, id: string, next: { prefix: string; hash: string }, graceMs: number, workspaceId?: string) {
    // One statement: the old secret is read and replaced under the row lock, so two rotations racing cannot both
    // keep the same "previous" secret and silently drop the other's new one.
    const keep = graceMs > 0;
    const rows = await db.$queryRaw<ApiKey[]>`
      UPDATE "ApiKey" SET
        "previousHash" = CASE WHEN ${keep} THEN hash END,
        "previousPrefix" = CASE WHEN ${keep} THEN prefix END,
        "previousExpiresAt" = CASE WHEN ${keep} THEN now() + make_interval(secs => ${graceMs / 1000}) END,
        hash = ${next.hash},
        prefix = ${next.prefix},
        "rotatedAt" = now()
      WHERE id = ${id} AND "revokedAt" IS NULL AND (${workspaceId ?? null}::text IS NULL OR "workspaceId" = ${workspaceId ?? null})
      RETURNING *`;
    return rows[0] ?? null;
  },

  /** Records use; callers throttle it so a busy key does not write on every request. */
  async touch(db: DbClient, id: string, at = new Date()) {
    await db.apiKey.updateMany({ where: { id }, data: { lastUsedAt: at } });
  },
};

export type ApiKeyLookup = NonNullable<Awaited<ReturnType<typeof apiKeyRepository.findBySecretHash>>>;
