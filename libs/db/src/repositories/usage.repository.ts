import type { DbClient } from '../client';

// Spend read from the ledger, the books' one truth: charges net of refunds, per UTC day and per model or key.

export type UsageSplit = 'model' | 'key';

export interface DailySpend {
  /** YYYY-MM-DD (UTC). */
  day: string;
  /** The model id or the key id; null for spend with neither (a key since deleted, a charge without a model). */
  group: string | null;
  /** Micro-units, positive for money spent. */
  amount: bigint;
}

export const usageRepository = {
  /** Spend per UTC day in [from, to), split by model or key. */
  async dailySpend(db: DbClient, workspaceId: string, from: Date, to: Date, split: UsageSplit): Promise<DailySpend[]> {
    const rows =
      split === 'model'
        ? await db.$queryRaw<{ day: string; group: string | null; amount: string }[]>`
            SELECT to_char(date_trunc('day', "createdAt"), 'YYYY-MM-DD') AS day, model AS "group", (-SUM(amount))::text AS amount
            FROM "LedgerEntry"
            WHERE "workspaceId" = ${workspaceId} AND kind IN ('charge', 'refund') AND "createdAt" >= ${from}::timestamp(3) AND "createdAt" < ${to}::timestamp(3)
            GROUP BY 1, 2 ORDER BY 1, 2`
        : await db.$queryRaw<{ day: string; group: string | null; amount: string }[]>`
            SELECT to_char(date_trunc('day', "createdAt"), 'YYYY-MM-DD') AS day, "apiKeyId" AS "group", (-SUM(amount))::text AS amount
            FROM "LedgerEntry"
            WHERE "workspaceId" = ${workspaceId} AND kind IN ('charge', 'refund') AND "createdAt" >= ${from}::timestamp(3) AND "createdAt" < ${to}::timestamp(3)
            GROUP BY 1, 2 ORDER BY 1, 2`;
    return rows.map((r) => ({ day: r.day, group: r.group, amount: BigInt(r.amount) }));
  },
};
