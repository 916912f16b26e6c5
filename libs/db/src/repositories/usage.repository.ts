import { Prisma } from '../generated/prisma/client';
import type { DbClient } from '../client';

// Usage read from the ledger, the books' one truth: one query shape for the dashboard's chart and GET /api/v1/usage.
// Each call paid is one charge entry (its tokens on it); refunds lower the cost and count no call. Images and video
// seconds come from the task a charge settles: the image outputs it produced (an edit: no more than the n it was
// charged for), the duration of a video.

export type UsageDimension = 'day' | 'model' | 'key';

export interface UsageQuery {
  /** Inclusive. */
  from: Date;
  /** Exclusive. */
  to: Date;
  /** What the rows are split by (none: one row of totals, or none at all without usage). */
  groupBy: readonly UsageDimension[];
  /** Only this key's usage. */
  keyId?: string;
}

export interface UsageRow {
  /** YYYY-MM-DD (UTC) when split by day, else null. */
  day: string | null;
  /** The model id when split by model; null also for charges without a model. */
  model: string | null;
  /** The key id when split by key; null also for spend with no key (a key since deleted). */
  keyId: string | null;
  calls: number;
  inputTokens: number;
  outputTokens: number;
  images: number;
  videoSeconds: number;
  /** Micro-units, positive for money spent (charges net of refunds). */
  amount: bigint;
}

const DIMENSION_SQL: Record<UsageDimension, Prisma.Sql> = {
  day: Prisma.sql`to_char(date_trunc('day', l."createdAt"), 'YYYY-MM-DD')`,
  model: Prisma.sql`l.model`,
  key: Prisma.sql`l."apiKeyId"`,
};

interface RawRow {
  day: string | null;
  model: string | null;
  key_id: string | null;
  calls: number;
  input_tokens: string;
  output_tokens: string;
  images: string;
  video_seconds: string;
  amount: string;
}

export const usageRepository = {
  /** Usage in [from, to) split by `groupBy`, ordered by its dimensions. */
  async usage(db: DbClient, workspaceId: string, q: UsageQuery): Promise<UsageRow[]> {
    const column = (d: UsageDimension) => (q.groupBy.includes(d) ? DIMENSION_SQL[d] : Prisma.sql`NULL::text`);
    const groups = q.groupBy.map((d) => DIMENSION_SQL[d]);
    const grouping = groups.length
      ? Prisma.sql`GROUP BY ${Prisma.join(groups)} ORDER BY ${Prisma.join(groups)}`
      : Prisma.empty;
    const charge = Prisma.sql`l.kind = 'charge'`;
    const rows = await db.$queryRaw<RawRow[]>`
      SELECT ${column('day')} AS day, ${column('model')} AS model, ${column('key')} AS key_id,
             (count(*) FILTER (WHERE ${charge}))::int AS calls,
             coalesce(sum(l."inputTokens") FILTER (WHERE ${charge}), 0)::text AS input_tokens,
             coalesce(sum(l."outputTokens") FILTER (WHERE ${charge}), 0)::text AS output_tokens,
             coalesce(sum(LEAST(o.images, coalesce((t.input->>'n')::int, o.images))) FILTER (WHERE ${charge}), 0)
               ::text AS images,
             coalesce(sum(CASE WHEN o.videos > 0 THEN coalesce((t.input->>'duration_seconds')::int, 0) ELSE 0 END)
                        FILTER (WHERE ${charge}), 0)::text AS video_seconds,
             coalesce(-sum(l.amount), 0)::text AS amount
      FROM "LedgerEntry" l
      LEFT JOIN "Task" t ON t.id = l."taskId" AND t."workspaceId" = l."workspaceId"
      LEFT JOIN LATERAL (
        SELECT count(*) FILTER (WHERE e->>'kind' = 'image') AS images,
               count(*) FILTER (WHERE e->>'kind' = 'video') AS videos
        FROM jsonb_array_elements(CASE WHEN jsonb_typeof(t.output->'outputs') = 'array' THEN t.output->'outputs'
                                       ELSE '[]'::jsonb END) e
      ) o ON true
      WHERE l."workspaceId" = ${workspaceId} AND l.kind IN ('charge', 'refund')
        AND l."createdAt" >= ${q.from}::timestamp(3) AND l."createdAt" < ${q.to}::timestamp(3)
        ${q.keyId !== undefined ? Prisma.sql`AND l."apiKeyId" = ${q.keyId}` : Prisma.empty}
      ${grouping}`;
    return rows
      .filter((r) => groups.length > 0 || r.calls > 0 || r.amount !== '0')
      .map((r) => ({
        day: r.day,
        model: r.model,
        keyId: r.key_id,
        calls: r.calls,
        inputTokens: Number(r.input_tokens),
        outputTokens: Number(r.output_tokens),
        images: Number(r.images),
        videoSeconds: Number(r.video_seconds),
        amount: BigInt(r.amount),
      }));
  },
};
