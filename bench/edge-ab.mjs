// bench/edge-ab: two edges side by side on the same stores and sim, one per environment, measured in alternating
// passes of chat completions (CONCURRENCY, default 32), so that drift in the machine's load touches both alike.
// Prints each pass's req/s and the edge's CPU ms per request (/proc), then the medians and the ratio B ÷ A.
// WORKLOAD=evaluate drives POST /api/v1/evaluate instead, through one evaluate-worker both edges share.
// Usage: npm run bench -- edge-ab '<A env as k=v,k=v>' '<B env>' [passes, default 6]
// e.g.  npm run bench -- edge-ab '' 'OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9,OTEL_TRACES_SAMPLER_ARG=0'
import { cpuMs } from './lib/cpu.mjs';
import { measure, untilAnswers } from './lib/load.mjs';
import { startEdge, startService, startSim } from './lib/processes.mjs';
import { seedKey, seedSim, withStack } from './lib/stack.mjs';
import { int, ms, printTable } from './lib/table.mjs';

const CONCURRENCY = Number(process.env.CONCURRENCY ?? 32);
const envOf = (arg = '') =>
  Object.fromEntries(
    arg
      .split(',')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
const variants = [
  { name: 'A', extra: envOf(process.argv[2]) },
  { name: 'B', extra: envOf(process.argv[3]) },
];
const passes = Number(process.argv[4] ?? 6);
const evaluate = process.env.WORKLOAD === 'evaluate';
const path = evaluate ? '/api/v1/evaluate' : '/v1/chat/completions';
const body = JSON.stringify(
  evaluate
    ? {
        model: 'sim/eval-1',
        state: { transcript: 'The customer asked for a refund.' },
        questions: { resolved: { type: 'boolean', instructions: 'Resolved?' } },
      }
    : {
        model: 'sim/chat-1',
        max_tokens: 32,
        messages: [{ role: 'user', content: 'Name three colours of the sea at dawn.' }],
      },
);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

await withStack(async ({ env, db }) => {
  const sim = await startSim();
  try {
    await seedSim(db, sim.url);
    const { auth } = await seedKey(db, { unlimited: true });
    const worker = evaluate ? await startService('evaluate-worker', env) : undefined;
    for (const v of variants) {
      v.edge = await startEdge(env, v.extra);
      v.target = {
        url: `${v.edge.url}${path}`,
        headers: { 'content-type': 'application/json', ...auth },
        body,
        check: (status) => (status === 200 ? null : `status ${status}`),
      };
      await untilAnswers(v.target);
      await measure(v.target, { concurrency: CONCURRENCY, durationMs: 3000, warmupMs: 0 });
      v.rps = [];
      v.cpu = [];
    }
    const rows = [];
    for (let i = 0; i < passes; i++) {
      for (const v of i % 2 ? [...variants].reverse() : variants) {
        const before = cpuMs(v.edge.pid);
        const r = await measure(v.target, { concurrency: CONCURRENCY, durationMs: 3000, warmupMs: 500 });
        const cpu = (cpuMs(v.edge.pid) - before) / r.answered;
        v.rps.push(r.rps);
        v.cpu.push(cpu);
        rows.push([String(i + 1), v.name, int(r.rps), ms(r.p50), ms(cpu)]);
      }
    }
    printTable(['pass', 'edge', 'req/s', 'p50 ms', 'edge CPU ms/req'], rows);
    const [a, b] = variants;
    console.log(`A ${JSON.stringify(a.extra)}: median ${int(median(a.rps))} req/s, ${ms(median(a.cpu))} ms CPU/req`);
    console.log(`B ${JSON.stringify(b.extra)}: median ${int(median(b.rps))} req/s, ${ms(median(b.cpu))} ms CPU/req`);
    const rpsRatio = (median(b.rps) / median(a.rps)).toFixed(2);
    console.log(`B ÷ A: req/s ${rpsRatio}x, CPU/req ${(median(b.cpu) / median(a.cpu)).toFixed(2)}x`);
    for (const v of variants) await v.edge.stop();
    await worker?.stop();
  } finally {
    await sim.stop();
  }
});
