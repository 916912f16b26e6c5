import { MAX_PROJECT_NAME_LENGTH } from '@gensvc/db';
import { z } from 'zod';
import { FILE_ID, PROJECT_ID, listQuery, readListQuery } from '../files/schema';

const name = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(MAX_PROJECT_NAME_LENGTH, `is longer than the limit of ${MAX_PROJECT_NAME_LENGTH} characters`);
const description = z.string().max(1_000, 'is longer than the limit of 1000 characters');

export const createProjectBody = z.strictObject({ name, description: description.optional() });

export const updateProjectBody = z
  .strictObject({ name: name.optional(), description: description.optional() })
  .refine((b) => b.name !== undefined || b.description !== undefined, 'name or description is required');

export const attachFileBody = z.strictObject({
  file_id: z.string().max(64, 'must be a file id (file_...)'),
});

export const listProjectsQuery = listQuery({ id: PROJECT_ID, message: 'must be a project id (proj_...)' }, {});

export const parseListProjectsQuery = (query: unknown) => readListQuery(listProjectsQuery, query);

export { FILE_ID, PROJECT_ID };
