// The dashboard's static answers, over a real socket, behind the edge's own request context (which sets no-store).
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@gensvc/observability';
import express from 'express';
import { errorHandler, notFound } from '../../http/errors';
import { requestContext } from '../../http/request-context';
import { DEFAULT_DASHBOARD_DIR, dashboardCsp, dashboardStatic } from './static';

const INDEX =
  '<!doctype html><title>gensvc</title><script type="module" src="/dashboard/assets/index-abc123.js"></script>';
const JS = 'console.log("dashboard")';

let dir: string;
let server: Server;
let base: string;

async function listen(app: express.Express): Promise<{ server: Server; url: string }> {
  const s = createServer(app);
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return { server: s, url: `http://127.0.0.1:${(s.address() as AddressInfo).port}` };
}

function edgeLike(opts: Parameters<typeof dashboardStatic>[0]) {
  const app = express();
  app.use(requestContext(createLogger({ service: 'static-test', level: 'silent' })));
  app.get('/api/v1/ping', (_req, res) => void res.json({ ok: true }));
  app.use(dashboardStatic(opts));
  app.use(notFound);
  app.use(errorHandler);
  return app;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dashboard-static-'));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), INDEX);
  writeFileSync(join(dir, 'assets', 'index-abc123.js'), JS);
  ({ server, url: base } = await listen(edgeLike({ dir, fileBaseUrl: 'https://files.example.com/bucket-path' })));
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const get = (path: string, init: RequestInit = {}) => fetch(`${base}${path}`, { redirect: 'manual', ...init });

it('redirects / and /dashboard to /dashboard/', async () => {
  for (const path of ['/', '/dashboard']) {
    const res = await get(path);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/dashboard/');
  }
});

it('serves hashed assets for a year, immutable, with their type', async () => {
  const res = await get('/dashboard/assets/index-abc123.js');
  expect(res.status).toBe(200);
  expect(await res.text()).toBe(JS);
  expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
  expect(res.headers.get('content-type')).toMatch(/^(text|application)\/javascript/);
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
});

it('answers a missing asset 404 in the API error shape, not with index.html', async () => {
  const res = await get('/dashboard/assets/index-gone.js');
  expect(res.status).toBe(404);
  expect(res.headers.get('content-type')).toMatch(/application\/json/);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBeTruthy();
});

it('refuses to leave the assets directory', async () => {
  writeFileSync(join(dir, 'secret.txt'), 'not an asset');
  for (const path of [
    '/dashboard/assets/../secret.txt',
    '/dashboard/assets/%2e%2e/secret.txt',
    '/dashboard/assets/..%2fsecret.txt',
  ]) {
    const res = await get(path);
    expect(await res.text()).not.toContain('not an asset');
  }
});

it('answers every other /dashboard/ path with index.html, no-cache, and the strict headers', async () => {
  for (const path of ['/dashboard/', '/dashboard/w/ws_123/keys', '/dashboard/invite/abc?x=1', '/dashboard/sign-in']) {
    const res = await get(path);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("img-src 'self' data: blob: https://files.example.com;");
    expect(csp).toContain("media-src 'self' https://files.example.com;");
    expect(csp).not.toContain('unsafe');
    expect(await res.text()).toBe(INDEX);
  }
});

it('leaves other paths and methods to the rest of the app', async () => {
  expect((await get('/api/v1/ping')).status).toBe(200);
  const post = await get('/dashboard/keys', { method: 'POST' });
  expect(post.status).toBe(404);
  expect(post.headers.get('cache-control')).toBe('no-store');
  expect((await get('/elsewhere')).status).toBe(404);
});

it('answers 503 with a clear message when the dashboard was never built, and keeps serving the API', async () => {
  const missing = join(dir, 'never-built');
  const { server: s, url } = await listen(edgeLike({ dir: missing, fileBaseUrl: 'http://127.0.0.1:9000' }));
  try {
    const page = await fetch(`${url}/dashboard/w/ws_1/keys`);
    expect(page.status).toBe(503);
    expect(await page.text()).toMatch(/has not been built.*npm run build/);
    expect((await fetch(`${url}/dashboard/assets/index-abc123.js`)).status).toBe(404);
    expect((await fetch(`${url}/api/v1/ping`)).status).toBe(200);
  } finally {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

it('puts the file store origin (not its path) in the policy', () => {
  expect(dashboardCsp('http://127.0.0.1:9000/gensvc')).toBe(
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob: http://127.0.0.1:9000; " +
      "media-src 'self' http://127.0.0.1:9000; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; " +
      "form-action 'self'",
  );
});

it('finds the built dashboard beside the edge package', () => {
  expect(DEFAULT_DASHBOARD_DIR.endsWith(join('services', 'dashboard', 'dist'))).toBe(true);
});
