import { hashPassword } from '@gensvc/auth';
import { isUniqueViolation, membershipRepository, Role, userRepository, workspaceRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { z } from 'zod';
import { flagValues } from '../args';
import type { Command } from '../command';
import { conflict, notFound } from '../failures';
import { choice, choices, text } from '../flag-values';
import { fields, iso, table } from '../output';
import { invalidate } from './key';

const email = z.string().trim().pipe(z.email('is not an email address'));
const password = z.string().min(8, 'must be at least 8 characters').max(1024);

const createUser: Command = {
  words: ['user', 'create'],
  summary: 'Create a user (the password is stored as a scrypt hash and never printed).',
  flags: [
    { name: 'email', value: 'EMAIL', required: true, help: 'login e-mail (stored in lower case)' },
    { name: 'password', value: 'PASSWORD', required: true, help: 'at least 8 characters' },
    { name: 'name', value: 'NAME', help: 'display name' },
  ],
  prepare(flags) {
    const input = flagValues(z.object({ email, password, name: text().optional() }), flags, createUser);
    return async ({ db, out }) => {
      const duplicate = conflict(
        'duplicate_email',
        `A user with the e-mail ${input.email.toLowerCase()} already exists.`,
      );
      if (await userRepository.findByEmail(db, input.email)) throw duplicate;
      const passwordHash = await hashPassword(input.password);
      const user = await userRepository
        .create(db, { email: input.email, passwordHash, name: input.name ?? null })
        .catch((e) => {
          throw isUniqueViolation(e) ? duplicate : e;
        });
      const view = { id: user.id, email: user.email, name: user.name, created_at: iso(user.createdAt) };
      out.result(view, () => fields(view));
    };
  },
};

const addMember: Command = {
  words: ['member', 'add'],
  summary: "Add a user to a workspace, or change an existing member's role.",
  flags: [
    { name: 'workspace', value: 'WS', required: true, help: 'workspace id' },
    { name: 'email', value: 'EMAIL', required: true, help: "the user's e-mail" },
    { name: 'role', value: choices(Role), required: true, help: 'role in the workspace' },
  ],
  prepare(flags) {
    const input = flagValues(z.object({ workspace: text(), email, role: choice(Role) }), flags, addMember);
    return async (deps) => {
      const { db, out } = deps;
      if (!(await workspaceRepository.get(db, input.workspace))) throw notFound('workspace', input.workspace);
      const user = await userRepository.findByEmail(db, input.email);
      if (!user) throw notFound('user', input.email);
      // A role change goes through the same rules as the dashboard's (the last owner stays), and the keys the member
      // made here, bounded by their role, are re-read by every edge.
      const changed = await membershipRepository.changeRole(db, input.workspace, user.id, input.role);
      if (!changed.ok && changed.reason === 'last_owner') {
        throw errors.lastOwner(
          `${user.email} is the last owner of ${input.workspace}: make another member owner first.`,
        );
      }
      if (changed.ok) for (const keyId of changed.value.keyIds) await invalidate(deps, keyId);
      else await userRepository.addMember(db, input.workspace, user.id, input.role);
      const m = await membershipRepository.get(db, input.workspace, user.id);
      if (!m) throw errors.notAMember(user.email, input.workspace);
      const view = {
        id: `${m.workspaceId}:${m.userId}`,
        workspace_id: m.workspaceId,
        user_id: m.userId,
        email: user.email,
        role: m.role,
        created_at: iso(m.createdAt),
      };
      out.result(view, () => fields(view));
    };
  },
};

const listUsers: Command = {
  words: ['user', 'list'],
  summary: 'List every user, oldest first, with how many workspaces each belongs to.',
  flags: [],
  prepare() {
    return async ({ db, out }) => {
      const data = (await userRepository.list(db)).map((u) => ({
        id: u.id,
        email: u.email,
        name: u.name,
        workspaces: u._count.memberships,
        created_at: iso(u.createdAt),
      }));
      out.result({ object: 'list', data }, () => table(data, ['id', 'email', 'name', 'workspaces', 'created_at']));
    };
  },
};

const setPassword: Command = {
  words: ['user', 'set-password'],
  summary: "Replace a user's password and sign them out of every dashboard session.",
  flags: [
    { name: 'email', value: 'EMAIL', required: true, help: "the user's e-mail" },
    { name: 'password', value: 'PASSWORD', required: true, help: 'the new password, at least 8 characters' },
  ],
  prepare(flags) {
    const input = flagValues(z.object({ email, password }), flags, setPassword);
    return async ({ db, out }) => {
      const user = await userRepository.findByEmail(db, input.email);
      if (!user) throw notFound('user', input.email);
      const done = await userRepository.setPasswordHash(db, user.id, await hashPassword(input.password));
      if (!done) throw notFound('user', input.email);
      const view = { id: user.id, email: user.email, password_changed: true, sessions_revoked: done.revokedSessions };
      out.result(view, () => fields(view));
    };
  },
};

const listMembers: Command = {
  words: ['member', 'list'],
  summary: "List a workspace's members, owners first.",
  flags: [{ name: 'workspace', value: 'WS', required: true, help: 'workspace id' }],
  prepare(flags) {
    const input = flagValues(z.object({ workspace: text() }), flags, listMembers);
    return async ({ db, out }) => {
      if (!(await workspaceRepository.get(db, input.workspace))) throw notFound('workspace', input.workspace);
      const data = (await membershipRepository.list(db, input.workspace)).map((m) => ({
        user_id: m.userId,
        email: m.user.email,
        name: m.user.name,
        role: m.role,
        created_at: iso(m.createdAt),
      }));
      out.result({ object: 'list', data }, () => table(data, ['user_id', 'email', 'name', 'role', 'created_at']));
    };
  },
};

const removeMember: Command = {
  words: ['member', 'remove'],
  summary: 'Remove a user from a workspace (never its last owner); the keys they made there stop working at once.',
  flags: [
    { name: 'workspace', value: 'WS', required: true, help: 'workspace id' },
    { name: 'email', value: 'EMAIL', required: true, help: "the member's e-mail" },
  ],
  prepare(flags) {
    const input = flagValues(z.object({ workspace: text(), email }), flags, removeMember);
    return async (deps) => {
      const { db, out } = deps;
      if (!(await workspaceRepository.get(db, input.workspace))) throw notFound('workspace', input.workspace);
      const user = await userRepository.findByEmail(db, input.email);
      if (!user) throw notFound('user', input.email);
      const removed = await membershipRepository.remove(db, input.workspace, user.id);
      if (!removed.ok) {
        if (removed.reason === 'last_owner') {
          throw errors.lastOwner(
            `${user.email} is the last owner of ${input.workspace}: make another member owner first.`,
          );
        }
        throw errors.notAMember(user.email, input.workspace);
      }
      // A key stops working once its creator has left the workspace (DESIGN.md §4): edges drop their cached look-ups.
      for (const keyId of removed.value.keyIds) await invalidate(deps, keyId);
      const view = {
        workspace_id: input.workspace,
        user_id: user.id,
        email: user.email,
        role: removed.value.role,
        removed: true,
        keys_stopped: removed.value.keyIds,
      };
      out.result(view, () => fields(view));
    };
  },
};

const deleteUser: Command = {
  words: ['user', 'delete'],
  summary:
    'Delete a user (never the last owner of a workspace) with their memberships and sessions; the keys they made ' +
    'stop working at once.',
  flags: [{ name: 'email', value: 'EMAIL', required: true, help: "the user's e-mail" }],
  prepare(flags) {
    const input = flagValues(z.object({ email }), flags, deleteUser);
    return async (deps) => {
      const { db, out } = deps;
      const user = await userRepository.findByEmail(db, input.email);
      if (!user) throw notFound('user', input.email);
      const removed = await userRepository.remove(db, user.id);
      if (!removed.ok) {
        if (removed.reason === 'not_found') throw notFound('user', input.email);
        throw errors.lastOwner(
          `${user.email} is the last owner of ${removed.workspaceId}: make another member owner first.`,
        );
      }
      // Their keys are refused from the next request on: edges drop their cached look-ups (DESIGN.md §4).
      for (const keyId of removed.keyIds) await invalidate(deps, keyId);
      const view = { id: user.id, email: user.email, deleted: true, keys_stopped: removed.keyIds };
      out.result(view, () => fields(view));
    };
  },
};

export const userCommands: Command[] = [
  createUser,
  listUsers,
  setPassword,
  addMember,
  listMembers,
  removeMember,
  deleteUser,
];
