import type { DbClient } from '../client';
import { withTx } from '../client';
import type { Role } from '../generated/prisma/enums';
import { lockWorkspace, ownerCount } from './workspace-owners';
import { invitationRepository } from './invitation.repository';

// Who belongs to a workspace and as what. Two things are decided here, under a lock on the workspace row, so that
// racing changes cannot both pass: a workspace with owners always keeps at least one, and the actor still has the
// role the change needs (a person demoted a moment ago cannot finish a change begun as an admin). What role a change
// needs is @gensvc/auth's rule; the caller passes it in as `actorMay`. A person's pending invitations go with the right
// to make them, in the same transaction as the change that takes it.

export type MembershipChange<T> =
  | { ok: true; value: T }
  | { ok: false; reason: 'not_member' | 'last_owner' | 'already_member' | 'actor_role' };

/** Who makes the change and whether their role (null: not a member any more) allows it; absent for the platform CLI. */
export interface Actor {
  userId: string;
  may: (role: Role | null) => boolean;
}

async function actorAllowed(tx: DbClient, workspaceId: string, actor: Actor | undefined): Promise<boolean> {
  if (!actor) return true;
  const m = await tx.membership.findUnique({ where: { workspaceId_userId: { workspaceId, userId: actor.userId } } });
  return actor.may(m?.role ?? null);
}

const userFields = { id: true, email: true, name: true } as const;

/** The keys a member made in the workspace: bounded by their role, so every replica re-reads them after a change. */
async function keysMadeBy(tx: DbClient, workspaceId: string, userId: string) {
  return (await tx.apiKey.findMany({ where: { workspaceId, creatorId: userId }, select: { id: true } })).map(
    (k) => k.id,
  );
}

export const membershipRepository = {
  get(db: DbClient, workspaceId: string, userId: string) {
    return db.membership.findUnique({ where: { workspaceId_userId: { workspaceId, userId } } });
  },

  /** The membership with its workspace: what a dashboard request for that workspace needs, in one query. */
  withWorkspace(db: DbClient, workspaceId: string, userId: string) {
    return db.membership.findUnique({
      where: { workspaceId_userId: { workspaceId, userId } },
      include: { workspace: true },
    });
  },

  /** The membership with its user, as the members page shows it. */
  member(db: DbClient, workspaceId: string, userId: string) {
    return db.membership.findUnique({
      where: { workspaceId_userId: { workspaceId, userId } },
      include: { user: { select: userFields } },
    });
  },

  /** The workspace's members with their users, owners first, then by when they joined. */
  async list(db: DbClient, workspaceId: string) {
    const rows = await db.membership.findMany({
      where: { workspaceId },
      include: { user: { select: userFields } },
      orderBy: [{ createdAt: 'asc' }],
    });
    const rank: Record<Role, number> = { owner: 0, admin: 1, member: 2 };
    return rows.sort((a, b) => rank[a.role] - rank[b.role]);
  },

  /** The workspaces a user belongs to, with the role in each. */
  forUser(db: DbClient, userId: string) {
    return db.membership.findMany({
      where: { userId },
      include: { workspace: { select: { id: true, name: true, tier: true } } },
      orderBy: [{ createdAt: 'asc' }],
    });
  },

  /** Adds a member; an existing membership is left as it is (already_member). */
  add(
    db: DbClient,
    workspaceId: string,
    userId: string,
    role: Role,
    actor?: Actor,
  ): Promise<MembershipChange<{ role: Role; createdAt: Date }>> {
    return withTx(db, async (tx) => {
      await lockWorkspace(tx, workspaceId);
      if (!(await actorAllowed(tx, workspaceId, actor))) return { ok: false, reason: 'actor_role' };
      if (await tx.membership.findUnique({ where: { workspaceId_userId: { workspaceId, userId } } }))
        return { ok: false, reason: 'already_member' };
      const m = await tx.membership.create({ data: { workspaceId, userId, role } });
      return { ok: true, value: { role: m.role, createdAt: m.createdAt } };
    });
  },

  /**
   * Invites an address: under the workspace's lock, the actor's role is checked again (an invitation cannot outlive
   * the right to make it, which a racing demotion revokes) and an address that is a member already is refused. Whether
   * the address has an account is neither read nor answered: one query by address either way.
   */
  invite(
    db: DbClient,
    input: {
      id: string;
      workspaceId: string;
      email: string;
      role: Role;
      tokenHash: string;
      invitedById: string | null;
    },
    actor?: Actor,
  ): Promise<MembershipChange<Awaited<ReturnType<typeof invitationRepository.create>>>> {
    return withTx(db, async (tx) => {
      await lockWorkspace(tx, input.workspaceId);
      if (!(await actorAllowed(tx, input.workspaceId, actor))) return { ok: false, reason: 'actor_role' };
      const member = await tx.membership.findFirst({
        where: { workspaceId: input.workspaceId, user: { email: input.email.toLowerCase() } },
        select: { userId: true },
      });
      if (member) return { ok: false, reason: 'already_member' };
      return { ok: true, value: await invitationRepository.create(tx, input) };
    });
  },

  /** Changes a member's role; demoting the last owner is refused. */
  changeRole(
    db: DbClient,
    workspaceId: string,
    userId: string,
    role: Role,
    actor?: Actor,
  ): Promise<MembershipChange<{ before: Role; after: Role; keyIds: string[] }>> {
    return withTx(db, async (tx) => {
      await lockWorkspace(tx, workspaceId);
      const m = await tx.membership.findUnique({ where: { workspaceId_userId: { workspaceId, userId } } });
      if (!m) return { ok: false, reason: 'not_member' };
      if (!(await actorAllowed(tx, workspaceId, actor))) return { ok: false, reason: 'actor_role' };
      if (m.role === 'owner' && role !== 'owner' && (await ownerCount(tx, workspaceId)) <= 1)
        return { ok: false, reason: 'last_owner' };
      await tx.membership.update({ where: { workspaceId_userId: { workspaceId, userId } }, data: { role } });
      await invitationRepository.revokeBeyond(tx, workspaceId, userId, role);
      return { ok: true, value: { before: m.role, after: role, keyIds: await keysMadeBy(tx, workspaceId, userId) } };
    });
  },

  /** Removes a member; removing the last owner is refused. Returns the ids of the keys the member had made here. */
  remove(
    db: DbClient,
    workspaceId: string,
    userId: string,
    actor?: Actor,
  ): Promise<MembershipChange<{ role: Role; keyIds: string[] }>> {
    return withTx(db, async (tx) => {
      await lockWorkspace(tx, workspaceId);
      const m = await tx.membership.findUnique({ where: { workspaceId_userId: { workspaceId, userId } } });
      if (!m) return { ok: false, reason: 'not_member' };
      if (!(await actorAllowed(tx, workspaceId, actor))) return { ok: false, reason: 'actor_role' };
      if (m.role === 'owner' && (await ownerCount(tx, workspaceId)) <= 1) return { ok: false, reason: 'last_owner' };
      await tx.membership.delete({ where: { workspaceId_userId: { workspaceId, userId } } });
      await invitationRepository.revokeBeyond(tx, workspaceId, userId, null);
      return { ok: true, value: { role: m.role, keyIds: await keysMadeBy(tx, workspaceId, userId) } };
    });
  },
};

export type MemberRow = Awaited<ReturnType<typeof membershipRepository.list>>[number];
