// Two real edge processes share Postgres and Redis: a revocation or rotation must take effect on both within one
// second, although each caches key look-ups.
import { newApiKey } from '@gensvc/auth';
import { keyInvalidationChannel } from '@gensvc/contracts';
import { apiKeyRepository } from '@gensvc/db';
import { freePort } from '@gensvc/local-stack';
import { primariesOf } from '@gensvc/queue';
import {
  makeKey,
  makeWorkspace,
  spawnService,
  startOtlpCollector,
  useTestContext,
  waitForHttp,
  type ServiceProcess,
} from '@gensvc/testing';

const ctx = useTestContext();
const replicas: { url: string; proc: ServiceProcess }[] = [];

beforeAll(async () => {
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const proc = spawnService('edge', { ...ctx.env, PORT: String(port) });
    const url = `http://127.0.0.1:${port}`;
    replicas.push({ url, proc });
  }
  await Promise.all(replicas.map((r) => waitForHttp(`${r.url}/readyz`, r.proc)));
}, 60_000);
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.proc.stop()));
});

const status = async (url: string, secret: string) =>
  (await fetch(`${url}/api/v1/me/balance`, { headers: { authorization: `Bearer ${secret}` } })).status;

/** Polls every replica until each answers `want`; returns the milliseconds it took. */
async function untilAll(secret: string, want: number, limitMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const codes = await Promise.all(replicas.map((r) => status(r.url, secret)));
    if (codes.every((c) => c === want)) return Date.now() - started;
    if (Date.now() - started > limitMs)
      throw new Error(`replicas answered ${codes.join(',')} after ${limitMs} ms, wanted ${want}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const publish = (keyId: string) => ctx.redis.publish(keyInvalidationChannel(ctx.config.queuePrefix), keyId);

/** The channel's subscribers: a node of a Redis Cluster counts its own clients only, so every primary is asked. */
async function subscribers(): Promise<number> {
  let count = 0;
  for (const node of primariesOf(ctx.redis))
    count += Number(((await node.pubsub('NUMSUB', keyInvalidationChannel(ctx.config.queuePrefix))) as unknown[])[1]);
  return count;
}

it('a revocation reaches both replicas within one second', async () => {
  const ws = await makeWorkspace(ctx.db);
  const { key, secret } = await makeKey(ctx.db, ws.id);
  for (const r of replicas) expect(await status(r.url, secret)).toBe(200);
  await apiKeyRepository.revoke(ctx.db, key.id);
  // The look-up is cached: without the invalidation message both replicas still accept the key.
  for (const r of replicas) expect(await status(r.url, secret)).toBe(200);
  expect(await subscribers()).toBe(2);
  await publish(key.id);
  expect(await untilAll(secret, 401, 1000)).toBeLessThan(1000);
});

it('a rotation reaches both replicas within one second: the old secret stops, the new one works', async () => {
  const ws = await makeWorkspace(ctx.db);
  const { key, secret: old } = await makeKey(ctx.db, ws.id);
  for (const r of replicas) expect(await status(r.url, old)).toBe(200);
  const next = newApiKey();
  await apiKeyRepository.rotate(ctx.db, key.id, next, 0);
  await publish(key.id);
  expect(await untilAll(old, 401, 1000)).toBeLessThan(1000);
  for (const r of replicas) expect(await status(r.url, next.secret)).toBe(200);
});

it('logs each request with its request id, and its trace id when traces are exported; stops on SIGTERM', async () => {
  const collector = await startOtlpCollector();
  try {
    const logLine = async (env: Record<string, string>, requestId: string) => {
      const port = await freePort();
      const proc = spawnService('edge', { ...ctx.env, ...env, PORT: String(port), LOG_LEVEL: 'info' });
      await waitForHttp(`http://127.0.0.1:${port}/healthz`, proc);
      await fetch(`http://127.0.0.1:${port}/api/v1/me/balance`, { headers: { 'x-request-id': requestId } });
      await new Promise((r) => setTimeout(r, 200));
      expect(await proc.stop('SIGTERM')).toBe(0);
      expect(proc.output()).toContain('shutdown phase done');
      const line = proc
        .output()
        .split('\n')
        .find((l) => l.includes(`"request_id":"${requestId}"`));
      return JSON.parse(line!) as Record<string, unknown>;
    };
    const request = { level: 'info', service: 'edge', msg: 'request', method: 'GET', route: '/api/v1/me/balance' };
    const quiet = await logLine({}, 'log-check-1');
    expect(quiet).toMatchObject({ ...request, status: 401 });
    expect(quiet).not.toHaveProperty('trace_id');
    const traced = await logLine(
      { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_TRACES_SAMPLER_ARG: '1' },
      'log-check-2',
    );
    expect(traced).toMatchObject({ ...request, status: 401, trace_id: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect(collector.spans.map((s) => s.traceId)).toContain(traced.trace_id);
  } finally {
    await collector.close();
  }
});

it('refuses to start on a bad configuration, listing every bad variable', async () => {
  const proc = spawnService('edge', {
    PORT: 'eighty',
    DATABASE_URL: 'mysql://nope',
    SIGNING_SECRET: 'short',
    LOG_LEVEL: 'loud',
  });
  const code = await new Promise<number | null>((r) => proc.child.once('exit', r));
  expect(code).toBe(1);
  const out = proc.output();
  for (const name of ['PORT', 'DATABASE_URL', 'REDIS_URL', 'SIGNING_SECRET', 'ENCRYPTION_KEYS', 'LOG_LEVEL']) {
    expect(out).toContain(name);
  }
  expect(out).not.toContain('short');
});

it("a key's own rpm holds exactly across replicas: of 24 racing paid calls, 5 pass, the rest are 429", async () => {
  const ws = await makeWorkspace(ctx.db);
  const { secret } = await makeKey(ctx.db, ws.id, { rpm: 5 });
  const { secret: other } = await makeKey(ctx.db, ws.id);
  // An empty body is refused (400) after the rate limit has counted the call: no model or money needed.
  const call = (url: string, key: string) =>
    fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{}',
    });
  const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => call(replicas[i % 2]!.url, secret)));
  const codes = answers.map((r) => r.status);
  expect(codes.filter((c) => c === 400)).toHaveLength(5);
  expect(codes.filter((c) => c === 429)).toHaveLength(19);
  const refused = answers.find((r) => r.status === 429)!;
  expect(refused.headers.get('x-ratelimit-limit-rpm')).toBe('5');
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
    /at most 5 paid calls per minute for this API key/,
  );
  // The workspace's other key has its own room; the workspace counted the 5 calls that passed.
  const fine = await call(replicas[1]!.url, other);
  expect(fine.status).toBe(400);
  expect(fine.headers.get('x-ratelimit-limit-rpm')).toBe('300');
  expect(fine.headers.get('x-ratelimit-remaining-rpm')).toBe('294');
});
