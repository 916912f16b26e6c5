import { z } from 'zod';
import { KEY_AUTH, HOSTILE_INPUT, listOf, operation, timestamp } from '../../openapi/operation';
import { MAX_UPLOAD_BYTES, UPLOAD_PURPOSES, listFilesQuery } from './schema';

const BASES = ['/v1/files', '/api/v1/files'] as const;
const under = (suffix: string) => BASES.map((b) => `${b}${suffix}`);

const fileId = z.object({ fileId: z.string().describe('A file id, file_…') });

export const fileObjectSchema = z.object({
  id: z.string(),
  object: z.literal('file'),
  bytes: z.number().int(),
  filename: z.string(),
  purpose: z.string(),
  content_type: z.string(),
  url: z.string().describe("The file's signed content link (one hour)."),
  created_at: timestamp,
  expires_at: timestamp.nullable().describe('When the file goes; null while a saved project keeps it.'),
  source: z.enum(['upload', 'generated']),
  projects: z.array(z.string()).describe('The saved projects the file is attached to.'),
  archive_status: z.enum(['archived', 'pending', 'failed', 'too_large']).optional().describe('Generated outputs only.'),
});

const upload = z.object({
  file: z.file().describe(`At most ${MAX_UPLOAD_BYTES} bytes; the type is read from the bytes.`),
  purpose: z.enum(UPLOAD_PURPOSES),
});

export const fileApi = [
  operation({
    method: 'post',
    route: under(''),
    operationId: 'uploadFile',
    summary: 'Upload a file (multipart/form-data: file, purpose)',
    tag: 'Files',
    auth: 'bearer',
    scope: 'files.write',
    body: { multipart: upload },
    responses: { 200: { description: 'The stored file.', schema: fileObjectSchema } },
    errors: [
      ...KEY_AUTH,
      'invalid_request',
      'payload_too_large',
      'unsupported_media_type',
      'media_limit_exceeded',
      'rate_limit_exceeded',
      'storage_unavailable',
    ],
  }),
  operation({
    method: 'get',
    route: under(''),
    operationId: 'listFiles',
    summary: "List the workspace's files",
    tag: 'Files',
    auth: 'bearer',
    scope: 'files.write',
    query: listFilesQuery,
    responses: { 200: { description: 'A page of files.', schema: listOf(fileObjectSchema) } },
    errors: [...KEY_AUTH, 'invalid_request', 'not_found'],
  }),
  operation({
    method: 'get',
    route: under('/:fileId'),
    operationId: 'getFile',
    summary: 'A file, with a fresh signed content link',
    tag: 'Files',
    auth: 'bearer',
    scope: 'files.write',
    params: fileId,
    responses: { 200: { description: 'The file.', schema: fileObjectSchema } },
    errors: [...KEY_AUTH, 'not_found'],
  }),
  operation({
    method: 'delete',
    route: under('/:fileId'),
    operationId: 'deleteFile',
    summary: 'Delete a file (row and bytes)',
    tag: 'Files',
    auth: 'bearer',
    scope: 'files.write',
    params: fileId,
    responses: {
      200: {
        description: 'Deleted.',
        schema: z.object({ id: z.string(), object: z.literal('file'), deleted: z.literal(true) }),
      },
    },
    errors: [...KEY_AUTH, 'not_found', 'insufficient_role', 'storage_unavailable'],
  }),
  operation({
    method: 'get',
    route: under('/:fileId/content'),
    operationId: 'getFileContent',
    summary: "A file's bytes, through its signed link (supports Range)",
    tag: 'Files',
    auth: 'signed-link',
    params: fileId,
    query: z.object({ token: z.string().describe('The signed token of the content link.') }),
    headers: z.object({ Range: z.string().optional().describe('bytes=<from>-<to>') }),
    responses: {
      200: { description: 'The bytes.', content: { 'application/octet-stream': 'binary' } },
      206: {
        description: 'The requested range.',
        content: { 'application/octet-stream': 'binary' },
        headers: { 'Content-Range': 'bytes <from>-<to>/<size>' },
      },
    },
    errors: [
      'invalid_file_token',
      'wrong_credential_class',
      'not_found',
      'range_not_satisfiable',
      'storage_unavailable',
      ...HOSTILE_INPUT,
    ],
  }),
  operation({
    method: 'get',
    route: under('/:fileId/signed_url'),
    operationId: 'getSignedUrl',
    summary: 'A presigned one-hour link on the file host (Team and Enterprise)',
    tag: 'Files',
    auth: 'bearer',
    scope: 'files.write',
    params: fileId,
    responses: { 200: { description: 'The link.', schema: z.object({ url: z.string(), expires_at: timestamp }) } },
    errors: [...KEY_AUTH, 'not_found', 'tier_not_allowed'],
  }),
];
