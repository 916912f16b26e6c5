// Budget leases and group-commit charges across real edge processes sharing Postgres and Redis, proxying chat calls to
// the upstream-sim: a cap is never passed however the calls are spread, no caller is refused while money remains in
// another replica's lease, a top-up is usable at once everywhere, and a SIGKILL leaves the books balanced.
import { modelRepository, workspaceRepository } from '@gensvc/db';
import { freePort } from '@gensvc/local-stack';
import {
  addSimChannel,
  eventually,
  makeKey,
  makeWorkspace,
  spawnService,
  useTestContext,
  waitForHttp,
  type ServiceProcess,
} from '@gensvc/testing';
import { startSim, type Sim } from '../../../upstream-sim/src';
import { expectBalanced, killUnderLoad } from '../billing-test-support';
import { startEdge, type EdgeUnderTest } from '../edge-under-test';

const ctx = useTestContext();
let sim: Sim;
const replicas: { url: string; proc: ServiceProcess }[] = [];

// No input price and an output cap the sim's answer always reaches: each call's hold is exactly its cost.
const OUT_PRICE = 1_000_000n; // per million output tokens
const MAX_TOKENS = 3;
const CALL_COST = (OUT_PRICE * BigInt(MAX_TOKENS)) / 1_000_000n; // 3 micro-units
const CHAT = 'sim/chat-leased';

async function startReplica(): Promise<{ url: string; proc: ServiceProcess }> {
  const port = await freePort();
  const proc = spawnService('edge', { ...ctx.env, PORT: String(port), OPS_PORT: '0' });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/readyz`, proc);
  return { url, proc };
}

beforeAll(async () => {
  sim = await startSim();
  const channel = await addSimChannel(ctx.db, sim.url, { name: 'oa', kind: 'openai' });
  await modelRepository.create(ctx.db, {
    id: CHAT,
    kind: 'chat',
    inputPricePerMTok: 0n,
    outputPricePerMTok: OUT_PRICE,
    maxOutputTokens: 4096,
    routes: [{ channelId: channel.id }],
  });
  replicas.push(...(await Promise.all([startReplica(), startReplica()])));
}, 90_000);
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.proc.stop()));
  await sim?.close();
});

/** A chat call; the status it was answered with. */
const chat = (url: string, secret: string, n = 0) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: CHAT, max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: `call ${n}` }] }),
  }).then(async (res) => ({ status: res.status, requestId: res.headers.get('x-request-id')!, body: await res.text() }));

/** The books of one workspace, once no lease holds anything: every lease given back or released. */
async function books(workspaceId: string) {
  const ledger = await ctx.db.ledgerEntry.findMany({ where: { workspaceId, kind: 'charge' } });
  const keys = await ctx.db.apiKey.findMany({ where: { workspaceId } });
  return { ledger, keys };
}

it('never charges past a cap, spread over two replicas, and refuses no caller while money remains', async () => {
  const ws = await makeWorkspace(ctx.db, { balance: 10_000_000n });
  await ctx.db.workspace.update({ where: { id: ws.id }, data: { rpm: 100_000 } }); // the cap is what is tested here
  const { key, secret } = await makeKey(ctx.db, ws.id, { spendCap: 100n * CALL_COST });
  // 500 racing calls, alternating replicas.
  const answers = await Promise.all(Array.from({ length: 500 }, (_, i) => chat(replicas[i % 2]!.url, secret, i)));
  const ok = answers.filter((a) => a.status === 200);
  expect(answers.filter((a) => a.status !== 200 && a.status !== 402)).toEqual([]);
  expect(ok).toHaveLength(100);

  // Every answered call is charged once, within a flush: the key's spent is the cap exactly.
  const deadline = Date.now() + 5_000;
  let b = await books(ws.id);
  while (b.ledger.length < ok.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    b = await books(ws.id);
  }
  expect(b.ledger).toHaveLength(100);
  expect(new Set(b.ledger.map((e) => e.requestId))).toEqual(new Set(ok.map((a) => a.requestId)));
  expect(b.ledger.every((e) => e.amount === -CALL_COST && e.apiKeyId === key.id)).toBe(true);
  const k = b.keys.find((x) => x.id === key.id)!;
  expect(k.spent).toBe(100n * CALL_COST);
  expect(k.spent + k.reserved).toBeLessThanOrEqual(k.spendCap!);
  await expectBalanced(ctx.db, ws.id);
}, 60_000);

it('leases in blocks and writes charges in groups: one statement at once when idle, one for a burst', async () => {
  const ws = await makeWorkspace(ctx.db, { balance: 10_000_000n });
  await ctx.db.workspace.update({ where: { id: ws.id }, data: { rpm: 100_000 } });
  const { key, secret } = await makeKey(ctx.db, ws.id);
  const edge: EdgeUnderTest = await startEdge(ctx);
  const leases = edge.deps.holds.leases;
  try {
    const before = { ...leases.stats };
    expect((await chat(edge.url, secret)).status).toBe(200);
    await leases.flushed();
    // Idle: the charge went at once, in a statement of its own, without waiting for a timer.
    expect(leases.stats.flushes - before.flushes).toBe(1);
    expect(leases.stats.leases - before.leases).toBe(1);

    // 200 calls over HTTP: far fewer leases than calls (a lease holds 64 calls' worth here), every call charged.
    const mid = { ...leases.stats };
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => chat(edge.url, secret, i)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    await leases.flushed();
    // (How many statements these 200 took depends on when their answers happened to end; the burst below is what
    // proves that charges ending together share one statement.)
    expect(leases.stats.charges - mid.charges).toBe(200);
    expect(leases.stats.leases - mid.leases).toBeLessThanOrEqual(Math.ceil(200 / 64) + 2);

    // Calls that end together are charged together: 150 held, then charged in one tick, make one statement.
    const owner = { workspaceId: ws.id, apiKeyId: key.id, requestId: 'req_burst' };
    const holds = await Promise.all(Array.from({ length: 150 }, () => leases.hold(owner, CALL_COST)));
    const burst = { ...leases.stats };
    for (const [i, h] of holds.entries())
      void leases.charge(h, { cost: CALL_COST, requestId: `req_burst_${i}`, model: CHAT });
    await leases.flushed();
    expect(leases.stats.flushes - burst.flushes).toBe(1);
    expect(leases.stats.charges - burst.charges).toBe(150);
    expect(await ctx.db.ledgerEntry.count({ where: { workspaceId: ws.id, kind: 'charge' } })).toBe(351);
  } finally {
    await edge.close();
  }
  // Closed, the edge gave back everything its leases held.
  expect(await ctx.db.reservation.count({ where: { workspaceId: ws.id, state: 'held' } })).toBe(0);
  await expectBalanced(ctx.db, ws.id);
}, 60_000);

it('keeps a lease in use alive by its tick (every 5 s), whatever its charges do', async () => {
  const ws = await makeWorkspace(ctx.db, { balance: 10_000_000n });
  const { key } = await makeKey(ctx.db, ws.id);
  const edge: EdgeUnderTest = await startEdge(ctx);
  const leases = edge.deps.holds.leases;
  try {
    const owner = { workspaceId: ws.id, apiKeyId: key.id, requestId: 'req_alive' };
    // A call held the whole time (a long stream): the lease never goes idle; a lone charge does not move its expiry.
    const long = await leases.hold(owner, CALL_COST);
    const expiry = async () =>
      (await ctx.db.reservation.findUniqueOrThrow({ where: { id: long.lease.id } })).expiresAt.getTime();
    const opened = await expiry();
    await eventually(
      async () => (await expiry()) > opened && true,
      'the tick pushes the expiry of a lease in use',
      8_000,
      200,
    );
    leases.charge(long, { cost: CALL_COST, requestId: 'req_alive_long', model: CHAT });
    await leases.flushed();
    expect(await ctx.db.ledgerEntry.count({ where: { workspaceId: ws.id, kind: 'charge' } })).toBe(1);
  } finally {
    await edge.close();
  }
  await expectBalanced(ctx.db, ws.id);
}, 30_000);

it('serves a workspace on every replica within a second of a top-up', async () => {
  const ws = await makeWorkspace(ctx.db, { balance: 0n });
  const { secret } = await makeKey(ctx.db, ws.id);
  for (const r of replicas) expect((await chat(r.url, secret)).status).toBe(402);
  await workspaceRepository.topUp(ctx.db, ws.id, 1_000_000n, 'test top-up');
  const started = Date.now();
  for (const r of replicas) {
    for (;;) {
      if ((await chat(r.url, secret)).status === 200) break;
      if (Date.now() - started > 1000) throw new Error('a replica still refused the topped-up workspace after 1 s');
      await new Promise((res) => setTimeout(res, 20));
    }
  }
  expect(Date.now() - started).toBeLessThan(1000);
});

it('shows a balance leases do not move: opening balance less the charges, on every replica', async () => {
  const opening = 10_000_000n;
  const ws = await makeWorkspace(ctx.db, { balance: opening });
  const { secret } = await makeKey(ctx.db, ws.id);
  for (let i = 0; i < 6; i++) expect((await chat(replicas[i % 2]!.url, secret, i)).status).toBe(200);
  // Each replica now holds a block of this workspace's money, far more than the six calls cost.
  const raw = (await ctx.db.workspace.findUniqueOrThrow({ where: { id: ws.id } })).balance;
  expect(raw).toBeLessThan(opening - 6n * CALL_COST);
  const charged = async () => (await books(ws.id)).ledger.reduce((sum, e) => sum - e.amount, 0n);
  await eventually(async () => (await charged()) === 6n * CALL_COST, 'the six charges written');
  for (const r of replicas) {
    const res = await fetch(`${r.url}/api/v1/me/balance`, { headers: { authorization: `Bearer ${secret}` } });
    const body = (await res.json()) as { amount: number; key: { spent: number } };
    expect(body.amount).toBeCloseTo(Number(opening - 6n * CALL_COST) / 1e6, 6);
    expect(body.key.spent).toBeCloseTo(Number(6n * CALL_COST) / 1e6, 6);
  }
});

it('keeps the books when an edge is SIGKILLed under load: nothing charged twice or unanswered', async () => {
  const ws = await makeWorkspace(ctx.db, { balance: 10_000_000n });
  await ctx.db.workspace.update({ where: { id: ws.id }, data: { rpm: 100_000 } });
  const { key, secret } = await makeKey(ctx.db, ws.id);
  const victim = await startReplica();
  const answers = await killUnderLoad(ctx.db, ws.id, victim.proc, (n) => chat(victim.url, secret, n), { answered: 51 });
  const answered = answers.filter((a) => a.status === 200);
  expect(answered.length).toBeGreaterThan(50);

  const { ledger, keys } = await books(ws.id);
  const answeredIds = new Set(answered.map((a) => a.requestId));
  // Nothing charged twice, nothing charged that was not answered 200.
  expect(new Set(ledger.map((e) => e.requestId)).size).toBe(ledger.length);
  expect(ledger.filter((e) => !answeredIds.has(e.requestId!))).toEqual([]);
  // A charge is durable within one flush of its answer: those still pending when the process died go uncharged.
  const uncharged = answered.length - ledger.length;
  expect(uncharged).toBeGreaterThanOrEqual(0);
  expect(uncharged).toBeLessThanOrEqual(64);
  const k = keys.find((x) => x.id === key.id)!;
  expect(k.reserved).toBe(0n);
  expect(k.spent).toBe(-ledger.reduce((s, e) => s + e.amount, 0n));
  await expectBalanced(ctx.db, ws.id);
  process.stdout.write(
    `SIGKILL under load: ${answered.length} answered, ${ledger.length} ` +
      `charged, ${uncharged} pending at the kill went uncharged\n`,
  );
}, 120_000);
