import { errors } from '@gensvc/errors';
import { z } from 'zod';
import { parseFields } from '../../http/parse-body';

/** Values of the upload's purpose field (spec §4.4). */
export const UPLOAD_PURPOSES = ['vision', 'input'] as const;

/** Upload size limit (spec §8): exactly 25 MiB is allowed. */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;

/** Ids made by newId('file'); anything else names no file. */
export const FILE_ID = /^file_[0-9A-Za-z]{22}$/;

const LIMIT_MESSAGE = 'must be an integer from 1 to 100';

export const listFilesQuery = z.object({
  limit: z
    .string()
    .regex(/^\d{1,3}$/, LIMIT_MESSAGE)
    .transform(Number)
    .refine((n) => n >= 1 && n <= 100, LIMIT_MESSAGE)
    .optional()
    .transform((n) => n ?? 20),
  after: z.string().regex(FILE_ID, 'must be a file id (file_...)').optional(),
  order: z.enum(['asc', 'desc'], { message: 'must be "asc" or "desc"' }).optional().transform((o) => o ?? 'desc'),
  purpose: z.string().min(1, 'must not be empty').max(64, 'is at most 64 characters').optional(),
  source: z.enum(['upload', 'generated'], { message: 'must be "upload" or "generated"' }).optional(),
});

export type ListFilesQuery = z.output<typeof listFilesQuery>;

/** The query, or a 400 naming the first bad parameter. */
export function parseListQuery(query: unknown): ListFilesQuery {
  const q = (query ?? {}) as Record<string, unknown>;
  const repeated = Object.keys(listFilesQuery.shape).filter((k) => Array.isArray(q[k]));
  if (repeated.length) throw errors.invalidRequest(`Query parameters may be given once: ${repeated.join(', ')}.`, repeated[0]);
  return parseFields(listFilesQuery, q);
}
