import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '@gensvc/local-stack';
import { createLogger, renderMetrics } from '@gensvc/observability';
import { jsonOf, useTestContext, waitForHttp } from '@gensvc/testing';
import express from 'express';
import { Redis } from 'ioredis';
import { startEdge, type EdgeUnderTest } from './edge-under-test';
import { errorHandler, notFound } from './http/errors';
import { jsonBody } from './http/json-body';
import { requestContext } from './http/request-context';

const ctx = useTestContext();
let edge: EdgeUnderTest;
beforeAll(async () => (edge = await startEdge(ctx)));
afterAll(() => edge.close());

describe('edge basics', () => {
  it('answers /healthz and a ready /readyz', async () => {
    const health = await fetch(`${edge.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await jsonOf(health)).toEqual({ status: 'ok' });
    const ready = await fetch(`${edge.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await jsonOf(ready)).toEqual({ status: 'ready' });
  });

  it('puts X-Request-Id on every answer, keeping a sane incoming one', async () => {
    for (const path of ['/healthz', '/nope', '/api/v1/me/balance']) {
      const res = await fetch(`${edge.url}${path}`);
      expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{24}$/);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
    const mine = await fetch(`${edge.url}/healthz`, { headers: { 'x-request-id': 'trace-abc.123' } });
    expect(mine.headers.get('x-request-id')).toBe('trace-abc.123');
    const hostile = await fetch(`${edge.url}/healthz`, { headers: { 'x-request-id': 'a b<script>' } });
    expect(hostile.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it("answers unknown routes with a JSON 404 in each family's shape", async () => {
    const res = await fetch(`${edge.url}/api/v1/nothing-here`, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(await jsonOf(res)).toEqual({
      error: {
        type: 'not_found_error',
        code: 'route_not_found',
        message: 'No route for POST /api/v1/nothing-here.',
        param: null,
        request_id: res.headers.get('x-request-id'),
      },
    });
    expect(await jsonOf(await fetch(`${edge.url}/v1/messages/none`))).toEqual({
      type: 'error',
      error: { type: 'not_found_error', message: expect.any(String) },
    });
    expect((await fetch(`${edge.url}/API/V1/ME/BALANCE`)).status).toBe(404);
    expect(await jsonOf(await fetch(`${edge.url}/v1beta/none`))).toEqual({
      error: { code: 404, message: expect.any(String), status: 'NOT_FOUND' },
    });
  });

  it('records the routes it has seen, and serves no /metrics on the public port (the ops port does)', async () => {
    await fetch(`${edge.url}/healthz`);
    expect((await fetch(`${edge.url}/metrics`)).status).toBe(404);
    const { body } = await renderMetrics(edge.deps.metrics);
    expect(body).toMatch(/http_request_duration_seconds_count\{[^}]*route="\/healthz"[^}]*\} \d+/);
  });

  it('answers a paid route the same on its exact path and on its variants (a query, a trailing slash)', async () => {
    const bad = {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer gsk_nope' },
      body: '{}',
    };
    const answers = [];
    // Exact paths, then variants the router also matches (a query, a trailing slash).
    for (const path of [
      '/v1/chat/completions',
      '/v1/chat/completions?x=1',
      '/v1/chat/completions/',
      '/api/v1/evaluate',
      '/api/v1/evaluate/',
    ]) {
      const res = await fetch(`${edge.url}${path}`, { ...bad, headers: { ...bad.headers, 'x-request-id': 'paid-1' } });
      answers.push({
        path,
        status: res.status,
        type: res.headers.get('content-type'),
        nosniff: res.headers.get('x-content-type-options'),
        body: await jsonOf(res),
      });
    }
    for (const a of answers) {
      expect(a).toMatchObject({
        status: 401,
        type: 'application/json; charset=utf-8',
        nosniff: 'nosniff',
        body: { error: { code: 'malformed_api_key', request_id: 'paid-1' } },
      });
      expect(a.body).toEqual(answers[a.path.includes('evaluate') ? 3 : 0]!.body);
    }
    // A path the guard refuses is answered by the guard, before any route (and counted as unmatched).
    const broken = await fetch(`${edge.url}/v1/chat/completions?q=%ZZ`, bad);
    expect(broken.status).toBe(400);
    expect((await jsonOf(broken)).error.code).toBe('invalid_encoding');
    const { body } = await renderMetrics(edge.deps.metrics);
    expect(body).toMatch(
      new RegExp(
        String.raw`http_request_duration_seconds_count\{[^}]*` +
          String.raw`route="\/api\/v1\/chat\/completions,\/v1\/chat\/completions"[^}]*status="401"[^}]*\} 3`,
      ),
    );
    expect(body).toMatch(
      /http_request_duration_seconds_count\{[^}]*route="\/api\/v1\/evaluate"[^}]*status="401"[^}]*\} 2/,
    );
    expect(body).toMatch(/http_request_duration_seconds_count\{[^}]*route="unmatched"[^}]*status="400"[^}]*\} \d+/);
  });
});

describe('JSON bodies', () => {
  let url = '';
  let close = () => {};
  beforeAll(async () => {
    const app = express();
    app.use(requestContext(createLogger({ service: 't', level: 'silent' })));
    app.post(
      '/api/v1/echo',
      jsonBody({ limitBytes: 1024, timeouts: ctx.config.http }),
      (req, res) => void res.json({ got: req.body }),
    );
    app.use(notFound);
    app.use(errorHandler);
    const server = createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/echo`;
    close = () => server.close();
  });
  afterAll(() => close());
  const post = (body: string) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

  it("parses JSON within the route's limit", async () => {
    expect(await jsonOf(await post('{"a":[1,2]}'))).toEqual({ got: { a: [1, 2] } });
  });
  it('answers malformed JSON with 400 invalid_json', async () => {
    const res = await post('{"a":');
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_json' });
  });
  it("answers a body over the route's limit with 413", async () => {
    const res = await post(JSON.stringify({ a: 'x'.repeat(2000) }));
    expect(res.status).toBe(413);
    expect((await jsonOf(res)).error).toMatchObject({
      code: 'payload_too_large',
      message: expect.stringContaining('1 KiB'),
    });
  });
});

describe('/readyz with Redis stopped', () => {
  it('answers 503, and ready again once it is back', async () => {
    const port = await freePort();
    const start = () =>
      spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
        stdio: 'ignore',
      });
    let server = start();
    const redis = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: null, retryStrategy: () => 100 });
    await new Promise<void>((resolve) => redis.once('ready', () => resolve()));
    const own = await startEdge(ctx, { redis });
    try {
      expect((await fetch(`${own.url}/readyz`)).status).toBe(200);
      server.kill('SIGKILL');
      await new Promise((r) => server.once('exit', r));
      const res = await fetch(`${own.url}/readyz`);
      expect(res.status).toBe(503);
      // Which store failed is the ops port's to say (routes/health/readyz.int.test.ts).
      const error = { type: 'api_error', code: 'service_unavailable' };
      expect(await jsonOf(res)).toMatchObject({ status: 'unavailable', error });
      server = start();
      await waitForHttp(`${own.url}/readyz`, undefined, 10_000);
    } finally {
      await own.close();
      redis.disconnect();
      server.kill('SIGKILL');
    }
  });
});
