import { withTx, type DbClient } from '../client';
import { newId } from '../ids';
import { sessionRepository } from './session.repository';

/** A forgotten-password link works for an hour, once. */
export const PASSWORD_RESET_TTL_MS = 3600_000;

export const passwordResetRepository = {
  /**
   * A reset link's row. `userId` null (no account has the address) makes a row all the same, never mailed, so that
   * the request does the same work either way. The link is derived from the id by `tokenHashFor`.
   */
  create(db: DbClient, userId: string | null, tokenHashFor: (id: string) => string, now = new Date()) {
    const id = newId('pwr');
    return db.passwordReset.create({
      data: {
        id,
        userId,
        tokenHash: tokenHashFor(id),
        createdAt: now,
        expiresAt: new Date(now.getTime() + PASSWORD_RESET_TTL_MS),
      },
    });
  },

  /** What its mail needs: the row and its account's address; null when it is gone. */
  forMail(db: DbClient, id: string) {
    return db.passwordReset.findUnique({ where: { id }, include: { user: { select: { email: true } } } });
  },

  /** How many reset links were made for the account in [from, to) (mail to one address is bounded per hour). */
  countBetween(db: DbClient, userId: string, from: Date, to: Date) {
    return db.passwordReset.count({ where: { userId, createdAt: { gte: from, lt: to } } });
  },

  /** The unused, unexpired link with this token hash that belongs to an account; null otherwise. */
  async findLive(db: DbClient, tokenHash: string, now = new Date()) {
    const row = await db.passwordReset.findUnique({ where: { tokenHash } });
    return row?.userId && !row.usedAt && row.expiresAt > now ? { id: row.id, userId: row.userId } : null;
  },

  /**
   * Uses the link: in one transaction it is marked used (of two racing uses, one wins), every other live link of the
   * account with it, the password replaced and every session of the account revoked. False when the link was not
   * live any more.
   */
  use(db: DbClient, id: string, userId: string, passwordHash: string, now = new Date()): Promise<boolean> {
    return withTx(db, async (tx) => {
      const { count } = await tx.passwordReset.updateMany({
        where: { id, userId, usedAt: null, expiresAt: { gt: now } },
        data: { usedAt: now },
      });
      if (count !== 1) return false;
      await tx.passwordReset.updateMany({ where: { userId, usedAt: null }, data: { usedAt: now } });
      const changed = await tx.user.updateMany({ where: { id: userId }, data: { passwordHash } });
      if (changed.count !== 1) return false;
      await sessionRepository.revokeAllForUser(tx, userId, now);
      return true;
    });
  },

  /** Rows past any use (expired a day ago): removed by the maintenance sweep. */
  async purge(db: DbClient, now = new Date()): Promise<number> {
    const { count } = await db.passwordReset.deleteMany({
      where: { expiresAt: { lte: new Date(now.getTime() - 24 * 3600_000) } },
    });
    return count;
  },
};
