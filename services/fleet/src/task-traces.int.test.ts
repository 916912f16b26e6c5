// One trace for a generation task, from its creation to its callback: the real edge, task-runner,
// archiver and callback-dispatcher processes, started as in production (telemetry first, auto-instrumentation of
// http, undici, express, ioredis, pg), export over OTLP/HTTP to a collector in this test. The task is submitted to
// the upstream-sim's Replicate protocol, polled, its output archived from the sim's HTTPS outputs listener into S3,
// and its callback POSTed to a local HTTPS receiver; every step must hang off the edge's request span, each job's
// process span the child of the publish span that made it. SIGTERM's shutdown flushes each process's spans.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelRepository } from '@gensvc/db';
import { freePort } from '@gensvc/local-stack';
import {
  addSimChannel,
  eventually,
  jsonOf,
  makeKey,
  makeWorkspace,
  sharedTestCa,
  spawnService,
  startOtlpCollector,
  startTlsServer,
  traceOf,
  useTestContext,
  waitForHttp,
  type CollectedSpan,
  type OtlpCollector,
  type ServiceProcess,
  type TlsTestServer,
} from '@gensvc/testing';
import { DEFAULT_REPLICATE_WEBHOOK_SECRET, startSim, type Sim } from '../../upstream-sim/src/index';

const ctx = useTestContext({
  OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32',
  FILE_BASE_URL: 'https://files.gensvc.test',
  TASK_POLL_SCHEDULE: '200ms',
});

const scratch = mkdtempSync(join(tmpdir(), 'gensvc-task-trace-'));
let collector: OtlpCollector;
let sim: Sim;
let receiver: TlsTestServer;
const callbacks: string[] = [];

beforeAll(async () => {
  const { leaf } = sharedTestCa();
  sim = await startSim({ outputs: { tls: { key: leaf.keyPem, cert: leaf.certPem } }, taskDurationMs: 300 });
  receiver = await startTlsServer((req, res) => {
    callbacks.push(String(req.headers['svc-task-id']));
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  collector = await startOtlpCollector();
});
afterAll(async () => {
  await collector?.close();
  await receiver?.close();
  await sim?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/**
 * One task with a callback through real edge, task-runner, archiver and callback-dispatcher processes that export to
 * the collector (`extraEnv(edge URL)` added to their environment), on a Replicate channel of the sim, until its
 * delivery is recorded; SIGTERM then flushes each process's spans. Answers the task's id.
 */
async function runTracedTask(
  names: { channel: string; model: string; prompt: string },
  extraEnv: (edgeUrl: string) => Record<string, string> = () => ({}),
): Promise<string> {
  const channel = await addSimChannel(ctx.db, sim.url, { name: names.channel, kind: 'replicate' });
  await modelRepository.create(ctx.db, {
    id: names.model,
    kind: 'image',
    unitPrice: 40_000n,
    routes: [{ channelId: channel.id, upstreamModel: 'sim/image-1' }],
  });
  const ws = await makeWorkspace(ctx.db, { balance: 1_000_000_000n });
  const { secret } = await makeKey(ctx.db, ws.id);

  const caFile = join(scratch, 'ca.pem');
  writeFileSync(caFile, sharedTestCa().ca.certPem);
  const port = await freePort();
  const env = {
    ...ctx.env,
    NODE_EXTRA_CA_CERTS: caFile,
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_TRACES_SAMPLER_ARG: '1',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    ...extraEnv(`http://127.0.0.1:${port}`),
  };
  const procs: ServiceProcess[] = [
    spawnService('edge', { ...env, PORT: String(port) }),
    ...['task-runner', 'archiver', 'callback-dispatcher'].map((name) => spawnService(name, env)),
  ];
  let taskId = '';
  try {
    await waitForHttp(`http://127.0.0.1:${port}/readyz`, procs[0]);
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/sim/text-to-image`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: names.model,
        prompt: names.prompt,
        size: '256x256',
        callback_url: `${receiver.url}/cb`,
      }),
    });
    const body = await jsonOf(res);
    expect(res.status).toBe(202);
    taskId = body.task_id;
    await eventually(() => callbacks.includes(taskId), 'the callback', 30_000);
    // The receiver answers before the dispatcher records the attempt.
    await eventually(
      async () => (await ctx.db.task.findUniqueOrThrow({ where: { id: taskId } })).callbackState === 'delivered',
      'the delivery recorded',
    );
    expect(await ctx.db.task.findUniqueOrThrow({ where: { id: taskId } })).toMatchObject({
      status: 'completed',
      callbackState: 'delivered',
    });
  } finally {
    const codes = await Promise.all(procs.map((p) => p.stop('SIGTERM')));
    expect(codes).toEqual([0, 0, 0, 0]);
  }
  return taskId;
}

it('one trace: edge → task.submit → provider → task.poll → archive.output → callback.deliver → receiver', async () => {
  const taskId = await runTracedTask({ channel: 'traced-replicate', model: 'sim/traced-image', prompt: 'trace me' });

  const submitPublish = collector.spans.filter((s) => s.name === 'task.submit publish');
  expect(submitPublish).toHaveLength(1);
  const { trace, byId, one, chain } = traceOf(collector.spans, submitPublish[0]!.traceId);
  const urlOf = (s: CollectedSpan) => String(s.attributes['url.full'] ?? s.attributes['http.url'] ?? '');

  // The root: the edge's server span for the creation.
  const server = one(
    (s) =>
      s.service === 'gensvc-edge' &&
      s.kind === 'server' &&
      /text-to-image/.test(String(s.attributes['http.route'] ?? s.attributes['url.path'] ?? s.name)),
    'edge server span',
  );
  expect(server.parent).toBeNull();

  // The provider submit: an HTTP client span of the task-runner under task.submit process.
  const submitProcess = one((s) => s.name === 'task.submit process', 'task.submit process');
  expect(submitProcess).toMatchObject({
    service: 'gensvc-task-runner',
    kind: 'consumer',
    parent: submitPublish[0]!.spanId,
  });
  const providerSubmit = one(
    (s) =>
      s.kind === 'client' && s.parent === submitProcess.spanId && /\/v1\/(models\/.*\/)?predictions/.test(urlOf(s)),
    'provider submit',
  );
  expect(providerSubmit.service).toBe('gensvc-task-runner');

  // Every job's process span is the child of its publish span, and all of them are in this one trace.
  for (const name of ['task.poll', 'archive.output', 'callback.deliver']) {
    const processes = trace.filter((s) => s.name === `${name} process`);
    expect(processes.length).toBeGreaterThanOrEqual(1);
    for (const p of processes) expect(byId.get(p.parent ?? '')?.name).toBe(`${name} publish`);
  }

  // The callback's POST to the receiver, walked up to the root: every step of the task on the way, in order.
  const delivery = one(
    (s) => s.kind === 'client' && s.service === 'gensvc-callback-dispatcher' && urlOf(s).endsWith('/cb'),
    'callback POST',
  );
  expect(delivery.attributes['http.response.status_code'] ?? delivery.attributes['http.status_code']).toBe(204);
  const steps = chain(delivery)
    .map((s) => s.name)
    .filter((n) => / (publish|process)$/.test(n))
    .reverse()
    .join(' > ')
    // However many polls it took: each poll's publish is made inside the previous poll's process.
    .replace(
      /task\.poll publish > task\.poll process( > task\.poll publish > task\.poll process)+/,
      'task.poll publish > task.poll process',
    );
  const order = [
    'task.submit publish',
    'task.submit process',
    'task.poll publish',
    'task.poll process',
    'archive.output publish',
    'archive.output process',
    'callback.deliver publish',
    'callback.deliver process',
  ];
  expect(steps).toBe(order.join(' > '));
  expect(chain(delivery).at(-1)).toBe(server);

  // The archive's fetch from the provider's outputs listener is a client span under archive.output process.
  const archive = trace.filter((s) => s.name === 'archive.output process');
  const fetches = trace.filter(
    (s) => s.kind === 'client' && archive.some((a) => a.spanId === s.parent) && /\/outputs\//.test(urlOf(s)),
  );
  expect(fetches.length).toBeGreaterThanOrEqual(1);
  expect(await ctx.db.file.count({ where: { taskId } })).toBe(1);
}, 90_000);

it('with a provider webhook: the edge records the result under the trace its URL carries; no poll', async () => {
  collector.spans.splice(0);
  await runTracedTask(
    { channel: 'traced-webhook', model: 'sim/traced-webhook', prompt: 'trace my webhook' },
    (edgeUrl) => ({
      PROVIDER_WEBHOOK_BASE_URL: edgeUrl,
      REPLICATE_WEBHOOK_SECRET: DEFAULT_REPLICATE_WEBHOOK_SECRET,
      TASK_POLL_WEBHOOK_FALLBACK: '60s',
    }),
  );

  const submitPublish = collector.spans.filter((s) => s.name === 'task.submit publish');
  expect(submitPublish).toHaveLength(1);
  const { trace, chain, one } = traceOf(collector.spans, submitPublish[0]!.traceId);
  const server = one(
    (s) =>
      s.service === 'gensvc-edge' &&
      s.kind === 'server' &&
      /text-to-image/.test(String(s.attributes['http.route'] ?? s.attributes['url.path'] ?? s.name)),
    'edge server span',
  );
  // The webhook recorded the result: no poll was made, and the archive job was published by the edge, under the
  // submit's span (the trace the webhook URL's query carried from the submit), so the task is still one trace from
  // its creation.
  expect(collector.spans.filter((s) => s.name === 'task.poll publish' || s.name === 'task.poll process')).toEqual([]);
  const archivePublish = one((s) => s.name === 'archive.output publish', 'archive.output publish');
  expect(archivePublish.service).toBe('gensvc-edge');
  const delivery = one(
    (s) =>
      s.kind === 'client' &&
      s.service === 'gensvc-callback-dispatcher' &&
      /\/cb$/.test(String(s.attributes['url.full'] ?? s.attributes['http.url'] ?? '')),
    'callback POST',
  );
  const steps = chain(delivery)
    .map((s) => s.name)
    .filter((n) => / (publish|process)$/.test(n))
    .reverse();
  expect(steps).toEqual([
    'task.submit publish',
    'task.submit process',
    'archive.output publish',
    'archive.output process',
    'callback.deliver publish',
    'callback.deliver process',
  ]);
  expect(chain(delivery).at(-1)).toBe(server);
  // The one statement that checks the task and records the result is in the task's trace.
  expect(
    trace.some(
      (s) => s.service === 'gensvc-edge' && /gensvc_task_record_webhook_output/.test(JSON.stringify(s.attributes)),
    ),
  ).toBe(true);
}, 90_000);
