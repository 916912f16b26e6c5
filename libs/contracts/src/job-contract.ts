// A job is declared once, as data (STYLE.md convention 1): the queue it travels on, a `domain.verb` name, a
// version and the zod schema of its payload. Producers and consumers both read the same declaration, so the
// payload shape cannot drift between them without the version saying so.
import { z } from 'zod';

export const QUEUE_NAMES = ['evaluate', 'tasks', 'archive', 'callbacks', 'mail', 'maintenance'] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

/**
 * Fields every payload carries besides its ids (STYLE.md convention 2). `trace` is a W3C trace-context carrier
 * (`traceparent`, `tracestate`) filled by the producer so the consumer's span joins the producer's trace. `v` is
 * the contract version the producer wrote; enqueue stamps it, so a consumer that cannot parse a payload can say
 * which version it was handed.
 */
export const envelopeShape = {
  workspaceId: z.string().min(1).optional(),
  requestId: z.string().min(1).optional(),
  trace: z.record(z.string(), z.string()).optional(),
  v: z.number().int().positive().optional(),
};
export const envelopeSchema = z.object(envelopeShape);
export type Envelope = z.output<typeof envelopeSchema>;

export interface JobContract<
  Q extends QueueName = QueueName,
  N extends string = string,
  S extends z.ZodType<Envelope, unknown> = z.ZodType<Envelope, unknown>,
> {
  readonly queue: Q;
  readonly name: N;
  readonly version: number;
  /** The envelope extended with the job's own fields. */
  readonly schema: S;
  /**
   * How often a handler's own failure (Postgres or a provider briefly unreachable) is tried, with exponential
   * backoff from `backoffMs`, whoever enqueues the job. Absent: once.
   */
  readonly retry?: JobRetry;
  /**
   * The job's deterministic id key, from its payload (STYLE.md convention 2): enqueue and ensureJob derive the BullMQ
   * id from it (`jobIdFor`), so no producer passes an id and two producers of one job cannot disagree on it. Absent:
   * every add is a new job (repeatable schedules).
   */
  readonly key?: (payload: never) => JobKey;
}

/** The parts of a job's id key; jobIdFor joins them under the job's name. */
export type JobKey = readonly (string | number)[];

/** A contract that declares its id key: the only kind ensureJob takes (it looks the job up by that id). */
export type KeyedJob = JobContract & { readonly key: (payload: never) => JobKey };

/** The id key of a payload of a keyed contract (the payload as the producer passes it, envelope optional). */
export function jobKeyOf<J extends KeyedJob>(contract: J, payload: JobPayload<J>): JobKey {
  return (contract.key as (p: JobPayload<J>) => JobKey)(payload);
}

export interface JobRetry {
  attempts: number;
  backoffMs: number;
}

/** The payload a handler receives (after parsing: defaults applied, unknown keys stripped). */
export type JobPayload<J extends JobContract> = z.output<J['schema']>;
/** The payload a producer passes to enqueue. */
export type JobInput<J extends JobContract> = z.input<J['schema']>;

const JOB_NAME = /^[a-z][a-z0-9-]*\.[a-z][a-z0-9-]*$/;

interface JobDefinition<Q extends QueueName, N extends string, Shape extends z.ZodRawShape> {
  queue: Q;
  /** `domain.verb`, lower-case, kebab-case words: `task.submit`, `files.retention-sweep`. */
  name: N;
  version: number;
  schema: z.ZodObject<Shape>;
  retry?: JobRetry;
}

function contractOf<const Q extends QueueName, const N extends string, Shape extends z.ZodRawShape>(
  def: JobDefinition<Q, N, Shape>,
) {
  if (!(QUEUE_NAMES as readonly string[]).includes(def.queue))
    throw new Error(`Job ${def.name}: unknown queue "${def.queue}".`);
  if (!JOB_NAME.test(def.name)) throw new Error(`Job name "${def.name}" is not of the form domain.verb.`);
  if (!Number.isInteger(def.version) || def.version < 1)
    throw new Error(`Job ${def.name}: version must be a positive integer.`);
  return {
    queue: def.queue,
    name: def.name,
    version: def.version,
    schema: envelopeSchema.extend(def.schema.shape),
    ...(def.retry ? { retry: Object.freeze({ ...def.retry }) } : {}),
  };
}
type ContractOf<Q extends QueueName, N extends string, Shape extends z.ZodRawShape> = Readonly<
  ReturnType<typeof contractOf<Q, N, Shape>>
>;

/**
 * Declares a job. `schema` holds the job's own fields; the envelope is added here, so no payload can leave it
 * out. A field the envelope also declares (say a required `requestId`) is narrowed by the job's definition.
 * `key` (over the job's own fields) makes its id deterministic: `(p) => [p.taskId, p.attempt]`.
 */
export function defineJob<const Q extends QueueName, const N extends string, Shape extends z.ZodRawShape>(
  def: JobDefinition<Q, N, Shape> & { key: JobKeyFn<Shape> },
): ContractOf<Q, N, Shape> & { readonly key: JobKeyFn<Shape> };
export function defineJob<const Q extends QueueName, const N extends string, Shape extends z.ZodRawShape>(
  def: JobDefinition<Q, N, Shape> & { key?: undefined },
): ContractOf<Q, N, Shape>;
export function defineJob<const Q extends QueueName, const N extends string, Shape extends z.ZodRawShape>(
  def: JobDefinition<Q, N, Shape> & { key?: JobKeyFn<Shape> },
) {
  const base = contractOf(def);
  return Object.freeze(def.key ? { ...base, key: def.key } : base) satisfies JobContract<Q, N>;
}

/** A key function over a job's own fields (parsed). */
type JobKeyFn<Shape extends z.ZodRawShape> = (payload: z.output<z.ZodObject<Shape>>) => JobKey;
