// Bundles (bundles.ts) on real Redis and BullMQ, under the real telemetry SDK: the adds of one burst leave as jobs of up
// to the contract's `bundle` payloads, and the worker runs each payload as a job of its own (its handler call, its
// span under its own producer's trace), its concurrency counted in payloads.
import { randomBytes } from 'node:crypto';
import { CallbackDeliver } from '@gensvc/contracts';
import { startTelemetry, type Telemetry } from '@gensvc/observability';
import { eventually, useTestContext } from '@gensvc/testing';
import { ROOT_CONTEXT, SpanKind, TraceFlags, context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { QueueEvents, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { enqueueBundled } from './bundles';
import { createRedisConnection } from './connection';
import type { QueueLogger } from './logger';
import { createQueueEvents, createQueues, type Queues } from './queues';
import { closeWorkers, defineWorker } from './worker';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const ctx = useTestContext();
const CONCURRENCY = 3;

describe('bundles: one job for the adds of one burst, each payload run as its own', () => {
  const exporter = new InMemorySpanExporter();
  let telemetry: Telemetry;
  let connection: Redis;
  let queues: Queues;
  let worker: Worker;
  let events: QueueEvents;
  /** Each handler call: its payload's task, and the trace it ran in. */
  let runs: { taskId: string; traceId: string | undefined }[] = [];
  let handle: (taskId: string) => Promise<void> = async () => {};
  const logger: QueueLogger = { info: () => {}, warn: () => {}, error: () => {} };

  beforeAll(async () => {
    telemetry = startTelemetry({ serviceName: 'queue-bundles-test', spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const prefix = ctx.env.QUEUE_PREFIX!;
    connection = createRedisConnection(ctx.env.REDIS_URL!, { name: 'gensvc-queue-bundles-test' });
    queues = createQueues({ connection, prefix, logger });
    worker = defineWorker({
      queue: 'callbacks',
      connection,
      prefix,
      concurrency: CONCURRENCY,
      logger,
      handlers: {
        'callback.deliver': async ({ taskId }) => {
          runs.push({ taskId, traceId: trace.getActiveSpan()?.spanContext().traceId });
          await handle(taskId);
          return taskId;
        },
      },
    });
    events = createQueueEvents({ queue: 'callbacks', connection, prefix, logger });
    await events.waitUntilReady();
  });

  afterAll(async () => {
    await closeWorkers([worker], 5_000);
    await events.close();
    await queues.close();
    await connection.quit();
    await telemetry.shutdown();
  });

  beforeEach(() => {
    exporter.reset();
    runs = [];
    handle = async () => {};
  });

  /** Adds of these tasks' first attempts in one burst, each from a trace of its own: the jobs each went into, and the traces. */
  const burst = async (taskIds: string[]) => {
    const traces = taskIds.map(() => hex(16));
    const jobs = await Promise.all(
      taskIds.map((taskId, i) =>
        context.with(trace.setSpanContext(ROOT_CONTEXT, { traceId: traces[i]!, spanId: hex(8), traceFlags: TraceFlags.SAMPLED, isRemote: true }), () =>
          enqueueBundled(queues, CallbackDeliver, { taskId, workspaceId: 'ws_1', attempt: 1 }),
        ),
      ),
    );
    return { jobs, traces };
  };

  it(`leaves as bundles of up to CallbackDeliver's ${CallbackDeliver.bundle}, each payload run in a span of its own under its own trace`, async () => {
    const taskIds = Array.from({ length: 11 }, (_, i) => `tsk_b${i}`);
    const { jobs, traces } = await burst(taskIds);
    // 8 and 3, each under its first payload's id with `bundle` appended.
    expect(jobs.map((j) => j.id)).toEqual([...Array(8).fill('callback.deliver/tsk_b0/1/bundle'), ...Array(3).fill('callback.deliver/tsk_b8/1/bundle')]);
    expect(jobs[0]!.data).toEqual({ v: CallbackDeliver.version, bundle: taskIds.slice(0, 8).map((taskId, i) => expect.objectContaining({ taskId, attempt: 1, v: CallbackDeliver.version, trace: { traceparent: expect.stringContaining(traces[i]!) } })) });
    await expect(jobs[0]!.waitUntilFinished(events, 10_000)).resolves.toEqual(taskIds.slice(0, 8));
    await expect(jobs[8]!.waitUntilFinished(events, 10_000)).resolves.toEqual(taskIds.slice(8));

    // Each payload ran once, in its own producer's trace.
    expect([...runs].sort((a, b) => a.taskId.localeCompare(b.taskId, 'en', { numeric: true }))).toEqual(taskIds.map((taskId, i) => ({ taskId, traceId: traces[i] })));
    const spans = await eventually(() => {
      const done = exporter.getFinishedSpans().filter((s) => s.name === 'callback.deliver process');
      return done.length === 11 && done;
    }, 'a process span per payload');
    const publishes = exporter.getFinishedSpans().filter((s) => s.name === 'callback.deliver publish');
    expect(publishes).toHaveLength(11);
    for (const [i, traceId] of traces.entries()) {
      const publish = publishes.find((s) => s.spanContext().traceId === traceId)!;
      const processed = spans.find((s) => s.spanContext().traceId === traceId)!;
      expect(publish.attributes['messaging.message.id']).toBe(jobs[i]!.id);
      expect(processed).toMatchObject({ kind: SpanKind.CONSUMER, parentSpanContext: { spanId: publish.spanContext().spanId } });
      expect(processed.attributes).toMatchObject({ 'messaging.message.id': jobs[i]!.id, 'messaging.batch.message_count': i < 8 ? 8 : 3 });
    }
  });

  it('adds a payload alone as a job of its own id, and two adds of one id in a burst as one payload', async () => {
    const [alone] = (await burst(['tsk_alone'])).jobs;
    expect(alone!.id).toBe('callback.deliver/tsk_alone/1');
    expect(alone!.data).toMatchObject({ taskId: 'tsk_alone', attempt: 1 });
    await expect(alone!.waitUntilFinished(events, 10_000)).resolves.toBe('tsk_alone');

    const twice = await burst(['tsk_twice', 'tsk_twice']);
    expect(twice.jobs.map((j) => j.id)).toEqual(['callback.deliver/tsk_twice/1', 'callback.deliver/tsk_twice/1']);
    await twice.jobs[0]!.waitUntilFinished(events, 10_000);
    expect(runs.map((r) => r.taskId)).toEqual(['tsk_alone', 'tsk_twice']);
  });

  it('refuses the adds of a burst whose queues closed before it left, as an add to closed queues is', async () => {
    const closing = createQueues({ connection, prefix: ctx.env.QUEUE_PREFIX!, logger });
    const added = enqueueBundled(closing, CallbackDeliver, { taskId: 'tsk_closed', attempt: 1 });
    void closing.close();
    await expect(added).rejects.toThrow(/closed/);
  });

  it(`runs at most the worker's concurrency (${CONCURRENCY}) of payloads at once, across bundles`, async () => {
    let inFlight = 0;
    let most = 0;
    handle = async () => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, 30));
      inFlight--;
    };
    const { jobs } = await burst(Array.from({ length: 16 }, (_, i) => `tsk_c${i}`));
    expect(new Set(jobs.map((j) => j.id)).size).toBe(2);
    await Promise.all([jobs[0]!.waitUntilFinished(events, 10_000), jobs[8]!.waitUntilFinished(events, 10_000)]);
    expect(runs).toHaveLength(16);
    expect(most).toBe(CONCURRENCY);
  });

  it('runs the whole bundle again when one payload throws, once all have ended', async () => {
    let failures = 1;
    handle = async (taskId) => {
      if (taskId === 'tsk_d1' && failures-- > 0) throw new Error('postgres went away');
    };
    const { jobs } = await burst(['tsk_d0', 'tsk_d1', 'tsk_d2']);
    // CallbackDeliver's retry: again after its backoff (1 s).
    await expect(jobs[0]!.waitUntilFinished(events, 10_000)).resolves.toEqual(['tsk_d0', 'tsk_d1', 'tsk_d2']);
    const counts = runs.reduce<Record<string, number>>((n, r) => ({ ...n, [r.taskId]: (n[r.taskId] ?? 0) + 1 }), {});
    expect(counts).toEqual({ tsk_d0: 2, tsk_d1: 2, tsk_d2: 2 });
  });
});
