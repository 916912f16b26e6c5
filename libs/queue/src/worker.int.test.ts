import { ArchiveOutput, CallbackDeliver, TaskPoll, TaskSubmit, type QueueName } from '@gensvc/contracts';
import { errors } from '@gensvc/errors';
import { eventually, useTestContext } from '@gensvc/testing';
import type { QueueEvents, Worker } from 'bullmq';
import type { RedisConnection } from './connection';
import { SCHEDULED_BACKOFF, scheduleBackoff } from './backoff';
import { createRedisConnection } from './connection';
import type { QueueLogger } from './logger';
import { createQueueEvents, createQueues, enqueue, type Queues } from './queues';
import { closeWorkers, defineWorker, type DefineWorkerOptions } from './worker';

const ctx = useTestContext();

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('queues and workers against Redis', () => {
  let connection: RedisConnection;
  let queues: Queues;
  const workers: Worker[] = [];
  const events = new Map<QueueName, QueueEvents>();
  const logged: { level: 'info' | 'warn' | 'error'; msg: string | undefined; obj: Record<string, unknown> }[] = [];
  const logger: QueueLogger = {
    info: (obj, msg) => logged.push({ level: 'info', msg, obj }),
    warn: (obj, msg) => logged.push({ level: 'warn', msg, obj }),
    error: (obj, msg) => logged.push({ level: 'error', msg, obj }),
  };

  function start<Q extends QueueName>(
    opts: Pick<DefineWorkerOptions<Q>, 'queue' | 'handlers' | 'backoffStrategy'>,
  ): Worker {
    const worker = defineWorker<Q>({ connection, prefix: ctx.env.QUEUE_PREFIX!, logger, concurrency: 5, ...opts });
    workers.push(worker);
    return worker;
  }

  async function eventsFor(queue: QueueName): Promise<QueueEvents> {
    let e = events.get(queue);
    if (!e) {
      e = createQueueEvents({ queue, connection, prefix: ctx.env.QUEUE_PREFIX!, logger });
      events.set(queue, e);
      await e.waitUntilReady();
    }
    return e;
  }

  async function stateOf(queue: QueueName, id: string) {
    const job = await queues.get(queue).getJob(id);
    return { state: await job!.getState(), attemptsMade: job!.attemptsMade };
  }

  beforeAll(() => {
    connection = createRedisConnection(ctx.env.REDIS_URL!, { name: 'gensvc-queue-int-test' });
    queues = createQueues({ connection, prefix: ctx.env.QUEUE_PREFIX!, logger });
  });

  afterAll(async () => {
    await closeWorkers(workers, 5_000, { abortGraceMs: 500 });
    await Promise.all([...events.values()].map((e) => e.close()));
    await queues.close();
    await connection.quit();
  });

  describe('dispatch', () => {
    const submitted: unknown[] = [];
    beforeAll(() => {
      start({
        queue: 'tasks',
        handlers: {
          'task.submit': async (payload, { job }) => {
            submitted.push(payload);
            return { submitted: payload.taskId, jobId: job.id };
          },
          'task.poll': async (payload) => ({ polled: payload.taskId, attempt: payload.attempt }),
          'task.cancel': async (payload) => ({ canceled: payload.taskId }),
          'task.deadline': async (payload) => ({ overdue: payload.taskId }),
        },
      });
    });

    it('runs the handler of each job name with its parsed payload; its result reaches waitUntilFinished', async () => {
      const qe = await eventsFor('tasks');
      const submit = await enqueue(queues, TaskSubmit, { taskId: 'tsk_1', workspaceId: 'ws_1', requestId: 'req_1' });
      const poll = await enqueue(queues, TaskPoll, { taskId: 'tsk_1', attempt: 2 });
      expect(submit.name).toBe('task.submit');
      expect(submit.opts).toMatchObject({
        removeOnComplete: { age: 3600, count: 10_000 },
        removeOnFail: { age: 604_800 },
      });
      await expect(submit.waitUntilFinished(qe, 10_000)).resolves.toEqual({ submitted: 'tsk_1', jobId: submit.id });
      await expect(poll.waitUntilFinished(qe, 10_000)).resolves.toEqual({ polled: 'tsk_1', attempt: 2 });
      // The contract version is stamped; there is no trace without an active span.
      expect(submitted).toEqual([{ taskId: 'tsk_1', workspaceId: 'ws_1', requestId: 'req_1', v: TaskSubmit.version }]);
    });

    it('parses in the consumer: undeclared fields dropped, an unparsable payload fails once, unretried', async () => {
      const qe = await eventsFor('tasks');
      const raw = queues.get('tasks');
      submitted.length = 0;
      // Added around enqueue, as an older or buggy producer would.
      const extra = await raw.add('task.submit', { taskId: 'tsk_2', task: { whole: 'record' } });
      await extra.waitUntilFinished(qe, 10_000);
      expect(submitted).toEqual([{ taskId: 'tsk_2' }]);

      const bad = await raw.add('task.poll', { taskId: 'tsk_3', v: 1 }, { attempts: 3 });
      await expect(bad.waitUntilFinished(qe, 10_000)).rejects.toThrow(
        /^task\.poll: the payload \(v1\) does not match contract v1:[\s\S]*attempt/,
      );
      expect(await stateOf('tasks', bad.id!)).toEqual({ state: 'failed', attemptsMade: 1 });

      const stranger = await raw.add('task.unknown', { taskId: 'tsk_4' }, { attempts: 3 });
      await expect(stranger.waitUntilFinished(qe, 10_000)).rejects.toThrow(
        'No handler for job "task.unknown" on queue "tasks".',
      );
      expect(await stateOf('tasks', stranger.id!)).toEqual({ state: 'failed', attemptsMade: 1 });
    });

    it('refuses an invalid payload at enqueue, with a message naming the field, and adds nothing', async () => {
      const raw = queues.get('tasks');
      const types = ['waiting', 'active', 'delayed', 'completed', 'failed', 'prioritized'] as const;
      const before = await raw.getJobCounts(...types);
      const refused = enqueue(queues, TaskPoll, { taskId: 'tsk_5', attempt: 0 });
      await expect(refused).rejects.toMatchObject({
        name: 'AppError',
        status: 500,
        code: 'invalid_job_payload',
        expose: false,
      });
      await expect(refused).rejects.toThrow(/^Refusing to enqueue task\.poll v1: invalid payload:\n[\s\S]*attempt/);
      await expect(enqueue(queues, TaskSubmit, {} as never)).rejects.toThrow(/taskId/);
      expect(await raw.getJobCounts(...types)).toEqual(before);
    });

    it('gives a job the retries its contract declares, unless the producer says otherwise', async () => {
      const declared = await enqueue(queues, TaskPoll, { taskId: 'tsk_retry', attempt: 1 }, { delay: 60_000 });
      expect(declared.opts).toMatchObject({ attempts: 5, backoff: { type: 'exponential', delay: 1_000 } });
      const once = await enqueue(queues, TaskPoll, { taskId: 'tsk_retry', attempt: 2 }, { delay: 60_000, attempts: 1 });
      expect(once.opts.attempts).toBe(1);
      await Promise.all([declared.remove(), once.remove()]);
    });

    it('gives a job with a deterministic key one id, free of ":", and adds it once', async () => {
      const qe = await eventsFor('tasks');
      submitted.length = 0;
      const first = await enqueue(queues, TaskSubmit, { taskId: 'tsk:6' });
      const again = await enqueue(queues, TaskSubmit, { taskId: 'tsk:6' });
      expect(first.id).toBe('task.submit/tsk%3A6');
      expect(again.id).toBe(first.id);
      // Same key, other job on the same queue: a different id.
      const poll = await enqueue(queues, TaskPoll, { taskId: 'tsk:6', attempt: 1 });
      expect(poll.id).toBe('task.poll/tsk%3A6/1');
      await first.waitUntilFinished(qe, 10_000);
      await poll.waitUntilFinished(qe, 10_000);
      expect(submitted).toEqual([{ taskId: 'tsk:6', v: TaskSubmit.version }]);
    });
  });

  it('fails at start when a job declared on the queue has no handler, or a handler has no job', () => {
    const prefix = ctx.env.QUEUE_PREFIX!;
    expect(() =>
      defineWorker({
        queue: 'tasks',
        connection,
        prefix,
        concurrency: 1,
        // @ts-expect-error task.poll, task.cancel and task.deadline have no handler: a type error before a start-up one
        handlers: { 'task.submit': async () => {} },
      }),
    ).toThrow('Worker for queue "tasks" has no handler for: task.poll, task.cancel, task.deadline.');
    expect(() =>
      defineWorker({
        queue: 'callbacks',
        connection,
        prefix,
        concurrency: 1,
        handlers: { 'callback.deliver': async () => {}, 'callback.send': async () => {} } as never,
      }),
    ).toThrow('Worker for queue "callbacks" has handlers for jobs not declared on it: callback.send.');
  });

  it('does not retry a 4xx-class AppError; retries other errors on the fixed schedule, no further', async () => {
    const calls = new Map<string, number[]>();
    start({
      queue: 'callbacks',
      backoffStrategy: scheduleBackoff([50, 50]),
      handlers: {
        'callback.deliver': async (payload) => {
          calls.set(payload.taskId, [...(calls.get(payload.taskId) ?? []), Date.now()]);
          if (payload.taskId === 'tsk_refused') throw errors.invalidRequest('the receiver refused the envelope');
          throw new Error('receiver unreachable');
        },
      },
    });
    const qe = await eventsFor('callbacks');
    const retry = { attempts: 3, backoff: SCHEDULED_BACKOFF };
    const refused = await enqueue(queues, CallbackDeliver, { taskId: 'tsk_refused', attempt: 1 }, retry);
    const flaky = await enqueue(queues, CallbackDeliver, { taskId: 'tsk_flaky', attempt: 1 }, retry);
    // More attempts than the schedule has delays: the schedule ends it.
    const long = await enqueue(
      queues,
      CallbackDeliver,
      { taskId: 'tsk_long', attempt: 1 },
      { attempts: 10, backoff: SCHEDULED_BACKOFF },
    );

    await expect(refused.waitUntilFinished(qe, 10_000)).rejects.toThrow(
      'invalid_request: the receiver refused the envelope',
    );
    await expect(flaky.waitUntilFinished(qe, 10_000)).rejects.toThrow('receiver unreachable');
    await expect(long.waitUntilFinished(qe, 10_000)).rejects.toThrow('receiver unreachable');

    expect(await stateOf('callbacks', refused.id!)).toEqual({ state: 'failed', attemptsMade: 1 });
    expect(await stateOf('callbacks', flaky.id!)).toEqual({ state: 'failed', attemptsMade: 3 });
    expect(await stateOf('callbacks', long.id!)).toEqual({ state: 'failed', attemptsMade: 3 });
    expect(calls.get('tsk_refused')).toHaveLength(1);
    for (const taskId of ['tsk_flaky', 'tsk_long']) {
      const at = calls.get(taskId)!;
      expect(at).toHaveLength(3);
      expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(45);
      expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(45);
    }
    // Each failure is logged once: a warning while a retry remains, an error when it is final.
    const about = (id: string) =>
      logged.filter((l) => l.obj.queue === 'callbacks' && l.obj.jobId === id).map((l) => l.level);
    // The worker logs after the queue has already reported the job finished.
    await eventually(
      () => {
        expect(about(refused.id!)).toEqual(['error']);
        expect(about(flaky.id!)).toEqual(['warn', 'warn', 'error']);
        expect(about(long.id!)).toEqual(['warn', 'warn', 'error']);
        return true;
      },
      'each failure to be logged',
      2_000,
    );
  });

  describe('closeWorkers', () => {
    it('lets an in-flight job finish', async () => {
      const started = deferred();
      let finished = false;
      const worker = start({
        queue: 'archive',
        handlers: {
          'archive.output': async () => {
            started.resolve();
            await sleep(300);
            finished = true;
            return 'archived';
          },
        },
      });
      const job = await enqueue(queues, ArchiveOutput, { taskId: 'tsk_7', outputIndex: 0 });
      await started.promise;
      const t0 = Date.now();
      await expect(closeWorkers([worker], 5_000)).resolves.toEqual({ forced: false });
      expect(finished).toBe(true);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(200);
      expect(await stateOf('archive', job.id!)).toEqual({ state: 'completed', attemptsMade: 1 });
      expect((await queues.get('archive').getJob(job.id!))!.returnvalue).toBe('archived');
    });

    it('past the timeout, aborts handlers; a job whose handler stops is requeued, its attempt unspent', async () => {
      const started = deferred();
      const worker = start({
        queue: 'archive',
        handlers: {
          'archive.output': async (_payload, { signal }) => {
            started.resolve();
            await new Promise((_resolve, reject) => signal!.addEventListener('abort', () => reject(signal!.reason)));
          },
        },
      });
      const job = await enqueue(queues, ArchiveOutput, { taskId: 'tsk_8', outputIndex: 0 }, { attempts: 1 });
      await started.promise;
      await expect(closeWorkers([worker], 100, { abortGraceMs: 5_000 })).resolves.toEqual({ forced: true });
      expect(await stateOf('archive', job.id!)).toEqual({ state: 'waiting', attemptsMade: 0 });

      // The next worker runs it, as a first attempt.
      const qe = await eventsFor('archive');
      start({ queue: 'archive', handlers: { 'archive.output': async (payload) => `archived ${payload.taskId}` } });
      await expect(job.waitUntilFinished(qe, 10_000)).resolves.toBe('archived tsk_8');
      expect(await stateOf('archive', job.id!)).toEqual({ state: 'completed', attemptsMade: 1 });
      await closeWorkers(workers.slice(-1), 5_000);
    });

    it('does not wait for a handler that ignores its signal', async () => {
      const started = deferred();
      const release = deferred();
      const worker = start({
        queue: 'archive',
        handlers: {
          'archive.output': async () => {
            started.resolve();
            await release.promise;
            return 'late';
          },
        },
      });
      const job = await enqueue(queues, ArchiveOutput, { taskId: 'tsk_9', outputIndex: 0 });
      await started.promise;
      const t0 = Date.now();
      await expect(closeWorkers([worker], 100, { abortGraceMs: 100 })).resolves.toEqual({ forced: true });
      expect(Date.now() - t0).toBeLessThan(2_000);
      // Abandoned, not killed: once it returns, the close begun above ends as usual.
      release.resolve();
      await worker.close();
      expect(await stateOf('archive', job.id!)).toEqual({ state: 'completed', attemptsMade: 1 });
    });
  });
});
