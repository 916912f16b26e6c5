// One trace from the caller's request to the provider call: the real edge and worker processes, started as in
// production (telemetry first, auto-instrumentation of http, express, ioredis, pg), export over OTLP/HTTP to a
// collector in this test. Instrumentation cannot be observed inside Jest (see libs/observability's
// telemetry.test.ts), hence the child processes; SIGTERM's shutdown flushes their spans.
import { freePort } from '@gensvc/local-stack';
import {
  addSimModel,
  jsonOf,
  makeKey,
  makeWorkspace,
  spawnService,
  startOtlpCollector,
  traceOf,
  useTestContext,
  waitForHttp,
  type OtlpCollector,
  type ServiceProcess,
} from '@gensvc/testing';
import { startSim, type Sim } from '../../upstream-sim/src/index';

const ctx = useTestContext();

let collector: OtlpCollector;
let sim: Sim;

beforeAll(async () => {
  sim = await startSim();
  collector = await startOtlpCollector();
});
afterAll(async () => {
  await collector?.close();
  await sim?.close();
});

it('links edge server span → evaluate.run publish → evaluate.run process → the upstream HTTP call', async () => {
  await addSimModel(ctx.db, sim.url, { id: 'sim/traced', channels: [{ name: 'traced' }] });
  const ws = await makeWorkspace(ctx.db);
  const { secret } = await makeKey(ctx.db, ws.id);

  const port = await freePort();
  const env = {
    ...ctx.env,
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_TRACES_SAMPLER_ARG: '1',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  const procs: ServiceProcess[] = [
    spawnService('edge', { ...env, PORT: String(port) }),
    spawnService('evaluate-worker', { ...env, LOG_LEVEL: 'info' }),
  ];
  let requestId = '';
  try {
    await waitForHttp(`http://127.0.0.1:${port}/readyz`, procs[0]);
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/evaluate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim/traced',
        state: 'trace me',
        questions: { ok: { type: 'boolean', instructions: 'Traced?' } },
      }),
    });
    const body = await jsonOf(res);
    expect(res.status).toBe(200);
    expect(body.usage.inputTokens).toBeGreaterThan(0);
    requestId = res.headers.get('x-request-id')!;
  } finally {
    // SIGTERM runs each service's shutdown, whose last phase flushes its spans to the collector.
    const codes = await Promise.all(procs.map((p) => p.stop('SIGTERM')));
    expect(codes).toEqual([0, 0]);
  }
  expect(procs[1]!.output()).toContain('evaluate worker ready');
  expect(requestId).toMatch(/^req_/);

  const publish = collector.spans.filter((s) => s.name === 'evaluate.run publish');
  expect(publish).toHaveLength(1);
  const { trace, one, chain } = traceOf(collector.spans, publish[0]!.traceId);
  const ancestors = (s: (typeof trace)[number]) => chain(s).slice(1);

  // The trace starts at the edge's HTTP server span for the request (nothing upstream of it is traced).
  const server = one((s) => s.service === 'gensvc-edge' && s.kind === 'server', 'edge server span');
  expect(server.parent).toBeNull();
  expect(server.attributes['http.route'] ?? server.name).toMatch(/\/api\/v1\/evaluate/);
  // publish is made inside the request's handling: the server span is its ancestor, every link within the edge.
  const pub = publish[0]!;
  expect(pub).toMatchObject({ service: 'gensvc-edge', kind: 'producer' });
  const pubChain = ancestors(pub);
  expect(pubChain.at(-1)).toBe(server);
  expect(pubChain.every((s) => s.service === 'gensvc-edge')).toBe(true);
  // The worker's process span is the child of publish, across Redis.
  const processed = one((s) => s.name === 'evaluate.run process', 'process span');
  expect(processed).toMatchObject({ service: 'gensvc-evaluate-worker', kind: 'consumer', parent: pub.spanId });
  // And the upstream call is an HTTP client span directly under it, to the channel's evaluate URL.
  const upstream = one(
    (s) =>
      s.service === 'gensvc-evaluate-worker' &&
      s.kind === 'client' &&
      /\/ch\/traced\/evaluate/.test(String(s.attributes['url.full'] ?? s.attributes['http.url'] ?? '')),
    'upstream client span',
  );
  expect(upstream.parent).toBe(processed.spanId);
  expect(upstream.attributes['http.response.status_code'] ?? upstream.attributes['http.status_code']).toBe(200);
  // The provider was called once, by that span.
  expect(
    sim
      .requests()
      .filter((r) => r.channel === 'traced')
      .map((r) => r.status),
  ).toEqual([200]);
}, 60_000);
