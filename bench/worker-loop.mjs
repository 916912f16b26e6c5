// bench/worker-loop: BullMQ's fetch loop against defineWorker's takeOnePerJob, interleaved in one window so the
// load of a shared machine falls on both alike. Two worker processes (one per loop, concurrency 50, each on its own
// queue prefix) run a job that publishes its reply at once, as the evaluate worker does; this process adds the jobs and
// waits for the replies: one at a time, alternating between the two workers job by job, then 32 at a time in
// alternating 2 s slices. Per job and worker: the time from add to reply, the worker's CPU (/proc) and its socket
// reads and writes. No upstream call and no edge: what is left is the queue hop itself.
// Usage: npm run bench -- worker-loop   (N=300 serial jobs per loop)
import { performance } from 'node:perf_hooks';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { cpuMs, syscalls as io } from './lib/cpu.mjs';
import { gensvc } from './lib/gensvc.mjs';
import { printTable } from './lib/table.mjs';

const { ArchiveOutput } = gensvc('contracts');
const { createRedisConnection, createQueues, defineWorker, closeWorkers, coalesceWrites, enqueue } = gensvc('queue');
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const silent = { info() {}, warn() {}, error() {} };

if (process.argv[2] === '--child') {
  const [, , , prefix, mode] = process.argv;
  const connection = createRedisConnection(REDIS_URL, { name: `bench-loop-${mode}` });
  const worker = defineWorker({
    queue: 'archive',
    connection,
    prefix,
    concurrency: 50,
    logger: silent,
    takeOnePerJob: mode === 'takeOnePerJob',
    handlers: {
      'archive.output': async (payload, { job }) => {
        coalesceWrites(connection);
        void connection.publish(`${prefix}:reply`, job.id);
        return payload.outputIndex;
      },
    },
  });
  await worker.waitUntilReady();
  process.send('ready');
  process.on('message', async () => {
    await closeWorkers([worker], 5_000);
    connection.disconnect();
    process.exit(0);
  });
} else {
  const N = Number(process.env.N ?? 300);
  const modes = ['bullmq', 'takeOnePerJob'];
  const stamp = `bench-loop-${process.pid}`;
  const connection = createRedisConnection(REDIS_URL, { name: 'bench-loop-producer' });
  const subscriber = createRedisConnection(REDIS_URL, { name: 'bench-loop-replies' });
  const w = {};
  for (const mode of modes) {
    const prefix = `${stamp}-${mode}`;
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', prefix, mode], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise((resolve, reject) => { child.once('message', resolve); child.once('exit', reject); });
    w[mode] = { prefix, child, queues: createQueues({ connection, prefix, logger: silent }), waiting: new Map() };
    await subscriber.subscribe(`${prefix}:reply`);
  }
  subscriber.on('message', (channel, id) => {
    const mode = modes.find((m) => channel === `${w[m].prefix}:reply`);
    w[mode].waiting.get(id)?.();
  });
  let seq = 0;
  const one = async (mode) => {
    const taskId = `tsk_${seq++}`;
    const id = `archive.output/${taskId}/0`;
    const replied = new Promise((resolve) => w[mode].waiting.set(id, resolve));
    const t = performance.now();
    await enqueue(w[mode].queues, ArchiveOutput, { taskId, outputIndex: 0 }, { removeOnComplete: true });
    await replied;
    w[mode].waiting.delete(id);
    return performance.now() - t;
  };
  const snap = (mode) => ({ cpu: cpuMs(w[mode].child.pid), ...io(w[mode].child.pid) });
  const per = (a, b, n) => ({ cpu: (b.cpu - a.cpu) / n, r: (b.r - a.r) / n, w: (b.w - a.w) / n });
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

  for (let i = 0; i < 50; i++) for (const m of modes) await one(m); // warm-up
  const rows = [];
  // One at a time, alternating job by job; 20 ms apart, so each worker is idle (blocked) when its job arrives.
  const lat = { bullmq: [], takeOnePerJob: [] };
  const s0 = Object.fromEntries(modes.map((m) => [m, snap(m)]));
  for (let i = 0; i < N; i++) {
    for (const m of modes) {
      lat[m].push(await one(m));
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  for (const m of modes) {
    const p = per(s0[m], snap(m), N);
    rows.push([`c=1 ${m}`, '', median(lat[m]).toFixed(2), p.cpu.toFixed(3), p.w.toFixed(2), p.r.toFixed(2)]);
  }
  // 32 at a time, in alternating 2 s slices (3 each).
  const done = { bullmq: 0, takeOnePerJob: 0 };
  const acc = { bullmq: { cpu: 0, r: 0, w: 0, ms: 0 }, takeOnePerJob: { cpu: 0, r: 0, w: 0, ms: 0 } };
  for (let slice = 0; slice < 6; slice++) {
    const m = modes[slice % 2];
    const a = snap(m);
    const t0 = performance.now();
    let n = 0;
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (performance.now() - t0 < 2000) { await one(m); n++; }
    }));
    const b = snap(m);
    done[m] += n;
    acc[m].cpu += b.cpu - a.cpu; acc[m].r += b.r - a.r; acc[m].w += b.w - a.w; acc[m].ms += performance.now() - t0;
  }
  for (const m of modes) {
    const n = done[m];
    rows.push([`c=32 ${m}`, ((n * 1000) / acc[m].ms).toFixed(0), '', (acc[m].cpu / n).toFixed(3), (acc[m].w / n).toFixed(2), (acc[m].r / n).toFixed(2)]);
  }
  printTable(['case', 'jobs/s', 'p50 add → reply ms', 'worker CPU ms/job', 'worker writes/job', 'worker reads/job'], rows);

  for (const m of modes) {
    w[m].child.send('close');
    await new Promise((r) => w[m].child.once('exit', r));
    await w[m].queues.close();
  }
  for (const m of modes) {
    let cursor = '0';
    do {
      const [next, keys] = await connection.scan(cursor, 'MATCH', `${w[m].prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await connection.del(...keys);
    } while (cursor !== '0');
  }
  subscriber.disconnect();
  connection.disconnect();
}
