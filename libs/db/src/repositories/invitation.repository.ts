import { withTx, type DbClient } from '../client';
import type { Role } from '../generated/prisma/enums';
import { newId } from '../ids';

/** An invitation link works for 7 days, once. */
export const INVITATION_TTL_MS = 7 * 24 * 3600_000;

/**
 * The invitations each role may still have made (@gensvc/auth's rules: inviting an owner takes an owner, anyone else
 * an admin). A member may have made none: their pending invitations go when their role falls.
 */
const INVITABLE_BY: Record<Role, Role[]> = {
  owner: ['owner', 'admin', 'member'],
  admin: ['admin', 'member'],
  member: [],
};

const pending = (now: Date) => ({ acceptedAt: null, expiresAt: { gt: now } });

export const invitationRepository = {
  /**
   * A new invitation, replacing any still pending for the same address in the workspace (one live link per person).
   * `id` is the caller's when its link is derived from it (newId('inv')).
   */
  create(
    db: DbClient,
    input: {
      id?: string;
      workspaceId: string;
      email: string;
      role: Role;
      tokenHash: string;
      invitedById: string | null;
    },
    now = new Date(),
  ) {
    const email = input.email.toLowerCase();
    return withTx(db, async (tx) => {
      await tx.invitation.deleteMany({ where: { workspaceId: input.workspaceId, email, acceptedAt: null } });
      return tx.invitation.create({
        data: {
          id: input.id ?? newId('inv'),
          workspaceId: input.workspaceId,
          email,
          role: input.role,
          tokenHash: input.tokenHash,
          invitedById: input.invitedById,
          createdAt: now,
          expiresAt: new Date(now.getTime() + INVITATION_TTL_MS),
        },
      });
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

  /** What its mail says: the invitation, its workspace's name and who invited; null when it is gone. */
  forMail(db: DbClient, id: string) {
    return db.invitation.findUnique({
      where: { id },
      include: {
        workspace: { select: { name: true } },
        invitedBy: { select: { name: true, email: true } },
      },
    });
  },

  listPending(db: DbClient, workspaceId: string, now = new Date()) {
    return db.invitation.findMany({
      where: { workspaceId, ...pending(now) },
      orderBy: { createdAt: 'desc' },
    });
  },

  /** The workspace's pending invitation by that id; null when there is none. */
  findPending(db: DbClient, workspaceId: string, id: string, now = new Date()) {
    return db.invitation.findFirst({ where: { id, workspaceId, ...pending(now) } });
  },

  /**
   * A pending invitation's link mailed again: its send count goes up, and its link (derived from id and count by
   * `tokenHashFor`) replaces the last one, valid for a full term again. Null when there is no pending one by that id.
   */
  resend(db: DbClient, workspaceId: string, id: string, tokenHashFor: (sends: number) => string, now = new Date()) {
    return withTx(db, async (tx) => {
      const inv = await tx.invitation.findFirst({ where: { id, workspaceId, acceptedAt: null } });
      if (!inv) return null;
      const sends = inv.sends + 1;
      const { count } = await tx.invitation.updateMany({
        where: { id, acceptedAt: null, sends: inv.sends },
        data: { sends, tokenHash: tokenHashFor(sends), expiresAt: new Date(now.getTime() + INVITATION_TTL_MS) },
      });
      return count === 1 ? { ...inv, sends } : null;
    });
  },

  /** Withdraws a pending invitation of the workspace; false when there is none by that id. */
  async remove(db: DbClient, workspaceId: string, id: string): Promise<boolean> {
    const { count } = await db.invitation.deleteMany({ where: { id, workspaceId, acceptedAt: null } });
    return count === 1;
  },

  /**
   * Withdraws what the inviter may no longer invite: with `role` null (they left the workspace) every pending
   * invitation they made there, else those for roles above what `role` may invite.
   */
  async revokeBeyond(db: DbClient, workspaceId: string, inviterId: string, role: Role | null): Promise<number> {
    const { count } = await db.invitation.deleteMany({
      where: {
        workspaceId,
        invitedById: inviterId,
        acceptedAt: null,
        ...(role ? { role: { notIn: INVITABLE_BY[role] } } : {}),
      },
    });
    return count;
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
