// The paid-call rate limit holds across edge replicas: two real edge processes share one sliding window in Redis.
// Evaluate is the paid call, answered by a worker in this process and the upstream-sim.
import { freePort } from '@gensvc/local-stack';
import {
  addSimModel,
  makeKey,
  makeWorkspace,
  spawnService,
  useTestContext,
  waitForHttp,
  type ServiceProcess,
} from '@gensvc/testing';
import { startSim, type Sim } from '../../upstream-sim/src/index';
import type { EvaluateWorker } from './evaluate-worker';
import { startWorker } from './worker-under-test';

const ctx = useTestContext();
const replicas: { url: string; proc: ServiceProcess }[] = [];
let sim: Sim;
let worker: EvaluateWorker;

beforeAll(async () => {
  sim = await startSim();
  worker = await startWorker(ctx);
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    replicas.push({
      url: `http://127.0.0.1:${port}`,
      proc: spawnService('edge', {
        ...ctx.env,
        PORT: String(port),
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      }),
    });
  }
  await Promise.all(replicas.map((r) => waitForHttp(`${r.url}/readyz`, r.proc)));
}, 60_000);
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.proc.stop()));
  await worker?.close();
  await sim?.close();
});

const RPM = 50;

it('accepts exactly the workspace rpm across two replicas; the rest get 429, Retry-After, X-RateLimit-*', async () => {
  await addSimModel(ctx.db, sim.url, { id: 'sim/limited', channels: [{ name: 'limited' }] });
  const ws = await makeWorkspace(ctx.db, { balance: 100_000_000n });
  await ctx.db.workspace.update({ where: { id: ws.id }, data: { rpm: RPM } });
  const { secret } = await makeKey(ctx.db, ws.id);
  const call = async (i: number) => {
    const res = await fetch(`${replicas[i % 2]!.url}/api/v1/evaluate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim/limited',
        state: `call ${i}`,
        questions: { ok: { type: 'boolean', instructions: 'Fine?' } },
      }),
    });
    await res.arrayBuffer();
    const header = (name: string) => res.headers.get(name);
    return {
      status: res.status,
      limit: header('x-ratelimit-limit-rpm'),
      remaining: Number(header('x-ratelimit-remaining-rpm')),
      reset: Number(header('x-ratelimit-reset')),
      retryAfter: header('retry-after'),
    };
  };

  // One at a time, alternating replicas: the remaining count falls by one per call, whichever replica took it.
  const sequential = [];
  for (let i = 0; i < 10; i++) sequential.push(await call(i));
  expect(sequential.map((r) => r.status)).toEqual(Array(10).fill(200));
  expect(sequential.map((r) => r.remaining)).toEqual(Array.from({ length: 10 }, (_, i) => RPM - 1 - i));

  // Then a burst of 110 split across both: exactly the 40 slots left are taken.
  const started = Math.floor(Date.now() / 1000);
  const burst = await Promise.all(Array.from({ length: 110 }, (_, i) => call(10 + i)));
  const all = [...sequential, ...burst];
  const accepted = all.filter((r) => r.status === 200);
  const refused = all.filter((r) => r.status !== 200);
  expect(accepted).toHaveLength(RPM);
  expect(refused).toHaveLength(120 - RPM);
  // Each accepted call saw its own remaining count: together exactly 49 down to 0.
  expect(accepted.map((r) => r.remaining).sort((a, b) => b - a)).toEqual(
    Array.from({ length: RPM }, (_, i) => RPM - 1 - i),
  );
  for (const r of accepted) expect(r.limit).toBe(String(RPM));
  for (const r of refused) {
    expect(r.status).toBe(429);
    expect(r).toMatchObject({ limit: String(RPM), remaining: 0 });
    expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(r.retryAfter)).toBeLessThanOrEqual(60);
    // The next slot frees when the first call of the window leaves it: within a minute.
    expect(r.reset).toBeGreaterThanOrEqual(started);
    expect(r.reset).toBeLessThanOrEqual(started + 61);
  }
  // Every accepted call was answered and charged; no refused one reached the provider.
  expect(sim.requests().filter((r) => r.channel === 'limited' && r.status === 200)).toHaveLength(RPM);
  expect(await ctx.db.ledgerEntry.count({ where: { workspaceId: ws.id, kind: 'charge' } })).toBe(RPM);
}, 60_000);
