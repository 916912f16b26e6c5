import { queryPrepared, type DbClient } from '../client';
import type { ApiKey } from '../generated/prisma/client';
import type { KeyCreatedVia, Role, Tier } from '../generated/prisma/enums';
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
  /** Where the key is made; `cli` keys have no creator (the database refuses one). */
  createdVia: KeyCreatedVia;
  /** The models the key may use; empty or absent: every enabled model. */
  allowedModels?: string[];
  /** The key's own paid calls per minute, beside its workspace's limit. */
  rpm?: number | null;
}

/** A key as authentication sees it: the row's fields it checks, its workspace's limits, and its creator's role. */
export interface AuthKey {
  id: string;
  workspaceId: string;
  name: string;
  hash: string;
  previousHash: string | null;
  previousExpiresAt: Date | null;
  scopes: string[];
  spendCap: bigint | null;
  spent: bigint;
  expiresAt: Date | null;
  revokedAt: Date | null;
  /** Empty: every enabled model. */
  allowedModels: string[];
  /** Paid calls per minute for this key (beside the workspace's rpm); null: none of its own. */
  rpm: number | null;
  creatorId: string | null;
  createdVia: KeyCreatedVia;
  /**
   * The creator's role in the key's workspace; null without a creator, or once the creator has left or was deleted
   * (creatorRoleOf).
   */
  creatorRole: Role | null;
  workspace: { id: string; tier: Tier; rpm: number; uploadRpm: number; currency: string };
}

// The authentication hot path (STYLE.md 11): one prepared statement on the pg pool, no ORM — the key by either of its
// unique hashes, its workspace's limits and its creator's membership in that workspace (a key is bounded by its
// creator's role and stops working once the creator has left: DESIGN.md §4 People and roles). Times come back as
// timestamptz (UTC) and money as text, so the pg driver and Prisma's raw path read them alike.
const FIND_BY_HASH = `
  SELECT k.id, k."workspaceId", k.name, k.hash, k."previousHash",
         k."previousExpiresAt" AT TIME ZONE 'UTC' AS "previousExpiresAt",
         k.scopes, k."spendCap"::text AS "spendCap", k.spent::text AS spent,
         k."expiresAt" AT TIME ZONE 'UTC' AS "expiresAt",
         k."revokedAt" AT TIME ZONE 'UTC' AS "revokedAt", coalesce(k."allowedModels", '{}') AS "allowedModels",
         k.rpm AS "keyRpm", k."creatorId", k."createdVia"::text AS "createdVia", m.role::text AS "creatorRole",
         w.tier::text AS tier, w.rpm, w."uploadRpm", w.currency
  FROM "ApiKey" k
  JOIN "Workspace" w ON w.id = k."workspaceId"
  LEFT JOIN "Membership" m ON m."userId" = k."creatorId" AND m."workspaceId" = k."workspaceId"
  WHERE k.hash = $1 OR k."previousHash" = $1
  ORDER BY k.hash = $1 DESC
  LIMIT 1`;

// Authentication records a key's use (throttled by the key cache): prepared too, like the look-up above.
const TOUCH = 'UPDATE "ApiKey" SET "lastUsedAt" = $2::timestamp(3) WHERE id = $1';

interface AuthKeyRow extends Omit<AuthKey, 'spendCap' | 'spent' | 'workspace' | 'rpm'> {
  keyRpm: number | null;
  spendCap: string | null;
  spent: string;
  tier: Tier;
  rpm: number;
  uploadRpm: number;
  currency: string;
}

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
        createdVia: input.createdVia,
        allowedModels: input.allowedModels ?? [],
        rpm: input.rpm ?? null,
      },
    });
  },

  /**
   * The key whose current or (within its grace period) previous secret has this SHA-256. Authentication is the one
   * look-up not scoped by workspace: the key is what names the workspace.
   */
  async findBySecretHash(
    db: DbClient,
    hash: string,
  ): Promise<{ key: AuthKey; matched: 'current' | 'previous' } | null> {
    const [r] = await queryPrepared<AuthKeyRow>(db, 'gensvc_key_by_hash', FIND_BY_HASH, [hash]);
    if (!r) return null;
    const key: AuthKey = {
      id: r.id,
      workspaceId: r.workspaceId,
      name: r.name,
      hash: r.hash,
      previousHash: r.previousHash,
      previousExpiresAt: r.previousExpiresAt,
      scopes: r.scopes,
      spendCap: r.spendCap === null ? null : BigInt(r.spendCap),
      spent: BigInt(r.spent),
      expiresAt: r.expiresAt,
      revokedAt: r.revokedAt,
      allowedModels: r.allowedModels,
      rpm: r.keyRpm,
      creatorId: r.creatorId,
      createdVia: r.createdVia,
      creatorRole: r.creatorRole,
      workspace: { id: r.workspaceId, tier: r.tier, rpm: r.rpm, uploadRpm: r.uploadRpm, currency: r.currency },
    };
    return { key, matched: r.hash === hash ? 'current' : 'previous' };
  },

  /** The key's cap and what it has spent, read fresh; null if the key is not the workspace's. */
  async spending(db: DbClient, id: string, workspaceId: string) {
    const key = await db.apiKey.findUnique({
      where: { id },
      select: { workspaceId: true, spendCap: true, spent: true },
    });
    return key && key.workspaceId === workspaceId ? { spendCap: key.spendCap, spent: key.spent } : null;
  },

  listForWorkspace(db: DbClient, workspaceId: string) {
    return db.apiKey.findMany({ where: { workspaceId }, orderBy: { createdAt: 'asc' } });
  },

  /** The workspace's key with its creator's email (the dashboard's view of one key); null when there is none. */
  getWithCreator(db: DbClient, id: string, workspaceId: string) {
    return db.apiKey.findFirst({
      where: { id, workspaceId },
      include: { creator: { select: { id: true, email: true } } },
    });
  },

  /** The dashboard's list: newest first, with each creator's email; only `creatorId`'s keys when given. */
  listWithCreators(db: DbClient, workspaceId: string, creatorId?: string) {
    return db.apiKey.findMany({
      where: { workspaceId, ...(creatorId !== undefined ? { creatorId } : {}) },
      include: { creator: { select: { id: true, email: true } } },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    });
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
  async rotate(
    db: DbClient,
    id: string,
    next: { prefix: string; hash: string },
    graceMs: number,
    workspaceId?: string,
  ) {
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
      WHERE id = ${id} AND "revokedAt" IS NULL
        AND (${workspaceId ?? null}::text IS NULL OR "workspaceId" = ${workspaceId ?? null})
      RETURNING *`;
    return rows[0] ?? null;
  },

  /**
   * Changes the key's model allow-list and its own rpm (the fields given); null when the key is not there. Callers
   * publish the key's invalidation, so every edge drops its cached look-up.
   */
  async setLimits(
    db: DbClient,
    id: string,
    limits: { allowedModels?: string[]; rpm?: number | null },
    workspaceId?: string,
  ) {
    const scope = { id, ...(workspaceId ? { workspaceId } : {}) };
    const { count } = await db.apiKey.updateMany({ where: scope, data: limits });
    return count ? db.apiKey.findFirst({ where: scope }) : null;
  },

  /** Records use; callers throttle it so a busy key does not write on every request. */
  async touch(db: DbClient, id: string, at = new Date()) {
    await queryPrepared(db, 'gensvc_key_touch', TOUCH, [id, at.toISOString()]);
  },
};

export type ApiKeyLookup = NonNullable<Awaited<ReturnType<typeof apiKeyRepository.findBySecretHash>>>;

/**
 * What bounds a key besides its scopes: its creator's role in the key's workspace; `unbounded` for a key the platform
 * CLI made without a creator; `left` once the creator is no longer a member or was deleted. Decided by createdVia,
 * never by a null creatorId, which a deleted creator leaves too.
 */
export function creatorRoleOf(key: Pick<AuthKey, 'createdVia' | 'creatorRole'>): Role | 'unbounded' | 'left' {
  if (key.createdVia === 'cli') return 'unbounded';
  return key.creatorRole ?? 'left';
}
