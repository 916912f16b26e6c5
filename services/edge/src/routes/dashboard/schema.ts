// What the dashboard's JSON routes accept (API.md beside this file). Names, emails and passwords are bounded, so a
// 10 KB name is a 400 naming the field, never a row.
import { SCOPES } from '@gensvc/auth';
import { MODEL_ID, parseAmount } from '@gensvc/db';
import { z } from 'zod';
import { FILE_ID } from '../files/schema';
import { TASK_ID } from '../tasks/schema';

const email = z.string().trim().toLowerCase().max(254).pipe(z.email('must be an email address'));
const password = z.string().min(1, 'is required').max(1024);
const newPassword = z.string().min(10, 'must be at least 10 characters').max(1024);
const ROLE = z.enum(['owner', 'admin', 'member']);

export const SIGN_IN = z.strictObject({ email: z.string().trim().min(1, 'is required').max(254), password });
export const CHANGE_PASSWORD = z.strictObject({ current_password: password, new_password: newPassword });
export const ACCEPT_INVITATION = z.strictObject({
  password: newPassword.optional(),
  name: z.string().trim().min(1).max(100).optional(),
});

export const ADD_MEMBER = z.strictObject({ email, role: ROLE });
export const FORGOT_PASSWORD = z.strictObject({ email });
export const RESET_PASSWORD = z.strictObject({ password: newPassword });
export const CHANGE_ROLE = z.strictObject({ role: ROLE });

/** A money amount in currency units, as a JSON number with at most 6 decimals; micro-units out. */
const amount = z
  .number()
  .positive('must be more than 0')
  .max(1e9)
  .transform((n, ctx) => {
    const micros = parseAmount(n.toFixed(6).replace(/\.?0+$/, ''));
    if (micros === null || Math.abs(Number(micros) / 1e6 - n) > 1e-9) {
      ctx.addIssue({ code: 'custom', message: 'must have at most 6 decimals' });
      return z.NEVER;
    }
    return micros;
  });

export const CREATE_KEY = z.strictObject({
  name: z.string().trim().min(1, 'is required').max(100),
  scopes: z
    .array(z.enum(SCOPES))
    .min(1, 'must name at least one scope')
    .max(SCOPES.length)
    .refine((s) => new Set(s).size === s.length, 'must not repeat a scope'),
  spend_cap: amount.nullable().optional(),
  /** The only models the key may use; empty or absent: all. */
  models: z
    .array(z.string().regex(MODEL_ID, 'must be model ids, <provider>/<model>'))
    .max(500)
    .refine((m) => new Set(m).size === m.length, 'must not repeat a model')
    .optional(),
  /** The key's own paid calls per minute, beside the workspace's. */
  rpm: z.number().int('must be a whole number').min(1, 'must be at least 1').max(1_000_000).nullable().optional(),
  expires_at: z.iso
    .datetime({ offset: true, message: 'must be an ISO 8601 time' })
    .transform((s) => new Date(s))
    .refine((d) => d.getTime() > Date.now(), 'must be in the future')
    .nullable()
    .optional(),
});

export const ROTATE_KEY = z.strictObject({
  grace_seconds: z
    .number()
    .int()
    .min(0)
    .max(7 * 24 * 3600),
});

const isoDay = z.iso.date('must be a date (YYYY-MM-DD)').transform((s) => new Date(`${s}T00:00:00.000Z`));

export const OUTPUTS_QUERY = z.strictObject({
  source: z.enum(['generated', 'upload']).default('generated'),
  kind: z.enum(['image', 'video', 'audio', 'document']).optional(),
  model: z.string().min(1).max(200).optional(),
  from: isoDay.optional(),
  /** Inclusive: the whole day. */
  to: isoDay.optional(),
  after: z.string().regex(FILE_ID, 'must be a file id (file_...)').optional(),
  limit: z.coerce.number().int().min(1).max(100).default(24),
});

export const PROJECT_FILES_QUERY = OUTPUTS_QUERY.pick({ after: true, limit: true });

export const TASKS_QUERY = z.strictObject({
  status: z.enum(['queued', 'running', 'completed', 'failed', 'canceled']).optional(),
  after: z.string().regex(TASK_ID, 'must be a task id (tsk_...)').optional(),
  limit: z.coerce.number().int().min(1).max(100).default(25),
});

export const USAGE_QUERY = z.strictObject({
  days: z.coerce.number().int().min(1).max(90).default(30),
  split: z.enum(['model', 'key']).default('model'),
});
