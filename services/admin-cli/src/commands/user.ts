import { hashPassword } from '@gensvc/auth';
import { isUniqueViolation, Role, userRepository, workspaceRepository } from '@gensvc/db';
import { z } from 'zod';
import { flagValues } from '../args';
import type { Command } from '../command';
import { conflict, notFound } from '../failures';
import { choice, choices, text } from '../flag-values';
import { fields, iso } from '../output';

const email = z.string().trim().pipe(z.email('is not an email address'));

const createUser: Command = {
  words: ['user', 'create'],
  summary: 'Create a user (the password is stored as a scrypt hash and never printed).',
  flags: [
    { name: 'email', value: 'EMAIL', required: true, help: 'login e-mail (stored in lower case)' },
    { name: 'password', value: 'PASSWORD', required: true, help: 'at least 8 characters' },
    { name: 'name', value: 'NAME', help: 'display name' },
  ],
  prepare(flags) {
    const input = flagValues(
      z.object({ email, password: z.string().min(8, 'must be at least 8 characters').max(1024), name: text().optional() }),
      flags,
      createUser,
    );
    return async ({ db, out }) => {
      const duplicate = conflict('duplicate_email', `A user with the e-mail ${input.email.toLowerCase()} already exists.`);
      if (await userRepository.findByEmail(db, input.email)) throw duplicate;
      const passwordHash = await hashPassword(input.password);
      const user = await userRepository.create(db, { email: input.email, passwordHash, name: input.name ?? null }).catch((e) => {
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
    return async ({ db, out }) => {
      if (!(await workspaceRepository.get(db, input.workspace))) throw notFound('workspace', input.workspace);
      const user = await userRepository.findByEmail(db, input.email);
      if (!user) throw notFound('user', input.email);
      const m = await userRepository.addMember(db, input.workspace, user.id, input.role);
      const view = { id: `${m.workspaceId}:${m.userId}`, workspace_id: m.workspaceId, user_id: m.userId, email: user.email, role: m.role, created_at: iso(m.createdAt) };
      out.result(view, () => fields(view));
    };
  },
};

export const userCommands: Command[] = [createUser, addMember];
