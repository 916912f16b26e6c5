import { isScope, newApiKey, SCOPES } from '@gensvc/auth';
import { publishKeyInvalidations } from '@gensvc/queue';
import {
  apiKeyRepository,
  MODEL_ID,
  modelRepository,
  toAmount,
  userRepository,
  workspaceRepository,
  type ApiKeyModel,
} from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { z } from 'zod';
import { flagValues, UsageError } from '../args';
import type { Command, Deps } from '../command';
import { conflict, notFound } from '../failures';
import { amount, duration, integer, list, text } from '../flag-values';
import { fields, iso, table } from '../output';

const DEFAULT_GRACE = '24h';
const SECRET_NOTE = 'The secret ("key") is shown this once and cannot be recovered: store it now.';

/** A key as the CLI shows it: never its secret or hash (the secret exists only in the answer that creates it). */
function keyView(k: ApiKeyModel) {
  return {
    id: k.id,
    prefix: k.prefix,
    name: k.name,
    workspace_id: k.workspaceId,
    created_via: k.createdVia,
    creator_id: k.creatorId,
    scopes: k.scopes,
    spend_cap: k.spendCap === null ? null : toAmount(k.spendCap),
    spent: toAmount(k.spent),
    models: k.allowedModels.length ? k.allowedModels : 'all',
    rpm: k.rpm,
    expires_at: iso(k.expiresAt),
    revoked_at: iso(k.revokedAt),
    last_used_at: iso(k.lastUsedAt),
    previous_prefix: k.previousPrefix,
    previous_expires_at: iso(k.previousExpiresAt),
    created_at: iso(k.createdAt),
  };
}

/** The one answer that carries the secret: right after the id, so it is hard to miss. */
function withSecret(k: ApiKeyModel, secret: string) {
  const { id, ...rest } = keyView(k);
  return { id, key: secret, ...rest };
}

/** `all`, or model ids (`<provider>/<model>`): the key's allow-list, empty for all. */
const models = z.union([
  z.literal('all').transform(() => [] as string[]),
  list.pipe(z.array(z.string().regex(MODEL_ID, 'must be model ids, <provider>/<model>')).max(500)),
]);
/** The key's own paid calls per minute, or `none`. */
const keyRpm = z.union([z.literal('none').transform(() => null), integer(1, 1_000_000)]);

/** Refuses an allow-list naming a model that does not exist (a typo would lock the key out of what was meant). */
async function checkModels(db: Deps['db'], ids: readonly string[] | undefined) {
  const missing = ids?.length ? await modelRepository.missing(db, ids) : [];
  if (missing.length) throw notFound('model', missing.join(', '));
}

const scopes = list.superRefine((items, ctx) => {
  const unknown = items.filter((s) => !isScope(s));
  if (unknown.length)
    ctx.addIssue({ code: 'custom', message: `unknown scope ${unknown.join(', ')} (known: ${SCOPES.join(', ')})` });
});

/**
 * Tells every edge replica to drop its cached look-up of the key. Without a known Redis no edge is running, so
 * there is nothing to tell; a failed publish leaves caches to expire on their TTL, which is worth a warning only.
 */
export async function invalidate({ redis, queuePrefix, out }: Deps, keyId: string) {
  if (!redis) return;
  await publishKeyInvalidations(redis, queuePrefix, [keyId], (e) =>
    out.note(
      `warning: could not publish the invalidation of ${keyId} on Redis (${e.message}); edges drop their cached ` +
        `look-up when it expires.`,
    ),
  );
}

const create: Command = {
  words: ['key', 'create'],
  summary: 'Create an API key for a workspace; its secret is printed once.',
  flags: [
    { name: 'workspace', value: 'WS', required: true, help: 'workspace id' },
    { name: 'name', value: 'NAME', help: 'label shown in listings (default "default")' },
    { name: 'scopes', value: 'a,b', help: `comma-separated scopes (default all: ${SCOPES.join(',')})` },
    { name: 'spend-cap', value: 'USD', help: 'most the key may spend' },
    { name: 'expires-in', value: 'DURATION', help: 'lifetime such as 30d or 12h (default: does not expire)' },
    { name: 'creator', value: 'EMAIL', help: 'the member of the workspace it is made for' },
    { name: 'models', value: 'a/b,c/d', help: 'the only models the key may use (default all)' },
    { name: 'rpm', value: 'N', help: "the key's own paid calls per minute, beside its workspace's (default none)" },
  ],
  prepare(flags) {
    const input = flagValues(
      z.object({
        workspace: text(),
        name: text().default('default'),
        scopes: scopes.optional(),
        'spend-cap': amount().optional(),
        'expires-in': duration().optional(),
        creator: z.string().trim().min(1).optional(),
        models: models.optional(),
        rpm: keyRpm.optional(),
      }),
      flags,
      create,
    );
    return async (deps) => {
      const { db, out } = deps;
      if (!(await workspaceRepository.get(db, input.workspace))) throw notFound('workspace', input.workspace);
      let creatorId: string | null = null;
      if (input.creator !== undefined) {
        const user = await userRepository.findByEmail(db, input.creator);
        if (!user) throw notFound('user', input.creator);
        if (!(await userRepository.membership(db, input.workspace, user.id))) {
          throw errors.notAMember(user.email, input.workspace);
        }
        creatorId = user.id;
      }
      await checkModels(db, input.models);
      const expiresIn = input['expires-in'];
      const secret = newApiKey();
      const key = await apiKeyRepository.create(db, {
        workspaceId: input.workspace,
        name: input.name,
        prefix: secret.prefix,
        hash: secret.hash,
        scopes: input.scopes ?? [...SCOPES],
        spendCap: input['spend-cap'] ?? null,
        expiresAt: expiresIn === undefined ? null : new Date(Date.now() + expiresIn),
        creatorId,
        createdVia: creatorId === null ? 'cli' : 'cli_for_member',
        allowedModels: input.models ?? [],
        rpm: input.rpm ?? null,
      });
      const view = withSecret(key, secret.secret);
      out.result(view, () => fields(view));
      if (!out.json) out.note(SECRET_NOTE);
    };
  },
};

const listKeys: Command = {
  words: ['key', 'list'],
  summary: "List a workspace's API keys (prefixes only, never secrets).",
  flags: [{ name: 'workspace', value: 'WS', required: true, help: 'workspace id' }],
  prepare(flags) {
    const input = flagValues(z.object({ workspace: text() }), flags, listKeys);
    return async ({ db, out }) => {
      if (!(await workspaceRepository.get(db, input.workspace))) throw notFound('workspace', input.workspace);
      const data = (await apiKeyRepository.listForWorkspace(db, input.workspace)).map(keyView);
      out.result({ object: 'list', data }, () =>
        table(data, [
          'id',
          'prefix',
          'name',
          'scopes',
          'spend_cap',
          'spent',
          'models',
          'rpm',
          'expires_at',
          'revoked_at',
          'last_used_at',
        ]),
      );
    };
  },
};

const revoke: Command = {
  words: ['key', 'revoke'],
  summary: 'Revoke an API key at once (every edge drops its cached look-up).',
  flags: [{ name: 'id', value: 'KEY_ID', required: true, help: 'key id (key_...)' }],
  prepare(flags) {
    const input = flagValues(z.object({ id: text() }), flags, revoke);
    return async (deps) => {
      const key = await apiKeyRepository.revoke(deps.db, input.id);
      if (!key) throw notFound('key', input.id);
      await invalidate(deps, key.id);
      const view = keyView(key);
      deps.out.result(view, () => fields(view));
    };
  },
};

const rotate: Command = {
  words: ['key', 'rotate'],
  summary: 'Give an API key a new secret; the old one keeps working for the grace period.',
  flags: [
    { name: 'id', value: 'KEY_ID', required: true, help: 'key id (key_...)' },
    {
      name: 'grace',
      value: 'DURATION',
      help: `how long the old secret keeps working (default ${DEFAULT_GRACE}; 0 ends it at once)`,
    },
  ],
  prepare(flags) {
    const input = flagValues(
      z.object({ id: text(), grace: duration({ allowZero: true }).prefault(DEFAULT_GRACE) }),
      flags,
      rotate,
    );
    return async (deps) => {
      const { db, out } = deps;
      const existing = await apiKeyRepository.get(db, input.id);
      if (!existing) throw notFound('key', input.id);
      if (existing.revokedAt) throw conflict('key_revoked', `Key ${input.id} is revoked and cannot be rotated.`);
      const secret = newApiKey();
      const key = await apiKeyRepository.rotate(
        db,
        input.id,
        { prefix: secret.prefix, hash: secret.hash },
        input.grace,
      );
      // Revoked between the check and the update.
      if (!key) throw conflict('key_revoked', `Key ${input.id} is revoked and cannot be rotated.`);
      await invalidate(deps, key.id);
      const view = withSecret(key, secret.secret);
      out.result(view, () => fields(view));
      if (!out.json) out.note(SECRET_NOTE);
    };
  },
};

const limit: Command = {
  words: ['key', 'limit'],
  summary: 'Change the models an API key may use and its own rpm (every edge drops its cached look-up).',
  flags: [
    { name: 'id', value: 'KEY_ID', required: true, help: 'key id (key_...)' },
    { name: 'models', value: 'a/b,c/d|all', help: 'the only models the key may use, or all' },
    { name: 'rpm', value: 'N|none', help: "the key's own paid calls per minute, or none" },
  ],
  prepare(flags) {
    const input = flagValues(z.object({ id: text(), models: models.optional(), rpm: keyRpm.optional() }), flags, limit);
    if (input.models === undefined && input.rpm === undefined)
      throw new UsageError('Nothing to change: give --models, --rpm or both.', limit);
    return async (deps) => {
      await checkModels(deps.db, input.models);
      const key = await apiKeyRepository.setLimits(deps.db, input.id, {
        ...(input.models !== undefined ? { allowedModels: input.models } : {}),
        ...(input.rpm !== undefined ? { rpm: input.rpm } : {}),
      });
      if (!key) throw notFound('key', input.id);
      await invalidate(deps, key.id);
      const view = keyView(key);
      deps.out.result(view, () => fields(view));
    };
  },
};

export const keyCommands: Command[] = [create, listKeys, revoke, rotate, limit];
