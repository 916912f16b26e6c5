import { Tier, toAmount, type WorkspaceModel, workspaceRepository } from '@gensvc/db';
import { z } from 'zod';
import { flagValues } from '../args';
import type { Command } from '../command';
import { amount, choice, choices, integer, text } from '../flag-values';
import { fields, iso, table, type JsonObject } from '../output';

/** workspaceRepository.create types the balance after its opening top-up as nullable (null: no such workspace). */
type WorkspaceRow = Omit<WorkspaceModel, 'balance'> & { balance: bigint | null };

export function workspaceView(w: WorkspaceRow) {
  return {
    id: w.id,
    name: w.name,
    tier: w.tier,
    balance: toAmount(w.balance ?? 0n),
    currency: w.currency,
    rpm: w.rpm,
    upload_rpm: w.uploadRpm,
    retention_days: w.retentionDays,
    created_at: iso(w.createdAt),
  } satisfies JsonObject;
}

const create: Command = {
  words: ['workspace', 'create'],
  summary: 'Create a workspace, optionally with an opening balance (booked in the ledger as a top-up).',
  flags: [
    { name: 'name', value: 'NAME', required: true, help: 'display name' },
    { name: 'tier', value: choices(Tier), required: true, help: 'pricing tier' },
    { name: 'balance', value: 'USD', help: 'opening balance, e.g. 10.5' },
    { name: 'retention-days', value: 'D', help: 'days public copies of outputs are kept (enterprise tier only)' },
  ],
  prepare(flags) {
    const input = flagValues(
      z
        .object({
          name: text(),
          tier: choice(Tier),
          balance: amount().optional(),
          'retention-days': integer(1, 3650).optional(),
        })
        .refine((v) => v['retention-days'] === undefined || v.tier === 'enterprise', {
          message: 'applies to the enterprise tier only (other tiers keep outputs for their fixed period)',
          path: ['retention-days'],
        }),
      flags,
      create,
    );
    return async ({ db, out }) => {
      const workspace = await workspaceRepository.create(db, {
        name: input.name,
        tier: input.tier,
        balance: input.balance,
        retentionDays: input['retention-days'] ?? null,
      });
      const view = workspaceView(workspace);
      out.result(view, () => fields(view));
    };
  },
};

const list: Command = {
  words: ['workspace', 'list'],
  summary: 'List all workspaces, oldest first.',
  flags: [],
  prepare() {
    return async ({ db, out }) => {
      const data = (await workspaceRepository.list(db)).map(workspaceView);
      out.result({ object: 'list', data }, () => table(data, ['id', 'name', 'tier', 'balance', 'currency', 'created_at']));
    };
  },
};

export const workspaceCommands: Command[] = [create, list];
