import { jobsOnQueue, type JobContract, type JobPayload, type JobsOnQueue, type QueueName } from '@gensvc/contracts';
import { isAppError, isRetryable } from '@gensvc/errors';
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { inUnsampledTrace } from '@gensvc/observability';
import { UnrecoverableError, WaitingError, Worker, type BackoffStrategy, type Job, type WorkerOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { bundledPayloads } from './bundles';
import { coalesceWrites } from './connection';
import { stderrLogger, type QueueLogger } from './logger';
import { TRACER_NAME, contextFromEnvelope, continuedOrNewTrace } from './trace-context';

export interface HandlerContext {
  job: Job;
  /** Aborted when the job is cancelled, or when shutdown stops waiting for it (reason WORKER_SHUTDOWN). */
  signal?: AbortSignal;
}

/** Dependencies come through the closure that builds the handler (STYLE.md convention 3). */
export type JobHandler<J extends JobContract> = (payload: JobPayload<J>, ctx: HandlerContext) => unknown;

/** One handler for every job declared on the queue: leaving one out is a type error, and a start-up error. */
export type QueueHandlers<Q extends QueueName> = { [J in JobsOnQueue<Q> as J['name']]: JobHandler<J> };

export interface DefineWorkerOptions<Q extends QueueName> {
  queue: Q;
  /** Shared for commands and duplicated for the blocking fetch; closing the worker leaves it open (its owner closes it). */
  connection: Redis;
  prefix: string;
  concurrency: number;
  handlers: NoInfer<QueueHandlers<Q>>;
  logger?: QueueLogger;
  /** How retries are spaced for jobs enqueued with `backoff: SCHEDULED_BACKOFF`; see scheduleBackoff. */
  backoffStrategy?: BackoffStrategy;
  options?: Pick<WorkerOptions, 'autorun' | 'name' | 'lockDuration' | 'stalledInterval' | 'maxStalledCount' | 'limiter' | 'drainDelay'>;
  /**
   * Fetch jobs with takeOnePerJob's loop instead of BullMQ's: a job starts as soon as it is taken, and a worker that
   * finds the queue empty clears the marker its own take left behind before it blocks. For latency-bound queues
   * (evaluate), where BullMQ's loop spends 3 takes and 2 blocking waits per job when jobs come one at a time.
   */
  takeOnePerJob?: boolean;
}

/** This run of the job is its last: a failure now is final (no attempt left for BullMQ to retry). */
export const isLastAttempt = (job: Pick<Job, 'attemptsMade' | 'opts'>): boolean => job.attemptsMade + 1 >= (job.opts.attempts ?? 1);

/**
 * How long after its add a job's carried row (what the transition that made it wrote: callback.deliver's `carried`,
 * task.submit's) may stand for the read its handler would make. A job that waited longer reads: a cancel, a
 * redelivery or a rotation may have come meanwhile.
 */
export const CARRIED_FRESH_MS = 2_000;

/** What freshFirstRun looks at of a job: its runs and when it was added. */
export type JobRuns = Pick<Job, 'attemptsStarted' | 'attemptsMade' | 'stalledCounter' | 'timestamp'>;

/**
 * The job's first run, within CARRIED_FRESH_MS of its add: the only run whose carried row may stand for a read. A
 * re-run (its first run may have died after acting: a stalled job taken again, a retry of a failure) reads.
 */
export const freshFirstRun = (job: JobRuns, now: number): boolean =>
  job.attemptsStarted <= 1 && job.attemptsMade === 0 && job.stalledCounter === 0 && now - job.timestamp <= CARRIED_FRESH_MS;

/** The abort reason closeWorkers gives handlers when it stops waiting for them. */
export const WORKER_SHUTDOWN = 'worker shutdown';

/**
 * One BullMQ worker for a queue, dispatching by job name. Throws at once if a job declared for the queue has no
 * handler, or a handler names a job the queue does not carry.
 *
 * Each job runs in a span `<job name> process` whose parent is the producer's context from `payload.trace`, or, when
 * the producer's trace was not drawn, in that unsampled context itself with no span (nothing would be recorded). A
 * job with no trace starts one, drawn by the telemetry's sampler. The payload is parsed with the contract first; a
 * payload that does not parse, or a 4xx-class AppError from the handler (!isRetryable), fails the job for good
 * (UnrecoverableError); any other error is retried as the job's `attempts` and `backoff` say. A bundle (bundles.ts)
 * runs each of its payloads so, side by side, under the worker's `concurrency` counted in payloads.
 */
export function defineWorker<Q extends QueueName>(opts: DefineWorkerOptions<Q>): Worker {
  const { queue } = opts;
  const handlers = opts.handlers as Record<string, JobHandler<JobContract> | undefined>;
  const declared = new Map<string, JobContract>(jobsOnQueue(queue).map((j) => [j.name, j]));
  const missing = [...declared.keys()].filter((name) => typeof handlers[name] !== 'function');
  if (missing.length) throw new Error(`Worker for queue "${queue}" has no handler for: ${missing.join(', ')}.`);
  const stray = Object.keys(handlers).filter((name) => !declared.has(name));
  if (stray.length) throw new Error(`Worker for queue "${queue}" has handlers for jobs not declared on it: ${stray.join(', ')}.`);
  if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1) {
    throw new Error(`Worker for queue "${queue}": concurrency must be a positive integer, got ${opts.concurrency}.`);
  }

  const logger = opts.logger ?? stderrLogger;
  const tracer = trace.getTracer(TRACER_NAME);

  // At most `concurrency` payloads run at once, counted across bundles (a bundle is one job, one of the worker's
  // slots, with several payloads): only on a queue whose jobs bundle, where the slots alone would not bound them.
  const gate = [...declared.values()].some((c) => c.bundle) ? permits(opts.concurrency) : null;

  /** One payload (a job's, or one of a bundle's) through its contract's handler, in its own span. */
  const runPayload = (job: Job, data: unknown, signal: AbortSignal | undefined, bundled?: number): Promise<unknown> => {
    const contract = declared.get(job.name);
    const handler = handlers[job.name];
    const parent = continuedOrNewTrace(contextFromEnvelope(data));
    const run = (span: Span | undefined) => async () => {
      try {
        if (!contract || !handler) throw new UnrecoverableError(`No handler for job "${job.name}" on queue "${queue}".`);
        const parsed = contract.schema.safeParse(data);
        if (!parsed.success) {
          const sent = (data as { v?: unknown } | null)?.v;
          throw new UnrecoverableError(
            `${job.name}: the payload (v${typeof sent === 'number' ? sent : '?'}) does not match contract v${contract.version}:\n${z.prettifyError(parsed.error)}`,
          );
        }
        return await handler(parsed.data, signal ? { job, signal } : { job });
      } catch (e) {
        if (shutDown(signal)) {
          span?.addEvent('returned to the queue on worker shutdown');
          throw e;
        }
        const err = toWorkerError(e);
        span?.recordException(err);
        span?.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
        throw err;
      } finally {
        span?.end();
      }
    };
    // The producer's trace was not drawn: the job runs in its bare unsampled context (its ids still in the logs and
    // in what it enqueues or calls), with no span of its own. Drawn, or with no trace, it gets its `process` span.
    if (inUnsampledTrace(parent)) {
      return context.with(parent, run(undefined));
    }
    const attributes = {
      'messaging.system': 'bullmq',
      'messaging.destination.name': queue,
      'messaging.operation.type': 'process',
      'messaging.message.id': job.id ?? '',
      'messaging.bullmq.attempt': job.attemptsMade + 1,
      ...(bundled && { 'messaging.batch.message_count': bundled }),
    };
    return tracer.startActiveSpan(`${job.name} process`, { kind: SpanKind.CONSUMER, attributes }, parent, (span) => run(span)());
  };

  /**
   * A bundle's payloads, side by side: the job's result is theirs, in order. When any throws, the bundle throws once
   * all have ended (the first retryable error, so the queue runs the whole bundle again; else the first), and each
   * payload's handler finds on its re-run what its earlier run did.
   */
  const runBundle = async (job: Job, payloads: unknown[], signal: AbortSignal | undefined): Promise<unknown[]> => {
    const ran = await Promise.allSettled(payloads.map((data) => gate!(() => runPayload(job, data, signal, payloads.length))));
    const failed = ran.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    if (failed.length) throw failed.find((e) => !(e instanceof UnrecoverableError)) ?? failed[0];
    return ran.map((r) => (r as PromiseFulfilledResult<unknown>).value);
  };

  // Three parameters: BullMQ hands a processor that declares `signal` an AbortSignal per job.
  const processor = async (job: Job, token: string | undefined, signal: AbortSignal | undefined): Promise<unknown> => {
    try {
      const payloads = declared.get(job.name)?.bundle ? bundledPayloads(job.data) : null;
      if (payloads) return await runBundle(job, payloads, signal);
      return await (gate ? gate(() => runPayload(job, job.data, signal)) : runPayload(job, job.data, signal));
    } catch (e) {
      if (shutDown(signal) && token !== undefined) {
        // Shutdown gave up waiting and the handler stopped: hand the job back to the queue without spending an
        // attempt (handlers are idempotent, another worker re-runs it). WaitingError tells BullMQ it was moved.
        await job.moveToWait(token);
        throw new WaitingError();
      }
      throw e;
    }
  };

  const worker = new Worker(queue, processor, {
    ...opts.options,
    // Started below, once its fetch loop is chosen: BullMQ's constructor would start BullMQ's own.
    autorun: false,
    connection: opts.connection,
    prefix: opts.prefix,
    concurrency: opts.concurrency,
    ...(opts.backoffStrategy ? { settings: { backoffStrategy: opts.backoffStrategy } } : {}),
  });
  if (opts.takeOnePerJob) takeOnePerJob(worker);
  if (opts.options?.autorun !== false) worker.run().catch((err: unknown) => worker.emit('error', err as Error));
  worker.on('error', (err) => logger.error({ err, queue }, 'worker error'));
  worker.on('stalled', (jobId) => logger.warn({ queue, jobId }, 'job stalled: its lock expired, it will run again'));
  worker.on('failed', (job, err) => {
    const fields = { queue, jobId: job?.id, job: job?.name, attemptsMade: job?.attemptsMade, err };
    // finishedOn is set only when the failure is final (no attempt left, unrecoverable, or the schedule ran out).
    if (!job || job.finishedOn) logger.error(fields, 'job failed');
    else logger.warn(fields, 'job attempt failed, will retry');
  });
  return worker;
}

const shutDown = (signal: AbortSignal | undefined): boolean => signal?.aborted === true && signal.reason === WORKER_SHUTDOWN;

/** Runs at most `limit` of the functions given to it at once; the others wait their turn, first come first run. */
function permits(limit: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (fn) => {
    // A permit freed while others wait passes straight to the first of them.
    if (running < limit) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

/** The parts of BullMQ 6.7's Worker that takeOnePerJob's loop drives (private in its typings, stable in its code). */
interface WorkerInternals {
  id: string;
  opts: WorkerOptions;
  closing: Promise<void> | null;
  paused: boolean;
  /** When the next delayed job is due (0: none), from the last take; waitForJob blocks until then at most. */
  blockUntil: number;
  _concurrency: number;
  keys: Record<'marker' | 'wait' | 'prioritized', string>;
  backend: {
    blockingClient: Promise<Redis> | undefined;
    /** The queue's keys, options and command client, as the backend's scripts read them (`await this.queue.client`). */
    queue: { client: Promise<Redis> };
    /** The take script's raw answer: [job data, job id, rate-limit delay, next delayed job's time]. */
    moveToActive(token: string, name?: string): Promise<[unknown, string | undefined, number, number]>;
  };
  mainLoop: () => Promise<void>;
  moveToActive(token: string, name?: string): Promise<Job | undefined>;
  updateDelays(rateLimitDelay?: number, delayUntil?: number): void;
  nextJobFromJobData(jobData: unknown, jobId: string | undefined, token: string): Promise<Job | undefined>;
  waitForJob(blockUntil: number): Promise<number>;
  isRateLimited(): boolean;
  waitForRateLimit(): Promise<void>;
  processJob(job: Job, token: string, fetchNext: () => boolean): Promise<Job | void>;
  retryIfFailed<T>(fn: () => Promise<T>, opts: { delayInMs?: number; onlyEmitError?: boolean }): Promise<T | undefined>;
  emit(event: 'error', err: Error): boolean;
}

/**
 * Removes the queue's base marker (member "0", "a job waits in `wait`") when no job waits. Safe at any moment: it
 * removes nothing while a job waits, atomically, and every add after it puts the marker back. Delay markers (member
 * "1") are left alone. BullMQ's take puts the base marker back after each job it takes, whether or not another
 * waits, so without this a worker's next blocking wait returns at once, on a marker for a job already taken.
 */
const CLEAR_STALE_MARKER = `if redis.call('LLEN', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[3]) == 0 then return redis.call('ZREM', KEYS[1], '0') end return 0`;

/**
 * Replaces BullMQ's fetch loop (Worker.mainLoop, run by Worker.run) with one that takes a job once and starts it at
 * once. Everything else is BullMQ's own: run() still starts the stalled-job checker and lock renewal, processJob
 * still tracks the lock, completes or fails the job (retries, backoff, removal settings) and takes the next job in
 * the same script call (fetchNext), close() still breaks the blocking wait and waits for the jobs in flight.
 *
 * BullMQ's loop, per job arriving at an idle worker: the blocking wait returns, a take gets the job, a second take
 * (awaited before the job starts) finds nothing, a second blocking wait returns at once on the marker the first
 * take put back, and a third take finds nothing: 3 takes and 2 waits, the first 2 takes before the job starts.
 * Here: the take is sent right behind the wait on the connection that blocks, so Redis runs it the moment the wait
 * returns and the job arrives with the wait's answer (one round trip where BullMQ spends three before the job
 * starts); the loop clears the marker its take put back in the same write as its next wait, which then blocks: 1
 * take and 1 wait. Under load (other jobs in flight) the loop takes again at once, as BullMQ's does, and a slot
 * whose job completes goes on with the job its completion took in the same script call.
 *
 * A backlog (jobs that arrived faster than the loop took them: a burst of completions upstream) is taken in batches:
 * after each round of takes that all found a job, the next round sends twice as many (at most the free slots) in one
 * socket write, and Redis runs them back to back. BullMQ's loop, like this one's before, takes one job per round
 * trip, so the n-th job of a backlog waited n round trips of a process that, on a busy machine, waits for a core at
 * each one (bench/tasks under MONITOR: a take every 6-70 ms while callback jobs queued behind them). A round that
 * comes back short has emptied the queue: the loop blocks on the marker next, as after an empty take.
 */
function takeOnePerJob(worker: Worker): void {
  const w = worker as unknown as WorkerInternals;
  // A BullMQ upgrade that renames these fails here, at start-up, rather than in a loop that takes nothing.
  const driven = ['mainLoop', 'moveToActive', 'updateDelays', 'nextJobFromJobData', 'waitForJob', 'isRateLimited', 'waitForRateLimit', 'processJob', 'retryIfFailed'] as const;
  const missing = driven.filter((name) => typeof w[name] !== 'function');
  const lacks = [
    ...missing,
    ...(w.keys?.marker ? [] : ['keys.marker']),
    ...(w.backend?.blockingClient ? [] : ['backend.blockingClient']),
    ...(typeof w.backend?.moveToActive === 'function' ? [] : ['backend.moveToActive']),
    ...(typeof w.backend?.queue?.client?.then === 'function' ? [] : ['backend.queue.client']),
  ];
  if (lacks.length) throw new Error(`takeOnePerJob drives BullMQ 6.7's Worker internals; this BullMQ lacks: ${lacks.join(', ')}.`);
  w.mainLoop = async function (this: WorkerInternals) {
    const slots = new Set<Promise<void>>();
    let tokens = 0;
    const occupy = (first: Job) => {
      const slot = (async () => {
        for (let job: Job | void = first; job; ) job = await this.processJob(job, job.token!, () => true);
      })()
        .catch((err: unknown) => void this.emit('error', err as Error))
        .finally(() => slots.delete(slot));
      slots.add(slot);
    };
    // Block on the marker before the next take: after a round of takes that came back short, and after a take whose
    // job found the worker idle (it most likely came alone; when it did not, the marker it left ends the wait at once).
    let block = false;
    // Rounds of takes in a row that each found as many jobs as they asked for: the next round asks for 2^streak.
    let streak = 0;
    /** One take behind a blocking wait (`wait`), or `count` takes at once. */
    const take = async (wait: boolean, count: number): Promise<(Job | undefined)[]> => {
      // When the next delayed job is due, as last known. A wait woken by a waiting job's marker, and a take that
      // gets a job, report no delay (blockUntil 0) though the delayed job is still there, and its marker was
      // consumed by the wait that reported it: kept here, or the loop would next block until drainDelay. BullMQ's
      // loop learns it again from its next take, which finds nothing and returns the next delay.
      const due = this.blockUntil;
      const jobs = wait ? [await waitAndTake(`${this.id}:${tokens++}`)] : await takeNow(count);
      if (jobs[jobs.length - 1] && due > 0 && this.blockUntil === 0) this.blockUntil = due;
      return jobs;
    };
    /** `count` takes without waiting, sent in one socket write (each with a token of its own). */
    const takeNow = async (count: number): Promise<(Job | undefined)[]> => {
      if (count > 1) coalesceWrites(await this.backend.queue.client);
      return Promise.all(Array.from({ length: count }, () => this.moveToActive(`${this.id}:${tokens++}`, this.opts.name)));
    };
    const waitAndTake = async (token: string): Promise<Job | undefined> => {
      const { marker, wait, prioritized } = this.keys;
      const blocking = (await this.backend.blockingClient)!;
      // The clear, the wait and the take leave in one write, in that order, on the connection that blocks (the take
      // is sent in the next turn, below: two turns held).
      coalesceWrites(blocking, 2);
      blocking.eval(CLEAR_STALE_MARKER, 3, marker, wait, prioritized).catch(() => undefined);
      const woken = this.waitForJob(this.blockUntil);
      // The take is sent right behind the wait, on the same connection, instead of after the wait's answer: Redis runs
      // it as soon as the wait returns (a client's commands run in order, and a blocked client's next command waits
      // for the block to end), so a job that wakes an idle worker reaches it with the wait's answer, one round trip
      // sooner. The wait is sent a few microtasks into waitForJob; by the next turn it has been.
      await new Promise((resolve) => setImmediate(resolve));
      // Paused or closing: no wait was sent (waitForJob answers Infinity), and no job may be taken.
      if (this.closing || this.paused) return void (await woken);
      const taken = takeOn(blocking, token);
      this.blockUntil = await woken;
      let raw: Awaited<typeof taken>;
      try {
        raw = await taken;
      } catch (e) {
        // The blocking connection was dropped under it (close, pause, or BullMQ's stuck-wait watchdog): the take
        // never ran, as it waited behind the wait on that connection. (Had the wait just returned and the take run,
        // its job stays active until its lock expires and the stalled-job check hands it out again.)
        if (this.closing || this.paused) return undefined;
        throw e;
      }
      // What the take saw is newer than what the wait saw: its delays, as BullMQ's moveToActive applies them.
      const [jobData, id, rateLimitDelay, delayUntil] = raw;
      this.updateDelays(rateLimitDelay, delayUntil);
      return this.nextJobFromJobData(jobData, id, token);
    };
    // The backend's take script, sent on `client` instead of the command connection (the script reads its client as
    // `await this.queue.client`; every BullMQ connection has the scripts loaded).
    const takeOn = (client: Redis, token: string) => {
      const queue = Object.create(this.backend.queue, { client: { value: Promise.resolve(client) } }) as object;
      return this.backend.moveToActive.call(Object.create(this.backend, { queue: { value: queue } }), token, this.opts.name);
    };
    while (!this.closing && !this.paused) {
      if (slots.size >= this._concurrency) {
        await Promise.race(slots);
      } else if (this.isRateLimited()) {
        await this.waitForRateLimit();
      } else {
        const waited: boolean = block;
        const count: number = waited ? 1 : Math.min(2 ** streak, this._concurrency - slots.size);
        const jobs: (Job | undefined)[] = (await this.retryIfFailed(() => take(waited, count), { delayInMs: this.opts.runRetryDelay, onlyEmitError: true })) ?? [];
        const taken = jobs.filter((job): job is Job => job !== undefined);
        for (const job of taken) occupy(job);
        const short: boolean = taken.length < count;
        block = short || slots.size === taken.length;
        streak = block || waited ? 0 : streak + 1;
      }
    }
    await Promise.all(slots);
  };
}

/** A 4xx-class AppError is the caller's fault: retrying cannot help, so BullMQ must not retry it. */
function toWorkerError(e: unknown): Error {
  if (e instanceof UnrecoverableError) return e;
  if (isAppError(e) && !isRetryable(e)) {
    const err = new UnrecoverableError(`${e.code}: ${e.message}`);
    Object.defineProperty(err, 'cause', { value: e, enumerable: false });
    return err;
  }
  return e instanceof Error ? e : new Error(String(e));
}

export interface CloseWorkersResult {
  /** True when in-flight jobs outlived the timeout and the workers were stopped without them. */
  forced: boolean;
}

/**
 * Stops the workers taking jobs and waits up to `timeoutMs` for in-flight ones to finish. Past that, handlers are
 * aborted (signal reason WORKER_SHUTDOWN; a handler that stops then has its job put back in the queue, attempt
 * unspent) and get up to `abortGraceMs` more, after which this returns `{ forced: true }` without them.
 *
 * A handler that ignores its signal is abandoned, not killed: its job keeps its lock until the next shutdown phase
 * closes the Redis connection (lock renewal stops), then another worker re-runs it as a stalled job. The workers'
 * connections are not cut here: in BullMQ 6 `Worker.disconnect()` also drops the caller's shared connection.
 */
export async function closeWorkers(
  workers: readonly Worker[],
  timeoutMs: number,
  opts: { abortGraceMs?: number } = {},
): Promise<CloseWorkersResult> {
  const closing = Promise.allSettled(workers.map((w) => w.close()));
  if (await settlesWithin(closing, timeoutMs)) return { forced: false };
  for (const w of workers) w.cancelAllJobs(WORKER_SHUTDOWN);
  await settlesWithin(closing, opts.abortGraceMs ?? 1000);
  return { forced: true };
}

async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(resolve, ms, false);
  });
  try {
    return await Promise.race([p.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The shutdown phase of a worker service (STYLE.md convention 5): stop taking jobs, give in-flight ones `waitMs` to
 * finish, then abort them (handed back to the queue unspent) with `abortGraceMs` to stop. `what` names the jobs in
 * the warning logged when some were handed back.
 */
export function closeWorkersPhase(
  workers: readonly Worker[],
  opts: { waitMs: number; abortGraceMs: number; what: string; logger: Pick<QueueLogger, 'warn'> },
): { name: string; timeoutMs: number; run: () => Promise<void> } {
  return {
    name: 'close workers',
    timeoutMs: opts.waitMs + opts.abortGraceMs + 5_000,
    run: async () => {
      const { forced } = await closeWorkers(workers, opts.waitMs, { abortGraceMs: opts.abortGraceMs });
      if (forced) opts.logger.warn({}, `${opts.what} still running at shutdown were handed back to the queue`);
    },
  };
}
