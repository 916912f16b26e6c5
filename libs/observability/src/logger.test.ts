import { trace } from '@opentelemetry/api';
import { createLogger } from './logger';
import { startTelemetry, type Telemetry } from './telemetry';

/** Collects what pino writes, one parsed JSON object per line. */
function memoryDestination() {
  const raw: string[] = [];
  return {
    raw,
    lines: () => raw.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>),
    write(chunk: string) {
      raw.push(chunk);
    },
  };
}

describe('createLogger', () => {
  let telemetry: Telemetry;
  beforeAll(() => {
    telemetry = startTelemetry({ serviceName: 'logger-test' });
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
        req: { method: 'GET', headers: { authorization: 'Bearer sk-live-1', 'x-api-key': 'ak-2', 'x-goog-api-key': 'gk-3', accept: '*/*' } },
        headers: { authorization: 'Bearer sk-live-4' },
        secret: 'whsec_5',
        channel: { password: 'pw-6', key: 'key-7' },
      },
      'request',
    );
    const text = out.raw.join('');
    for (const value of ['sk-live-1', 'ak-2', 'gk-3', 'sk-live-4', 'whsec_5', 'pw-6', 'key-7']) expect(text).not.toContain(value);
    const [line] = out.lines();
    expect(line).toMatchObject({
      req: { method: 'GET', headers: { authorization: '[REDACTED]', 'x-api-key': '[REDACTED]', accept: '*/*' } },
      secret: '[REDACTED]',
      channel: { password: '[REDACTED]', key: '[REDACTED]' },
    });
  });
});
