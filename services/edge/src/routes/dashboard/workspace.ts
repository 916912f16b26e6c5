import { permissionsOf } from '@gensvc/auth';
import { toAmount, workspaceRepository } from '@gensvc/db';
import type { Request, Response } from 'express';
import { memberOf } from '../../auth/session';
import type { EdgeDeps } from '../../deps';

/** GET /workspaces/:ws — the workspace, the person's role, and what that role allows (for the pages to show). */
export function getWorkspace(deps: Pick<EdgeDeps, 'db'>) {
  return async (_req: Request, res: Response) => {
    const { workspace: w, role } = memberOf(res);
    // What replicas lease and have not spent counts back in, as GET /api/v1/me/balance answers it.
    const balance = (await workspaceRepository.ownerBalance(deps.db, w.id)) ?? w.balance;
    res.json({
      workspace: { id: w.id, name: w.name, tier: w.tier, currency: w.currency, balance: toAmount(balance) },
      role,
      permissions: permissionsOf(role),
    });
  };
}
