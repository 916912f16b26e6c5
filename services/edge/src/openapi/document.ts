// The OpenAPI 3.1 document, made from the operations (routes/<resource>/openapi.ts) and their zod schemas with zod's
// own JSON Schema output (draft 2020-12, the dialect of OpenAPI 3.1). Nothing here is written per route.
import { ERROR_CODES, statusOf, type ErrorCode } from '@gensvc/errors';
import {
  DELIVERY_ID_HEADER,
  SIGNATURE_HEADER,
  TASK_ID_HEADER,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
} from '@gensvc/webhooks';
import { z } from 'zod';
import {
  anthropicErrorBodySchema,
  errorBodySchema,
  googleErrorBodySchema,
  type ApiOperation,
  type Auth,
  type ResponseDoc,
} from './operation';

export type JsonSchema = Record<string, unknown>;

/** A zod schema as JSON Schema: `input` for what the route accepts, `output` for what it answers. */
function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    target: 'draft-2020-12',
  }) as JsonSchema;
  return rest;
}

/** `/api/v1/files/:fileId` as OpenAPI writes it: `/api/v1/files/{fileId}`. */
export const openApiPath = (expressPath: string) => expressPath.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');

/** The paths an operation is registered under, as Express keys them (a RegExp by its source text). */
export function routeKeys(op: Pick<ApiOperation, 'route'>): string[] {
  if (op.route instanceof RegExp) return [String(op.route)];
  return typeof op.route === 'string' ? [op.route] : [...op.route];
}

function documentPaths(op: ApiOperation): string[] {
  if (op.route instanceof RegExp) {
    if (!op.paths?.length) throw new Error(`${op.operationId}: a RegExp route needs its OpenAPI paths`);
    return [...op.paths];
  }
  return routeKeys(op).map(openApiPath);
}

const SECURITY: Record<Auth, Record<string, string[]>[]> = {
  bearer: [{ bearerAuth: [] }],
  anthropic: [{ anthropicApiKey: [] }, { bearerAuth: [] }],
  google: [{ googleApiKey: [] }, { bearerAuth: [] }],
  'signed-link': [{ signedLink: [] }],
  none: [],
};

const ERROR_REF: Record<Auth, string> = {
  bearer: '#/components/schemas/Error',
  'signed-link': '#/components/schemas/Error',
  none: '#/components/schemas/Error',
  anthropic: '#/components/schemas/AnthropicError',
  google: '#/components/schemas/GoogleError',
};

function parameters(op: ApiOperation, path: string): JsonSchema[] {
  const out: JsonSchema[] = [];
  const pathShape = op.params?.shape ?? {};
  for (const [, name] of path.matchAll(/\{([^}]+)\}/g)) {
    const schema = pathShape[name!] as z.ZodType | undefined;
    out.push({ name, in: 'path', required: true, schema: schema ? jsonSchemaOf(schema, 'input') : { type: 'string' } });
  }
  const add = (where: 'query' | 'header', object: z.ZodObject | undefined) => {
    if (!object) return;
    const json = jsonSchemaOf(object, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, schema] of Object.entries(json.properties ?? {})) {
      const { description, ...rest } = schema;
      out.push({
        name,
        in: where,
        required: json.required?.includes(name) ?? false,
        schema: rest,
        ...(description ? { description } : {}),
      });
    }
  };
  add('query', op.query);
  add('header', op.headers);
  return out;
}

function response(doc: ResponseDoc): JsonSchema {
  const content: Record<string, JsonSchema> = {};
  if (doc.schema) content['application/json'] = { schema: jsonSchemaOf(doc.schema, 'output') };
  for (const [type, kind] of Object.entries(doc.content ?? {})) {
    content[type] = { schema: kind === 'binary' ? { type: 'string', contentMediaType: type } : { type: 'string' } };
  }
  return {
    description: doc.description,
    ...(Object.keys(content).length ? { content } : {}),
    ...(doc.headers
      ? {
          headers: Object.fromEntries(
            Object.entries(doc.headers).map(([h, d]) => [h, { description: d, schema: { type: 'string' } }]),
          ),
        }
      : {}),
  };
}

/** The route's error codes grouped by their one status, each group a response with its codes listed. */
function errorResponses(op: ApiOperation): Record<string, JsonSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(op.errors)) {
    const status = statusOf(code);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, JsonSchema> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    out[String(status)] = {
      description: list.map((c) => `\`${c}\``).join(', '),
      'x-error-codes': list,
      headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } },
      content: { 'application/json': { schema: { $ref: ERROR_REF[op.auth] } } },
    };
  }
  return out;
}

function operationObject(op: ApiOperation, path: string, first: boolean): JsonSchema {
  const body = op.body && {
    required: true,
    content: {
      ...(op.body.json ? { 'application/json': { schema: jsonSchemaOf(op.body.json, 'input') } } : {}),
      ...(op.body.multipart ? { 'multipart/form-data': { schema: jsonSchemaOf(op.body.multipart, 'input') } } : {}),
    },
  };
  const scope = op.scope ? `\n\nAPI-key scope: \`${op.scope}\`.` : '';
  return {
    // Several paths of one route (/v1/files and /api/v1/files) get an id each: the first the plain id, the others
    // theirs followed by the path's words.
    operationId: first
      ? op.operationId
      : `${op.operationId}_${path.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '')}`,
    summary: op.summary,
    ...(op.description || scope ? { description: `${op.description ?? ''}${scope}`.trim() } : {}),
    tags: [op.tag],
    security: SECURITY[op.auth],
    ...(op.scope ? { 'x-required-scope': op.scope } : {}),
    parameters: parameters(op, path),
    ...(body ? { requestBody: body } : {}),
    responses: {
      ...Object.fromEntries(Object.entries(op.responses).map(([status, doc]) => [status, response(doc)])),
      ...errorResponses(op),
    },
  };
}

/** The task callback (spec §6, libs/webhooks): an OpenAPI `webhooks` entry, with the signature headers. */
interface WebhookDoc {
  envelope: z.ZodType;
}

export interface DocumentOptions {
  version: string;
  /** The base URL shown as the server (PUBLIC_BASE_URL). */
  serverUrl: string;
  webhook: WebhookDoc;
}

export function buildOpenApiDocument(operations: readonly ApiOperation[], opts: DocumentOptions): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const ids = new Set<string>();
  for (const op of operations) {
    const docPaths = documentPaths(op);
    for (const [i, path] of docPaths.entries()) {
      paths[path] ??= {};
      const item = paths[path];
      if (item[op.method]) throw new Error(`${op.method.toUpperCase()} ${path} is documented twice`);
      const object = operationObject(op, path, i === 0);
      const id = object.operationId as string;
      if (ids.has(id)) throw new Error(`operationId ${id} is used twice`);
      ids.add(id);
      item[op.method] = object;
    }
  }
  const envelope = jsonSchemaOf(opts.webhook.envelope, 'output');
  return {
    openapi: '3.1.0',
    info: {
      title: 'gensvc API',
      version: opts.version,
      description:
        'A gateway to third-party generation and evaluation models, billed per workspace. ' +
        'Errors answer the `Error` body (Anthropic- and Google-compatible routes their vendor shapes); ' +
        'each error code has one HTTP status, listed in `x-error-codes` at the root of this document.',
    },
    servers: [{ url: opts.serverUrl }],
    tags: [...new Set(operations.map((o) => o.tag))].map((name) => ({ name })),
    paths,
    webhooks: {
      taskCallback: {
        post: {
          operationId: 'taskCallback',
          summary: 'A task finished: its envelope is POSTed to the callback_url given at creation',
          description:
            "Signed with the workspace's callback secret (GET /api/v1/me/callback-secret): " +
            `\`${SIGNATURE_HEADER}: t=<unix seconds>,v1=<hex>\` ` +
            'where v1 = HMAC-SHA256(secret, "<t>." + raw body). For 24 h after a rotation two v1 values are sent. ' +
            'Verify the raw bytes before parsing, in constant time, within 300 s of your clock ' +
            '(`npm install @gensvc/webhooks`: verifyCallback). ' +
            'Answer 2xx within 10 s, else the delivery is retried (0 s, 30 s, 2 min, 10 min, 1 h); ' +
            `de-duplicate on ${DELIVERY_ID_HEADER}. ` +
            `The Standard Webhooks headers (${WEBHOOK_ID_HEADER}, ${WEBHOOK_TIMESTAMP_HEADER}, ` +
            `${WEBHOOK_SIGNATURE_HEADER}) are signed with the same secret, so the official libraries verify too.`,
          parameters: [
            {
              name: SIGNATURE_HEADER,
              in: 'header',
              required: true,
              schema: { type: 'string', pattern: '^t=\\d+(,v1=[0-9a-f]{64})+$' },
            },
            {
              name: TASK_ID_HEADER,
              in: 'header',
              required: true,
              schema: { type: 'string' },
              description: "Not signed: the body's task_id is.",
            },
            {
              name: DELIVERY_ID_HEADER,
              in: 'header',
              required: true,
              schema: { type: 'string' },
              description: 'Unique per attempt; a re-sent attempt keeps it.',
            },
            {
              name: WEBHOOK_ID_HEADER,
              in: 'header',
              required: true,
              schema: { type: 'string', pattern: '^msg_[A-Za-z0-9_-]{22}$' },
              description: 'One per event: the same on every attempt and redelivery of it.',
            },
            {
              name: WEBHOOK_TIMESTAMP_HEADER,
              in: 'header',
              required: true,
              schema: { type: 'string', pattern: '^\\d+$' },
              description: 'Unix seconds of this attempt.',
            },
            {
              name: WEBHOOK_SIGNATURE_HEADER,
              in: 'header',
              required: true,
              schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)*$' },
              description:
                'v1,<base64 HMAC-SHA256 of "<webhook-id>.<timestamp>.<raw body>" keyed with the base64 after whsec_>;' +
                ' space-separated, one per secret, during a rotation.',
            },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: envelope } } },
          responses: {
            '2XX': { description: 'Delivered.' },
            default: { description: 'A failed attempt: retried on the schedule above.' },
          },
        },
      },
    },
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: 'A workspace API key: `Authorization: Bearer <API_KEY>`.',
        },
        anthropicApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'x-api-key',
          description: 'The API key, as Anthropic clients send it.',
        },
        googleApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'x-goog-api-key',
          description: 'The API key, as Google clients send it.',
        },
        signedLink: {
          type: 'apiKey',
          in: 'query',
          name: 'token',
          description: "A file's signed one-hour content link (the file object's url).",
        },
      },
      headers: {
        'X-Request-Id': {
          description: 'On every answer; quote it when reporting a problem.',
          schema: { type: 'string' },
        },
      },
      schemas: {
        Error: jsonSchemaOf(errorBodySchema, 'output'),
        AnthropicError: jsonSchemaOf(anthropicErrorBodySchema, 'output'),
        GoogleError: jsonSchemaOf(googleErrorBodySchema, 'output'),
        TaskEnvelope: envelope,
      },
    },
    'x-error-codes': Object.fromEntries(
      Object.entries(ERROR_CODES).map(([code, { status, description }]) => [code, { status, description }]),
    ),
  };
}
