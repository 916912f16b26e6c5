import { apiKeyRepository, Tier, toAmount, type WorkspaceModel, workspaceRepository } from '@gensvc/db';
import { z } from 'zod';
import { flagValues, UsageError } from '../args';
import type { Command } from '../command';
import { conflict, notFound } from '../failures';
import { invalidate } from './key';
import { amount, choice, choices, integer, text } from '../flag-values';
import { fields, iso, table, type JsonObject } from '../output';

/** workspaceRepository.create types the balance after its opening top-up as nullable (null: no such workspace). */
type WorkspaceRow = Omit<WorkspaceModel, 'balance'> & { balance: bigint | null };

function workspaceView(w: WorkspaceRow) {
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
      out.result({ object: 'list', data }, () =>
        table(data, ['id', 'name', 'tier', 'balance', 'currency', 'created_at']),
      );
    };
  },
};

const update: Command = {
  words: ['workspace', 'update'],
  summary: "Change a workspace's name, tier, rate limits or retention (the balance moves only through balance topup).",
  flags: [
    { name: 'id', value: 'WS', required: true, help: 'workspace id' },
    { name: 'name', value: 'NAME', help: 'display name' },
    { name: 'tier', value: choices(Tier), help: 'pricing tier' },
    { name: 'rpm', value: 'N', help: 'paid requests per minute' },
    { name: 'upload-rpm', value: 'N', help: 'uploads per minute' },
    { name: 'retention-days', value: 'D', help: 'days public copies of outputs are kept (enterprise tier only)' },
  ],
  prepare(flags) {
    const input = flagValues(
      z.object({
        id: text(),
        name: text().optional(),
        tier: choice(Tier).optional(),
        rpm: integer(1, 1_000_000).optional(),
        'upload-rpm': integer(1, 1_000_000).optional(),
        'retention-days': integer(1, 3650).optional(),
      }),
      flags,
      update,
    );
    if (Object.keys(input).length === 1)
      throw new UsageError(
        'Nothing to change: give at least one of --name, --tier, --rpm, --upload-rpm, --retention-days.',
        update,
      );
    return async (deps) => {
      const { db, out } = deps;
      const current = await workspaceRepository.get(db, input.id);
      if (!current) throw notFound('workspace', input.id);
      const tier = input.tier ?? current.tier;
      if (input['retention-days'] !== undefined && tier !== 'enterprise') {
        throw conflict(
          'retention_not_enterprise',
          '--retention-days applies to the enterprise tier only (other tiers keep outputs for their fixed period).',
        );
      }
      const updated = await workspaceRepository.update(db, input.id, {
        ...(input.name !== undefined && { name: input.name }),
        ...(input.tier !== undefined && { tier: input.tier }),
        ...(input.rpm !== undefined && { rpm: input.rpm }),
        ...(input['upload-rpm'] !== undefined && { uploadRpm: input['upload-rpm'] }),
        ...(input['retention-days'] !== undefined && { retentionDays: input['retention-days'] }),
        // Leaving the enterprise tier drops its override: the new tier's fixed period applies.
        ...(tier !== 'enterprise' && current.retentionDays !== null && { retentionDays: null }),
      });
      if (!updated) throw notFound('workspace', input.id);
      // Edges cache each key's look-up with its workspace (tier, limits): drop them so the change applies at once.
      for (const key of await apiKeyRepository.listForWorkspace(db, input.id)) await invalidate(deps, key.id);
      const view = workspaceView(updated);
      out.result(view, () => fields(view));
    };
  },
};

export const workspaceCommands: Command[] = [create, list, update];
