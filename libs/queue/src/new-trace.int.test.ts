// A job made or taken outside any trace (a reconciler's add, another process's job) starts a trace of its own, drawn
// by the running telemetry's sampler as a request that arrives with no traceparent: not drawn, nothing recorded and the
// ids still carried; drawn, a publish span and the process span under it, in one new trace.
import { ArchiveOutput } from '@gensvc/contracts';
import { startTelemetry, type Telemetry } from '@gensvc/observability';
import { useTestContext } from '@gensvc/testing';
import { type ProxyTracerProvider, TraceFlags, trace, type SpanContext } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { QueueEvents, Worker } from 'bullmq';
import type { RedisConnection } from './connection';
import { createRedisConnection } from './connection';
import type { QueueLogger } from './logger';
import { createQueueEvents, createQueues, enqueue, type Queues } from './queues';
import { closeWorkers, defineWorker } from './worker';

const ctx = useTestContext();
const silent: QueueLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };
let n = 0;

/**
 * Telemetry at `sampleRatio` (every finished span kept), and an `archive` worker recording the span each job ran in.
 */
function withTelemetry(sampleRatio: number) {
  const exporter = new InMemorySpanExporter();
  const seen = new Map<string, SpanContext | undefined>();
  const state = {} as {
    telemetry: Telemetry;
    connection: RedisConnection;
    queues: Queues;
    worker: Worker;
    events: QueueEvents;
  };
  beforeAll(async () => {
    state.telemetry = startTelemetry({
      serviceName: 'queue-new-trace-test',
      spanProcessors: [new SimpleSpanProcessor(exporter)],
      sampleRatio,
    });
    const prefix = `${ctx.env.QUEUE_PREFIX}:nt${n++}`;
    state.connection = createRedisConnection(ctx.env.REDIS_URL!, { name: 'gensvc-queue-new-trace-test' });
    state.queues = createQueues({ connection: state.connection, prefix, logger: silent });
    state.worker = defineWorker({
      queue: 'archive',
      connection: state.connection,
      prefix,
      concurrency: 2,
      logger: silent,
      handlers: {
        'archive.output': async (payload) => {
          seen.set(payload.taskId, trace.getActiveSpan()?.spanContext());
          return 'archived';
        },
      },
    });
    state.events = createQueueEvents({ queue: 'archive', connection: state.connection, prefix, logger: silent });
    await state.events.waitUntilReady();
  });
  afterAll(async () => {
    await closeWorkers([state.worker], 5_000);
    await state.events.close();
    await state.queues.close();
    await state.connection.quit();
    await state.telemetry.shutdown();
  });
  // Every span the SDK's tracer starts, recorded or not (an unrecorded one reaches no processor).
  let startSpan: jest.SpyInstance | undefined;
  beforeEach(() => {
    exporter.reset();
    const sdkTracer = (trace.getTracerProvider() as ProxyTracerProvider).getDelegate().getTracer('@gensvc/queue');
    startSpan = jest.spyOn(
      Object.getPrototypeOf(sdkTracer) as { startSpan: (...args: unknown[]) => unknown },
      'startSpan',
    );
  });
  afterEach(() => startSpan?.mockRestore());
  const spansStarted = () => startSpan!.mock.calls.length;
  /** Added with no trace in its payload: as a process without telemetry (or an older producer) adds it. */
  const addBare = (taskId: string) =>
    state.queues.get('archive').add(ArchiveOutput.name, { taskId, outputIndex: 0, v: ArchiveOutput.version });
  const spans = () =>
    exporter
      .getFinishedSpans()
      .map((s) => ({ name: s.name, traceId: s.spanContext().traceId, parent: s.parentSpanContext?.spanId }));
  return { state, seen, addBare, spans, spansStarted };
}

describe('a job outside any trace, none drawn (ratio 0)', () => {
  const t = withTelemetry(0);

  it('is added with a fresh unsampled traceparent, records nothing, and runs inside that context', async () => {
    const job = await enqueue(t.state.queues, ArchiveOutput, { taskId: 'tsk_enqueued', outputIndex: 0 });
    await expect(job.waitUntilFinished(t.state.events, 10_000)).resolves.toBe('archived');
    const [version, traceId, spanId, flags] = job.data.trace!.traceparent!.split('-');
    expect([version, flags]).toEqual(['00', '00']);
    expect(traceId).toMatch(/^(?!0{32})[0-9a-f]{32}$/);
    expect(t.seen.get('tsk_enqueued')).toEqual({ traceId, spanId, traceFlags: TraceFlags.NONE, isRemote: true });
    expect(t.spans()).toEqual([]);
  });

  it('taken with no trace at all, runs in a fresh unsampled context of its own and records nothing', async () => {
    const job = await t.addBare('tsk_bare');
    await expect(job.waitUntilFinished(t.state.events, 10_000)).resolves.toBe('archived');
    const active = t.seen.get('tsk_bare');
    expect(active).toMatchObject({
      traceId: expect.stringMatching(/^(?!0{32})[0-9a-f]{32}$/),
      traceFlags: TraceFlags.NONE,
    });
    expect(t.spans()).toEqual([]);
  });
});

describe('a job outside any trace, every new trace drawn (ratio 1)', () => {
  const t = withTelemetry(1);

  it('is added under a root publish span and runs in a process span under it, one new trace', async () => {
    const job = await enqueue(t.state.queues, ArchiveOutput, { taskId: 'tsk_drawn', outputIndex: 0 });
    await expect(job.waitUntilFinished(t.state.events, 10_000)).resolves.toBe('archived');
    const [, traceId, publishId, flags] = job.data.trace!.traceparent!.split('-');
    expect(flags).toBe('01');
    const spans = t.spans();
    expect(spans).toEqual(
      expect.arrayContaining([
        { name: 'archive.output publish', traceId, parent: undefined },
        { name: 'archive.output process', traceId, parent: publishId },
      ]),
    );
    expect(t.seen.get('tsk_drawn')).toMatchObject({ traceId, traceFlags: TraceFlags.SAMPLED });
    expect(t.spansStarted()).toBe(2);
  });

  it('taken with no trace at all, runs in a recorded root process span', async () => {
    const job = await t.addBare('tsk_bare_drawn');
    await expect(job.waitUntilFinished(t.state.events, 10_000)).resolves.toBe('archived');
    const active = t.seen.get('tsk_bare_drawn');
    expect(active?.traceFlags).toBe(TraceFlags.SAMPLED);
    expect(t.spans()).toEqual([{ name: 'archive.output process', traceId: active!.traceId, parent: undefined }]);
  });
});
