// The API Keys page's routes: list, create (the secret shown once), rotate with a grace period, revoke. A member
// manages their own keys; admins and owners revoke every key of the workspace, but a rotated secret goes to the key's
// creator only (DESIGN.md §4 People and roles; @gensvc/auth keyRotation).
import { keyRotation, mayRevokeKey, newApiKey, type WorkspaceRole } from '@gensvc/auth';
import { publishKeyInvalidations } from '@gensvc/queue';
import { apiKeyRepository, idPattern, modelRepository, toAmount, type ApiKeyModel } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import { warnUnpublished } from '../../auth/key-cache';
import { assertRole, memberOf, sessionOf } from '../../auth/session';
import type { EdgeDeps } from '../../deps';
import { locals } from '../../http/request-context';
import { parseBody } from '../../http/parse-body';
import { CREATE_KEY, ROTATE_KEY } from './schema';

type Deps = Pick<EdgeDeps, 'db' | 'redis' | 'config'>;
type KeyWithCreator = ApiKeyModel & { creator: { id: string; email: string } | null };
/** The signed-in person the answer is for: what they may do with each key is part of the key's view. */
type Viewer = { userId: string; role: WorkspaceRole };

const iso = (d: Date | null) => d?.toISOString() ?? null;
const viewerOf = (res: Response): Viewer => ({ userId: sessionOf(res).user.id, role: memberOf(res).role });

function keyObject(k: KeyWithCreator, viewer: Viewer, now = new Date()) {
  const active = !k.revokedAt && !(k.expiresAt && k.expiresAt <= now);
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes,
    spend_cap: k.spendCap === null ? null : toAmount(k.spendCap),
    spent: toAmount(k.spent),
    models: k.allowedModels,
    rpm: k.rpm,
    expires_at: iso(k.expiresAt),
    last_used_at: iso(k.lastUsedAt),
    revoked_at: iso(k.revokedAt),
    created_at: k.createdAt.toISOString(),
    rotated_at: iso(k.rotatedAt),
    previous_expires_at: k.previousExpiresAt && k.previousExpiresAt > now ? k.previousExpiresAt.toISOString() : null,
    created_via: k.createdVia,
    creator: k.creator ? { id: k.creator.id, email: k.creator.email } : null,
    status: k.revokedAt ? 'revoked' : k.expiresAt && k.expiresAt <= now ? 'expired' : 'active',
    can_rotate: active && keyRotation(viewer, k) === 'ok',
    can_revoke: !k.revokedAt && mayRevokeKey(viewer, k),
  };
}

/** GET …/keys — newest first; a member sees their own keys only. */
export function listKeys(deps: Deps) {
  return async (_req: Request, res: Response) => {
    const { workspace, role } = memberOf(res);
    const mine = role === 'member' ? sessionOf(res).user.id : undefined;
    const keys = await apiKeyRepository.listWithCreators(deps.db, workspace.id, mine);
    const viewer = viewerOf(res);
    res.json({ data: keys.map((k) => keyObject(k, viewer)) });
  };
}

/** POST …/keys — a key created by the signed-in person, bounded by their role; its secret is in this answer only. */
export function createKey(deps: Deps) {
  return async (req: Request, res: Response) => {
    const body = parseBody(CREATE_KEY, req.body);
    const { workspace } = memberOf(res);
    const { user } = sessionOf(res);
    const missing = body.models?.length ? await modelRepository.missing(deps.db, body.models) : [];
    if (missing.length) throw errors.invalidRequest(`models: there is no model "${missing[0]}".`, 'models');
    const made = newApiKey();
    const key = await apiKeyRepository.create(deps.db, {
      workspaceId: workspace.id,
      name: body.name,
      prefix: made.prefix,
      hash: made.hash,
      scopes: body.scopes,
      spendCap: body.spend_cap ?? null,
      expiresAt: body.expires_at ?? null,
      creatorId: user.id,
      createdVia: 'dashboard',
      allowedModels: body.models ?? [],
      rpm: body.rpm ?? null,
    });
    res.status(201).json({
      key: keyObject({ ...key, creator: { id: user.id, email: user.email } }, viewerOf(res)),
      secret: made.secret,
    });
  };
}

const KEY_ID = idPattern('key');

/** The workspace's key by the route's :id; else 404. */
async function workspaceKey(deps: Deps, req: Request<{ id: string }>, res: Response) {
  const id = req.params.id;
  const key = KEY_ID.test(id) ? await apiKeyRepository.get(deps.db, id, memberOf(res).workspace.id) : null;
  if (!key) throw errors.notFound(`No key ${id.slice(0, 64)} in this workspace.`, { param: 'id' });
  return key;
}

async function withCreator(deps: Deps, workspaceId: string, id: string): Promise<KeyWithCreator> {
  const key = await apiKeyRepository.getWithCreator(deps.db, id, workspaceId);
  if (!key) throw errors.notFound(`No key ${id} in this workspace.`, { param: 'id' });
  return key;
}

/** POST …/keys/:id/rotate — a new secret; the old one works for grace_seconds more (0: stops at once). */
export function rotateKey(deps: Deps) {
  return async (req: Request<{ id: string }>, res: Response) => {
    const body = parseBody(ROTATE_KEY, req.body);
    const key = await workspaceKey(deps, req, res);
    const viewer = viewerOf(res);
    // Another person's key: a member is told the role that manages other keys, an admin that only its creator
    // rotates it (admins revoke it instead).
    if (key.creatorId !== viewer.userId && key.createdVia !== 'cli') assertRole(viewer.role, 'manageAllKeys');
    const rule = keyRotation(viewer, key);
    if (rule === 'creator') throw errors.notKeyCreator();
    if (rule !== 'ok') assertRole(viewer.role, rule);
    const made = newApiKey();
    const rotated = await apiKeyRepository.rotate(
      deps.db,
      key.id,
      { prefix: made.prefix, hash: made.hash },
      body.grace_seconds * 1000,
      key.workspaceId,
    );
    if (!rotated) throw errors.conflict('The key is revoked: a revoked key cannot be rotated.');
    await publishKeyInvalidations(deps.redis, deps.config.queuePrefix, [key.id], warnUnpublished(locals(res).log));
    res.json({ key: keyObject(await withCreator(deps, key.workspaceId, key.id), viewer), secret: made.secret });
  };
}

/** POST …/keys/:id/revoke — every edge replica refuses the key within a second (the invalidation is published). */
export function revokeKey(deps: Deps) {
  return async (req: Request<{ id: string }>, res: Response) => {
    const key = await workspaceKey(deps, req, res);
    const viewer = viewerOf(res);
    if (!mayRevokeKey(viewer, key)) assertRole(viewer.role, 'manageAllKeys');
    await apiKeyRepository.revoke(deps.db, key.id, key.workspaceId);
    await publishKeyInvalidations(deps.redis, deps.config.queuePrefix, [key.id], warnUnpublished(locals(res).log));
    res.json({ key: keyObject(await withCreator(deps, key.workspaceId, key.id), viewer) });
  };
}
