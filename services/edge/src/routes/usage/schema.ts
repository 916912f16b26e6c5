// GET /api/v1/usage: the query and the answer, as zod schemas (the OpenAPI document is generated from them).
import { DAY_MS, idPattern, plusDays } from '@gensvc/db';
import { z } from 'zod';

const MAX_USAGE_DAYS = 366;

/**
 * A day (YYYY-MM-DD, UTC) or an ISO 8601 time with its offset. A day given as `to` means through its end; a time
 * is exact. Out: the instant the range starts or ends at (from inclusive, to exclusive).
 */
const instant = (end: boolean) =>
  z.string().transform((v, ctx) => {
    const day = /^\d{4}-\d{2}-\d{2}$/.test(v);
    const at = new Date(day ? `${v}T00:00:00.000Z` : v);
    const wellFormed = day
      ? !Number.isNaN(at.getTime()) && at.toISOString().slice(0, 10) === v
      : z.iso.datetime({ offset: true }).safeParse(v).success && !Number.isNaN(at.getTime());
    if (!wellFormed) {
      ctx.addIssue({
        code: 'custom',
        message: 'must be a day (YYYY-MM-DD) or an ISO 8601 time with its offset (2026-11-25T10:00:00Z)',
      });
      return z.NEVER;
    }
    return day && end ? plusDays(at, 1) : at;
  });

export const USAGE_QUERY = z
  .strictObject({
    from: instant(false)
      .optional()
      .describe('start, inclusive: a day (its 00:00 UTC) or an ISO 8601 time; default 30 days before `to`'),
    to: instant(true)
      .optional()
      .describe('end: a day (through its end, UTC) or an ISO 8601 time (exclusive); default now'),
    group_by: z.enum(['day', 'model', 'key'], { error: 'must be day, model or key' }).default('day'),
    key_id: z.string().regex(idPattern('key'), 'must be an API key id (key_...)').optional(),
  })
  .transform((q, ctx) => {
    const to = q.to ?? new Date();
    const from = q.from ?? plusDays(to, -30);
    if (to.getTime() < from.getTime()) {
      ctx.addIssue({ code: 'custom', path: ['to'], message: 'must not be before from' });
      return z.NEVER;
    }
    if (to.getTime() - from.getTime() > MAX_USAGE_DAYS * DAY_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['from'],
        message:
          `the range from "from" to "to" is more than ${MAX_USAGE_DAYS} ` +
          `days: ask for at most ${MAX_USAGE_DAYS} days at a time`,
      });
      return z.NEVER;
    }
    return { ...q, from, to };
  });

const USAGE_FIGURES = {
  calls: z.number().int().describe('paid calls charged'),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  images: z.number().int().describe('images generated and charged'),
  video_seconds: z.number().int().describe('seconds of video generated and charged'),
  cost: z.number().describe('charges net of refunds, in the workspace currency'),
};

const USAGE_ROW = z.object({
  day: z.string().optional().describe('YYYY-MM-DD (UTC), with group_by=day'),
  model: z.string().nullable().optional().describe('with group_by=model; null for charges without a model'),
  key_id: z.string().nullable().optional().describe('with group_by=key; null for a key since deleted'),
  ...USAGE_FIGURES,
});

export const USAGE_RESPONSE = z.object({
  object: z.literal('usage'),
  currency: z.string(),
  from: z.string().describe('ISO 8601, inclusive'),
  to: z.string().describe('ISO 8601, exclusive'),
  group_by: z.enum(['day', 'model', 'key']),
  key_id: z.string().nullable(),
  data: z.array(USAGE_ROW),
  totals: z.object(USAGE_FIGURES).describe('the sums of the rows, equal to the ledger over the range'),
});
