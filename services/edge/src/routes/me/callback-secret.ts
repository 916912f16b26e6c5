// The workspace's callback signing secret (DESIGN.md §4): read with GET /api/v1/me/callback-secret, made on first
// read; replaced with POST /api/v1/me/callback-secret/rotate, whose overlap POST …/retire-previous ends early. Scope
// tasks.write: whoever may create tasks with callbacks may verify them.
import { callbackRepository, type CallbackSecretView } from '@gensvc/db';
import { newCallbackSecret } from '@gensvc/webhooks';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';

const secretObject = (s: CallbackSecretView) => ({
  object: 'callback_secret' as const,
  secret: s.secret,
  previous_secret_expires_at: s.previousExpiresAt?.toISOString() ?? null,
  rotated_at: s.rotatedAt?.toISOString() ?? null,
  created_at: s.createdAt.toISOString(),
});

/** GET /api/v1/me/callback-secret */
export function getCallbackSecret(deps: Pick<EdgeDeps, 'db' | 'secrets'>) {
  return async (_req: Request, res: Response) => {
    const { workspace } = authOf(res);
    res.json(secretObject(await callbackRepository.secret(deps.db, deps.secrets, workspace.id, newCallbackSecret)));
  };
}

/**
 * POST /api/v1/me/callback-secret/rotate — answers the new secret. The old one keeps signing beside it for 24 h
 * (both v1= values in SVC-Signature, until previous_secret_expires_at), so receivers can switch without losing a
 * delivery.
 */
export function rotateCallbackSecret(deps: Pick<EdgeDeps, 'db' | 'secrets'>) {
  return async (_req: Request, res: Response) => {
    const { workspace } = authOf(res);
    res.json(secretObject(await callbackRepository.rotate(deps.db, deps.secrets, workspace.id, newCallbackSecret)));
  };
}

/**
 * POST /api/v1/me/callback-secret/retire-previous — ends the last rotation's overlap at once (a leaked old secret,
 * receivers already switched): from here deliveries are signed with the current secret only. Answers the secret as
 * GET does; with nothing left to retire it changes nothing.
 */
export function retirePreviousCallbackSecret(deps: Pick<EdgeDeps, 'db' | 'secrets'>) {
  return async (_req: Request, res: Response) => {
    const { workspace } = authOf(res);
    const s = await callbackRepository.retirePrevious(deps.db, deps.secrets, workspace.id, newCallbackSecret);
    res.json(secretObject(s));
  };
}
