import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { trace } from '@opentelemetry/api';
import { createLogger } from './logger';
import { startTelemetry, type Telemetry } from './telemetry';

/** Collects what pino writes, one parsed JSON object per line. */
function memoryDestination() {
  const raw: string[] = [];
  return {
    raw,
    lines: () =>
      raw
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    write(chunk: string) {
      raw.push(chunk);
    },
  };
}

describe('createLogger', () => {
  let telemetry: Telemetry;
  beforeAll(() => {
    // Spans go somewhere (an in-memory exporter): telemetry is on and spans carry trace ids.
    telemetry = startTelemetry({
      serviceName: 'logger-test',
      spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())],
    });
  });
  afterAll(() => telemetry.shutdown());

  it('writes JSON lines with the service and a level label', () => {
    const out = memoryDestination();
    createLogger({ service: 'edge', level: 'info', destination: out }).info({ n: 1 }, 'hello');
    const [line] = out.lines();
    expect(line).toMatchObject({ service: 'edge', level: 'info', msg: 'hello', n: 1 });
    expect(line).not.toHaveProperty('trace_id');
  });

  it('adds the trace and span ids of the active span', () => {
    const out = memoryDestination();
    const logger = createLogger({ service: 'edge', level: 'info', destination: out }).child({ request_id: 'req_1' });
    const ids = trace.getTracer('t').startActiveSpan('work', (span) => {
      logger.info('inside');
      span.end();
      return span.spanContext();
    });
    const [line] = out.lines();
    expect(ids.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(ids.traceId).not.toBe('0'.repeat(32));
    expect(line).toMatchObject({ service: 'edge', request_id: 'req_1', trace_id: ids.traceId, span_id: ids.spanId });
  });

  it('respects the level', () => {
    const out = memoryDestination();
    const logger = createLogger({ service: 'edge', level: 'warn', destination: out });
    logger.info('dropped');
    logger.warn('kept');
    expect(out.lines().map((l) => l.msg)).toEqual(['kept']);
  });

  it('redacts secret headers and secret-named fields', () => {
    const out = memoryDestination();
    createLogger({ service: 'edge', level: 'info', destination: out }).info(
      {
        req: {
          method: 'GET',
          headers: { authorization: 'Bearer sk-live-1', 'x-api-key': 'ak-2', 'x-goog-api-key': 'gk-3', accept: '*/*' },
        },
        headers: { authorization: 'Bearer sk-live-4' },
        secret: 'whsec_5',
        channel: { password: 'pw-6', key: 'key-7' },
      },
      'request',
    );
    const text = out.raw.join('');
    for (const value of ['sk-live-1', 'ak-2', 'gk-3', 'sk-live-4', 'whsec_5', 'pw-6', 'key-7'])
      expect(text).not.toContain(value);
    const [line] = out.lines();
    expect(line).toMatchObject({
      req: { method: 'GET', headers: { authorization: '[REDACTED]', 'x-api-key': '[REDACTED]', accept: '*/*' } },
      secret: '[REDACTED]',
      channel: { password: '[REDACTED]', key: '[REDACTED]' },
    });
  });

  it('redacts secret-named fields two levels down and in arrays, and changes nothing the caller logged', () => {
    const out = memoryDestination();
    const logged = {
      task: { channel: { key: 'key-1', name: 'sim' }, secret: 'whsec_2' },
      items: [{ password: 'pw-3', id: 1 }, 'plain'],
      req: { headers: { 'x-goog-api-key': 'gk-4', key: 'key-12', host: 'h' } },
      deep: { a: { b: { note: 'three levels down is shown' } } },
      bytes: Buffer.from('key'),
      n: 5,
    };
    const before = JSON.stringify(logged);
    createLogger({ service: 'edge', level: 'info', destination: out }).info(logged, 'line');
    expect(JSON.stringify(logged)).toBe(before);
    const text = out.raw.join('');
    for (const value of ['key-1', 'whsec_2', 'pw-3', 'gk-4', 'key-12']) expect(text).not.toContain(value);
    expect(out.lines()[0]).toMatchObject({
      task: { channel: { key: '[REDACTED]', name: 'sim' }, secret: '[REDACTED]' },
      items: [{ password: '[REDACTED]', id: 1 }, 'plain'],
      req: { headers: { 'x-goog-api-key': '[REDACTED]', key: '[REDACTED]', host: 'h' } },
      deep: { a: { b: { note: 'three levels down is shown' } } },
      bytes: { type: 'Buffer' },
      n: 5,
    });
  });

  it("redacts an error's secret-named fields, and still writes it as an error of its class", () => {
    const out = memoryDestination();
    const err = Object.assign(new TypeError('outer'), { key: 'key-6', code: 'E_X', details: { password: 'pw-5' } });
    createLogger({ service: 'edge', level: 'info', destination: out }).error({ err }, 'failed');
    expect(err.key).toBe('key-6');
    expect(err.details.password).toBe('pw-5');
    const text = out.raw.join('');
    for (const value of ['key-6', 'pw-5']) expect(text).not.toContain(value);
    const line = out.lines()[0]!;
    expect(line.err).toMatchObject({
      type: 'TypeError',
      message: 'outer',
      code: 'E_X',
      key: '[REDACTED]',
      details: { password: '[REDACTED]' },
    });
    expect(String((line.err as { stack: string }).stack)).toContain('TypeError: outer');
  });

  it("redacts a child logger's bindings, and its children's", () => {
    const out = memoryDestination();
    const parent = createLogger({ service: 'edge', level: 'info', destination: out }).child({
      request_id: 'req_1',
      key: 'key-7',
    });
    parent.child({ channel: { password: 'pw-8' } }).info({ secret: 'whsec_9' }, 'nested');
    const text = out.raw.join('');
    for (const value of ['key-7', 'pw-8', 'whsec_9']) expect(text).not.toContain(value);
    expect(out.lines()[0]).toMatchObject({
      request_id: 'req_1',
      key: '[REDACTED]',
      channel: { password: '[REDACTED]' },
      secret: '[REDACTED]',
      msg: 'nested',
    });
  });
});
