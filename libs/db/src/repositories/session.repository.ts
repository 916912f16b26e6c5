import type { DbClient } from '../client';
import { newId } from '../ids';

// Dashboard sessions (DESIGN.md §4 Sessions). The cookie's secret is never stored: rows are found by its SHA-256.
// A session is valid while it is not revoked, before its absolute expiry and within the idle limit of its last use.

export interface SessionLimits {
  idleMs: number;
  absoluteMs: number;
}

/** DESIGN.md §4: idle 12 h, absolute 7 d. */
export const SESSION_LIMITS: SessionLimits = { idleMs: 12 * 3600_000, absoluteMs: 7 * 24 * 3600_000 };

/** lastSeenAt is written at most this often per session (idle expiry needs no finer resolution). */
const SEEN_RESOLUTION_MS = 60_000;

export const sessionRepository = {
  create(
    db: DbClient,
    input: { userId: string; tokenHash: string; userAgent?: string | null; ip?: string | null },
    limits = SESSION_LIMITS,
    now = new Date(),
  ) {
    return db.session.create({
      data: {
        id: newId('ses'),
        tokenHash: input.tokenHash,
        userId: input.userId,
        createdAt: now,
        lastSeenAt: now,
        expiresAt: new Date(now.getTime() + limits.absoluteMs),
        userAgent: input.userAgent?.slice(0, 256) ?? null,
        ip: input.ip ?? null,
      },
    });
  },

  /** The live session with this token hash and its user, noting its use; null when unknown, revoked or expired. */
  async findLive(db: DbClient, tokenHash: string, limits = SESSION_LIMITS, now = new Date()) {
    const session = await db.session.findUnique({
      where: { tokenHash },
      include: { user: { select: { id: true, email: true, name: true } } },
    });
    if (!session || session.revokedAt) return null;
    if (session.expiresAt <= now || now.getTime() - session.lastSeenAt.getTime() >= limits.idleMs) return null;
    if (now.getTime() - session.lastSeenAt.getTime() >= SEEN_RESOLUTION_MS) {
      await db.session.updateMany({ where: { id: session.id, revokedAt: null }, data: { lastSeenAt: now } });
    }
    return session;
  },

  async revoke(db: DbClient, id: string, now = new Date()) {
    await db.session.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: now } });
  },

  /** Every live session of the user (sign-out everywhere; a password change): returns how many were revoked. */
  async revokeAllForUser(db: DbClient, userId: string, now = new Date()): Promise<number> {
    const { count } = await db.session.updateMany({ where: { userId, revokedAt: null }, data: { revokedAt: now } });
    return count;
  },

  /** Rows past any use (expired or revoked a day ago): removed by the maintenance sweep. */
  async purge(db: DbClient, now = new Date()): Promise<number> {
    const dayAgo = new Date(now.getTime() - 24 * 3600_000);
    const { count } = await db.session.deleteMany({
      where: { OR: [{ expiresAt: { lte: now } }, { revokedAt: { lte: dayAgo } }] },
    });
    return count;
  },
};

export type LiveSession = NonNullable<Awaited<ReturnType<typeof sessionRepository.findLive>>>;
