import {
  jobKeyOf,
  type JobContract,
  type JobInput,
  type JobKey,
  type JobPayload,
  type KeyedJob,
  type QueueName,
} from '@gensvc/contracts';
import { errors } from '@gensvc/errors';
import { SpanKind, SpanStatusCode, context, isSpanContextValid, trace, type Span } from '@opentelemetry/api';
import { inUnsampledTrace } from '@gensvc/observability';
import { Queue, QueueEvents, type Job, type JobsOptions } from 'bullmq';
import { bullPrefix, type RedisConnection } from './connection';
import { z } from 'zod';
import { stderrLogger, type QueueLogger } from './logger';
import { TRACER_NAME, contextFromEnvelope, continuedOrNewTrace, traceCarrierOf } from './trace-context';

/** Completed jobs stay an hour (long enough for a waiting caller to read the result), failed ones a week. */
export const DEFAULT_JOB_OPTIONS = {
  removeOnComplete: { age: 3600, count: 10_000 },
  removeOnFail: { age: 7 * 86_400 },
} as const satisfies JobsOptions;

export interface Queues {
  readonly prefix: string;
  /** The connection every queue's commands go through (its owner closes it). */
  readonly connection: RedisConnection;
  /** The BullMQ queue of that name, created on first use. */
  get(name: QueueName): Queue;
  /** Closes the queues created so far. The connection stays open: its owner closes it. */
  close(): Promise<void>;
}

export interface CreateQueuesOptions {
  connection: RedisConnection;
  /** BullMQ key prefix (QUEUE_PREFIX): every key of every queue starts with it. */
  prefix: string;
  defaultJobOptions?: JobsOptions;
  logger?: QueueLogger;
}

export function createQueues(opts: CreateQueuesOptions): Queues {
  const logger = opts.logger ?? stderrLogger;
  const created = new Map<QueueName, Queue>();
  let closed = false;
  return {
    prefix: opts.prefix,
    connection: opts.connection,
    get(name) {
      if (closed) throw new Error(`Queues under prefix "${opts.prefix}" are closed.`);
      let queue = created.get(name);
      if (!queue) {
        queue = new Queue(name, {
          connection: opts.connection,
          prefix: bullPrefix(opts.connection, opts.prefix),
          defaultJobOptions: { ...DEFAULT_JOB_OPTIONS, ...opts.defaultJobOptions },
        });
        queue.on('error', (err) => logger.error({ err, queue: name }, 'queue error'));
        created.set(name, queue);
      }
      return queue;
    },
    async close() {
      closed = true;
      await Promise.all([...created.values()].map((q) => q.close()));
      created.clear();
    },
  };
}

/** A queue's event stream, for `job.waitUntilFinished(events, ttl)`. It opens its own (blocking) connection. */
export function createQueueEvents(opts: {
  queue: QueueName;
  connection: RedisConnection;
  prefix: string;
  logger?: QueueLogger;
}): QueueEvents {
  const events = new QueueEvents(opts.queue, {
    connection: opts.connection,
    prefix: bullPrefix(opts.connection, opts.prefix),
  });
  const logger = opts.logger ?? stderrLogger;
  events.on('error', (err) => logger.error({ err, queue: opts.queue }, 'queue events error'));
  return events;
}

/**
 * The BullMQ id for a job with a deterministic key. The job name comes first so that two jobs of one queue keyed
 * by the same row (task.submit and task.poll of one task) never share an id. BullMQ forbids ':' in custom ids and
 * ids that are integers: each part is URI-encoded (':' becomes '%3A') and parts are joined with '/', which keeps
 * the mapping one-to-one and never yields an integer.
 */
export function jobIdFor(contract: Pick<JobContract, 'name'>, key: string | JobKey): string {
  const parts = typeof key === 'string' ? [key] : key;
  if (parts.length === 0) throw new Error(`Job ${contract.name}: an empty jobId key.`);
  return [contract.name, ...parts.map((p) => encodeURIComponent(String(p)))].join('/');
}

/** The BullMQ id of a keyed job's payload: its contract's `key`, under its name. */
export function jobIdOf<J extends KeyedJob>(contract: J, payload: JobInput<J>): string {
  return jobIdFor(contract, jobKeyOf(contract, payload as JobPayload<J>));
}

/** BullMQ's options for one add, less the id: a keyed contract decides it (STYLE.md convention 2). */
export type EnqueueOptions = Omit<JobsOptions, 'jobId'>;

/**
 * Validates the payload against the contract, stamps the contract version and the trace context into the
 * envelope, and adds the job, under the id its contract's `key` derives (adding a job whose id exists is a no-op
 * while the first one is kept, see DEFAULT_JOB_OPTIONS). An invalid payload is a producer bug: it is refused here
 * (AppError 500 `invalid_job_payload`) rather than failing later in a consumer. The add runs in a publish span.
 */
export async function enqueue<J extends JobContract>(
  queues: Queues,
  contract: J,
  payload: JobInput<J>,
  opts: EnqueueOptions = {},
  /**
   * `parsed`: the payload is made only of values its producer has just parsed or made itself (evaluate.run: the edge's
   * validated request, its ids and deadline), so the producer's own schema check is skipped — on the hot path it
   * would only repeat that work. The consumer still parses what it takes from Redis (defineWorker), so a producer
   * bug is refused there, not run.
   */
  check: 'validate' | 'parsed' = 'validate',
): Promise<Job<JobPayload<J>, unknown, J['name']>> {
  const added = await publish(contract, payload, check, (data) =>
    queues.get(contract.queue).add(contract.name, data, jobOptionsOf(contract, data, opts)),
  );
  return added as Job<JobPayload<J>, unknown, J['name']>;
}

/**
 * BullMQ's options for adding `data` (as stamped by publish): the contract's retries, `opts`, the id its key derives.
 */
function jobOptionsOf(contract: JobContract, data: unknown, opts: EnqueueOptions): JobsOptions {
  const retry = contract.retry
    ? { attempts: contract.retry.attempts, backoff: { type: 'exponential', delay: contract.retry.backoffMs } }
    : {};
  const jobOpts: JobsOptions = { ...retry, ...opts };
  if (contract.key) jobOpts.jobId = jobIdOf(contract as KeyedJob, data as JobInput<KeyedJob>);
  return jobOpts;
}

/**
 * Stamps the payload (the contract version, the trace context) and checks it against the contract (unless `parsed`),
 * then runs `add` with it in a producer span `<job name> publish`, whose context becomes `payload.trace`. The span's
 * parent is the active span; when there is none, the `trace` the caller put in the payload (an outbox relay
 * re-sending the context captured when its row was written); when there is neither, a new trace, drawn by the
 * telemetry's sampler. Inside a trace that was not drawn there is no span: `payload.trace` is the
 * parent's own (unsampled) context. What `add` answers is the job its payload went into.
 */
function publish<J extends JobContract, T extends { id?: string }>(
  contract: J,
  payload: JobInput<J>,
  check: 'validate' | 'parsed',
  add: (data: Record<string, unknown>) => Promise<T>,
): Promise<T> {
  const active = context.active();
  const activeSpan = trace.getSpanContext(active);
  const parent = continuedOrNewTrace(
    activeSpan && isSpanContextValid(activeSpan) ? active : contextFromEnvelope(payload),
  );
  const run = async (span: Span | undefined) => {
    try {
      const carrier = traceCarrierOf(span ? trace.setSpan(parent, span) : parent);
      const input: Record<string, unknown> = { ...(payload as object), v: contract.version };
      if (carrier.traceparent) input.trace = carrier;
      let data = input;
      if (check === 'validate') {
        const parsed = contract.schema.safeParse(input);
        if (!parsed.success) {
          throw errors.invalidJobPayload(
            `Refusing to enqueue ${contract.name} v${contract.version}: invalid payload:\n` +
              z.prettifyError(parsed.error),
            parsed.error,
          );
        }
        data = parsed.data as Record<string, unknown>;
      }
      const added = await add(data);
      if (added.id) span?.setAttribute('messaging.message.id', added.id);
      return added;
    } catch (e) {
      span?.recordException(e as Error);
      span?.setStatus({ code: SpanStatusCode.ERROR, message: (e as Error).message });
      throw e;
    } finally {
      span?.end();
    }
  };
  // Inside a trace that was not drawn nothing would be recorded: no publish span, the job carries the unsampled
  // context it was made in (as the worker runs a job of such a trace with no span).
  if (inUnsampledTrace(parent)) return run(undefined);
  const attributes = {
    'messaging.system': 'bullmq',
    'messaging.destination.name': contract.queue,
    'messaging.operation.type': 'send',
  };
  return trace
    .getTracer(TRACER_NAME)
    .startActiveSpan(`${contract.name} publish`, { kind: SpanKind.PRODUCER, attributes }, parent, run);
}
