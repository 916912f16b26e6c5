import { ROOT_CONTEXT, context, isSpanContextValid, propagation, trace, type Context } from '@opentelemetry/api';

export const TRACER_NAME = '@gensvc/queue';

/** The W3C carrier (`traceparent`, `tracestate`) of the given context, empty when it holds no valid span. */
export function traceCarrierOf(ctx: Context): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/**
 * The active trace as a URL's query (`traceparent=…`, W3C), for a URL a third party calls on this trace's behalf (the
 * provider's webhook of a task): its call is then recorded in the task's trace (contextFromQuery). Empty when no span
 * is active (telemetry off, or not sampled in).
 */
export function traceQueryOf(ctx: Context = context.active()): string {
  return new URLSearchParams(traceCarrierOf(ctx)).toString();
}

/** A trace field's value, at most this long (a traceparent is 55 characters). */
const QUERY_VALUE_MAX = 512;

/**
 * The context a URL's query carries (traceQueryOf), ROOT_CONTEXT when none: `query` as the HTTP server parsed it
 * (Express's req.query). The query is not signed by whoever calls the URL: it can only place that call in a trace; a
 * malformed value, a repeated field or an overlong one is ignored.
 */
export function contextFromQuery(query: Readonly<Record<string, unknown>>): Context {
  const carrier: Record<string, string> = {};
  for (const field of propagation.fields()) {
    const value = query[field];
    if (typeof value === 'string' && value.length <= QUERY_VALUE_MAX) carrier[field] = value;
  }
  return Object.keys(carrier).length === 0 ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, carrier);
}

/** The context an envelope's `trace` carries (ROOT_CONTEXT if none); reads unparsed data, so it never throws. */
export function contextFromEnvelope(data: unknown): Context {
  const trace = (data as { trace?: unknown } | null | undefined)?.trace;
  if (trace === null || typeof trace !== 'object') return ROOT_CONTEXT;
  const carrier: Record<string, string> = {};
  for (const [k, v] of Object.entries(trace)) if (typeof v === 'string') carrier[k] = v;
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/**
 * `ctx` when it holds a valid span context, else the root context, where a span starts a new trace drawn by the
 * telemetry's sampler: a job added or taken outside any trace (a reconciler's add, a process without telemetry).
 */
export function continuedOrNewTrace(ctx: Context): Context {
  const span = trace.getSpanContext(ctx);
  return span && isSpanContextValid(span) ? ctx : ROOT_CONTEXT;
}

/** Runs `fn` in `ctx` when it holds a span (a trace read from a job), else in the active context. */
export function inTraceOf<T>(ctx: Context, fn: () => T): T {
  return trace.getSpanContext(ctx) ? context.with(ctx, fn) : fn();
}
