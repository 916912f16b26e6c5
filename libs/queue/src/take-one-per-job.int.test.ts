// defineWorker's takeOnePerJob loop against Redis: BullMQ's semantics kept (concurrency, retries with backoff,
// stalled-job recovery, close) and the marker its take leaves behind cleared once the queue is empty.
import { ArchiveOutput } from '@gensvc/contracts';
import { eventually, useTestContext } from '@gensvc/testing';
import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { createRedisConnection } from './connection';
import type { QueueLogger } from './logger';
import { createQueueEvents, createQueues, enqueue } from './queues';
import { closeWorkers, defineWorker } from './worker';

const ctx = useTestContext();
const silent: QueueLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let n = 0;

describe('defineWorker with takeOnePerJob', () => {
  let connection: Redis;
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(() => {
    connection = createRedisConnection(ctx.env.REDIS_URL!, { name: 'gensvc-take-one-per-job-test' });
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(() => connection.quit());

  /** Queues and a takeOnePerJob worker on `archive` under a prefix of their own. */
  function setUp(handler: (job: Job) => Promise<unknown>, opts: { concurrency?: number; options?: { stalledInterval?: number; lockDuration?: number } } = {}) {
    const prefix = `${ctx.env.QUEUE_PREFIX}:t${n++}`;
    const queues = createQueues({ connection, prefix, logger: silent });
    const worker = defineWorker({
      queue: 'archive',
      connection,
      prefix,
      logger: silent,
      concurrency: opts.concurrency ?? 5,
      takeOnePerJob: true,
      handlers: { 'archive.output': (_payload, { job }) => handler(job) },
      ...(opts.options ? { options: opts.options } : {}),
    });
    cleanups.push(() => queues.close(), () => closeWorkers([worker], 5_000, { abortGraceMs: 500 }));
    const events = createQueueEvents({ queue: 'archive', connection, prefix, logger: silent });
    cleanups.push(() => events.close());
    return { prefix, queues, worker, events, add: (i: number, o = {}) => enqueue(queues, ArchiveOutput, { taskId: `tsk_${i}`, outputIndex: 0 }, o) };
  }

  it('runs up to `concurrency` jobs at once and every job to completion', async () => {
    let running = 0;
    let most = 0;
    const { add, events } = setUp(
      async (job) => {
        most = Math.max(most, ++running);
        await sleep(150);
        running--;
        return job.data.taskId;
      },
      { concurrency: 3 },
    );
    await events.waitUntilReady();
    const jobs = await Promise.all([0, 1, 2, 3, 4, 5, 6].map((i) => add(i)));
    await expect(Promise.all(jobs.map((j) => j.waitUntilFinished(events, 10_000)))).resolves.toEqual(jobs.map((_, i) => `tsk_${i}`));
    expect(most).toBe(3);
  });

  it('clears the marker its take left once the queue is empty, and still wakes for the next job', async () => {
    const { add, events, queues } = setUp(async (job) => job.data.taskId);
    await events.waitUntilReady();
    const marker = queues.get('archive').keys.marker!;
    for (const i of [1, 2]) {
      const job = await add(i);
      await expect(job.waitUntilFinished(events, 10_000)).resolves.toBe(`tsk_${i}`);
      // BullMQ's take put the marker back when it took the job; the idle worker removed it before blocking.
      await eventually(async () => (await connection.zscore(marker, '0')) === null, 'the stale marker to be cleared', 2_000);
    }
  });

  it('takes a job arriving at an idle worker once, and waits once for it (BullMQ: 3 takes, 2 waits), the take sent behind the wait', async () => {
    const { add, events, queues } = setUp(async (job) => job.data.taskId);
    await events.waitUntilReady();
    const { wait, marker } = queues.get('archive').keys;
    await sleep(300); // the worker has found the queue empty and blocks
    // The adds and the worker's other commands go on `connection`; the waits on a connection BullMQ opens for them.
    const commands = /addr=(\S+)/.exec(String(await connection.client('INFO')))![1];
    const monitor = await connection.monitor();
    const seen = { takes: 0, waits: 0, scriptsBehindWait: 0 };
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const [command, key] = [String(args[0]).toLowerCase(), args[1]];
      // Every take, and every completion's fetch of the next job, moves from `wait` to `active` by RPOPLPUSH.
      if (command === 'rpoplpush' && key === wait) seen.takes++;
      if (command === 'bzpopmin' && key === marker) seen.waits++;
      // A script on the waiting connection other than the marker clear is a take queued behind its wait (EVAL the
      // first time Redis meets the script, EVALSHA after).
      const script = command === 'evalsha' || (command === 'eval' && !String(args[1]).startsWith('if redis.call'));
      if (script && source !== commands) seen.scriptsBehindWait++;
    });
    cleanups.push(async () => monitor.disconnect());
    const N = 5;
    for (let i = 0; i < N; i++) {
      await expect((await add(i)).waitUntilFinished(events, 10_000)).resolves.toBe(`tsk_${i}`);
      await sleep(100); // idle again before the next one
    }
    // Per job: the take and the completion's look for a next job; the wait that wakes for it (armed after the last one).
    expect(seen.takes).toBeLessThanOrEqual(2 * N);
    expect(seen.waits).toBeLessThanOrEqual(N + 1);
    // Each job was taken by the take that rode behind the wait it woke, not by one sent after the wait's answer.
    expect(seen.scriptsBehindWait).toBe(N);
  });

  it('sends the marker clear, the wait and the take that rides behind it in one socket write per job', async () => {
    const { add, events, worker } = setUp(async (job) => job.data.taskId);
    await events.waitUntilReady();
    await sleep(300); // the worker has found the queue empty and blocks
    const blocking = await (worker as unknown as { backend: { blockingClient: Promise<Redis> } }).backend.blockingClient;
    const stream = (blocking as unknown as { stream: { _write: (...a: unknown[]) => unknown; _writev: (...a: unknown[]) => unknown } }).stream;
    let writes = 0;
    for (const name of ['_write', '_writev'] as const) {
      const original = stream[name];
      stream[name] = function (this: unknown, ...a: unknown[]) {
        writes++;
        return original.apply(this, a);
      };
      cleanups.push(async () => void (stream[name] = original));
    }
    const N = 4;
    for (let i = 0; i < N; i++) {
      await expect((await add(i)).waitUntilFinished(events, 10_000)).resolves.toBe(`tsk_${i}`);
      await sleep(100); // idle again before the next one
    }
    // Each job woke the wait armed before it, and the loop armed the next one (clear, wait, take) in one write.
    expect(writes).toBe(N);
  });

  it('takes a backlog in rounds of doubling size, each round in one socket write, not one job per round trip', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const started: string[] = [];
    const { add, events, worker } = setUp(
      async (job) => {
        started.push(job.data.taskId);
        await held; // every job keeps its slot: all are taken by the loop, none by a completion's fetch of the next
        return 'done';
      },
      { concurrency: 64 },
    );
    await events.waitUntilReady();
    // The backlog: N jobs waiting before the loop looks (paused while they are added).
    await worker.pause();
    const N = 40;
    await Promise.all(Array.from({ length: N }, (_, i) => add(i)));
    // Rounds of takes without waiting: a round is the takes issued while none of them had answered.
    const w = worker as unknown as { moveToActive: (...a: unknown[]) => Promise<unknown> };
    const original = w.moveToActive;
    let inFlight = 0;
    let rounds = 0;
    let takes = 0;
    w.moveToActive = function (this: unknown, ...a: unknown[]) {
      if (inFlight++ === 0) rounds++;
      takes++;
      return original.apply(this, a).finally(() => inFlight--);
    };
    // Writes on the command connection (the takes', and whatever else BullMQ sends meanwhile).
    const stream = (connection as unknown as { stream: { _write: (...a: unknown[]) => unknown; _writev: (...a: unknown[]) => unknown } }).stream;
    let writes = 0;
    const originals = { _write: stream._write, _writev: stream._writev };
    for (const name of ['_write', '_writev'] as const) {
      stream[name] = function (this: unknown, ...a: unknown[]) {
        writes++;
        return originals[name].apply(this, a);
      };
    }
    cleanups.push(async () => {
      Object.assign(stream, originals);
      w.moveToActive = original;
      release();
    });
    worker.resume();
    await eventually(() => started.length === N, 'every waiting job to start', 10_000);
    const writesToTakeAll = writes;
    // 1, then (after the take that rode behind the marker's wait) 1, 2, 4, 8, 16 and the last, short round: a take
    // per job, one round trip each, would have been ~40 rounds and ~40 writes.
    expect(rounds).toBeLessThanOrEqual(8);
    expect(writesToTakeAll).toBeLessThanOrEqual(12);
    // The rounds overshoot the backlog by at most the last round's size.
    expect(takes).toBeLessThan(2 * N);
    expect(new Set(started).size).toBe(N);
  });

  it('runs a retry when its backoff is due, while blocked on the empty queue', async () => {
    const at: number[] = [];
    const { add, events } = setUp(async () => {
      at.push(Date.now());
      if (at.length === 1) throw new Error('first attempt fails');
      return 'second attempt';
    });
    await events.waitUntilReady();
    const job = await add(1, { attempts: 2, backoff: { type: 'fixed', delay: 400 } });
    await expect(job.waitUntilFinished(events, 10_000)).resolves.toBe('second attempt');
    expect(at).toHaveLength(2);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(350);
  });

  it('runs a delayed job when it is due though a job arrived after the wait that saw its delay', async () => {
    const ran = new Map<string, number>();
    const { add, events } = setUp(async (job) => {
      ran.set(job.data.taskId, Date.now());
      return job.data.taskId;
    });
    await events.waitUntilReady();
    await sleep(300); // the worker has found the queue empty and blocks
    const added = Date.now();
    // The wait wakes on the delayed job's marker (consuming it) and blocks again until the delay is due; the job
    // added meanwhile wakes it first, and the take that gets that job reports no delayed job.
    const delayed = await add(1, { delay: 800 });
    await sleep(100);
    await expect((await add(2)).waitUntilFinished(events, 10_000)).resolves.toBe('tsk_2');
    await expect(delayed.waitUntilFinished(events, 10_000)).resolves.toBe('tsk_1');
    // Due at 800 ms, not at the next drain timeout (5 s) after the worker went idle again.
    expect(ran.get('tsk_1')! - added).toBeGreaterThanOrEqual(790);
    expect(ran.get('tsk_1')! - added).toBeLessThan(2_500);
  });

  it('recovers the job of a worker that died holding it (stalled), as BullMQ does', async () => {
    const ran: string[] = [];
    const { add, events, prefix, worker } = setUp(async (job) => ran.push(job.id!), { options: { stalledInterval: 300 } });
    await events.waitUntilReady();
    // Another worker takes the job first and dies with it: its lock expires and nobody renews it.
    await worker.pause();
    const job = await add(1);
    const dead = new Worker('archive', null, { connection, prefix, lockDuration: 300, autorun: false });
    cleanups.push(() => dead.close(true));
    const taken = await dead.getNextJob('dead-worker-token');
    expect(taken?.id).toBe(job.id);
    worker.resume();
    await expect(job.waitUntilFinished(events, 10_000)).resolves.toBe(1);
    expect(ran).toEqual([job.id]);
  });

  it('on close, lets the jobs in flight finish and takes no more', async () => {
    const started: string[] = [];
    const { add, events, worker, queues } = setUp(
      async (job) => {
        started.push(job.data.taskId);
        await sleep(300);
        return 'done';
      },
      { concurrency: 2 },
    );
    await events.waitUntilReady();
    const jobs = await Promise.all([1, 2, 3].map((i) => add(i)));
    await eventually(() => started.length === 2, 'two jobs to start', 5_000);
    await expect(closeWorkers([worker], 5_000)).resolves.toEqual({ forced: false });
    const states = await Promise.all(jobs.map(async (j) => (await queues.get('archive').getJob(j.id!))!.getState()));
    expect(states.sort()).toEqual(['completed', 'completed', 'waiting']);
    expect(started).toHaveLength(2);
  });
});
