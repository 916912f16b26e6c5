// The Members page's routes. Admins and owners manage members; only an owner makes, demotes or removes an owner; the
// last owner stays (checked under a lock in membershipRepository). Anyone may leave, but the last owner. People join
// only through an invitation mailed to their address: its link never comes back to the inviter, and the answer is the
// same whether the address has an account or not.
import { linkToken, membershipRule, ROLE_RULES, roleAtLeast, type RoleRule, type WorkspaceRole } from '@gensvc/auth';
import { publishKeyInvalidations, scheduleMail } from '@gensvc/queue';
import {
  idPattern,
  invitationRepository,
  membershipRepository,
  newId,
  type InvitationRow,
  type MembershipChange,
} from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import { warnUnpublished } from '../../auth/key-cache';
import { assertRole, memberOf, sessionOf } from '../../auth/session';
import type { EdgeDeps } from '../../deps';
import { locals } from '../../http/request-context';
import { parseBody } from '../../http/parse-body';
import { ADD_MEMBER, CHANGE_ROLE } from './schema';

type Deps = Pick<EdgeDeps, 'db' | 'redis' | 'config' | 'queues'>;

const invitationObject = (i: InvitationRow) => ({
  id: i.id,
  email: i.email,
  role: i.role,
  status: 'sent' as const,
  sends: i.sends,
  expires_at: i.expiresAt.toISOString(),
  created_at: i.createdAt.toISOString(),
});

function refused<T>(change: MembershipChange<T>, rule: RoleRule, email?: string): T {
  if (change.ok) return change.value;
  if (change.reason === 'last_owner') throw errors.lastOwner();
  if (change.reason === 'actor_role') throw errors.insufficientRole(ROLE_RULES[rule].needed, ROLE_RULES[rule].what);
  if (change.reason === 'already_member') throw errors.alreadyMember(email ?? 'This person');
  throw errors.notFound('No such member in this workspace.', { param: 'user_id' });
}

/** GET …/members — members (owners first) and, for admins and owners, pending invitations. */
export function listMembers(deps: Deps) {
  return async (_req: Request, res: Response) => {
    const { workspace, role } = memberOf(res);
    const members = await membershipRepository.list(deps.db, workspace.id);
    const invitations = role === 'member' ? [] : await invitationRepository.listPending(deps.db, workspace.id);
    res.json({
      data: members.map((m) => ({ user: m.user, role: m.role, created_at: m.createdAt.toISOString() })),
      invitations: invitations.map((i) => invitationObject(i)),
    });
  };
}

/**
 * POST …/members — invites an address: the invitation is made (replacing a pending one to the same address) and its
 * link mailed there, after the commit (mail.send). Whether the address has an account changes nothing in the answer.
 */
export function addMember(deps: Deps) {
  return async (req: Request, res: Response) => {
    const body = parseBody(ADD_MEMBER, req.body);
    const { workspace, role } = memberOf(res);
    const rule = membershipRule(null, body.role);
    assertRole(role, rule);
    const inviter = sessionOf(res).user.id;
    const id = newId('inv');
    const inv = refused(
      await membershipRepository.invite(
        deps.db,
        {
          id,
          workspaceId: workspace.id,
          email: body.email,
          role: body.role,
          tokenHash: linkToken(deps.config.signingSecret, 'invitation', id, 1).hash,
          invitedById: inviter,
        },
        actorFor(inviter, rule),
      ),
      rule,
      body.email,
    );
    await mailInvitation(deps, res, inv);
    res.status(201).json({ invitation: invitationObject(inv) });
  };
}

const mailInvitation = (deps: Deps, res: Response, inv: InvitationRow) =>
  scheduleMail(deps.queues, {
    kind: 'invitation',
    id: inv.id,
    send: inv.sends,
    workspaceId: inv.workspaceId,
    requestId: locals(res).requestId,
  });

/** POST …/invitations/:id/resend — mails the invitation again, with a new link (the last one stops working). */
export function resendInvitation(deps: Deps) {
  return async (req: Request<{ id: string }>, res: Response) => {
    const { workspace, role } = memberOf(res);
    assertRole(role, 'manageMembers');
    const pending = idPattern('inv').test(req.params.id)
      ? await invitationRepository.findPending(deps.db, workspace.id, req.params.id)
      : null;
    if (!pending) throw notPending();
    assertRole(role, membershipRule(null, pending.role));
    const inv = await invitationRepository.resend(
      deps.db,
      workspace.id,
      pending.id,
      (sends) => linkToken(deps.config.signingSecret, 'invitation', pending.id, sends).hash,
    );
    if (!inv) throw notPending();
    await mailInvitation(deps, res, inv);
    res.json({ invitation: invitationObject(inv) });
  };
}

const notPending = () => errors.notFound('No pending invitation by that id in this workspace.', { param: 'id' });

/** The acting person, whose role is checked again under the workspace's lock when the change is made. */
const actorFor = (userId: string, rule: RoleRule) => ({
  userId,
  may: (role: WorkspaceRole | null) => role !== null && roleAtLeast(role, ROLE_RULES[rule].needed),
});

async function target(deps: Deps, req: Request<{ userId: string }>, workspaceId: string) {
  const m = /^usr_[A-Za-z0-9]{22}$/.test(req.params.userId)
    ? await membershipRepository.member(deps.db, workspaceId, req.params.userId)
    : null;
  if (!m) throw errors.notFound('No such member in this workspace.', { param: 'user_id' });
  return m;
}

/** PATCH …/members/:userId — changes a role. */
export function changeRole(deps: Deps) {
  return async (req: Request<{ userId: string }>, res: Response) => {
    const body = parseBody(CHANGE_ROLE, req.body);
    const { workspace, role } = memberOf(res);
    const m = await target(deps, req, workspace.id);
    const rule = membershipRule(m.role, body.role);
    assertRole(role, rule);
    const changed = refused(
      await membershipRepository.changeRole(
        deps.db,
        workspace.id,
        m.userId,
        body.role,
        actorFor(sessionOf(res).user.id, rule),
      ),
      rule,
    );
    await publishKeyInvalidations(
      deps.redis,
      deps.config.queuePrefix,
      changed.keyIds,
      warnUnpublished(locals(res).log),
    );
    res.json({ member: { user: m.user, role: changed.after, created_at: m.createdAt.toISOString() } });
  };
}

/** DELETE …/members/:userId — removes a member (or the person leaves); the keys they made here stop working. */
export function removeMember(deps: Deps) {
  return async (req: Request<{ userId: string }>, res: Response) => {
    const { workspace, role } = memberOf(res);
    const m = await target(deps, req, workspace.id);
    const self = m.userId === sessionOf(res).user.id;
    const rule = membershipRule(m.role, null);
    if (!self) assertRole(role, rule);
    const actor = self ? undefined : actorFor(sessionOf(res).user.id, rule);
    const removed = refused(await membershipRepository.remove(deps.db, workspace.id, m.userId, actor), rule);
    await publishKeyInvalidations(
      deps.redis,
      deps.config.queuePrefix,
      removed.keyIds,
      warnUnpublished(locals(res).log),
    );
    res.status(204).end();
  };
}

/** DELETE …/invitations/:id — withdraws a pending invitation: its link stops working. */
export function withdrawInvitation(deps: Deps) {
  return async (req: Request<{ id: string }>, res: Response) => {
    const { workspace, role } = memberOf(res);
    assertRole(role, 'manageMembers');
    if (!(await invitationRepository.remove(deps.db, workspace.id, req.params.id.slice(0, 64)))) throw notPending();
    res.status(204).end();
  };
}
