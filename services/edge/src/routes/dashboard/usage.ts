// Usage and balance: spend per UTC day for the last N days from the ledger, split by model or key, and each key's
// spend against its cap.
import { apiKeyRepository, DAY_MS, toAmount, usageRepository, workspaceRepository } from '@gensvc/db';
import type { Request, Response } from 'express';
import { memberOf } from '../../auth/session';
import type { EdgeDeps } from '../../deps';
import { parseFields } from '../../http/parse-body';
import { USAGE_QUERY } from './schema';

type Deps = Pick<EdgeDeps, 'db'>;

/** GET …/usage?days=&split= */
export function getUsage(deps: Deps) {
  return async (req: Request, res: Response) => {
    const q = parseFields(USAGE_QUERY, req.query);
    const { workspace } = memberOf(res);
    const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
    const from = new Date(today - (q.days - 1) * DAY_MS);
    const to = new Date(today + DAY_MS);
    const days = Array.from({ length: q.days }, (_, i) =>
      new Date(from.getTime() + i * DAY_MS).toISOString().slice(0, 10),
    );
    const [rows, keys, unspent] = await Promise.all([
      usageRepository.usage(deps.db, workspace.id, { from, to, groupBy: ['day', q.split] }),
      apiKeyRepository.listWithCreators(deps.db, workspace.id),
      workspaceRepository.ownerBalance(deps.db, workspace.id),
    ]);
    const keyName = new Map(keys.map((k) => [k.id, `${k.name} (${k.prefix}…)`]));
    const series = new Map<string, { id: string | null; label: string; micros: bigint[] }>();
    for (const r of rows) {
      const group = q.split === 'model' ? r.model : r.keyId;
      const id = group ?? '';
      const label =
        group === null
          ? q.split === 'model'
            ? 'other'
            : 'no key'
          : q.split === 'key'
            ? (keyName.get(group) ?? group)
            : group;
      const s = series.get(id) ?? { id: group, label, micros: days.map(() => 0n) };
      s.micros[days.indexOf(r.day!)]! += r.amount;
      series.set(id, s);
    }
    const total = rows.reduce((sum, r) => sum + r.amount, 0n);
    res.json({
      currency: workspace.currency,
      balance: toAmount(unspent ?? workspace.balance),
      days,
      series: [...series.values()].map((s) => ({ id: s.id, label: s.label, amounts: s.micros.map(toAmount) })),
      total: toAmount(total),
      keys: keys.map((k) => ({
        id: k.id,
        name: k.name,
        prefix: k.prefix,
        spent: toAmount(k.spent),
        spend_cap: k.spendCap === null ? null : toAmount(k.spendCap),
      })),
    });
  };
}
