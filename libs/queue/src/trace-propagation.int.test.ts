// The library's use of the OpenTelemetry API (inject at enqueue, extract and startActiveSpan in the worker) under
// the real SDK as the services start it: startTelemetry, with every finished span kept in memory.
import { randomBytes } from 'node:crypto';
import { ArchiveOutput } from '@gensvc/contracts';
import { startTelemetry, type Telemetry } from '@gensvc/observability';
import { eventually, useTestContext } from '@gensvc/testing';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  context,
  trace,
  type SpanContext,
} from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { QueueEvents, Worker } from 'bullmq';
import type { RedisConnection } from './connection';
import { createRedisConnection } from './connection';
import type { QueueLogger } from './logger';
import { createQueueEvents, createQueues, enqueue, type Queues } from './queues';
import { contextFromQuery, traceQueryOf } from './trace-context';
import { closeWorkers, defineWorker } from './worker';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

const ctx = useTestContext();

describe('trace context across the queue', () => {
  const exporter = new InMemorySpanExporter();
  let telemetry: Telemetry;
  const seen: { taskId: string; active: SpanContext | undefined }[] = [];
  let connection: RedisConnection;
  let queues: Queues;
  let worker: Worker;
  let events: QueueEvents;
  /**
   * The last finished span of that name in this test (the exporter holds only ended spans), read as assertions want it.
   */
  const named = (name: string) =>
    eventually(() => {
      const span = exporter
        .getFinishedSpans()
        .filter((s) => s.name === name)
        .at(-1);
      return (
        span && {
          kind: span.kind,
          ended: span.ended,
          parent: span.parentSpanContext,
          context: span.spanContext(),
          attributes: span.attributes,
          status: span.status,
        }
      );
    }, `a finished ${name} span`);
  const logged: string[] = [];
  const logger: QueueLogger = {
    info: () => {},
    warn: (_o, msg) => logged.push(`warn ${msg}`),
    error: (_o, msg) => logged.push(`error ${msg}`),
  };

  beforeAll(async () => {
    telemetry = startTelemetry({
      serviceName: 'queue-trace-test',
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });

    const prefix = ctx.env.QUEUE_PREFIX!;
    connection = createRedisConnection(ctx.env.REDIS_URL!, { name: 'gensvc-queue-trace-test' });
    queues = createQueues({ connection, prefix, logger });
    worker = defineWorker({
      queue: 'archive',
      connection,
      prefix,
      concurrency: 2,
      logger,
      handlers: {
        'archive.output': async (payload) => {
          seen.push({ taskId: payload.taskId, active: trace.getActiveSpan()?.spanContext() });
          if (payload.taskId === 'tsk_boom') throw new Error('bucket unavailable');
          return 'archived';
        },
      },
    });
    events = createQueueEvents({ queue: 'archive', connection, prefix, logger });
    await events.waitUntilReady();
  });

  afterAll(async () => {
    await closeWorkers([worker], 5_000);
    await events.close();
    await queues.close();
    await connection.quit();
    await telemetry.shutdown();
  });

  beforeEach(() => exporter.reset());

  it('runs the handler in a span that is a child of the publish span, in the trace active at enqueue', async () => {
    const tracer = trace.getTracer('test');
    const { root, job } = await tracer.startActiveSpan('POST /api/v1/tasks', async (span) => {
      try {
        return {
          root: span.spanContext(),
          job: await enqueue(queues, ArchiveOutput, { taskId: 'tsk_1', outputIndex: 0 }),
        };
      } finally {
        span.end();
      }
    });
    await expect(job.waitUntilFinished(events, 10_000)).resolves.toBe('archived');

    const publish = await named('archive.output publish');
    expect(publish).toMatchObject({
      kind: SpanKind.PRODUCER,
      ended: true,
      parent: { traceId: root.traceId, spanId: root.spanId },
    });
    expect(job.data.trace).toEqual({ traceparent: `00-${root.traceId}-${publish.context.spanId}-01` });

    const processed = await named('archive.output process');
    expect(processed).toMatchObject({
      kind: SpanKind.CONSUMER,
      ended: true,
      parent: { traceId: root.traceId, spanId: publish.context.spanId, isRemote: true },
      attributes: { 'messaging.destination.name': 'archive', 'messaging.message.id': job.id },
    });
    expect(processed.status?.code).not.toBe(SpanStatusCode.ERROR);
    expect(seen.at(-1)).toEqual({ taskId: 'tsk_1', active: processed.context });
  });

  it('with no active span, continues the trace the payload already carries (an outbox relay)', async () => {
    const stored = { traceId: hex(16), spanId: hex(8) };
    const job = await enqueue(queues, ArchiveOutput, {
      taskId: 'tsk_2',
      outputIndex: 1,
      trace: { traceparent: `00-${stored.traceId}-${stored.spanId}-01` },
    });
    const publish = await named('archive.output publish');
    expect(publish.parent).toMatchObject({ traceId: stored.traceId, spanId: stored.spanId });
    expect(job.data.trace).toEqual({ traceparent: `00-${stored.traceId}-${publish.context.spanId}-01` });
    await job.waitUntilFinished(events, 10_000);
    expect((await named('archive.output process')).parent).toMatchObject({
      traceId: stored.traceId,
      spanId: publish.context.spanId,
    });
  });

  it("runs a job of an undrawn trace in its unsampled context with no span; a drawn one's gets both", async () => {
    // (Its Postgres and Redis calls then build no span either: @gensvc/observability's telemetry test; Jest's loader
    // is not hooked, so the drivers are not instrumented here.)
    const producer = { traceId: hex(16), spanId: hex(8), isRemote: true };
    const inTrace = (taskId: string, traceFlags: TraceFlags) =>
      context.with(trace.setSpanContext(ROOT_CONTEXT, { ...producer, traceFlags }), () =>
        enqueue(queues, ArchiveOutput, { taskId, outputIndex: 0 }),
      );
    const undrawn = await inTrace('tsk_undrawn', TraceFlags.NONE);
    await undrawn.waitUntilFinished(events, 10_000);
    // No publish span either: the job carries the producer's own unsampled context...
    expect(undrawn.data.trace).toEqual({ traceparent: `00-${producer.traceId}-${producer.spanId}-00` });
    // ...and the handler ran inside it, under the producer's span.
    expect(seen.at(-1)).toEqual({ taskId: 'tsk_undrawn', active: { ...producer, traceFlags: TraceFlags.NONE } });

    const drawn = await inTrace('tsk_drawn', TraceFlags.SAMPLED);
    await drawn.waitUntilFinished(events, 10_000);
    const processed = await named('archive.output process');
    expect(processed.parent).toMatchObject({ traceId: drawn.data.trace!.traceparent!.split('-')[1] });
    expect(seen.at(-1)).toEqual({ taskId: 'tsk_drawn', active: processed.context });
    // One publish and one process span in all: the drawn job's.
    expect(
      exporter
        .getFinishedSpans()
        .map((s) => s.name)
        .filter((name) => name.startsWith('archive.output '))
        .sort(),
    ).toEqual(['archive.output process', 'archive.output publish']);
  });

  it('marks the consumer span failed when the handler throws', async () => {
    // The queue's event can reach waitUntilFinished before the worker has emitted (and logged) its own.
    const failedHere = new Promise((resolve) => worker.once('failed', resolve));
    const job = await context.with(
      trace.setSpanContext(ROOT_CONTEXT, {
        traceId: hex(16),
        spanId: hex(8),
        traceFlags: TraceFlags.SAMPLED,
        isRemote: true,
      }),
      // One attempt: the failure is final at once (archive.output is otherwise retried: its contract declares `retry`).
      () => enqueue(queues, ArchiveOutput, { taskId: 'tsk_boom', outputIndex: 0 }, { attempts: 1 }),
    );
    await expect(job.waitUntilFinished(events, 10_000)).rejects.toThrow('bucket unavailable');
    expect(await named('archive.output process')).toMatchObject({
      ended: true,
      status: { code: SpanStatusCode.ERROR, message: 'bucket unavailable' },
    });
    await failedHere;
    expect(logged).toEqual(['error job failed']);
  });

  it("carries the active trace in a URL's query for a provider's webhook call back, and reads it there", async () => {
    const span = { traceId: hex(16), spanId: hex(8), traceFlags: TraceFlags.SAMPLED, isRemote: true };
    const query = context.with(trace.setSpanContext(ROOT_CONTEXT, span), () => traceQueryOf());
    expect(query).toBe(`traceparent=00-${span.traceId}-${span.spanId}-01`);
    // As the edge reads the webhook's URL: the same span context, remote.
    expect(trace.getSpanContext(contextFromQuery(Object.fromEntries(new URLSearchParams(`a=1&${query}`))))).toEqual(
      span,
    );
    // No active span: nothing in the URL; a query without a trace, or with a malformed one, gives the root context.
    expect(traceQueryOf(ROOT_CONTEXT)).toBe('');
    expect(contextFromQuery({ a: '1' })).toBe(ROOT_CONTEXT);
    expect(trace.getSpanContext(contextFromQuery({ traceparent: '00-xyz-01' }))).toBeUndefined();
    expect(trace.getSpanContext(contextFromQuery({ traceparent: '0'.repeat(600) }))).toBeUndefined();
    // A field given twice (parsed as an array) is not one value.
    expect(
      trace.getSpanContext(
        contextFromQuery({
          traceparent: [`00-${span.traceId}-${span.spanId}-01`, `00-${span.traceId}-${span.spanId}-01`],
        }),
      ),
    ).toBeUndefined();
  });
});
