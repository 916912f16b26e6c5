// bench/chat: the same OpenAI chat workload three ways in one run, against the upstream-sim as the provider:
//   direct   POST {sim}/ch/sim-openai/v1/chat/completions (the floor: what any gateway adds is measured against it)
//   gensvc   POST {edge}/v1/chat/completions with a real key: authentication, rate limit, reservation, proxying and
//            settlement all on (the workspace's balance and rpm are too large to refuse anything)
//   gensvc×2 the same, alternating between two edge replicas that share Postgres and Redis (their budget leases
//            and rate limits are shared through the stores)
//   portkey  POST {portkey}/v1/chat/completions, Portkey's open-source gateway forwarding to the same sim path
//   floor    the same sim path through the thinnest correct Node pass-through (lib/floor-proxy.mjs: node:http in, an
//            undici Pool out, no auth, billing or logging): the least any Node gateway can add on this machine
// Each non-streamed and streamed (SSE, read to `data: [DONE]`), at concurrency 1 and 32, DURATION_MS per case after
// WARMUP_MS, keep-alive connections. Overhead = gateway percentile − direct percentile from the same run.
// Each case also meters CPU ms per request (/proc utime+stime over the case, warm-up included) of every process it
// crosses: the gateway, the sim, this load generator, Redis and Postgres. All of them share the machine's cores, so
// req/s ≈ cores ÷ their sum; the direct case is a gateway that costs nothing, the bound no gateway can pass.
// Before the first case every target serves JIT_WARMUP_MS (default 3 s) at concurrency 32 of each kind, unmeasured:
// a fresh Node process runs its code below V8's optimising tier for its first thousands of calls.
// Usage: npm run bench -- chat
import { DURATION_MS, WARMUP_MS, measure, untilAnswers } from './lib/load.mjs';
import { CORES, harnessCpuSources, measureCpu, pidsCpuMs, printCpuTable, totalCpu } from './lib/cpu.mjs';
import { gensvc } from './lib/gensvc.mjs';
import { startEdge, startFloorProxy, startPortkey, startSim } from './lib/processes.mjs';
import { rssSampler } from './lib/rss.mjs';
import { seedKey, seedSim, withStack } from './lib/stack.mjs';
import { int, ms, printErrors, printTable, ratio, reportFigures, verdict } from './lib/table.mjs';

const CONCURRENCIES = [1, 32];
const NAMES = ['direct', 'gensvc', 'gensvc×2', 'portkey', 'floor'];
const CHANNEL = 'sim-openai';
const TARGET_OVERHEAD_MS = 0.5;
/** The floors of `npm run bench` (scripts/bench.mjs): JSON at least 2× Portkey's throughput, streams 1.5×. */
const TARGET_VS_PORTKEY = { json: 2, stream: 1.5 };

const body = (model, stream) =>
  JSON.stringify({
    model,
    stream,
    max_tokens: 32,
    messages: [{ role: 'user', content: 'Name three colours of the sea at dawn.' }],
  });
const label = (r) => `${r.stream ? 'stream' : 'json'} c=${r.concurrency}`;
const ms3 = (v) => v.toFixed(3);
const checkJson = (status, text) =>
  status !== 200
    ? `status ${status}`
    : text.includes('"chat.completion"')
      ? null
      : `not a chat completion: ${text.slice(0, 200)}`;
// A stream is right when it ended cleanly: its last event is [DONE] (a cut stream ends with an error event instead).
const checkStream = (status, text) =>
  status !== 200
    ? `status ${status}`
    : text.trimEnd().endsWith('data: [DONE]')
      ? null
      : `stream did not end with [DONE]: …${text.slice(-200)}`;

await withStack(async ({ env, db }) => {
  const sim = await startSim();
  const procs = [sim];
  try {
    await seedSim(db, sim.url);
    const { auth, workspaceId } = await seedKey(db, { unlimited: true });
    const edge = await startEdge(env);
    procs.push(edge);
    const edge2 = await startEdge(env);
    procs.push(edge2);
    const portkey = await startPortkey();
    procs.push(portkey);
    const floor = await startFloorProxy(sim.url);
    procs.push(floor);
    const redis = gensvc('queue').createRedisConnection(env.REDIS_URL, { name: 'bench:cpu' });
    const gateways = {
      direct: [],
      gensvc: [edge.pid],
      'gensvc×2': [edge.pid, edge2.pid],
      portkey: [portkey.pid],
      floor: [floor.pid],
    };
    const cpuSources = (name) => ({
      gateway: pidsCpuMs(...gateways[name]),
      ...harnessCpuSources({ simPid: sim.pid, redis, db }),
    });

    const json = { 'content-type': 'application/json' };
    const targets = (stream) => {
      const check = stream ? checkStream : checkJson;
      return {
        direct: {
          url: `${sim.url}/ch/${CHANNEL}/v1/chat/completions`,
          headers: { ...json, authorization: 'Bearer sim-secret' },
          body: body('chat-1', stream),
          check,
        },
        gensvc: {
          url: `${edge.url}/v1/chat/completions`,
          headers: { ...json, ...auth },
          body: body('sim/chat-1', stream),
          check,
        },
        'gensvc×2': {
          urls: [edge, edge2].map((e) => `${e.url}/v1/chat/completions`),
          headers: { ...json, ...auth },
          body: body('sim/chat-1', stream),
          check,
        },
        portkey: {
          url: `${portkey.url}/v1/chat/completions`,
          headers: {
            ...json,
            authorization: 'Bearer sim-secret',
            'x-portkey-provider': 'openai',
            'x-portkey-custom-host': `${sim.url}/ch/${CHANNEL}/v1`,
          },
          body: body('chat-1', stream),
          check,
        },
        floor: {
          url: `${floor.url}/ch/${CHANNEL}/v1/chat/completions`,
          headers: { ...json, authorization: 'Bearer sim-secret' },
          body: body('chat-1', stream),
          check,
        },
      };
    };
    for (const stream of [false, true]) for (const t of Object.values(targets(stream))) await untilAnswers(t);
    let gensvcAnswers = 0;
    const jitWarmupMs = Number(process.env.JIT_WARMUP_MS ?? 3000);
    for (const stream of [false, true]) {
      const t = targets(stream);
      for (const name of NAMES) {
        const warm = await measure(t[name], { concurrency: 32, durationMs: jitWarmupMs, warmupMs: 0 });
        if (name === 'gensvc' || name === 'gensvc×2') gensvcAnswers += warm.answered;
      }
    }

    const edgeRss = rssSampler(edge.pid);
    const portkeyRss = rssSampler(portkey.pid);
    const results = [];
    for (const stream of [false, true]) {
      const t = targets(stream);
      for (const concurrency of CONCURRENCIES) {
        const row = { stream, concurrency };
        // Interleaved, so that drift in the machine's load touches them all alike.
        for (const name of NAMES) row[name] = await measureCpu(t[name], { concurrency }, cpuSources(name));
        gensvcAnswers += row.gensvc.answered + row['gensvc×2'].answered;
        results.push(row);
      }
    }
    const edgePeak = edgeRss.stop();
    const portkeyPeak = portkeyRss.stop();
    redis.disconnect();

    console.log(
      `bench/chat  node ${process.version}, ${DURATION_MS / 1000} s per case after ${WARMUP_MS / 1000} s warm-up, ` +
        `keep-alive; upstream: upstream-sim`,
    );
    const rows = [];
    for (const r of results) {
      for (const name of NAMES) {
        const x = r[name];
        const over = name === 'direct' ? null : { p50: x.p50 - r.direct.p50, p99: x.p99 - r.direct.p99 };
        rows.push([
          `${label(r)} ${name}`,
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
    for (const r of results) for (const name of NAMES) printErrors(`${label(r)} ${name}`, r[name]);

    console.log('targets');
    for (const r of results) {
      if (r.concurrency === 1) {
        const over = r.gensvc.p50 - r.direct.p50;
        console.log(
          `  ${r.stream ? 'stream' : 'json  '} c=1   gensvc p50 overhead ${ms(over)} ms (target ≤ ` +
            `${TARGET_OVERHEAD_MS} ms): ${verdict(over <= TARGET_OVERHEAD_MS)}; Portkey's ` +
            `${ms(r.portkey.p50 - r.direct.p50)} ms, the floor's ${ms(r.floor.p50 - r.direct.p50)} ms`,
        );
      }
      if (r.concurrency === 32) {
        const x = r.gensvc.rps / r.portkey.rps;
        const target = TARGET_VS_PORTKEY[r.stream ? 'stream' : 'json'];
        console.log(
          `  ${r.stream ? 'stream' : 'json  '} c=32  gensvc throughput ${ratio(x)} Portkey's (target ≥ ` +
            `${target}x): ${verdict(x >= target)}; the floor's ` +
            `${ratio(r.floor.rps / r.portkey.rps)}`,
        );
      }
    }
    // Read in its build (build/start-server.js): the stream reader sleeps 25 ms before the first event it relays.
    console.log("  (Portkey waits 25 ms before relaying a stream's first event: a setTimeout(25) in its SSE reader)");
    const row = (stream, concurrency) => results.find((r) => r.stream === stream && r.concurrency === concurrency);
    reportFigures({
      'chat JSON c32': { value: row(false, 32).gensvc.rps, baseline: row(false, 32).portkey.rps },
      'chat SSE c32': { value: row(true, 32).gensvc.rps, baseline: row(true, 32).portkey.rps },
      'chat JSON c1 added p50': {
        value: row(false, 1).gensvc.p50 - row(false, 1).direct.p50,
        baseline: row(false, 1).portkey.p50 - row(false, 1).direct.p50,
      },
    });
    console.log(`CPU ms per request (/proc utime+stime over each case, warm-up included; direct has no gateway)`);
    printCpuTable(
      results.flatMap((r) =>
        NAMES.map((name) => ({ label: `${label(r)} ${name}`, cpu: r[name].cpu, rps: r[name].rps })),
      ),
    );
    console.log(`the floor: req/s ≈ ${CORES} cores ÷ total CPU per request (every process shares them)`);
    for (const r of results) {
      const total = Object.fromEntries(NAMES.map((n) => [n, totalCpu(r[n].cpu)]));
      const gw = Object.fromEntries(NAMES.map((n) => [n, r[n].cpu.gateway + r[n].cpu.redis + r[n].cpu.postgres]));
      // Where gensvc's edge (and the store work it causes) sits between the floor (0) and Portkey (1), in CPU per
      // request.
      const between = (gw.gensvc - gw.floor) / (gw.portkey - gw.floor);
      const need = (row) => TARGET_VS_PORTKEY[row.stream ? 'stream' : 'json'];
      console.log(
        `  ${label(r).padEnd(11)} a zero-cost gateway: ≤ ${ratio(total.portkey / total.direct)} Portkey's req/s; ` +
          `the floor gateway: ${ratio(total.portkey / total.floor)}; ` +
          `gensvc: ${ratio(total.portkey / total.gensvc)}.  Gateway + stores ms/req: floor ${ms3(gw.floor)}, gensvc ` +
          `${ms3(gw.gensvc)}, Portkey ${ms3(gw.portkey)} ` +
          `(gensvc at ${between.toFixed(2)} of the way from floor to Portkey)` +
          (r.concurrency === 32
            ? `; ${need(r)}x Portkey needs a total ≤ ${ms3(total.portkey / need(r))} ms, of ` +
              `which sim + load gen take ${ms3(total.direct)}`
            : ''),
      );
    }
    console.log(`peak RSS over the run: edge ${edgePeak.toFixed(0)} MiB, Portkey ${portkeyPeak.toFixed(0)} MiB`);

    // Billing was on: every answer gensvc gave (warm-ups included) is one charge in the ledger.
    const deadline = Date.now() + 10_000;
    let charges = 0;
    const expected = gensvcAnswers + 4; // + the readiness probes (gensvc and gensvc×2, JSON and stream)
    while (Date.now() < deadline) {
      charges = await db.ledgerEntry.count({ where: { workspaceId, kind: 'charge' } });
      if (charges >= expected) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    console.log(
      `billing: ${charges} charges in the ledger for ${expected} answers from gensvc` +
        `${charges === expected ? '' : '  (MISMATCH)'}`,
    );
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
});
