// One trace from the caller's request to the provider call: the real edge and worker processes, started as in
// production (telemetry first, auto-instrumentation of http, express, ioredis, pg), export over OTLP/HTTP to a
// collector in this test. Instrumentation cannot be observed inside Jest (see libs/observability's
// telemetry.test.ts), hence the child processes; SIGTERM's shutdown flushes their spans.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { freePort } from '@gensvc/local-stack';
import { addSimModel, jsonOf, makeKey, makeWorkspace, spawnService, useTestContext, waitForHttp, type ServiceProcess } from '@gensvc/testing';
import { startSim, type Sim } from '../../upstream-sim/src/index';

const ctx = useTestContext();

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: OtlpValue }[];
}
interface ExportRequest {
  resourceSpans?: { resource?: { attributes?: { key: string; value: OtlpValue }[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}
interface Span {
  service: string;
  traceId: string;
  spanId: string;
  parent: string | null;
  name: string;
  kind: 'internal' | 'server' | 'client' | 'producer' | 'consumer' | 'unspecified';
  attributes: Record<string, string | number | undefined>;
}

const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'] as const;

function spansOf(body: ExportRequest): Span[] {
  return (body.resourceSpans ?? []).flatMap((rs) => {
    const service = rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        service,
        traceId: s.traceId.toLowerCase(),
        spanId: s.spanId.toLowerCase(),
        parent: s.parentSpanId ? s.parentSpanId.toLowerCase() : null,
        name: s.name,
        kind: KINDS[s.kind] ?? 'unspecified',
        attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, a.value.stringValue ?? (a.value.intValue !== undefined ? Number(a.value.intValue) : undefined)])),
      })),
    );
  });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return (req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body).toString('utf8');
}

let collector: Server;
let sim: Sim;
const spans: Span[] = [];
const otherPosts: string[] = [];

beforeAll(async () => {
  sim = await startSim();
  collector = createServer(async (req, res) => {
    const text = await readBody(req);
    if (req.method === 'POST' && req.url === '/v1/traces') spans.push(...spansOf(JSON.parse(text) as ExportRequest));
    else otherPosts.push(`${req.method} ${req.url}`);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  await new Promise<void>((r) => collector.close(() => r()));
  await sim?.close();
});

it('links edge HTTP server span → evaluate.run publish → evaluate.run process → the worker\'s upstream HTTP call', async () => {
  await addSimModel(ctx.db, sim.url, { id: 'sim/traced', channels: [{ name: 'traced' }] });
  const ws = await makeWorkspace(ctx.db);
  const { secret } = await makeKey(ctx.db, ws.id);

  const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  const port = await freePort();
  const env = { ...ctx.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER_ARG: '1', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
  const procs: ServiceProcess[] = [spawnService('edge', { ...env, PORT: String(port) }), spawnService('evaluate-worker', { ...env, LOG_LEVEL: 'info' })];
  let requestId = '';
  try {
    await waitForHttp(`http://127.0.0.1:${port}/readyz`, procs[0]);
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/evaluate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim/traced', state: 'trace me', questions: { ok: { type: 'boolean', instructions: 'Traced?' } } }),
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

  const publish = spans.filter((s) => s.name === 'evaluate.run publish');
  expect(publish).toHaveLength(1);
  const trace = spans.filter((s) => s.traceId === publish[0]!.traceId);
  const byId = new Map(trace.map((s) => [s.spanId, s]));
  const one = (pred: (s: Span) => boolean, what: string) => {
    const found = trace.filter(pred);
    if (found.length !== 1) throw new Error(`expected one ${what}, found ${found.length} in ${JSON.stringify(trace.map((s) => [s.service, s.kind, s.name]))}`);
    return found[0]!;
  };
  const ancestors = (s: Span) => {
    const chain: Span[] = [];
    for (let p = s.parent ? byId.get(s.parent) : undefined; p; p = p.parent ? byId.get(p.parent) : undefined) chain.push(p);
    return chain;
  };

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
  const upstream = one((s) => s.service === 'gensvc-evaluate-worker' && s.kind === 'client' && /\/ch\/traced\/evaluate/.test(String(s.attributes['url.full'] ?? s.attributes['http.url'] ?? '')), 'upstream client span');
  expect(upstream.parent).toBe(processed.spanId);
  expect(upstream.attributes['http.response.status_code'] ?? upstream.attributes['http.status_code']).toBe(200);
  // The provider was called once, by that span.
  expect(sim.requests().filter((r) => r.channel === 'traced').map((r) => r.status)).toEqual([200]);
}, 60_000);
