// Run by telemetry.test.ts in a child Node process, never imported. Jest loads modules with its own loader, never
// through Node's Module.prototype.require that require-in-the-middle hooks, so nothing is patched inside it; and it
// rejects the dynamic import() the OTLP exporter loads `http` with: auto-instrumentation and export can only be
// observed in a plain Node process, loaded the way main.ts loads them. Each scenario prints one JSON line.
import { context, ROOT_CONTEXT, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startTelemetry } from './telemetry';

type Http = typeof import('node:http');

async function propagation(): Promise<object> {
  const exporter = new InMemorySpanExporter();
  const telemetry = startTelemetry({
    serviceName: 'telemetry-child',
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  // As in main.ts: required after startTelemetry, through the require hook.
  const http: Http = require('node:http');
  const server = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const body = await new Promise<string>((resolve, reject) => {
    http
      .get(`http://127.0.0.1:${port}/ping`, (res) => {
        let text = '';
        res
          .setEncoding('utf8')
          .on('data', (c: string) => (text += c))
          .on('end', () => resolve(text));
      })
      .on('error', reject);
  });
  await new Promise<void>((resolve) => server.close(() => resolve()));
  // The server span ends when the response is flushed, which may be after the client has read it.
  const deadline = Date.now() + 5_000;
  while (exporter.getFinishedSpans().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  // Read before shutdown: shutting down the in-memory exporter empties it.
  const spans = exporter.getFinishedSpans().map((s) => ({
    kind: s.kind === SpanKind.SERVER ? 'server' : s.kind === SpanKind.CLIENT ? 'client' : String(s.kind),
    traceId: s.spanContext().traceId,
    spanId: s.spanContext().spanId,
    parentSpanId: s.parentSpanContext?.spanId ?? null,
    service: s.resource.attributes['service.name'],
  }));
  await telemetry.shutdown();
  return { body, spans };
}

async function otlp(endpoint: string | undefined): Promise<object> {
  if (!endpoint) throw new Error('otlp needs an endpoint');
  const telemetry = startTelemetry({ serviceName: 'otlp-child', otlpEndpoint: endpoint });
  const traceId = trace.getTracer('t').startActiveSpan('exported-span', (span) => {
    span.end();
    return span.spanContext().traceId;
  });
  await telemetry.shutdown();
  return { traceId };
}

/**
 * Ratio 0: a call that starts a trace is not recorded (neither its client nor its server span), one made inside a
 * sampled trace is, all the way down (parent-based); the trace context goes out on every outbound call either way.
 */
async function sampling(): Promise<object> {
  const exporter = new InMemorySpanExporter();
  const telemetry = startTelemetry({
    serviceName: 'sampling-child',
    spanProcessors: [new SimpleSpanProcessor(exporter)],
    sampleRatio: 0,
  });
  const http: Http = require('node:http');
  const seen: (string | undefined)[] = [];
  const echo = http.createServer((req, res) => {
    seen.push(req.headers.traceparent as string | undefined);
    res.end('echo');
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  const echoPort = (echo.address() as AddressInfo).port;
  const get = (port: number) =>
    new Promise<string>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/' }, (res) => {
          let text = '';
          res
            .setEncoding('utf8')
            .on('data', (c: string) => (text += c))
            .on('end', () => resolve(text));
        })
        .on('error', reject);
    });
  // The server calls the echo server while handling each request, inside its own (server) span's context.
  const server = http.createServer((_req, res) => void get(echoPort).then((t) => res.end(t)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await get(port);
  // Inside a sampled trace of a caller (a remote parent, as a traceparent header would make it).
  const parent = trace.setSpanContext(context.active(), {
    traceId: 'ab'.repeat(16),
    spanId: 'cd'.repeat(8),
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  });
  await context.with(parent, () => get(port));
  const deadline = Date.now() + 2_000;
  while (exporter.getFinishedSpans().length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 100));
  const spans = exporter
    .getFinishedSpans()
    .map((sp) => ({ traceId: sp.spanContext().traceId, kind: sp.kind === SpanKind.SERVER ? 'server' : 'client' }));
  await Promise.all([server, echo].map((x) => new Promise<void>((resolve) => x.close(() => resolve()))));
  await telemetry.shutdown();
  return { spans, traceparents: seen };
}

/**
 * A request that starts its own trace (sent raw: no traceparent), at ratio 0 and then 1. Not drawn, it records
 * nothing, yet its handler runs in a valid trace context and its outbound fetch (undici) carries that trace as
 * `-00`; drawn, its server span and the fetch's client span are recorded in one trace, propagated as `-01`.
 */
async function newTraces(ratio: number): Promise<object> {
  const exporter = new InMemorySpanExporter();
  const telemetry = startTelemetry({
    serviceName: 'new-trace-child',
    spanProcessors: [new SimpleSpanProcessor(exporter)],
    sampleRatio: ratio,
  });
  const http: Http = require('node:http');
  const net: typeof import('node:net') = require('node:net');
  let seen: string | undefined;
  const echo = http.createServer((req, res) => {
    seen = req.headers.traceparent as string | undefined;
    res.end('echo');
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  const echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/`;
  let handlerTraceId: string | undefined;
  const server = http.createServer((_req, res) => {
    handlerTraceId = trace.getActiveSpan()?.spanContext().traceId;
    void fetch(echoUrl)
      .then((r) => r.text())
      .then((t) => res.end(t));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const answer = await new Promise<string>((resolve, reject) => {
    let text = '';
    const socket = net.connect(port, '127.0.0.1', () =>
      socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    );
    socket
      .setEncoding('utf8')
      .on('data', (c: string) => (text += c))
      .on('end', () => resolve(text))
      .on('error', reject);
  });
  const deadline = Date.now() + 2_000;
  while (ratio > 0 && exporter.getFinishedSpans().length < 2 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 100));
  const spans = exporter
    .getFinishedSpans()
    .map((sp) => ({ traceId: sp.spanContext().traceId, kind: sp.kind === SpanKind.SERVER ? 'server' : 'client' }));
  await Promise.all([server, echo].map((x) => new Promise<void>((resolve) => x.close(() => resolve()))));
  await telemetry.shutdown();
  return { answered: answer.endsWith('echo'), handlerTraceId, traceparent: seen, spans };
}

/**
 * Postgres and Redis calls (pg and ioredis, required after startTelemetry as the services require them) with no
 * trace, inside an unsampled trace and inside a sampled one, at ratio 1 so that a root would be drawn: only the
 * sampled trace's are recorded (no span without a parent: requireParentSpan). The servers are unreachable, so each
 * call fails; its span, when there is one, ends with the failure.
 */
async function db(): Promise<object> {
  const exporter = new InMemorySpanExporter();
  const telemetry = startTelemetry({
    serviceName: 'db-child',
    spanProcessors: [new SimpleSpanProcessor(exporter)],
    sampleRatio: 1,
  });
  const from = (lib: string) => ({ paths: [join(__dirname, '..', '..', lib)] });
  // Not dependencies of this library: taken from the libraries that use them, typed as far as used here.
  const {
    Client,
  }: {
    Client: new (
      options: object,
    ) => {
      on(event: 'error', fn: () => void): unknown;
      connect(): Promise<unknown>;
      query(text: string): Promise<unknown>;
    };
  } = require(require.resolve('pg', from('db')));
  const {
    Redis,
  }: {
    Redis: new (
      options: object,
    ) => { on(event: 'error', fn: () => void): unknown; get(key: string): Promise<unknown>; disconnect(): void };
  } = require(require.resolve('ioredis', from('queue')));
  const net: typeof import('node:net') = require('node:net');
  const closed = await new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  const calls = async () => {
    const redis = new Redis({
      host: '127.0.0.1',
      port: closed,
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
    });
    redis.on('error', () => undefined);
    await redis.get('k').catch(() => undefined);
    redis.disconnect();
    const pg = new Client({ host: '127.0.0.1', port: closed, user: 'u', database: 'd' });
    pg.on('error', () => undefined);
    await Promise.allSettled([pg.connect(), pg.query('SELECT 1')]);
  };
  const inTrace = (traceId: string, traceFlags: TraceFlags) =>
    context.with(
      trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: 'cd'.repeat(8), traceFlags, isRemote: true }),
      calls,
    );
  await calls();
  await inTrace('0a'.repeat(16), TraceFlags.NONE);
  await inTrace('ab'.repeat(16), TraceFlags.SAMPLED);
  await new Promise((r) => setTimeout(r, 100));
  const spans = exporter
    .getFinishedSpans()
    .map((sp) => ({ traceId: sp.spanContext().traceId, name: sp.name, system: sp.attributes['db.system.name'] }));
  await telemetry.shutdown();
  return { spans };
}

/**
 * No endpoint and no processor: nothing is instrumented. A request's handler runs outside any trace and its outbound
 * fetch carries no traceparent.
 */
async function quiet(): Promise<object> {
  const telemetry = startTelemetry({ serviceName: 'quiet-child', sampleRatio: 1 });
  const http: Http = require('node:http');
  let seen: string | undefined;
  const echo = http.createServer((req, res) => {
    seen = req.headers.traceparent as string | undefined;
    res.end('echo');
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  const echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/`;
  let handlerSpan: boolean | undefined;
  const server = http.createServer((_req, res) => {
    handlerSpan = trace.getActiveSpan() !== undefined;
    void fetch(echoUrl)
      .then((r) => r.text())
      .then((t) => res.end(t));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const answer = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`).then((r) => r.text());
  await Promise.all([server, echo].map((x) => new Promise<void>((resolve) => x.close(() => resolve()))));
  await telemetry.shutdown();
  return { answered: answer === 'echo', handlerSpan, traceparent: seen ?? null };
}

/** Arguments are scenarios run in turn: `propagation`, `otlp=<endpoint>`, `sampling`, `new-trace=<ratio>`, `db`,
 * `quiet`. */
async function main(): Promise<void> {
  for (const scenario of process.argv.slice(2)) {
    const [name, arg] = scenario.split(/=(.*)/s);
    const result =
      name === 'propagation'
        ? await propagation()
        : name === 'otlp'
          ? await otlp(arg)
          : name === 'sampling'
            ? await sampling()
            : name === 'new-trace'
              ? await newTraces(Number(arg))
              : name === 'db'
                ? await db()
                : name === 'quiet'
                  ? await quiet()
                  : undefined;
    if (result === undefined) throw new Error(`unknown scenario ${scenario}`);
    process.stdout.write(`${JSON.stringify({ scenario: name, ...result })}\n`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
