import type { DbClient } from '../client';
import type { Role } from '../generated/prisma/enums';
import { newId } from '../ids';

export const userRepository = {
  /** passwordHash is made by @gensvc/auth hashPassword; the password itself never reaches the database. */
  create(db: DbClient, input: { email: string; passwordHash: string; name?: string | null }) {
    return db.user.create({
      data: { id: newId('usr'), email: input.email.toLowerCase(), passwordHash: input.passwordHash, name: input.name ?? null },
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

  membership(db: DbClient, workspaceId: string, userId: string) {
    return db.membership.findUnique({ where: { workspaceId_userId: { workspaceId, userId } } });
  },
};
