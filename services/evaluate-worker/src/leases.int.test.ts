// Evaluate's money across two real edge processes (their budget leases shared through Postgres and Redis), one
// worker in this process and the upstream-sim: a cap is never passed however the calls are spread, every 200 is in
// the ledger when it is answered, and a SIGKILL of an edge under load leaves the books balanced.
import { toAmount } from '@gensvc/db';
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
import { costOf, reservationFor } from '@gensvc/upstream';
import { expectBalanced, killUnderLoad } from '../../edge/src/billing-test-support';
import { startSim, usageFor, type Sim } from '../../upstream-sim/src/index';
import type { EvaluateWorker } from './evaluate-worker';
import { startWorker } from './worker-under-test';

const ctx = useTestContext();
let sim: Sim;
let worker: EvaluateWorker;
const replicas: { url: string; proc: ServiceProcess }[] = [];

async function startReplica(): Promise<{ url: string; proc: ServiceProcess }> {
  const port = await freePort();
  const proc = spawnService('edge', {
    ...ctx.env,
    PORT: String(port),
    OPS_PORT: '0',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/readyz`, proc);
  return { url, proc };
}

// As in race.int.test.ts: input is free and the output bound is what the sim reports, so each call's hold is its cost.
const MODEL = 'sim/eval-leased';
const request = {
  state: { text: 'the same input for everyone' },
  questions: { ok: { type: 'boolean' as const, instructions: 'Is it acceptable?' } },
};
let cost: bigint;

beforeAll(async () => {
  sim = await startSim();
  worker = await startWorker(ctx, { concurrency: 50 });
  const { model } = await addSimModel(ctx.db, sim.url, {
    id: MODEL,
    inputPricePerMTok: 0n,
    outputPricePerMTok: 2_500_000_000n,
    maxOutputTokens: 4,
    channels: [{ name: 'leased' }],
  });
  cost = costOf(model, usageFor(request));
  expect(reservationFor(model, { inputBytes: Buffer.byteLength(JSON.stringify(request)) })).toBe(cost);
  replicas.push(...(await Promise.all([startReplica(), startReplica()])));
}, 90_000);
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.proc.stop()));
  await worker?.close();
  await sim?.close();
});

const evaluate = (url: string, secret: string) =>
  fetch(`${url}/api/v1/evaluate`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, ...request }),
  }).then(async (res) => ({
    status: res.status,
    requestId: res.headers.get('x-request-id')!,
    json: (await res.json()) as { cost?: { amount: number }; error?: { code: string } },
  }));

it('never charges past a cap over two edges: exactly the admitted calls answer 200, each in the ledger', async () => {
  const ws = await makeWorkspace(ctx.db, { balance: 100_000_000n });
  await ctx.db.workspace.update({ where: { id: ws.id }, data: { rpm: 100_000 } }); // the cap is what is tested here
  const cap = 100n * cost;
  const { key, secret } = await makeKey(ctx.db, ws.id, { spendCap: cap });
  // One call on each replica first, one after the other, so that each holds a lease of the cap before the race
  // (otherwise whichever replica warms up first can lease the whole cap and the other only refuses).
  const first = [await evaluate(replicas[0]!.url, secret), await evaluate(replicas[1]!.url, secret)];
  expect(first.map((a) => a.status)).toEqual([200, 200]);
  const raced = await Promise.all(Array.from({ length: 498 }, (_, i) => evaluate(replicas[i % 2]!.url, secret)));
  const answers = [...first, ...raced];
  const ok = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status !== 200);
  expect(ok).toHaveLength(100);
  expect(refused.every((a) => a.status === 402 && a.json.error?.code === 'spending_cap_exhausted')).toBe(true);
  expect(ok.every((a) => a.json.cost?.amount === toAmount(cost))).toBe(true);

  // Read at once, without waiting for a flush: a charge is written before its answer is sent.
  const ledger = await ctx.db.ledgerEntry.findMany({ where: { workspaceId: ws.id, kind: 'charge' } });
  expect(ledger.map((e) => e.requestId).sort()).toEqual(ok.map((a) => a.requestId).sort());
  expect(ledger.every((e) => e.amount === -cost && e.apiKeyId === key.id)).toBe(true);
  const k = await ctx.db.apiKey.findUniqueOrThrow({ where: { id: key.id } });
  expect(k.spent).toBe(cap);
  expect(k.spent + k.reserved).toBeLessThanOrEqual(cap);
  await expectBalanced(ctx.db, ws.id);
  // The provider was asked once per admitted call, never for a refused one.
  expect(sim.requests().filter((r) => r.channel === 'leased')).toHaveLength(100);
}, 120_000);

it('keeps the books when an edge is SIGKILLed under 32-way load: every 200 charged once, none twice', async () => {
  const ws = await makeWorkspace(ctx.db, { balance: 100_000_000n });
  await ctx.db.workspace.update({ where: { id: ws.id }, data: { rpm: 100_000 } });
  const { key, secret } = await makeKey(ctx.db, ws.id);
  const victim = await startReplica();
  const answers = await killUnderLoad(ctx.db, ws.id, victim.proc, () => evaluate(victim.url, secret), { answered: 21 });
  const answered = answers.filter((a) => a.status === 200);
  expect(answered.length).toBeGreaterThan(20);

  const ledger = await ctx.db.ledgerEntry.findMany({ where: { workspaceId: ws.id, kind: 'charge' } });
  const charged = new Set(ledger.map((e) => e.requestId));
  // Nothing charged twice; every call answered 200 is charged (its charge was written before its answer).
  expect(charged.size).toBe(ledger.length);
  expect(answered.filter((a) => !charged.has(a.requestId))).toEqual([]);
  // Charged but never answered: only a call whose charge was committed as the process died, before its answer was
  // written; at most the calls in flight at the kill.
  const answeredIds = new Set(answered.map((a) => a.requestId));
  const unanswered = ledger.filter((e) => !answeredIds.has(e.requestId!)).length;
  expect(unanswered).toBeLessThanOrEqual(32);
  const k = await ctx.db.apiKey.findUniqueOrThrow({ where: { id: key.id } });
  expect(k.reserved).toBe(0n);
  expect(k.spent).toBe(-ledger.reduce((s, e) => s + e.amount, 0n));
  await expectBalanced(ctx.db, ws.id);
  process.stdout.write(
    `evaluate SIGKILL under load: ${answered.length} answered, ${ledger.length} charged, ${unanswered} charged at ` +
      `the kill before their answer was written\n`,
  );
}, 120_000);
