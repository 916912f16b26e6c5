// Structured JSON logs on stdout, one line per event, correlated with traces: every line written while a span is
// active carries its trace_id and span_id. Callers add request_id with logger.child({ request_id }).
import { isSpanContextValid, trace } from '@opentelemetry/api';
import pino, { type DestinationStream, type Logger as PinoLogger } from 'pino';

export type Logger = PinoLogger;

export interface LoggerOptions {
  service: string;
  level: string;
  /** Where lines go; stdout when unset. Tests pass an in-memory stream. */
  destination?: DestinationStream;
}

const SECRET_HEADERS = ['authorization', 'x-api-key', 'x-goog-api-key'];
const SECRET_FIELDS = ['secret', 'password', 'key'];

// Redaction paths are exact (no recursive wildcard), so they cover the depths logs actually use: `headers` on its
// own or inside a request/response object, and secret-named fields up to two levels down.
const REDACT_PATHS = [
  ...SECRET_HEADERS.flatMap((h) => [`headers["${h}"]`, `*.headers["${h}"]`]),
  ...SECRET_FIELDS.flatMap((f) => [f, `*.${f}`, `*.*.${f}`]),
];

export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      level: options.level,
      base: { service: options.service },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      mixin: traceFields,
    },
    options.destination ?? stdout(),
  );
}

/** How long a line may wait in the block before it is written anyway. */
const FLUSH_MS = 100;

/**
 * Stdout, written in blocks: lines gather until 4 KiB or FLUSH_MS, then leave in one write. pino's default destination
 * wrote each line by itself through libuv's thread pool (a thread hand-off, an eventfd wake-up of the loop and a
 * system call per line: with info level, per request). Whatever is gathered is written out when the process exits,
 * whatever way it exits but a SIGKILL, which loses at most the last FLUSH_MS of lines.
 *
 * The flush timer is armed by a line, not left running: sonic-boom's own `periodicFlush` fires whether or not anything
 * is gathered, and its flush of nothing is still a write through the thread pool, every period of an idle process.
 */
function stdout(): DestinationStream & { flush(cb?: (err?: Error) => void): void } {
  const blocks = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  let timer: NodeJS.Timeout | null = null;
  const flushSoon = () => {
    timer = null;
    blocks.flush();
  };
  return {
    write(line: string) {
      blocks.write(line);
      timer ??= setTimeout(flushSoon, FLUSH_MS).unref();
    },
    flush: (cb) => blocks.flush(cb),
  };
}

function traceFields(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const spanContext = span.spanContext();
  // Without a started SDK a span reports all-zero ids: they would correlate nothing.
  if (!isSpanContextValid(spanContext)) return {};
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}
