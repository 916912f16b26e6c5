// bench/edge: what the edge costs on every request, as ratios against a baseline measured in the same run.
//   baseline   a bare node:http server answering a small JSON body (the floor for any Node gateway here)
//   healthz    the edge's GET /healthz (Express, request id, metrics, access log; no I/O)
//   balance    GET /api/v1/me/balance with a valid key: authentication (cached key look-up) + two Postgres reads
//   balance-nocache  the same with KEY_CACHE_TTL_MS=0: every request also looks its key up in Postgres
// Each runs for DURATION_MS at CONCURRENCY connections with keep-alive, after a warm-up; prints p50/p99 latency,
// requests/s and the edge's peak RSS. Usage: npm run bench -- edge   (after npm test or npm start has built).
import { spawn } from 'node:child_process';
import { createServer, Agent, request } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'services', 'fleet', 'package.json'));
const { startStack, freePort, stopChild, waitForHttp } = require('@gensvc/local-stack');
const { createDb, migrate, workspaceRepository, apiKeyRepository } = require('@gensvc/db');
const { newApiKey, SCOPES } = require('@gensvc/auth');

const DURATION_MS = Number(process.env.DURATION_MS ?? 5000);
const WARMUP_MS = 1000;
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 32);

async function load(url, headers) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const once = () =>
    new Promise((resolve, reject) => {
      const started = process.hrtime.bigint();
      const req = request(url, { agent, headers }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(Number(process.hrtime.bigint() - started) / 1e6) : reject(new Error(`status ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end();
    });
  const run = async (ms, samples) => {
    const until = Date.now() + ms;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (Date.now() < until) samples?.push(await once());
      }),
    );
  };
  await run(WARMUP_MS);
  const samples = [];
  const started = Date.now();
  await run(DURATION_MS, samples);
  const seconds = (Date.now() - started) / 1000;
  agent.destroy();
  samples.sort((a, b) => a - b);
  const pick = (q) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))];
  return { rps: samples.length / seconds, p50: pick(0.5), p99: pick(0.99), n: samples.length };
}

function rssSampler(pid) {
  let peak = 0;
  const read = () => {
    try {
      const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      peak = Math.max(peak, kb);
    } catch {}
  };
  const timer = setInterval(read, 50);
  return { stop: () => (clearInterval(timer), read(), peak / 1024) };
}

async function startEdge(env, extra) {
  const port = await freePort();
  const child = spawn(process.execPath, [join(root, 'services', 'edge', 'dist', 'main.js')], {
    env: { ...env, ...extra, PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(`${base}/readyz`, { timeoutMs: 10_000, gone: () => (child.exitCode !== null ? `edge exited (${child.exitCode})` : null) });
  return { base, child, stop: () => stopChild(child) };
}

const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-bench-'));
const stack = await startStack({ dataDir, persistent: false, env: process.env });
try {
  const env = {
    PATH: process.env.PATH,
    ...stack.env,
    SIGNING_SECRET: 'b'.repeat(64),
    QUEUE_PREFIX: `bench${process.pid}`,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  await migrate(env.DATABASE_URL);
  const db = createDb(env.DATABASE_URL, { max: 2 });
  const ws = await workspaceRepository.create(db, { name: 'bench', tier: 'payg', balance: 10_000_000n });
  const k = newApiKey();
  await apiKeyRepository.create(db, { workspaceId: ws.id, name: 'bench', prefix: k.prefix, hash: k.hash, scopes: [...SCOPES] });
  await db.$disconnect();
  const auth = { authorization: `Bearer ${k.secret}` };

  const results = {};
  const bare = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end('{"status":"ok"}');
  });
  await new Promise((r) => bare.listen(0, '127.0.0.1', r));
  results.baseline = await load(`http://127.0.0.1:${bare.address().port}/`, {});
  bare.close();

  for (const [name, extra, path, headers] of [
    ['healthz', {}, '/healthz', {}],
    ['balance', {}, '/api/v1/me/balance', auth],
    ['balance-nocache', { KEY_CACHE_TTL_MS: '0' }, '/api/v1/me/balance', auth],
  ]) {
    const edge = await startEdge(env, extra);
    const rss = rssSampler(edge.child.pid);
    results[name] = { ...(await load(`${edge.base}${path}`, headers)), peakRssMiB: rss.stop() };
    await edge.stop();
  }

  const base = results.baseline;
  console.log(`bench/edge  node ${process.version}, ${CONCURRENCY} connections, ${DURATION_MS / 1000} s each (after ${WARMUP_MS / 1000} s warm-up)`);
  console.log('case             req/s     p50 ms   p99 ms   req/s vs baseline   peak RSS MiB');
  for (const [name, r] of Object.entries(results)) {
    console.log(
      `${name.padEnd(16)} ${r.rps.toFixed(0).padStart(6)}   ${r.p50.toFixed(2).padStart(6)}   ${r.p99.toFixed(2).padStart(6)}   ${(r.rps / base.rps).toFixed(2).padStart(17)}   ${r.peakRssMiB ? r.peakRssMiB.toFixed(0).padStart(12) : '           -'}`,
    );
  }
  const cached = results.balance.rps / results['balance-nocache'].rps;
  console.log(`key cache: ${cached.toFixed(2)}x the throughput of looking every key up in Postgres`);
} finally {
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
