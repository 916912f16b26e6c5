// The OpenTelemetry SDK packages are not dependencies of this library, so this file registers the smallest
// honest stand-ins through the public API: an AsyncLocalStorage context manager, a W3C `traceparent` propagator
// and a tracer that records each span with the parent it was given. What is under test is the library's use of
// the API (inject at enqueue, extract and startActiveSpan in the worker), which is the same with the real SDK.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { ArchiveOutput } from '@gensvc/contracts';
import { useTestContext } from '@gensvc/testing';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  context,
  isSpanContextValid,
  propagation,
  trace,
  type Attributes,
  type Context,
  type ContextManager,
  type Span,
  type SpanContext,
  type SpanOptions,
  type SpanStatus,
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api';
import type { QueueEvents, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { createRedisConnection } from './connection';
import type { QueueLogger } from './logger';
import { createQueueEvents, createQueues, enqueue, type Queues } from './queues';
import { closeWorkers, defineWorker } from './worker';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

class AsyncLocalContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.storage.run(ctx, () => fn.apply(thisArg, args));
  }
  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const fn = target as (...args: unknown[]) => unknown;
    const storage = this.storage;
    return function (this: unknown, ...args: unknown[]) {
      return storage.run(ctx, () => fn.apply(this, args));
    } as T;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.storage.disable();
    return this;
  }
}

const traceparentPropagator: TextMapPropagator = {
  inject(ctx, carrier, setter) {
    const sc = trace.getSpanContext(ctx);
    if (!sc || !isSpanContextValid(sc)) return;
    setter.set(carrier, 'traceparent', `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags & TraceFlags.SAMPLED}`);
  },
  extract(ctx, carrier, getter) {
    const header = getter.get(carrier, 'traceparent');
    const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec((Array.isArray(header) ? header[0] : header) ?? '');
    if (!m) return ctx;
    return trace.setSpanContext(ctx, { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16), isRemote: true });
  },
  fields: () => ['traceparent'],
};

interface RecordedSpan {
  name: string;
  kind: SpanKind | undefined;
  parent: SpanContext | undefined;
  context: SpanContext;
  attributes: Attributes;
  status?: SpanStatus;
  ended: boolean;
}

function recordingTracer(spans: RecordedSpan[]): Tracer {
  const startSpan = (name: string, options: SpanOptions = {}, ctx: Context = context.active()): Span => {
    const given = options.root ? undefined : trace.getSpanContext(ctx);
    const parent = given && isSpanContextValid(given) ? given : undefined;
    const rec: RecordedSpan = {
      name,
      kind: options.kind,
      parent,
      context: { traceId: parent?.traceId ?? hex(16), spanId: hex(8), traceFlags: TraceFlags.SAMPLED },
      attributes: { ...options.attributes },
      ended: false,
    };
    spans.push(rec);
    const span: Span = {
      spanContext: () => rec.context,
      setAttribute: (key, value) => ((rec.attributes[key] = value), span),
      setAttributes: (attributes) => (Object.assign(rec.attributes, attributes), span),
      addEvent: () => span,
      addLink: () => span,
      addLinks: () => span,
      setStatus: (status) => ((rec.status = status), span),
      updateName: (n) => ((rec.name = n), span),
      end: () => void (rec.ended = true),
      isRecording: () => !rec.ended,
      recordException: () => {},
    };
    return span;
  };
  // startActiveSpan(name, [options, [context,]] fn)
  const startActiveSpan = (name: string, ...args: unknown[]) => {
    const fn = args.pop() as (span: Span) => unknown;
    const [options, ctx = context.active()] = args as [SpanOptions?, Context?];
    const span = startSpan(name, options, ctx);
    return context.with(trace.setSpan(ctx, span), fn, undefined, span);
  };
  return { startSpan, startActiveSpan: startActiveSpan as Tracer['startActiveSpan'] };
}

const ctx = useTestContext();

describe('trace context across the queue', () => {
  const spans: RecordedSpan[] = [];
  const seen: { taskId: string; active: SpanContext | undefined }[] = [];
  let connection: Redis;
  let queues: Queues;
  let worker: Worker;
  let events: QueueEvents;
  const named = (name: string) => spans.filter((s) => s.name === name).at(-1)!;
  const logged: string[] = [];
  const logger: QueueLogger = { info: () => {}, warn: (_o, msg) => logged.push(`warn ${msg}`), error: (_o, msg) => logged.push(`error ${msg}`) };

  beforeAll(async () => {
    context.setGlobalContextManager(new AsyncLocalContextManager());
    propagation.setGlobalPropagator(traceparentPropagator);
    trace.setGlobalTracerProvider({ getTracer: () => recordingTracer(spans) });

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
    trace.disable();
    propagation.disable();
    context.disable();
  });

  it('runs the handler in a span that is a child of the publish span, in the trace active at enqueue', async () => {
    const tracer = trace.getTracer('test');
    const { root, job } = await tracer.startActiveSpan('POST /api/v1/tasks', async (span) => {
      try {
        return { root: span.spanContext(), job: await enqueue(queues, ArchiveOutput, { taskId: 'tsk_1', outputIndex: 0 }) };
      } finally {
        span.end();
      }
    });
    await expect(job.waitUntilFinished(events, 10_000)).resolves.toBe('archived');

    const publish = named('archive.output publish');
    expect(publish).toMatchObject({ kind: SpanKind.PRODUCER, ended: true, parent: { traceId: root.traceId, spanId: root.spanId } });
    expect(job.data.trace).toEqual({ traceparent: `00-${root.traceId}-${publish.context.spanId}-01` });

    const processed = named('archive.output process');
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
    const publish = named('archive.output publish');
    expect(publish.parent).toMatchObject({ traceId: stored.traceId, spanId: stored.spanId });
    expect(job.data.trace).toEqual({ traceparent: `00-${stored.traceId}-${publish.context.spanId}-01` });
    await job.waitUntilFinished(events, 10_000);
    expect(named('archive.output process').parent).toMatchObject({ traceId: stored.traceId, spanId: publish.context.spanId });
  });

  it('marks the consumer span failed when the handler throws', async () => {
    // The queue's event can reach waitUntilFinished before the worker has emitted (and logged) its own.
    const failedHere = new Promise((resolve) => worker.once('failed', resolve));
    const job = await context.with(
      trace.setSpanContext(ROOT_CONTEXT, { traceId: hex(16), spanId: hex(8), traceFlags: TraceFlags.SAMPLED, isRemote: true }),
      () => enqueue(queues, ArchiveOutput, { taskId: 'tsk_boom', outputIndex: 0 }),
    );
    await expect(job.waitUntilFinished(events, 10_000)).rejects.toThrow('bucket unavailable');
    expect(named('archive.output process')).toMatchObject({ ended: true, status: { code: SpanStatusCode.ERROR, message: 'bucket unavailable' } });
    await failedHere;
    expect(logged).toEqual(['error job failed']);
  });
});
