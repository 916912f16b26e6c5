// bench/evaluate: POST /evaluate straight to the upstream-sim against POST /api/v1/evaluate through gensvc (the edge
// and an evaluate-worker as their own processes: authentication, rate limit, the hold on the edge's budget lease, a
// real BullMQ job through Redis, the worker's upstream call and answer validation, its reply on the edge's channel,
// and the charge written before the answer), and through gensvc×2 (the same, alternating between two edge replicas
// sharing one worker, Postgres and Redis), at concurrency 1 and 32, DURATION_MS per case after WARMUP_MS, keep-alive
// connections. Overhead = gensvc percentile − direct percentile from the same run.
// The floor row is the bare BullMQ hop (lib/floor-queue.mjs): a node:http server that adds the job and awaits its
// reply on a pub/sub channel, and a plain BullMQ Worker that calls the sim and publishes the reply, on the same Redis;
// no auth, no billing. Each case meters CPU ms per request (/proc utime+stime over the case, warm-up included) of
// every process it crosses; all share the machine's cores, so req/s ≈ cores ÷ their sum.
// Before the first case every target serves JIT_WARMUP_MS (default 3 s) at concurrency 32, unmeasured, as bench/chat
// does, so that no case measures processes still below V8's optimising tier.
// Usage: npm run bench -- evaluate
import { DURATION_MS, WARMUP_MS, measure, untilAnswers } from './lib/load.mjs';
import { CORES, harnessCpuSources, measureCpu, pidsCpuMs, printCpuTable, totalCpu } from './lib/cpu.mjs';
import { gensvc } from './lib/gensvc.mjs';
import { startEdge, startFloorQueue, startService, startSim } from './lib/processes.mjs';
import { rssSampler } from './lib/rss.mjs';
import { seedKey, seedSim, withStack } from './lib/stack.mjs';
import { int, ms, printErrors, printTable, ratio, reportFigures, verdict } from './lib/table.mjs';

const CONCURRENCIES = [1, 32];
const NAMES = ['direct', 'gensvc', 'gensvc×2', 'floor'];
const TARGET_OVERHEAD_MS = 2;
const TARGET_RPS = 1000;

// One question of each type against a small shared state: the request a typical caller sends.
const request = (model) =>
  JSON.stringify({
    model,
    state: { transcript: 'The customer asked for a refund and the agent offered store credit instead.' },
    questions: {
      resolved: { type: 'boolean', instructions: 'Was the customer’s request resolved?' },
      politeness: { type: 'score', instructions: 'How polite was the agent?', criteria: ['rude', 'neutral', 'polite'] },
      topic: {
        type: 'choice',
        instructions: 'What was the request about?',
        choices: ['refund', 'exchange', 'complaint'],
      },
    },
  });
const check = (status, text) =>
  status !== 200 ? `status ${status}` : text.includes('"answers"') ? null : `no answers: ${text.slice(0, 200)}`;

await withStack(async ({ env, db }) => {
  const sim = await startSim();
  const procs = [sim];
  try {
    await seedSim(db, sim.url);
    const { auth, workspaceId } = await seedKey(db, { unlimited: true });
    const worker = await startService('evaluate-worker', env);
    procs.push(worker);
    const edge = await startEdge(env);
    procs.push(edge);
    const edge2 = await startEdge(env);
    procs.push(edge2);
    const floor = await startFloorQueue(env, sim.url);
    procs.push(...floor);
    const redis = gensvc('queue').createRedisConnection(env.REDIS_URL, { name: 'bench:cpu' });
    // The processes each case crosses: [HTTP front (edge or floor server), worker].
    const crossed = {
      direct: [[], []],
      gensvc: [[edge.pid], [worker.pid]],
      'gensvc×2': [[edge.pid, edge2.pid], [worker.pid]],
      floor: floor.map((p) => [p.pid]),
    };
    const cpuSources = (name) => ({
      'edge/server': pidsCpuMs(...crossed[name][0]),
      worker: pidsCpuMs(...crossed[name][1]),
      ...harnessCpuSources({ simPid: sim.pid, redis, db }),
    });

    const json = { 'content-type': 'application/json' };
    const targets = {
      direct: {
        url: `${sim.url}/ch/sim-evaluate/evaluate`,
        headers: { ...json, authorization: 'Bearer sim-secret' },
        body: request('eval-1'),
        check,
      },
      gensvc: { url: `${edge.url}/api/v1/evaluate`, headers: { ...json, ...auth }, body: request('sim/eval-1'), check },
      'gensvc×2': {
        urls: [edge, edge2].map((e) => `${e.url}/api/v1/evaluate`),
        headers: { ...json, ...auth },
        body: request('sim/eval-1'),
        check,
      },
      floor: { url: `${floor[0].url}/evaluate`, headers: json, body: request('eval-1'), check },
    };
    for (const t of Object.values(targets)) await untilAnswers(t);
    let gensvcAnswers = 0;
    const jitWarmupMs = Number(process.env.JIT_WARMUP_MS ?? 3000);
    for (const name of NAMES) {
      const warm = await measure(targets[name], { concurrency: 32, durationMs: jitWarmupMs, warmupMs: 0 });
      if (name === 'gensvc' || name === 'gensvc×2') gensvcAnswers += warm.answered;
    }

    const edgeRss = rssSampler(edge.pid);
    const workerRss = rssSampler(worker.pid);
    const results = [];
    for (const concurrency of CONCURRENCIES) {
      const row = { concurrency };
      for (const name of NAMES) row[name] = await measureCpu(targets[name], { concurrency }, cpuSources(name));
      gensvcAnswers += row.gensvc.answered + row['gensvc×2'].answered;
      results.push(row);
    }

    console.log(
      `bench/evaluate  node ${process.version}, ${DURATION_MS / 1000} s per case after ${WARMUP_MS / 1000} s ` +
        `warm-up, keep-alive; upstream: upstream-sim; 3 questions`,
    );
    const rows = [];
    for (const r of results) {
      for (const name of NAMES) {
        const x = r[name];
        const over = name === 'direct' ? null : { p50: x.p50 - r.direct.p50, p99: x.p99 - r.direct.p99 };
        rows.push([
          `c=${r.concurrency} ${name}`,
          int(x.rps),
          ms(x.p50),
          ms(x.p99),
          over ? ms(over.p50) : '-',
          over ? ms(over.p99) : '-',
          ratio(x.rps / r.direct.rps),
          String(x.errors),
        ]);
      }
    }
    printTable(
      ['case', 'req/s', 'p50 ms', 'p99 ms', 'p50 overhead ms', 'p99 overhead ms', 'req/s vs direct', 'errors'],
      rows,
    );
    for (const r of results) for (const name of NAMES) printErrors(`c=${r.concurrency} ${name}`, r[name]);

    const [one, many] = results;
    const over = one.gensvc.p50 - one.direct.p50;
    console.log('targets');
    console.log(
      `  c=1   gensvc p50 overhead ${ms(over)} ms (target ≤ ${TARGET_OVERHEAD_MS} ms): ` +
        `${verdict(over <= TARGET_OVERHEAD_MS)}`,
    );
    console.log(
      `  c=32  gensvc ${int(many.gensvc.rps)} req/s (target ≥ ${TARGET_RPS}): ` +
        `${verdict(many.gensvc.rps >= TARGET_RPS)}; direct ${int(many.direct.rps)} req/s`,
    );
    console.log(`  c=32  gensvc×2 ${int(many['gensvc×2'].rps)} req/s (two edges, one worker)`);
    console.log(
      `  floor (BullMQ hop, no auth, no billing): c=1 p50 overhead ${ms(one.floor.p50 - one.direct.p50)} ms; c=32 ` +
        `${int(many.floor.rps)} req/s`,
    );
    console.log(`  c=32  gensvc ${ratio(many.gensvc.rps / many.floor.rps)} the bare BullMQ hop`);
    reportFigures({ 'evaluate c32': { value: many.gensvc.rps, baseline: many.floor.rps } });
    console.log('CPU ms per request (/proc utime+stime over each case, warm-up included; direct has no gateway)');
    printCpuTable(
      results.flatMap((r) =>
        NAMES.map((name) => ({ label: `c=${r.concurrency} ${name}`, cpu: r[name].cpu, rps: r[name].rps })),
      ),
    );
    const bound = (name) => (CORES * 1000) / totalCpu(many[name].cpu);
    console.log(
      `the floor at c=32: ${CORES} cores ÷ total CPU per request allow ${int(bound('floor'))} req/s with a plain ` +
        `BullMQ worker, ` +
        `${int(bound('gensvc'))} for gensvc (target ≥ ${TARGET_RPS}); no gateway at all: ${int(bound('direct'))}`,
    );
    redis.disconnect();
    console.log(
      `peak RSS over the run: edge ${edgeRss.stop().toFixed(0)} MiB, ` +
        `evaluate-worker ${workerRss.stop().toFixed(0)} MiB`,
    );

    // Billing was on: every answer gensvc gave (warm-ups and the readiness probes included) is one charge in the
    // ledger, written before the answer was sent.
    const expected = gensvcAnswers + 2;
    const charges = await db.ledgerEntry.count({ where: { workspaceId, kind: 'charge' } });
    console.log(
      `billing: ${charges} charges in the ledger for ${expected} answers from gensvc` +
        `${charges === expected ? '' : '  (MISMATCH)'}`,
    );
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
});
