// Structured JSON logs on stdout, one line per event, correlated with traces: every line written while a span is
// active carries its trace_id and span_id. Callers add request_id with logger.child({ request_id }).
import { isSpanContextValid, trace } from '@opentelemetry/api';
import pino, { type DestinationStream, type Logger as PinoLogger } from 'pino';
import { redactSecrets } from './redact';

export type Logger = PinoLogger;

export interface LoggerOptions {
  service: string;
  level: string;
  /** Where lines go; stdout when unset. Tests pass an in-memory stream. */
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions): Logger {
  const logger = pino(
    {
      level: options.level,
      base: { service: options.service },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Secrets are censored by redactSecrets (redact.ts): in each line's object here, in each child's bindings below.
      formatters: { level: (label) => ({ level: label }), log: redactSecrets },
      mixin: traceFields,
    },
    options.destination ?? stdout(),
  );
  // A child is made from its parent's prototype, so every descendant's child() is this one.
  const child = logger.child;
  logger.child = function (this: Logger, bindings, childOptions) {
    return child.call(this, redactSecrets(bindings), childOptions);
  } as typeof child;
  return logger;
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
      if (!timer) timer = setTimeout(flushSoon, FLUSH_MS).unref();
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
