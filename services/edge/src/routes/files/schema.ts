import { errors } from '@gensvc/errors';
import { z } from 'zod';
import { parseFields } from '../../http/parse-body';

/** Values of the upload's purpose field (spec §4.4). */
export const UPLOAD_PURPOSES = ['vision', 'input'] as const;

/** Upload size limit (spec §8): exactly 25 MiB is allowed. */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;

/** Ids made by newId('proj'); anything else names no project. */
export const PROJECT_ID = /^proj_[0-9A-Za-z]{22}$/;

/** Ids made by newId('file'); anything else names no file. */
export const FILE_ID = /^file_[0-9A-Za-z]{22}$/;

const LIMIT_MESSAGE = 'must be an integer from 1 to 100';

/**
 * The query of a list route (DESIGN.md §4, the files list; the tasks list takes the same): `limit` 1..100 (default
 * 20), `after` the last id of the previous page (an id `after` matches), `order` desc (default) or asc, and the
 * route's own filters.
 */
export function listQuery<Filters extends z.ZodRawShape>(after: { id: RegExp; message: string }, filters: Filters) {
  return z.object({
    limit: z
      .string()
      .regex(/^\d{1,3}$/, LIMIT_MESSAGE)
      .transform(Number)
      .refine((n) => n >= 1 && n <= 100, LIMIT_MESSAGE)
      .optional()
      .transform((n) => n ?? 20),
    after: z.string().regex(after.id, after.message).optional(),
    order: z
      .enum(['asc', 'desc'], { message: 'must be "asc" or "desc"' })
      .optional()
      .transform((o) => o ?? 'desc'),
    ...filters,
  });
}

/** The query read with a listQuery schema, or a 400 naming the first bad parameter; each may be given once. */
export function readListQuery<S extends z.ZodObject>(schema: S, query: unknown): z.output<S> {
  const q = (query ?? {}) as Record<string, unknown>;
  const repeated = Object.keys(schema.shape).filter((k) => Array.isArray(q[k]));
  if (repeated.length)
    throw errors.invalidRequest(`Query parameters may be given once: ${repeated.join(', ')}.`, repeated[0]);
  return parseFields(schema, q);
}

export const listFilesQuery = listQuery(
  { id: FILE_ID, message: 'must be a file id (file_...)' },
  {
    purpose: z.string().min(1, 'must not be empty').max(64, 'is at most 64 characters').optional(),
    source: z.enum(['upload', 'generated'], { message: 'must be "upload" or "generated"' }).optional(),
    project_id: z.string().regex(PROJECT_ID, 'must be a project id (proj_...)').optional(),
  },
);

export type ListFilesQuery = z.output<typeof listFilesQuery>;

/** GET /v1/files's query, or a 400 naming the first bad parameter. */
export const parseListQuery = (query: unknown): ListFilesQuery => readListQuery(listFilesQuery, query);
