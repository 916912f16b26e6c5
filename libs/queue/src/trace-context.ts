import { ROOT_CONTEXT, context, propagation, trace, type Context } from '@opentelemetry/api';

export const TRACER_NAME = '@gensvc/queue';

/** The W3C carrier (`traceparent`, `tracestate`) of the given context, empty when it holds no valid span. */
export function traceCarrierOf(ctx: Context): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** The context an envelope's `trace` carries (ROOT_CONTEXT if none); reads unparsed data, so it never throws. */
export function contextFromEnvelope(data: unknown): Context {
  const trace = (data as { trace?: unknown } | null | undefined)?.trace;
  if (trace === null || typeof trace !== 'object') return ROOT_CONTEXT;
  const carrier: Record<string, string> = {};
  for (const [k, v] of Object.entries(trace)) if (typeof v === 'string') carrier[k] = v;
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/** Runs `fn` in `ctx` when it holds a span (a trace read from a job), else in the active context. */
export function inTraceOf<T>(ctx: Context, fn: () => T): T {
  return trace.getSpanContext(ctx) ? context.with(ctx, fn) : fn();
}
