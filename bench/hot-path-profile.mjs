// bench/hot-path-profile: where the CPU goes on the paid hot path. Starts the edge under `node --cpu-prof`, drives
// non-streamed chat completions through it at concurrency 32 (DURATION_MS, default 5 s), stops it so that V8 writes
// the profile, and prints the functions with the most self time, grouped by where their code lives. With the
// argument `evaluate`, drives POST /api/v1/evaluate instead and profiles the evaluate-worker as well.
// For chat, the floor gateway (lib/floor-proxy.mjs: node:http + undici, nothing else) is then profiled under the
// same load, so that what the edge spends beyond a bare pass-through reads off the two tables (self ms per request).
// The .cpuprofile files are kept (paths printed) for Chrome DevTools or speedscope.
// CONCURRENCY=<n> (default 32) sets the load.
// Usage: npm run bench -- hot-path-profile [evaluate]
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DURATION_MS, measure, untilAnswers } from './lib/load.mjs';
import { startEdge, startFloorProxy, startService, startSim } from './lib/processes.mjs';
import { seedKey, seedSim, withStack } from './lib/stack.mjs';
import { int, printTable } from './lib/table.mjs';

const CONCURRENCY = Number(process.env.CONCURRENCY ?? 32);
const workload = process.argv[2] === 'evaluate' ? 'evaluate' : 'chat';
const edgeDir = mkdtempSync(join(tmpdir(), 'gensvc-prof-edge-'));
const workerDir = mkdtempSync(join(tmpdir(), 'gensvc-prof-worker-'));
const floorDir = mkdtempSync(join(tmpdir(), 'gensvc-prof-floor-'));
const prof = (dir) => ['--cpu-prof', `--cpu-prof-dir=${dir}`];
// Each profile covers its process from its start: samples before the load began (start-up, module loading, the
// warm-up) are left out of the sums.
const skipMs = { edge: 0, worker: 0, floor: 0 };
// Requests answered in each profiled window, for self time per request.
const answered = { edge: 0, floor: 0 };

const bodies = {
  chat: {
    path: '/v1/chat/completions',
    body: {
      model: 'sim/chat-1',
      max_tokens: 32,
      messages: [{ role: 'user', content: 'Name three colours of the sea at dawn.' }],
    },
  },
  evaluate: {
    path: '/api/v1/evaluate',
    body: {
      model: 'sim/eval-1',
      state: { transcript: 'The customer asked for a refund.' },
      questions: { resolved: { type: 'boolean', instructions: 'Resolved?' } },
    },
  },
};

await withStack(async ({ env, db }) => {
  const sim = await startSim();
  let worker;
  try {
    await seedSim(db, sim.url);
    const { auth } = await seedKey(db, { unlimited: true });
    const spawned = Date.now();
    if (workload === 'evaluate') worker = await startService('evaluate-worker', env, { nodeArgs: prof(workerDir) });
    const edge = await startEdge(env, {}, prof(edgeDir));
    const target = {
      url: `${edge.url}${bodies[workload].path}`,
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify(bodies[workload].body),
      check: (status) => (status === 200 ? null : `status ${status}`),
    };
    await untilAnswers(target);
    await measure(target, { concurrency: CONCURRENCY, durationMs: 1000, warmupMs: 0 });
    skipMs.edge = Date.now() - spawned;
    skipMs.worker = skipMs.edge;
    const r = await measure(target, { concurrency: CONCURRENCY, warmupMs: 0 });
    answered.edge = r.n;
    await edge.stop();
    await worker?.stop();
    console.log(
      `bench/hot-path-profile (${workload}): ${int(r.rps)} req/s at concurrency ${CONCURRENCY} for ` +
        `${DURATION_MS / 1000} s (profiled)`,
    );
    if (workload === 'chat') {
      const started = Date.now();
      const floor = await startFloorProxy(sim.url, prof(floorDir));
      const viaFloor = {
        ...target,
        url: `${floor.url}/ch/sim-openai/v1/chat/completions`,
        headers: { 'content-type': 'application/json', authorization: 'Bearer sim-secret' },
        body: JSON.stringify({ ...bodies.chat.body, model: 'chat-1' }),
      };
      await untilAnswers(viaFloor);
      await measure(viaFloor, { concurrency: CONCURRENCY, durationMs: 1000, warmupMs: 0 });
      skipMs.floor = Date.now() - started;
      const f = await measure(viaFloor, { concurrency: CONCURRENCY, warmupMs: 0 });
      answered.floor = f.n;
      await floor.stop();
      console.log(
        `floor gateway: ${int(f.rps)} req/s at concurrency ${CONCURRENCY} for ${DURATION_MS / 1000} s (profiled)`,
      );
    }
  } finally {
    await sim.stop();
  }
});

summarise('edge', edgeDir, skipMs.edge, answered.edge);
if (workload === 'evaluate') summarise('evaluate-worker', workerDir, skipMs.worker, answered.edge);
if (workload === 'chat') summarise('floor gateway', floorDir, skipMs.floor, answered.floor);

/** Prints the profile's self time by area and by function: share of the samples, and ms per request answered. */
function summarise(name, dir, skip, requests) {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile was written to ${dir}`);
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  let at = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0;
    at += dt;
    if (at / 1000 < skip) continue;
    const node = byId.get(profile.samples[i]);
    self.set(node, (self.get(node) ?? 0) + dt);
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const area = (url) => {
    if (!url) return '(native / idle / gc)';
    const m = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(url);
    if (m) return m[1];
    const g = /\/(libs|services)\/([^/]+)\//.exec(url);
    if (g) return `${g[1]}/${g[2]}`;
    return url.startsWith('node:') ? 'node core' : url;
  };
  const groups = new Map();
  const fns = new Map();
  for (const [node, t] of self) {
    const a = area(node.callFrame.url);
    groups.set(a, (groups.get(a) ?? 0) + t);
    const key = `${node.callFrame.functionName || '(anonymous)'}  ${a}`;
    fns.set(key, (fns.get(key) ?? 0) + t);
  }
  const pct = (t) => `${((100 * t) / total).toFixed(1)}%`;
  // timeDeltas are µs.
  const perRequest = (t) => (t / 1000 / requests).toFixed(3);
  console.log(
    `${name}: self time by where the code lives (${requests} requests; ${perRequest(total)} ms of samples per ` +
      `request, idle included)`,
  );
  printTable(
    ['where', 'self', 'ms/request'],
    [...groups]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 20)
      .map(([a, t]) => [a, pct(t), perRequest(t)]),
  );
  console.log(`${name}: top functions by self time`);
  printTable(
    ['function', 'self', 'ms/request'],
    [...fns]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 25)
      .map(([f, t]) => [f, pct(t), perRequest(t)]),
  );
  console.log(`${name} profile: ${join(dir, file)}`);
}
