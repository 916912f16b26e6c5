import { apiKeyRepository, toAmount, workspaceRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';

/** GET /api/v1/me/balance — DESIGN.md §4: {object, workspace_id, amount, currency, key:{spend_cap, spent}}, read fresh. */
export function getBalance(deps: Pick<EdgeDeps, 'db'>) {
  return async (_req: Request, res: Response) => {
    const { key, workspace } = authOf(res);
    const [ws, current] = await Promise.all([
      workspaceRepository.get(deps.db, workspace.id),
      apiKeyRepository.spending(deps.db, key.id, workspace.id),
    ]);
    if (!ws || !current) throw errors.notFound('The workspace no longer exists.');
    res.json({
      object: 'balance',
      workspace_id: ws.id,
      amount: toAmount(ws.balance),
      currency: ws.currency,
      key: { spend_cap: current.spendCap === null ? null : toAmount(current.spendCap), spent: toAmount(current.spent) },
    });
  };
}
