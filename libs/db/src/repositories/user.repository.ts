import { withTx, type DbClient } from '../client';
import { sessionRepository } from './session.repository';
import type { Role } from '../generated/prisma/enums';
import { newId } from '../ids';

export const userRepository = {
  /** passwordHash is made by @gensvc/auth hashPassword; the password itself never reaches the database. */
  create(db: DbClient, input: { email: string; passwordHash: string; name?: string | null }) {
    return db.user.create({
      data: {
        id: newId('usr'),
        email: input.email.toLowerCase(),
        passwordHash: input.passwordHash,
        name: input.name ?? null,
      },
    });
  },

  findByEmail(db: DbClient, email: string) {
    return db.user.findUnique({ where: { email: email.toLowerCase() } });
  },

  /** Adds the user to the workspace, or changes the role of an existing member. */
  addMember(db: DbClient, workspaceId: string, userId: string, role: Role) {
    return db.membership.upsert({
      where: { workspaceId_userId: { workspaceId, userId } },
      create: { workspaceId, userId, role },
      update: { role },
    });
  },

  /** Every user, oldest first, with how many workspaces each belongs to. */
  list(db: DbClient) {
    return db.user.findMany({ orderBy: { createdAt: 'asc' }, include: { _count: { select: { memberships: true } } } });
  },

  /**
   * Replaces the password hash and revokes every dashboard session of the user in the same transaction (DESIGN.md
   * §4: sessions end at a password change). Null when there is no such user; else how many sessions were revoked.
   */
  setPasswordHash(db: DbClient, userId: string, passwordHash: string) {
    return withTx(db, async (tx) => {
      const { count } = await tx.user.updateMany({ where: { id: userId }, data: { passwordHash } });
      if (!count) return null;
      return { revokedSessions: await sessionRepository.revokeAllForUser(tx, userId) };
    });
  },

  membership(db: DbClient, workspaceId: string, userId: string) {
    return db.membership.findUnique({ where: { workspaceId_userId: { workspaceId, userId } } });
  },
};
