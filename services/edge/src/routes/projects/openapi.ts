import { z } from 'zod';
import { KEY_AUTH, listOf, operation, timestamp } from '../../openapi/operation';
import { fileObjectSchema } from '../files/openapi';
import { attachFileBody, createProjectBody, listProjectsQuery, updateProjectBody } from './schema';

const projectId = z.object({ projectId: z.string().describe('A project id, proj_…') });
const projectFile = projectId.extend({ fileId: z.string().describe('A file id, file_…') });

const projectSchema = z.object({
  id: z.string(),
  object: z.literal('project'),
  name: z.string(),
  description: z.string(),
  created_by: z
    .object({ id: z.string(), email: z.string(), name: z.string().nullable() })
    .nullable()
    .describe("Who made it: a key's creator, or null for a key the platform CLI made."),
  created_at: timestamp,
  file_count: z.number().int(),
});

const JSON_BODY = [
  'invalid_request',
  'invalid_json',
  'json_too_deep',
  'payload_too_large',
  'unsupported_media_type',
] as const;
const common = { tag: 'Projects', auth: 'bearer', scope: 'files.write' } as const;

export const projectApi = [
  operation({
    ...common,
    method: 'post',
    route: '/api/v1/projects',
    operationId: 'createProject',
    summary: 'Create a saved project (at most 1000 a workspace; names at most 100 characters)',
    body: { json: createProjectBody },
    responses: { 201: { description: 'The project.', schema: projectSchema } },
    errors: [...KEY_AUTH, ...JSON_BODY],
  }),
  operation({
    ...common,
    method: 'get',
    route: '/api/v1/projects',
    operationId: 'listProjects',
    summary: "List the workspace's saved projects",
    query: listProjectsQuery,
    responses: { 200: { description: 'A page of projects.', schema: listOf(projectSchema) } },
    errors: [...KEY_AUTH, 'invalid_request'],
  }),
  operation({
    ...common,
    method: 'get',
    route: '/api/v1/projects/:projectId',
    operationId: 'getProject',
    summary: 'A saved project (its files: GET /v1/files?project_id=)',
    params: projectId,
    responses: { 200: { description: 'The project.', schema: projectSchema } },
    errors: [...KEY_AUTH, 'not_found'],
  }),
  operation({
    ...common,
    method: 'patch',
    route: '/api/v1/projects/:projectId',
    operationId: 'updateProject',
    summary: 'Rename a project or change its description',
    params: projectId,
    body: { json: updateProjectBody },
    responses: { 200: { description: 'The project.', schema: projectSchema } },
    errors: [...KEY_AUTH, ...JSON_BODY, 'not_found'],
  }),
  operation({
    ...common,
    method: 'delete',
    route: '/api/v1/projects/:projectId',
    operationId: 'deleteProject',
    summary: 'Delete a project (admins and owners); no file is deleted, their retention runs again',
    params: projectId,
    responses: {
      200: {
        description: 'Deleted.',
        schema: z.object({ id: z.string(), object: z.literal('project'), deleted: z.literal(true) }),
      },
    },
    errors: [...KEY_AUTH, 'not_found', 'insufficient_role'],
  }),
  operation({
    ...common,
    method: 'post',
    route: '/api/v1/projects/:projectId/files',
    operationId: 'attachFile',
    summary: 'Attach a file (kept while attached; at most 10000 a project; again: no change)',
    params: projectId,
    body: { json: attachFileBody },
    responses: { 200: { description: 'The file, expires_at null.', schema: fileObjectSchema } },
    errors: [...KEY_AUTH, ...JSON_BODY, 'not_found'],
  }),
  operation({
    ...common,
    method: 'delete',
    route: '/api/v1/projects/:projectId/files/:fileId',
    operationId: 'detachFile',
    summary: 'Detach a file; held by no other project, its retention runs again (at least 7 days)',
    params: projectFile,
    responses: { 200: { description: 'The file, with when it goes.', schema: fileObjectSchema } },
    errors: [...KEY_AUTH, 'not_found'],
  }),
];
