import { channelRepository, modelRepository } from '@gensvc/db';
import { makeKey, makeWorkspace, useTestContext } from '@gensvc/testing';
import { Agent, request } from 'undici';
import { startSim, type Sim } from '../../../upstream-sim/src';
import { startEdge, type EdgeUnderTest } from '../edge-under-test';
import { Catalog } from '@gensvc/upstream';

const ctx = useTestContext();
let sim: Sim;
let edge: EdgeUnderTest;
let secret: string;
jest.setTimeout(120_000);

beforeAll(async () => {
  sim = await startSim({ maxRecords: 10 });
  const ch = await channelRepository.create(ctx.db, { name: 'oa', kind: 'openai', baseUrl: `${sim.url}/ch/oa`, secret: 's' });
  await modelRepository.create(ctx.db, { id: 'sim/chat-1', kind: 'chat', inputPricePerMTok: 1n, outputPricePerMTok: 1n, routes: [{ channelId: ch.id }] });
  const ws = await makeWorkspace(ctx.db, { balance: 1_000_000_000_000n });
  await ctx.db.workspace.update({ where: { id: ws.id }, data: { rpm: 10_000_000 } });
  secret = (await makeKey(ctx.db, ws.id)).secret;
  edge = await startEdge(ctx, { catalog: new Catalog(ctx.db, { ttlMs: 60_000 }) });
});
afterAll(async () => { await edge.close(); await sim.close(); });

const agent = new Agent({ keepAliveTimeout: 30_000, connections: 64 });
const body = JSON.stringify({ model: 'sim/chat-1', messages: [{ role: 'user', content: 'hi there' }] });
const direct = JSON.stringify({ model: 'chat-1', messages: [{ role: 'user', content: 'hi there' }] });

async function once(url: string, payload: string, auth: string) {
  const r = await request(url, { dispatcher: agent, method: 'POST', headers: { 'content-type': 'application/json', authorization: auth }, body: payload });
  await r.body.text();
  if (r.statusCode !== 200) throw new Error(`status ${r.statusCode}`);
}

async function p50(url: string, payload: string, auth: string, n: number) {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await once(url, payload, auth);
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(n / 2)]!, p90: times[Math.floor(n * 0.9)]! };
}

async function rps(url: string, payload: string, auth: string, conc: number, ms: number) {
  let count = 0;
  const end = Date.now() + ms;
  await Promise.all(Array.from({ length: conc }, async () => { while (Date.now() < end) { await once(url, payload, auth); count++; } }));
  return count / (ms / 1000);
}

it('measures', async () => {
  const simUrl = `${sim.url}/ch/oa/v1/chat/completions`;
  const edgeUrl = `${edge.url}/v1/chat/completions`;
  await p50(simUrl, direct, 'Bearer s', 300);
  await p50(edgeUrl, body, `Bearer ${secret}`, 300);
  const d = await p50(simUrl, direct, 'Bearer s', 2000);
  const e = await p50(edgeUrl, body, `Bearer ${secret}`, 2000);
  const dr = await rps(simUrl, direct, 'Bearer s', 32, 3000);
  const er = await rps(edgeUrl, body, `Bearer ${secret}`, 32, 3000);
  console.log(JSON.stringify({ direct: d, edge: e, overheadP50: e.p50 - d.p50, directRps: dr, edgeRps: er }));
});
