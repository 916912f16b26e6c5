import { permissionsOf } from '@gensvc/auth';
import { toAmount } from '@gensvc/db';
import type { Request, Response } from 'express';
import { memberOf } from '../../auth/session';

/** GET /workspaces/:ws — the workspace, the person's role, and what that role allows (for the pages to show). */
export function getWorkspace() {
  return async (_req: Request, res: Response) => {
    const { workspace: w, role } = memberOf(res);
    res.json({
      workspace: { id: w.id, name: w.name, tier: w.tier, currency: w.currency, balance: toAmount(w.balance) },
      role,
      permissions: permissionsOf(role),
    });
  };
}
