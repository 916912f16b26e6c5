import { withTx, type DbClient } from '../client';
import { sessionRepository } from './session.repository';
import type { Role } from '../generated/prisma/enums';
import { newId } from '../ids';
import { lockWorkspace, ownerCount } from './workspace-owners';

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

  /**
   * Deletes the user with their memberships and sessions, unless they are the last owner of a workspace (every
   * workspace with owners keeps one: its row is locked as membership changes lock it). Their keys stay, creator
   * null, and stop working (a null creator reads as gone, never as a CLI key: creatorRoleOf); the answer names them
   * so that callers publish their invalidation.
   */
  remove(
    db: DbClient,
    userId: string,
  ): Promise<
    | { ok: true; keyIds: string[] }
    | { ok: false; reason: 'not_found' }
    | { ok: false; reason: 'last_owner'; workspaceId: string }
  > {
    return withTx(db, async (tx) => {
      const owned = await tx.membership.findMany({
        where: { userId, role: 'owner' },
        select: { workspaceId: true },
        orderBy: { workspaceId: 'asc' },
      });
      // Locked in id order, so two deletions (or a deletion and a role change) cannot wait on each other in a cycle.
      for (const { workspaceId } of owned) {
        await lockWorkspace(tx, workspaceId);
        if ((await ownerCount(tx, workspaceId)) <= 1) return { ok: false, reason: 'last_owner', workspaceId };
      }
      // The user's row lock holds back a key being made for them (its insert checks the creator's row), so the key
      // list read next is complete.
      const found = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM "User" WHERE id = ${userId} FOR UPDATE`;
      if (!found.length) return { ok: false, reason: 'not_found' };
      const keys = await tx.apiKey.findMany({ where: { creatorId: userId }, select: { id: true } });
      await tx.user.delete({ where: { id: userId } });
      return { ok: true, keyIds: keys.map((k) => k.id) };
    });
  },

  membership(db: DbClient, workspaceId: string, userId: string) {
    return db.membership.findUnique({ where: { workspaceId_userId: { workspaceId, userId } } });
  },
};
