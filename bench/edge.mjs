// bench/edge: what the edge costs on every request, as ratios against a baseline measured in the same run.
//   baseline   a bare node:http server answering a small JSON body (the floor for any Node gateway here)
//   healthz    the edge's GET /healthz (Express, request id, metrics, access log; no I/O)
//   balance    GET /api/v1/me/balance with a valid key: authentication (cached key look-up) + two Postgres reads
//   balance-nocache  the same with KEY_CACHE_TTL_MS=0: every request also looks its key up in Postgres
// Each runs for DURATION_MS at CONCURRENCY connections with keep-alive, after a warm-up; prints p50/p99 latency,
// requests/s and the edge's peak RSS. Usage: npm run bench -- edge   (after npm test or npm start has built).
import { createServer } from 'node:http';
import { DURATION_MS, WARMUP_MS, measure } from './lib/load.mjs';
import { startEdge } from './lib/processes.mjs';
import { rssSampler } from './lib/rss.mjs';
import { seedKey, withStack } from './lib/stack.mjs';
import { printErrors } from './lib/table.mjs';

const CONCURRENCY = Number(process.env.CONCURRENCY ?? 32);

await withStack(async ({ env, db }) => {
  const { auth } = await seedKey(db);
  const load = (url, headers) => measure({ url, headers }, { concurrency: CONCURRENCY });

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
    const rss = rssSampler(edge.pid);
    results[name] = { ...(await load(`${edge.url}${path}`, headers)), peakRssMiB: rss.stop() };
    await edge.stop();
  }

  const base = results.baseline;
  console.log(
    `bench/edge  node ${process.version}, ${CONCURRENCY} connections, ${DURATION_MS / 1000} s each (after ` +
      `${WARMUP_MS / 1000} s warm-up)`,
  );
  console.log('case             req/s     p50 ms   p99 ms   req/s vs baseline   peak RSS MiB');
  for (const [name, r] of Object.entries(results)) {
    console.log(
      `${name.padEnd(16)} ${r.rps.toFixed(0).padStart(6)}   ${r.p50.toFixed(2).padStart(6)}   ` +
        `${r.p99.toFixed(2).padStart(6)}   ${(r.rps / base.rps).toFixed(2).padStart(17)}   ` +
        `${r.peakRssMiB ? r.peakRssMiB.toFixed(0).padStart(12) : '           -'}`,
    );
  }
  for (const [name, r] of Object.entries(results)) printErrors(name, r);
  const cached = results.balance.rps / results['balance-nocache'].rps;
  console.log(`key cache: ${cached.toFixed(2)}x the throughput of looking every key up in Postgres`);
});
