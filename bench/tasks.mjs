// bench/tasks: generation tasks end to end and callback deliveries, each against raw BullMQ job throughput measured
// in the same run (a no-op worker at the same concurrency: the floor any queue-driven pipeline stands on).
//
//   1. tasks/s: TASKS image tasks created through the edge (CONCURRENCY callers), each submitted by the task-runner to
//      the upstream-sim's Replicate or fal protocol, polled with delayed jobs, archived into S3 by the archiver and
//      called back by the callback-dispatcher to a local HTTPS receiver: first create → last callback received.
//      p50/p99 from the task's completion (completedAt) to its callback's arrival.
//   2. callback deliveries/s: a new delivery round for every task (the redelivery path), the dispatcher alone.
//   3. baseline: raw BullMQ, TASKS × JOBS_PER_TASK no-op jobs (a task is ~5 jobs: submit, polls, archive, callback)
//      and TASKS no-op jobs, through one worker of the same concurrency.
// The sim runs each provider job for SIM_TASK_MS (default 50 ms). Usage: npm run bench -- tasks
import { writeFileSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gensvc, root } from './lib/gensvc.mjs';
import { startEdge, startNode, startService } from './lib/processes.mjs';
import { seedKey, seedSim, withStack } from './lib/stack.mjs';
import { percentiles } from './lib/stats.mjs';
import { int, ms, printTable, ratio } from './lib/table.mjs';

const TASKS = Number(process.env.TASKS ?? 300);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);
const SIM_TASK_MS = Number(process.env.SIM_TASK_MS ?? 50);
const JOBS_PER_TASK = 5;

const { createTestCa } = gensvc('testing');
const { createRedisConnection, createQueues, enqueue } = gensvc('queue');
const { callbackRepository } = gensvc('db');
const { CallbackDeliver } = gensvc('contracts');
const { Worker } = createRequire(join(root, 'libs', 'queue', 'package.json'))('bullmq');

/** A local HTTPS receiver that answers 204 at once and notes when each task's callback arrived. */
async function startReceiver(cert) {
  const arrivals = new Map();
  let count = 0;
  let onCount = () => {};
  const server = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
    let size = 0;
    req.on('data', (d) => (size += d.length));
    req.on('end', () => {
      const taskId = req.headers['svc-task-id'];
      const at = Date.now();
      if (!arrivals.has(taskId)) arrivals.set(taskId, at);
      count++;
      res.statusCode = 204;
      res.end();
      onCount(count);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${server.address().port}`,
    arrivals,
    count: () => count,
    until: (n) => new Promise((resolve) => (count >= n ? resolve() : (onCount = (c) => c >= n && resolve()))),
    close: () => new Promise((r) => (server.closeAllConnections(), server.close(r))),
  };
}

/** Raw BullMQ: `n` no-op jobs through one worker of `concurrency`; jobs/s from the first add to the last completion. */
async function rawBullmq(env, n, concurrency) {
  const connection = createRedisConnection(env.REDIS_URL, { name: 'bench-raw' });
  const prefix = `${env.QUEUE_PREFIX}-raw`;
  const queues = createQueues({ connection, prefix });
  const queue = queues.get('maintenance');
  let done = 0;
  let finish;
  const finished = new Promise((r) => (finish = r));
  const worker = new Worker('maintenance', async () => {}, { connection, prefix, concurrency });
  worker.on('completed', () => ++done === n && finish());
  const started = performance.now();
  for (let i = 0; i < n; i += 500) {
    await queue.addBulk(Array.from({ length: Math.min(500, n - i) }, (_, j) => ({ name: 'noop', data: { i: i + j }, opts: { removeOnComplete: true } })));
  }
  await finished;
  const seconds = (performance.now() - started) / 1000;
  await worker.close();
  await queues.close();
  connection.disconnect();
  return n / seconds;
}

await withStack(async ({ env: base, db }) => {
  const dir = mkdtempSync(join(tmpdir(), 'gensvc-bench-tasks-'));
  const ca = createTestCa('bench CA');
  const leaf = ca.issue(['localhost', '127.0.0.1']);
  const files = { ca: join(dir, 'ca.pem'), cert: join(dir, 'leaf.pem'), key: join(dir, 'leaf.key') };
  writeFileSync(files.ca, ca.certPem);
  writeFileSync(files.cert, leaf.certPem);
  writeFileSync(files.key, leaf.keyPem);
  const env = {
    ...base,
    NODE_EXTRA_CA_CERTS: files.ca,
    OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32',
    TASK_POLL_SCHEDULE: '100ms',
    TASK_RUNNER_CONCURRENCY: String(CONCURRENCY),
    ARCHIVER_CONCURRENCY: String(CONCURRENCY),
    CALLBACK_DISPATCHER_CONCURRENCY: String(CONCURRENCY),
  };
  const sim = await startNode({
    name: 'upstream-sim',
    script: join(root, 'services', 'upstream-sim', 'dist', 'main.js'),
    env: { LOG_LEVEL: 'warn', SIM_TASK_MS: String(SIM_TASK_MS), SIM_OUTPUTS_TLS_CERT_FILE: files.cert, SIM_OUTPUTS_TLS_KEY_FILE: files.key },
    readyPath: '/__sim/requests',
  });
  const receiver = await startReceiver(leaf);
  const procs = [sim];
  try {
    await seedSim(db, sim.url);
    const { auth, workspaceId } = await seedKey(db, { unlimited: true });
    const edge = await startEdge(env);
    procs.push(edge);
    for (const name of ['task-runner', 'archiver', 'callback-dispatcher']) procs.push(await startService(name, env));

    // 1. End to end.
    const created = [];
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < TASKS) {
          const i = next++;
          const res = await fetch(`${edge.url}/api/v1/sim/text-to-image`, {
            method: 'POST',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'sim/image-1', prompt: `bench ${i}`, size: '256x256', callback_url: `${receiver.url}/cb` }),
          });
          const body = await res.json();
          if (res.status !== 202) throw new Error(`create: ${res.status} ${JSON.stringify(body)}`);
          created.push(body.task_id);
        }
      }),
    );
    const createdIn = (performance.now() - started) / 1000;
    await receiver.until(TASKS);
    const endToEnd = (performance.now() - started) / 1000;
    const tasks = await db.task.findMany({ where: { workspaceId }, select: { id: true, status: true, completedAt: true } });
    const lag = tasks.map((t) => receiver.arrivals.get(t.id) - t.completedAt.getTime()).filter(Number.isFinite);
    const lagP = percentiles(lag);
    const completed = tasks.filter((t) => t.status === 'completed').length;

    // 2. Callback deliveries alone: a new round for every task, enqueued at once.
    const connection = createRedisConnection(env.REDIS_URL, { name: 'bench-redeliver' });
    const queues = createQueues({ connection, prefix: env.QUEUE_PREFIX });
    const before = receiver.count();
    const rounds = [];
    for (const t of tasks) rounds.push({ task: t, round: await callbackRepository.redeliver(db, workspaceId, t.id) });
    const deliverStart = performance.now();
    await Promise.all(rounds.map(({ task, round }) => enqueue(queues, CallbackDeliver, { taskId: task.id, workspaceId, attempt: round.attempt }, { jobId: [task.id, round.attempt] })));
    await receiver.until(before + TASKS);
    const deliverSeconds = (performance.now() - deliverStart) / 1000;
    await queues.close();
    connection.disconnect();

    // 3. The baseline, in the same run.
    const rawPipeline = await rawBullmq(env, TASKS * JOBS_PER_TASK, CONCURRENCY);
    const rawSingle = await rawBullmq(env, TASKS, CONCURRENCY);

    const tasksPerSecond = TASKS / endToEnd;
    const deliveriesPerSecond = TASKS / deliverSeconds;
    console.log(`bench/tasks  node ${process.version}; ${TASKS} image tasks, ${CONCURRENCY} callers and ${CONCURRENCY} jobs per worker; sim job ${SIM_TASK_MS} ms; polls every 100 ms`);
    printTable(
      ['case', 'per second', 'vs raw BullMQ', 'notes'],
      [
        ['raw BullMQ no-op jobs', int(rawSingle), '1.00x', `${TASKS} jobs`],
        [`raw BullMQ no-op jobs ÷ ${JOBS_PER_TASK}`, int(rawPipeline / JOBS_PER_TASK), '1.00x', `${TASKS * JOBS_PER_TASK} jobs, as tasks of ${JOBS_PER_TASK} jobs`],
        ['tasks end to end', int(tasksPerSecond), ratio(tasksPerSecond / (rawPipeline / JOBS_PER_TASK)), `create → completed → callback received; creating took ${createdIn.toFixed(1)} s`],
        ['callback deliveries', int(deliveriesPerSecond), ratio(deliveriesPerSecond / rawSingle), 'signed HTTPS POST, attempt logged'],
      ],
    );
    console.log(`completion → callback received: p50 ${ms(lagP.p50)} ms, p99 ${ms(lagP.p99)} ms (${lag.length} tasks)`);
    const charges = await db.ledgerEntry.count({ where: { workspaceId, kind: 'charge' } });
    console.log(`tasks completed: ${completed} of ${TASKS}; charges in the ledger: ${charges}${charges === TASKS ? '' : '  (MISMATCH)'}`);
  } finally {
    for (const p of procs.reverse()) await p.stop();
    await receiver.close();
  }
});
