import { toAmount, usageRepository, type UsageRow } from '@gensvc/db';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { parseFields } from '../../http/parse-body';
import { USAGE_QUERY } from './schema';

type Deps = Pick<EdgeDeps, 'db'>;

const figures = (r: Omit<UsageRow, 'day' | 'model' | 'keyId'>) => ({
  calls: r.calls,
  input_tokens: r.inputTokens,
  output_tokens: r.outputTokens,
  images: r.images,
  video_seconds: r.videoSeconds,
  cost: toAmount(r.amount),
});

/**
 * GET /api/v1/usage?from=&to=&group_by=day|model|key&key_id= — the workspace's usage from the ledger, in its
 * currency. Totals are summed from the rows in micro-units and converted once, so they equal the ledger exactly.
 */
export function getUsage(deps: Deps) {
  return async (req: Request, res: Response) => {
    const q = parseFields(USAGE_QUERY, req.query);
    const { workspace } = authOf(res);
    const rows = await usageRepository.usage(deps.db, workspace.id, {
      from: q.from,
      to: q.to,
      groupBy: [q.group_by],
      keyId: q.key_id,
    });
    const totals = rows.reduce(
      (t, r) => ({
        calls: t.calls + r.calls,
        inputTokens: t.inputTokens + r.inputTokens,
        outputTokens: t.outputTokens + r.outputTokens,
        images: t.images + r.images,
        videoSeconds: t.videoSeconds + r.videoSeconds,
        amount: t.amount + r.amount,
      }),
      { calls: 0, inputTokens: 0, outputTokens: 0, images: 0, videoSeconds: 0, amount: 0n },
    );
    const group = (r: UsageRow) =>
      q.group_by === 'day' ? { day: r.day } : q.group_by === 'model' ? { model: r.model } : { key_id: r.keyId };
    res.json({
      object: 'usage',
      currency: workspace.currency,
      from: q.from.toISOString(),
      to: q.to.toISOString(),
      group_by: q.group_by,
      key_id: q.key_id ?? null,
      data: rows.map((r) => ({ ...group(r), ...figures(r) })),
      totals: figures(totals),
    });
  };
}
