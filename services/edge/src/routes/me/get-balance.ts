import { apiKeyRepository, toAmount, workspaceRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';

/**
 * GET /api/v1/me/balance — DESIGN.md §4: {object, workspace_id, amount, currency, key:{spend_cap, spent}}, read fresh.
 * `amount` counts back what edge replicas lease and have not spent (workspaceRepository.ownerBalance).
 */
export function getBalance(deps: Pick<EdgeDeps, 'db'>) {
  return async (_req: Request, res: Response) => {
    const { key, workspace } = authOf(res);
    const [unspent, current] = await Promise.all([
      workspaceRepository.ownerBalance(deps.db, workspace.id),
      apiKeyRepository.spending(deps.db, key.id, workspace.id),
    ]);
    if (unspent === null || !current) throw errors.notFound('The workspace no longer exists.');
    res.json({
      object: 'balance',
      workspace_id: workspace.id,
      amount: toAmount(unspent),
      currency: workspace.currency,
      key: { spend_cap: current.spendCap === null ? null : toAmount(current.spendCap), spent: toAmount(current.spent) },
    });
  };
}
