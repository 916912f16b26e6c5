// zod types for the values of command-line flags: text in, parsed values out. A failure is a usage error (exit 2).
import { parseDuration } from '@gensvc/config';
import { parseAmount } from '@gensvc/db';
import { z } from 'zod';

/** A currency amount such as 10 or 10.5 (at most 6 decimals) → micro-units. */
export const amount = (options: { positive?: boolean } = {}) =>
  z.string().transform((text, ctx) => {
    const micros = parseAmount(text);
    if (micros === null) {
      ctx.addIssue({
        code: 'custom',
        message: `"${text}" is not an amount (a decimal number such as 10 or 10.5, at most 6 decimals)`,
      });
      return z.NEVER;
    }
    if (options.positive && micros === 0n) {
      ctx.addIssue({ code: 'custom', message: 'must be greater than 0' });
      return z.NEVER;
    }
    return micros;
  });

/** "30s", "24h", "30d", a bare number of seconds → milliseconds. */
export const duration = (options: { allowZero?: boolean } = {}) =>
  z.string().transform((text, ctx) => {
    const ms = parseDuration(text);
    if (ms === null || (ms === 0 && !options.allowZero)) {
      ctx.addIssue({
        code: 'custom',
        message: `"${text}" is not a ${options.allowZero ? '' : 'positive '}duration such as 30m, 24h or 30d`,
      });
      return z.NEVER;
    }
    return ms;
  });

export const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

/** A comma-separated list, trimmed, without empty entries or repeats; at least one entry. */
export const list = z
  .string()
  .transform((text) => [
    ...new Set(
      text
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ])
  .refine((items) => items.length > 0, 'must name at least one entry');

/** One value of an enum of the data model (Tier, Role, ChannelKind, ModelKind from @gensvc/db). */
export const choice = <const E extends Record<string, string>>(values: E) =>
  z.enum(values, { error: (issue) => `"${String(issue.input)}" is not one of ${Object.values(values).join(', ')}` });

/** The enum's values as a usage hint: `free|payg|team|enterprise`. */
export const choices = (values: Record<string, string>) => Object.values(values).join('|');

/** A switch is `true` when given; absent otherwise. */
export const flagSwitch = z
  .literal(true)
  .optional()
  .transform((v) => v === true);

export const text = (max = 200) =>
  z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);

export const httpUrl = z.string().refine((value) => {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}, 'must be an http(s) URL without user:password');
