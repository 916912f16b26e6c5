import { jobsOnQueue, type JobContract, type JobPayload, type JobsOnQueue, type QueueName } from '@gensvc/contracts';
import { isAppError, isRetryable } from '@gensvc/errors';
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { inUnsampledTrace } from '@gensvc/observability';
import { UnrecoverableError, WaitingError, Worker, type BackoffStrategy, type Job, type WorkerOptions } from 'bullmq';
import { bullPrefix, type RedisConnection } from './connection';
import { z } from 'zod';
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
  /**
   * Shared for commands and duplicated for the blocking fetch; closing the worker leaves it open (its owner closes it).
   */
  connection: RedisConnection;
  prefix: string;
  concurrency: number;
  handlers: NoInfer<QueueHandlers<Q>>;
  logger?: QueueLogger;
  /** How retries are spaced for jobs enqueued with `backoff: SCHEDULED_BACKOFF`; see scheduleBackoff. */
  backoffStrategy?: BackoffStrategy;
  options?: Pick<
    WorkerOptions,
    'autorun' | 'name' | 'lockDuration' | 'stalledInterval' | 'maxStalledCount' | 'limiter' | 'drainDelay'
  >;
}

/** This run of the job is its last: a failure now is final (no attempt left for BullMQ to retry). */
export const isLastAttempt = (job: Pick<Job, 'attemptsMade' | 'opts'>): boolean =>
  job.attemptsMade + 1 >= (job.opts.attempts ?? 1);

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
 * (UnrecoverableError); any other error is retried as the job's `attempts` and `backoff` say.
 */
export function defineWorker<Q extends QueueName>(opts: DefineWorkerOptions<Q>): Worker {
  const { queue } = opts;
  const handlers = opts.handlers as Record<string, JobHandler<JobContract> | undefined>;
  const declared = new Map<string, JobContract>(jobsOnQueue(queue).map((j) => [j.name, j]));
  const missing = [...declared.keys()].filter((name) => typeof handlers[name] !== 'function');
  if (missing.length) throw new Error(`Worker for queue "${queue}" has no handler for: ${missing.join(', ')}.`);
  const stray = Object.keys(handlers).filter((name) => !declared.has(name));
  if (stray.length)
    throw new Error(`Worker for queue "${queue}" has handlers for jobs not declared on it: ${stray.join(', ')}.`);
  if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1) {
    throw new Error(`Worker for queue "${queue}": concurrency must be a positive integer, got ${opts.concurrency}.`);
  }

  const logger = opts.logger ?? stderrLogger;
  const tracer = trace.getTracer(TRACER_NAME);

  /** The job's payload through its contract's handler, in its own span. */
  const runPayload = (job: Job, data: unknown, signal: AbortSignal | undefined): Promise<unknown> => {
    const contract = declared.get(job.name);
    const handler = handlers[job.name];
    const parent = continuedOrNewTrace(contextFromEnvelope(data));
    const run = (span: Span | undefined) => async () => {
      try {
        if (!contract || !handler)
          throw new UnrecoverableError(`No handler for job "${job.name}" on queue "${queue}".`);
        const parsed = contract.schema.safeParse(data);
        if (!parsed.success) {
          const sent = (data as { v?: unknown } | null)?.v;
          throw new UnrecoverableError(
            `${job.name}: the payload (v${typeof sent === 'number' ? sent : '?'}) ` +
              `does not match contract v${contract.version}:\n${z.prettifyError(parsed.error)}`,
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
    };
    return tracer.startActiveSpan(`${job.name} process`, { kind: SpanKind.CONSUMER, attributes }, parent, (span) =>
      run(span)(),
    );
  };

  // Three parameters: BullMQ hands a processor that declares `signal` an AbortSignal per job.
  const processor = async (job: Job, token: string | undefined, signal: AbortSignal | undefined): Promise<unknown> => {
    try {
      return await runPayload(job, job.data, signal);
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
    connection: opts.connection,
    prefix: bullPrefix(opts.connection, opts.prefix),
    concurrency: opts.concurrency,
    ...(opts.backoffStrategy ? { settings: { backoffStrategy: opts.backoffStrategy } } : {}),
  });
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

const shutDown = (signal: AbortSignal | undefined): boolean =>
  signal?.aborted === true && signal.reason === WORKER_SHUTDOWN;

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
