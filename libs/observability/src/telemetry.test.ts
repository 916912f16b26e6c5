import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { trace } from '@opentelemetry/api';
import { execFile } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { startTelemetry, tracesUrl } from './telemetry';

interface ChildSpan {
  kind: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  service: string;
}
type ChildResult =
  | { scenario: 'propagation'; body: string; spans: ChildSpan[] }
  | { scenario: 'otlp'; traceId: string }
  | { scenario: 'sampling'; spans: { traceId: string; kind: string }[]; traceparents: (string | undefined)[] }
  | {
      scenario: 'new-trace';
      answered: boolean;
      handlerTraceId?: string;
      traceparent?: string;
      spans: { traceId: string; kind: string }[];
    }
  | { scenario: 'db'; spans: { traceId: string; name: string; system?: string }[] }
  | { scenario: 'quiet'; answered: boolean; handlerSpan: boolean; traceparent: string | null };

// Compiles .ts with swc on require, as the build and Jest do, then runs telemetry.child.ts with the given scenarios.
const RUN_TS = `
const swc = require(${JSON.stringify(require.resolve('@swc/core'))});
const { readFileSync } = require('node:fs');
require.extensions['.ts'] = (module, file) => module._compile(swc.transformSync(readFileSync(file, 'utf8'), {
  filename: file, jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' },
}).code, file);
require(process.argv[1]);
`;

function runChild(scenarios: string[]): Promise<ChildResult[]> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['-e', RUN_TS, join(__dirname, 'telemetry.child.ts'), ...scenarios],
      { timeout: 25_000 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`child failed: ${error.message}\n${stderr}`));
        else
          resolve(
            stdout
              .split('\n')
              .filter(Boolean)
              .map((line) => JSON.parse(line) as ChildResult),
          );
      },
    );
  });
}

const listen = (server: Server) =>
  new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return (req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body).toString('utf8');
}

describe('tracesUrl', () => {
  it('appends the signal path the way OTEL_EXPORTER_OTLP_ENDPOINT does', () => {
    expect(tracesUrl('http://collector:4318')).toBe('http://collector:4318/v1/traces');
    expect(tracesUrl('http://collector:4318/')).toBe('http://collector:4318/v1/traces');
    expect(tracesUrl('https://otel.example.com/otlp')).toBe('https://otel.example.com/otlp/v1/traces');
  });
});

describe('startTelemetry in a plain Node process', () => {
  const posts: { path: string | undefined; body: string }[] = [];
  let collector: Server;
  let results: ChildResult[];

  beforeAll(async () => {
    collector = createServer(async (req, res) => {
      if (req.method === 'POST') posts.push({ path: req.url, body: await readBody(req) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    const endpoint = await listen(collector);
    // Three starts in one process: the last proves shutdown leaves the process able to start (and patch) again.
    results = await runChild([
      'propagation',
      `otlp=${endpoint}`,
      'propagation',
      'sampling',
      'new-trace=0',
      'new-trace=1',
      'db',
      'quiet',
    ]);
  });
  afterAll(() => new Promise<void>((resolve) => collector.close(() => resolve())));

  const propagated = (result: ChildResult | undefined) => {
    if (result?.scenario !== 'propagation')
      throw new Error(`expected a propagation result, got ${JSON.stringify(result)}`);
    expect(result.body).toBe('ok');
    const client = result.spans.find((s) => s.kind === 'client');
    const server = result.spans.find((s) => s.kind === 'server');
    expect(client).toBeDefined();
    expect(server).toBeDefined();
    expect(server?.traceId).toBe(client?.traceId);
    expect(server?.parentSpanId).toBe(client?.spanId);
    expect(server?.service).toBe('telemetry-child');
  };

  it('instruments http and makes the server span a child of the client span', () => {
    propagated(results[0]);
  });

  it('exports spans to <endpoint>/v1/traces and flushes them on shutdown', () => {
    const result = results[1];
    if (result?.scenario !== 'otlp') throw new Error(`expected an otlp result, got ${JSON.stringify(result)}`);
    const traces = posts.filter((p) => p.path === '/v1/traces');
    expect(traces.length).toBeGreaterThan(0);
    const sent = traces.map((p) => p.body).join('\n');
    expect(sent).toContain('exported-span');
    expect(sent).toContain('"otlp-child"');
    expect(sent.toLowerCase()).toContain(result.traceId);
  });

  it('starts again after a shutdown in the same process', () => {
    propagated(results[2]);
  });

  it('samples by ratio at the root and follows the parent inside a trace, propagating either way', () => {
    const result = results[3];
    if (result?.scenario !== 'sampling') throw new Error(`expected a sampling result, got ${JSON.stringify(result)}`);
    // Ratio 0: the call that started its own trace left no span; the one inside a sampled trace left all four (its
    // client span, the server's, the server's outbound call and the echo server's), in the caller's trace.
    expect(result.spans.map((s) => s.traceId)).toEqual(Array(4).fill('ab'.repeat(16)));
    expect(result.spans.map((s) => s.kind).sort()).toEqual(['client', 'client', 'server', 'server']);
    // The server's outbound calls carried a traceparent both times: unsampled (-00), then sampled (caller's trace).
    expect(result.traceparents[0]).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    expect(result.traceparents[1]).toMatch(new RegExp(`^00-${'ab'.repeat(16)}-[0-9a-f]{16}-01$`));
  });

  it('does not record an undrawn new trace, yet runs it in a valid trace context propagated as unsampled', () => {
    const result = results[4];
    if (result?.scenario !== 'new-trace') throw new Error(`expected a new-trace result, got ${JSON.stringify(result)}`);
    expect(result.answered).toBe(true);
    expect(result.spans).toEqual([]);
    expect(result.handlerTraceId).toMatch(/^[0-9a-f]{32}$/);
    expect(result.handlerTraceId).not.toBe('0'.repeat(32));
    expect(result.traceparent).toMatch(new RegExp(`^00-${result.handlerTraceId}-[0-9a-f]{16}-00$`));
  });

  it("records a drawn new trace whole: its server span, its outbound fetch and the echo server's span", () => {
    const result = results[5];
    if (result?.scenario !== 'new-trace') throw new Error(`expected a new-trace result, got ${JSON.stringify(result)}`);
    expect(result.answered).toBe(true);
    expect(result.spans.map((s) => s.kind).sort()).toEqual(['client', 'server', 'server']);
    expect(result.spans.map((s) => s.traceId)).toEqual(Array(3).fill(result.handlerTraceId));
    expect(result.traceparent).toMatch(new RegExp(`^00-${result.handlerTraceId}-[0-9a-f]{16}-01$`));
  });
  it('records Postgres and Redis spans only inside a sampled trace: none with no trace or in an unsampled one', () => {
    const result = results[6];
    if (result?.scenario !== 'db') throw new Error(`expected a db result, got ${JSON.stringify(result)}`);
    const sampled = 'ab'.repeat(16);
    // The sampled trace's calls are all recorded: the Redis command and its connect, the Postgres connect and query.
    expect(result.spans.map((s) => `${s.system} ${s.name}`).sort()).toEqual([
      'postgresql pg.connect',
      'postgresql pg.query:SELECT d',
      'redis connect',
      'redis get',
    ]);
    expect(result.spans.map((s) => s.traceId)).toEqual(Array(4).fill(sampled));
  });

  it('instruments nothing when no span goes anywhere: no server span, no traceparent on outbound calls', () => {
    const result = results[7];
    if (result?.scenario !== 'quiet') throw new Error(`expected a quiet result, got ${JSON.stringify(result)}`);
    expect(result).toEqual({ scenario: 'quiet', answered: true, handlerSpan: false, traceparent: null });
  });
});

describe('startTelemetry inside Jest', () => {
  it('stays off without an endpoint or processors: spans are no-ops and carry no trace', async () => {
    const telemetry = startTelemetry({ serviceName: 'quiet-test', sampleRatio: 1 });
    try {
      const span = trace.getTracer('t').startSpan('local');
      expect(span.isRecording()).toBe(false);
      expect(span.spanContext().traceId).toBe('0'.repeat(32));
      span.end();
    } finally {
      await telemetry.shutdown();
    }
  });

  it('with a processor, records spans with trace ids and starts again after shutdown', async () => {
    for (let i = 0; i < 2; i++) {
      const telemetry = startTelemetry({
        serviceName: 'recording-test',
        spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())],
        sampleRatio: 1,
      });
      try {
        const span = trace.getTracer('t').startSpan('local');
        expect(span.isRecording()).toBe(true);
        expect(span.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
        expect(span.spanContext().traceId).not.toBe('0'.repeat(32));
        span.end();
      } finally {
        await telemetry.shutdown();
      }
    }
    // Shutdown unregistered the provider: spans are no-ops again.
    expect(trace.getTracer('t').startSpan('after').spanContext().traceId).toBe('0'.repeat(32));
  });
});
