import { plusDays, toAmount, usageRepository, workspaceRepository, type UsageRow as LedgerUsage } from '@gensvc/db';
import { z } from 'zod';
import { flagValues, UsageError } from '../args';
import type { Command } from '../command';
import { notFound } from '../failures';
import { text } from '../flag-values';
import { table } from '../output';

const DEFAULT_DAYS = 30;

/** YYYY-MM-DD (a UTC day) → its start; anything else is a usage error. */
const day = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a day, YYYY-MM-DD (UTC)')
  .transform((v, ctx) => {
    const date = new Date(`${v}T00:00:00.000Z`);
    if (Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== v) {
      ctx.addIssue({ code: 'custom', message: `"${v}" is not a calendar day` });
      return z.NEVER;
    }
    return date;
  });

type GroupBy = 'day' | 'model' | 'key';

interface UsageRow {
  [key: string]: string | number | null;
  amount: number;
}

/** Spend (charges net of refunds, from the ledger) per day, per model or per key over the period. */
function groupSpend(rows: readonly LedgerUsage[], by: GroupBy): UsageRow[] {
  const column = by === 'day' ? 'day' : by === 'model' ? 'model' : 'key_id';
  const value = (r: LedgerUsage) => (by === 'day' ? r.day : by === 'model' ? r.model : r.keyId);
  const out = rows.map((r) => ({ [column]: value(r), amount: toAmount(r.amount) }) as UsageRow);
  return by === 'day' ? out : out.sort((a, b) => b.amount - a.amount);
}

const csvCell = (v: string | number | null) => {
  const s = v === null ? '' : String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

function toCsv(rows: readonly UsageRow[], columns: readonly string[]): string {
  return [columns.join(','), ...rows.map((r) => columns.map((c) => csvCell(r[c] ?? null)).join(','))].join('\n');
}

const report: Command = {
  words: ['usage', 'report'],
  summary: "A workspace's spend from the ledger (charges net of refunds), per UTC day, model or key.",
  flags: [
    { name: 'workspace', value: 'WS', required: true, help: 'workspace id' },
    { name: 'from', value: 'YYYY-MM-DD', help: `first day, UTC (default ${DEFAULT_DAYS} days before --to)` },
    { name: 'to', value: 'YYYY-MM-DD', help: 'last day, included (default today, UTC)' },
    { name: 'group-by', value: 'day|model|key', help: 'one row per day (default), model or key' },
    { name: 'csv', help: 'print CSV instead of a table' },
  ],
  prepare(flags, { json }) {
    if (json && flags.csv) throw new UsageError('--csv and --json each ask for the whole answer: give one.', report);
    const input = flagValues(
      z.object({
        workspace: text(),
        from: day.optional(),
        to: day.optional(),
        'group-by': z.enum(['day', 'model', 'key'], { error: 'must be day, model or key' }).default('day'),
        csv: z.literal(true).optional(),
      }),
      flags,
      report,
    );
    const today = new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00.000Z`);
    const last = input.to ?? today;
    const first = input.from ?? plusDays(last, -(DEFAULT_DAYS - 1));
    if (first > last) throw new UsageError('--from is after --to.', report);
    const end = plusDays(last, 1); // --to is included: the period ends at the start of the next day
    const by = input['group-by'];
    return async ({ db, out }) => {
      const workspace = await workspaceRepository.get(db, input.workspace);
      if (!workspace) throw notFound('workspace', input.workspace);
      const spend = await usageRepository.usage(db, input.workspace, { from: first, to: end, groupBy: [by] });
      const rows = groupSpend(spend, by);
      const total = toAmount(spend.reduce((sum, r) => sum + r.amount, 0n));
      const columns = [by === 'key' ? 'key_id' : by, 'amount'];
      const data = {
        object: 'usage_report',
        workspace_id: input.workspace,
        from: first.toISOString().slice(0, 10),
        to: last.toISOString().slice(0, 10),
        group_by: by,
        currency: workspace.currency,
        total,
        data: rows,
      };
      out.result(data, () =>
        input.csv
          ? toCsv(rows, columns)
          : `${table(rows, columns)}\ntotal ${total} ${workspace.currency}, ${data.from} to ${data.to}`,
      );
    };
  },
};

export const usageCommands: Command[] = [report];
