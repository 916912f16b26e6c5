// 500 evaluate requests at once, over real sockets, on a key whose spending cap admits exactly 100 of them.
//
// Prices make the reservation bound equal the real cost, so "admits exactly 100" is exact: input is free (the
// bound counts one token per request byte, the sim ceil(bytes / 4)), and output is bounded by the model's
// maxOutputTokens, set to what the sim reports for one question (1 + 3 = 4 tokens). Bound = cost = 4 × price.
import { toAmount } from '@gensvc/db';
import { addSimModel, makeKey, makeWorkspace, useTestContext } from '@gensvc/testing';
import { costOf, reservationFor } from '@gensvc/upstream';
import { startEdge, type EdgeUnderTest } from '../../edge/src/edge-under-test';
import { startSim, usageFor, type Sim } from '../../upstream-sim/src/index';
import type { EvaluateWorker } from './evaluate-worker';
import { startWorker } from './worker-under-test';

const ctx = useTestContext();
let sim: Sim;
let edge: EdgeUnderTest;
let worker: EvaluateWorker;

beforeAll(async () => {
  sim = await startSim();
  edge = await startEdge(ctx);
  worker = await startWorker(ctx, { concurrency: 50 });
});
afterAll(async () => {
  await worker?.close();
  await edge?.close();
  await sim?.close();
});

const REQUESTS = 500;
const ADMITTED = 100;

it('charges at most the cap: exactly the admitted requests answer 200, each charged once; others 402', async () => {
  const { model } = await addSimModel(ctx.db, sim.url, {
    id: 'sim/race',
    inputPricePerMTok: 0n,
    outputPricePerMTok: 2_500_000_000n,
    maxOutputTokens: 4,
    channels: [{ name: 'race' }],
  });
  const request = {
    state: { text: 'the same input for everyone' },
    questions: { ok: { type: 'boolean' as const, instructions: 'Is it acceptable?' } },
  };
  const usage = usageFor(request);
  const cost = costOf(model, usage);
  const bound = reservationFor(model, { inputBytes: Buffer.byteLength(JSON.stringify(request)) });
  expect(usage.outputTokens).toBe(4);
  expect(bound).toBe(cost);
  expect(cost).toBe(10_000n);

  const ws = await makeWorkspace(ctx.db, { balance: 100_000_000n });
  // The rate limiter must not be what refuses requests here.
  await ctx.db.workspace.update({ where: { id: ws.id }, data: { rpm: 100_000 } });
  const cap = BigInt(ADMITTED) * cost;
  const { key, secret } = await makeKey(ctx.db, ws.id, { spendCap: cap });

  const body = JSON.stringify({ model: model.id, ...request });
  const answers = await Promise.all(
    Array.from({ length: REQUESTS }, async () => {
      const res = await fetch(`${edge.url}/api/v1/evaluate`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body,
      });
      const json = (await res.json()) as { cost?: { amount: number }; error?: { code: string } };
      return { status: res.status, requestId: res.headers.get('x-request-id')!, json };
    }),
  );

  const accepted = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status !== 200);
  expect(accepted).toHaveLength(ADMITTED);
  expect(refused.every((a) => a.status === 402 && a.json.error?.code === 'spending_cap_exhausted')).toBe(true);
  expect(accepted.every((a) => a.json.cost?.amount === toAmount(cost))).toBe(true);

  // One charge per 200 answer, matched by request id, and no charge for anything else.
  const charges = await ctx.db.ledgerEntry.findMany({ where: { workspaceId: ws.id, kind: 'charge' } });
  expect(charges.map((c) => c.requestId).sort()).toEqual(accepted.map((a) => a.requestId).sort());
  expect(charges.every((c) => c.amount === -cost && c.apiKeyId === key.id)).toBe(true);

  const after = await ctx.db.apiKey.findUniqueOrThrow({ where: { id: key.id } });
  const charged = -charges.reduce((sum, c) => sum + c.amount, 0n);
  expect(after.spent).toBe(charged);
  expect(after.spent).toBeLessThanOrEqual(cap);
  expect(after.spent).toBe(cap);
  expect(after.reserved).toBe(0n);
  // No money held anywhere (a lease charged down to nothing keeps its row until it is given back or expires).
  expect(await ctx.db.reservation.count({ where: { workspaceId: ws.id, state: 'held', amount: { gt: 0n } } })).toBe(0);
  expect((await ctx.db.workspace.findUniqueOrThrow({ where: { id: ws.id } })).balance).toBe(100_000_000n - charged);
  // The provider was asked once per admitted request, never for a refused one.
  expect(sim.requests().filter((r) => r.channel === 'race')).toHaveLength(ADMITTED);
}, 120_000);
