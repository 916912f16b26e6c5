// GET /openapi.json: a valid OpenAPI 3.1 document (checked with a kept validator against the official schema), naming
// exactly the routes buildApp registers (the dashboard's own routes and the docs page's files left out by an explicit
// rule), and whose response schemas hold for what the routes really answer.
import { ERROR_CODES } from '@gensvc/errors';
import { jsonOf, makeCustomer, sampleMedia, useTestContext } from '@gensvc/testing';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type express from 'express';
import { buildApp } from '../app';
import { startEdge, type EdgeUnderTest } from '../edge-under-test';
import { bearer, upload } from '../routes/files/files-test-support';
import { openApiPath, routeKeys } from './document';
import { API_OPERATIONS } from './operations';
import { DOCS_ASSET_PREFIX } from './routes';

const ctx = useTestContext();
let edge: EdgeUnderTest;
// biome-ignore lint/suspicious/noExplicitAny: the served JSON document, walked freely by the assertions below
let doc: any;
beforeAll(async () => {
  edge = await startEdge(ctx);
  const res = await fetch(`${edge.url}/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  doc = await jsonOf(res);
});
afterAll(() => edge.close());

interface Layer {
  route?: { path: string | RegExp | (string | RegExp)[]; methods: Record<string, boolean> };
  rawPath?: string | RegExp | (string | RegExp)[];
  handle?: { stack?: Layer[] };
}

/** Every (method, path) the app's router stack holds, mounted routers included; a RegExp path by its source text. */
function registeredRoutes(app: express.Express): string[] {
  const out: string[] = [];
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        const paths = [layer.route.path].flat(Infinity) as (string | RegExp)[];
        for (const path of paths) {
          for (const method of Object.keys(layer.route.methods).filter((m) => m !== '_all')) {
            const shown =
              path instanceof RegExp
                ? prefix
                  ? `${prefix}${path}`
                  : String(path)
                : `${prefix}${path === '/' && prefix ? '' : path}`;
            out.push(`${method} ${shown}`);
          }
        }
      } else if (layer.handle?.stack) {
        const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
        walk(layer.handle.stack, `${prefix}${mount}`);
      }
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack, '');
  return out;
}

/**
 * The document checked by @seriousme/openapi-schema-validator (the OpenAPI 3.1 JSON Schema, with ajv). The package
 * is ESM only, which Jest cannot require: it runs in a Node of its own, reading the document on stdin.
 */
function validateOpenApi(document: unknown): { valid: boolean; errors?: unknown } {
  const script = `
    import { Validator } from '@seriousme/openapi-schema-validator';
    let text = '';
    for await (const chunk of process.stdin) text += chunk;
    const validator = new Validator();
    const result = await validator.validate(JSON.parse(text));
    process.stdout.write(JSON.stringify({ ...result, version: validator.version }));
  `;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: join(__dirname, '..', '..'),
    input: JSON.stringify(document),
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`the validator failed: ${run.stderr}`);
  const result = JSON.parse(run.stdout) as { valid: boolean; errors?: unknown; version: string };
  expect(result.version).toBe('3.1');
  return result;
}

/**
 * Left out of the public document on purpose: the dashboard's session-authenticated JSON routes (/api/v1/dashboard/…,
 * described in routes/dashboard/API.md), its pages (/ and /dashboard…), and the docs page's own static files.
 */
const isExcluded = (path: string) =>
  path.startsWith('/api/v1/dashboard/') ||
  path === '/' ||
  path === '/dashboard' ||
  path.startsWith('/dashboard/') ||
  path.startsWith(DOCS_ASSET_PREFIX);

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = validateOpenApi(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    // The validator really judges: a Swagger 2 style body parameter is refused.
    const broken = structuredClone(doc);
    broken.paths['/api/v1/evaluate'].post.parameters.push({ name: 'body', in: 'body', schema: {} });
    expect(validateOpenApi(broken).valid).toBe(false);
  });

  it('names every route the app registers, and nothing it does not', async () => {
    const app = buildApp(edge.deps);
    try {
      const registered = registeredRoutes(app);
      const dashboard = registered.filter((r) => isExcluded(r.split(' ')[1]!));
      // The rule leaves out what it says, and the dashboard is really there to be left out.
      expect(dashboard.length).toBeGreaterThan(20);
      const routes = new Set(registered.filter((r) => !isExcluded(r.split(' ')[1]!)));
      const documented = new Set(API_OPERATIONS.flatMap((op) => routeKeys(op).map((k) => `${op.method} ${k}`)));
      expect([...routes].filter((r) => !documented.has(r)).sort()).toEqual([]);
      expect([...documented].filter((r) => !routes.has(r)).sort()).toEqual([]);
      expect(routes.size).toBeGreaterThan(30);
    } finally {
      await app.closeRoutes();
    }
    // Each documented string route is in the document's paths under its OpenAPI spelling.
    for (const op of API_OPERATIONS) {
      if (op.route instanceof RegExp) for (const p of op.paths!) expect(doc.paths[p]?.[op.method]).toBeDefined();
      else
        for (const k of routeKeys(op))
          expect([k, doc.paths[openApiPath(k)]?.[op.method]?.summary]).toEqual([k, op.summary]);
    }
  });

  it('has the security schemes, the vendor routes their own key headers, and the error shapes', () => {
    const schemes = doc.components.securitySchemes;
    expect(schemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(schemes.anthropicApiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-api-key' });
    expect(schemes.googleApiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-goog-api-key' });
    expect(doc.paths['/v1/messages'].post.security).toEqual([{ anthropicApiKey: [] }, { bearerAuth: [] }]);
    expect(doc.paths['/v1beta/models/{model}:generateContent'].post.security).toEqual([
      { googleApiKey: [] },
      { bearerAuth: [] },
    ]);
    expect(doc.paths['/api/v1/evaluate'].post.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.paths['/api/v1/evaluate'].post['x-required-scope']).toBe('llm.evaluate');
    // Request bodies come from the routes' zod schemas.
    const evaluate = doc.paths['/api/v1/evaluate'].post.requestBody.content['application/json'].schema;
    expect(evaluate.required).toEqual(expect.arrayContaining(['model', 'state', 'questions']));
    expect(evaluate.additionalProperties).toBe(false);
    expect(
      doc.paths['/api/v1/{provider}/image-to-video'].post.requestBody.content['application/json'].schema.properties,
    ).toHaveProperty('duration_seconds');
    expect(
      doc.paths['/api/v1/{provider}/text-to-image'].post.requestBody.content['application/json'].schema.properties,
    ).not.toHaveProperty('image');
    expect(doc.paths['/v1/files'].post.requestBody.content['multipart/form-data'].schema.required).toEqual([
      'file',
      'purpose',
    ]);
    // Errors: the native body, the vendors' own, each status with its codes.
    const error = doc.components.schemas.Error.properties.error;
    expect(error.required).toEqual(['type', 'code', 'message', 'param', 'request_id']);
    expect(error.properties.code.enum.sort()).toEqual(Object.keys(ERROR_CODES).sort());
    expect(doc.paths['/v1/messages'].post.responses['401'].content['application/json'].schema.$ref).toBe(
      '#/components/schemas/AnthropicError',
    );
    expect(
      doc.paths['/v1beta/models/{model}:generateContent'].post.responses['402'].content['application/json'].schema.$ref,
    ).toBe('#/components/schemas/GoogleError');
    const taskGet = doc.paths['/api/v1/tasks/{taskId}'].get.responses;
    expect(taskGet['404']['x-error-codes']).toEqual(['task_not_found']);
    expect(doc.paths['/api/v1/{provider}/image-to-image'].post.responses['404']['x-error-codes']).toEqual(
      expect.arrayContaining(['model_not_found', 'file_not_found']),
    );
    // One status per code, listed at the root.
    expect(doc['x-error-codes']).toEqual(JSON.parse(JSON.stringify(ERROR_CODES)));
    type PathItem = Record<string, { responses: Record<string, { 'x-error-codes'?: string[] }> }>;
    for (const [path, item] of Object.entries<PathItem>(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, res] of Object.entries(op.responses)) {
          for (const code of res['x-error-codes'] ?? [])
            expect([path, method, code, Number(status)]).toEqual([
              path,
              method,
              code,
              ERROR_CODES[code as keyof typeof ERROR_CODES].status,
            ]);
        }
      }
    }
  });

  it("describes a task creation's wait and deadline: Prefer, Cancel-After, deadline_seconds, the 200", () => {
    const create = doc.paths['/api/v1/{provider}/text-to-image'].post;
    const headers = create.parameters.filter((p: { in: string }) => p.in === 'header');
    expect(headers.map((p: { name: string }) => p.name)).toEqual(['Idempotency-Key', 'Prefer', 'Cancel-After']);
    expect(headers[1].description).toMatch(/clamped/);
    const body = create.requestBody.content['application/json'].schema;
    expect(body.properties.deadline_seconds).toMatchObject({ type: 'integer', minimum: 1, maximum: 86_400 });
    expect(create.responses['200'].headers['Preference-Applied']).toBeDefined();
    expect(create.responses['202'].headers.Location).toBeDefined();
  });

  it('describes the task callback as a webhook with its signature headers', () => {
    const hook = doc.webhooks.taskCallback.post;
    expect(hook.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual([
      'header:SVC-Signature',
      'header:SVC-Task-Id',
      'header:SVC-Delivery-Id',
      'header:webhook-id',
      'header:webhook-timestamp',
      'header:webhook-signature',
    ]);
    expect(hook.requestBody.content['application/json'].schema.required).toEqual(
      expect.arrayContaining(['object', 'task_id', 'status', 'output', 'cost', 'attempts']),
    );
    const attempt = hook.requestBody.content['application/json'].schema.properties.attempts.items;
    expect(Object.keys(attempt.properties)).toEqual([
      'channel',
      'upstream_id',
      'status',
      'error_code',
      'started_at',
      'ended_at',
    ]);
  });

  it('answers what its response schemas say (balance, callback secret, files, tasks, errors)', async () => {
    const { secret } = await makeCustomer(ctx.db);
    const schemaOf = (id: string, status = 200) => {
      const op = API_OPERATIONS.find((o) => o.operationId === id)!;
      return op.responses[status]!.schema!;
    };
    const get = async (path: string, init: RequestInit = {}) => {
      const res = await fetch(`${edge.url}${path}`, {
        ...init,
        headers: { ...bearer(secret), ...(init.headers as object) },
      });
      return { status: res.status, body: await jsonOf(res) };
    };
    const ok = async (id: string, path: string, init?: RequestInit, status = 200) => {
      const res = await get(path, init);
      expect(res.status).toBe(status);
      return schemaOf(id, status).parse(res.body);
    };
    await ok('getBalance', '/api/v1/me/balance');
    await ok('getCallbackSecret', '/api/v1/me/callback-secret');
    await ok('rotateCallbackSecret', '/api/v1/me/callback-secret/rotate', { method: 'POST' });
    const retired = await ok('retirePreviousCallbackSecret', '/api/v1/me/callback-secret/retire-previous', {
      method: 'POST',
    });
    expect(retired).toMatchObject({ previous_secret_expires_at: null });
    const file = (await jsonOf(await upload(edge.url, secret, sampleMedia.png(8, 8), { filename: 'a.png' }))) as {
      id: string;
    };
    await ok('getFile', `/v1/files/${file.id}`);
    const list = (await ok('listFiles', '/api/v1/files?limit=5')) as { data: unknown[] };
    expect(list.data).toHaveLength(1);
    await ok('listTasks', '/api/v1/tasks');
    await ok('deleteFile', `/v1/files/${file.id}`, { method: 'DELETE' });
    await ok('healthz', '/healthz');
    // Errors: the native body, with the code's one status.
    const missing = await get('/api/v1/tasks/tsk_0000000000000000000000');
    expect(missing.status).toBe(ERROR_CODES.task_not_found.status);
    const { errorBodySchema } = await import('./operation');
    expect(errorBodySchema.parse(missing.body).error.code).toBe('task_not_found');
  });
});
