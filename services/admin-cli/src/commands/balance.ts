import { toAmount, workspaceRepository } from '@gensvc/db';
import { z } from 'zod';
import { flagValues } from '../args';
import type { Command } from '../command';
import { notFound } from '../failures';
import { amount, text } from '../flag-values';
import { fields } from '../output';

const topup: Command = {
  words: ['balance', 'topup'],
  summary: "Add to a workspace's balance (one ledger entry of kind topup).",
  flags: [
    { name: 'workspace', value: 'WS', required: true, help: 'workspace id' },
    { name: 'amount', value: 'USD', required: true, help: 'amount to add, e.g. 25 or 10.5' },
    { name: 'note', value: 'TEXT', help: 'note kept on the ledger entry' },
  ],
  prepare(flags) {
    const input = flagValues(
      z.object({ workspace: text(), amount: amount({ positive: true }), note: text(500).optional() }),
      flags,
      topup,
    );
    return async ({ db, out }) => {
      const workspace = await workspaceRepository.get(db, input.workspace);
      if (!workspace) throw notFound('workspace', input.workspace);
      const balance = await workspaceRepository.topUp(db, workspace.id, input.amount, input.note ?? 'admin top-up');
      if (balance === null) throw notFound('workspace', input.workspace);
      const view = {
        id: workspace.id,
        object: 'balance',
        workspace_id: workspace.id,
        amount: toAmount(balance),
        added: toAmount(input.amount),
        currency: workspace.currency,
      };
      out.result(view, () => fields(view));
    };
  },
};

export const balanceCommands: Command[] = [topup];
