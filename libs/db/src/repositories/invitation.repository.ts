import type { DbClient } from '../client';
import type { Role } from '../generated/prisma/enums';
import { newId } from '../ids';

/** An invitation link works for 7 days, once. */
export const INVITATION_TTL_MS = 7 * 24 * 3600_000;

export const invitationRepository = {
  create(
    db: DbClient,
    input: { workspaceId: string; email: string; role: Role; tokenHash: string; invitedById: string | null },
    now = new Date(),
  ) {
    return db.invitation.create({
      data: {
        id: newId('inv'),
        workspaceId: input.workspaceId,
        email: input.email.toLowerCase(),
        role: input.role,
        tokenHash: input.tokenHash,
        invitedById: input.invitedById,
        createdAt: now,
        expiresAt: new Date(now.getTime() + INVITATION_TTL_MS),
      },
    });
  },

  /** The unused, unexpired invitation with this token hash, with its workspace's name; null otherwise. */
  async findLive(db: DbClient, tokenHash: string, now = new Date()) {
    const inv = await db.invitation.findUnique({
      where: { tokenHash },
      include: { workspace: { select: { id: true, name: true } } },
    });
    return inv && !inv.acceptedAt && inv.expiresAt > now ? inv : null;
  },

  listPending(db: DbClient, workspaceId: string, now = new Date()) {
    return db.invitation.findMany({
      where: { workspaceId, acceptedAt: null, expiresAt: { gt: now } },
      orderBy: { createdAt: 'desc' },
    });
  },

  /** Withdraws a pending invitation of the workspace; false when there is none by that id. */
  async remove(db: DbClient, workspaceId: string, id: string): Promise<boolean> {
    const { count } = await db.invitation.deleteMany({ where: { id, workspaceId, acceptedAt: null } });
    return count === 1;
  },

  /** Marks it used; of two racing acceptances, one wins (true). */
  async markAccepted(db: DbClient, id: string, now = new Date()): Promise<boolean> {
    const { count } = await db.invitation.updateMany({
      where: { id, acceptedAt: null, expiresAt: { gt: now } },
      data: { acceptedAt: now },
    });
    return count === 1;
  },
};

export type InvitationRow = Awaited<ReturnType<typeof invitationRepository.listPending>>[number];
