// OpenTelemetry bootstrap. main.ts calls startTelemetry() before it requires express, ioredis or pg: the
// instrumentations patch those modules through require hooks, so a module loaded earlier is never traced.
import { context, createContextKey, isSpanContextValid, propagation, ROOT_CONTEXT, SpanKind, trace, TraceFlags, type Attributes, type Context, type Link } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { defaultResource, detectResources, envDetector, hostDetector, processDetector, resourceFromAttributes } from '@opentelemetry/resources';
import type { IncomingMessage } from 'node:http';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  NoopSpanProcessor,
  ParentBasedSampler,
  RandomIdGenerator,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SamplingResult,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { inUnsampledTrace, LeanIORedisInstrumentation, LeanPgInstrumentation } from './lean-db-instrumentations';
import { httpSpanRedaction, undiciSpanRedaction } from './span-redaction';

export interface TelemetryOptions {
  serviceName: string;
  /** Base OTLP/HTTP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT), e.g. http://collector:4318. Unset: nothing is exported. */
  otlpEndpoint?: string;
  /** Extra processors, e.g. a SimpleSpanProcessor over an InMemorySpanExporter in tests. */
  spanProcessors?: SpanProcessor[];
  /**
   * The share of new traces recorded (OTEL_TRACES_SAMPLER_ARG; default 1 here, services pass their config's, 0.1 by
   * default). Parent-based: a request that arrives inside a trace follows its caller's decision, and a job follows
   * the request that queued it, so a trace is recorded whole or not at all. Metrics are counted for every request
   * regardless (prom-client, metrics.ts). 0 when no span is exported (neither otlpEndpoint nor spanProcessors).
   */
  sampleRatio?: number;
}

export interface Telemetry {
  /** Flushes pending spans, then unregisters everything so a later startTelemetry() in this process starts clean. */
  shutdown(): Promise<void>;
}

/**
 * What NodeSDK.start() did with this configuration, without NodeSDK (issue 11: its module graph — metric and log
 * SDKs, every OTLP exporter flavour, gRPC, Prometheus — cost ~10 MiB of the edge's RSS for parts never started):
 * the instrumentations registered, an AsyncLocalStorage context manager, the W3C trace-context and baggage
 * propagators, one tracer provider with the resource (defaults, then the env/process/host detectors, then the service
 * name, so OTEL_SERVICE_NAME cannot rename a service behind its entrypoint), the sampler and the span processors; span
 * limits from the environment as before (BasicTracerProvider reads them). No metric or log provider: metrics are
 * prom-client's (metrics.ts) and logs go to stdout (logger.ts).
 */
export function startTelemetry(options: TelemetryOptions): Telemetry {
  const spanProcessors = [...(options.spanProcessors ?? [])];
  if (options.otlpEndpoint) {
    // Loaded only when traces are exported: the OTLP exporter's modules (transformer, HTTP transport) are ~5 MiB.
    const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp;
    spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url: tracesUrl(options.otlpEndpoint) })));
  }
  // Nothing takes spans (no endpoint, no processor): no new trace is recorded, since every recorded span would be
  // dropped (a drawn request took the instrumentations' full path — a tenth of requests drawn cost the edge ~28 % of
  // its CPU per chat call for spans nobody received). Ids are still made, propagated and logged on the unrecorded path.
  const exported = spanProcessors.length > 0;
  // Without a processor new root spans would carry no ids: the no-op processor keeps ids being made and propagated
  // (and so written into logs) while exporting nothing.
  if (!exported) spanProcessors.push(new NoopSpanProcessor());

  const ratio = exported ? (options.sampleRatio ?? 1) : 0;
  newTraceRatio = ratio;
  const instrumentations = processInstrumentations();
  registerInstrumentations({ instrumentations });

  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }));
  const provider = new BasicTracerProvider({
    resource: defaultResource()
      .merge(detectResources({ detectors: [envDetector, processDetector, hostDetector] }))
      .merge(resourceFromAttributes({ 'service.name': options.serviceName })),
    sampler: new ParentBasedSampler({ root: new RootSampler(ratio) }),
    spanProcessors,
  });
  trace.setGlobalTracerProvider(provider);

  let stopped: Promise<void> | undefined;
  return {
    shutdown() {
      stopped ??= provider.shutdown().finally(() => {
        // The provider is flushed and closed; the globals are unregistered and the modules unpatched too, so that a
        // second startTelemetry() in the same process (tests) registers afresh.
        for (const instrumentation of instrumentations) instrumentation.disable();
        newTraceRatio = 0;
        trace.disable();
        context.disable();
        propagation.disable();
      });
      return stopped;
    },
  };
}

// Require hooks are process-wide and see each module once, at its first require: instrumentations made by a
// second startTelemetry() in the same process (tests) would never see http or pg again. So the first set is kept
// for the life of the process, and a later start re-enables it (shutdown disabled it).
type Instrumentation = HttpInstrumentation | UndiciInstrumentation | PgInstrumentation | IORedisInstrumentation;
let created: Instrumentation[] | undefined;

/**
 * Only what a trace needs, each built on its own: inbound and outbound HTTP (http; undici for fetch and the upstream
 * pools), Postgres and Redis. Express is not instrumented: its instrumentation wraps every layer of every request
 * (a span per middleware, or at least a wrapper call per layer) for spans nobody reads; the HTTP server span gets
 * its route from the edge instead (nameServerSpan), and the handler's own spans (queue publish, Postgres, Redis)
 * are children of the server span.
 */
function processInstrumentations(): Instrumentation[] {
  if (created) {
    for (const instrumentation of created) instrumentation.enable();
  } else {
    created = [
      new LeanHttpInstrumentation(httpSpanRedaction),
      new LeanUndiciInstrumentation(undiciSpanRedaction),
      new LeanPgInstrumentation(),
      new LeanIORedisInstrumentation(),
    ];
  }
  return created;
}

/** The running telemetry's share of new traces recorded (0 when none runs, or nothing takes spans). */
let newTraceRatio = 0;
/** On the context newTraceContext() returns for a drawn trace: the root sampler records the span started in it. */
const DRAWN = createContextKey('gensvc.drawn');
const ids = new RandomIdGenerator();

/**
 * The context work that arrives outside any trace starts one in, drawn by the running telemetry's ratio before
 * anything is built: an inbound request without a traceparent, a job added or taken with no trace (a reconciler's, a
 * scheduler's, another process's). Drawn: a root context in which the next span started is recorded, whatever its
 * kind. Not drawn: a bare unsampled span context with fresh ids, in which nothing builds a span (the lean
 * instrumentations, the queue's publish and process) while the ids are still logged and propagated (a `-00`
 * traceparent), so a job made there runs in the same unsampled trace.
 */
export function newTraceContext(): Context {
  if (Math.random() < newTraceRatio) return ROOT_CONTEXT.setValue(DRAWN, true);
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: ids.generateTraceId(), spanId: ids.generateSpanId(), traceFlags: TraceFlags.NONE });
}

// An unrecorded request costs next to nothing (issue 11: the instrumentations did all their work — attributes,
// span, event-emitter binding, duration metrics — for every request, recorded or not):
//  - an inbound request that starts a trace draws the ratio before anything is built; not drawn, it runs inside a
//    bare, unsampled span context (fresh ids: logs still carry a trace_id, outbound calls still carry a `-00`
//    traceparent) and nothing else. Drawn, or inside a caller's trace, it takes the instrumentation's full path.
//  - an outbound undici or node:http call inside an unsampled trace only gets the traceparent header.
// Each overrides a method of the pinned instrumentation versions (package.json pins them exactly); the trace tests
// (telemetry.test.ts) check recorded and unrecorded requests alike.

/**
 * Root spans: one started in a context newTraceContext() drew, and an HTTP server span (LeanHttpInstrumentation,
 * below, draws before it starts one), are recorded; any other root by its trace id.
 */
class RootSampler implements Sampler {
  private readonly byTraceId: TraceIdRatioBasedSampler;

  constructor(private readonly ratio: number) {
    this.byTraceId = new TraceIdRatioBasedSampler(ratio);
  }

  shouldSample(ctx: Context, traceId: string, _name: string, kind: SpanKind, _attributes: Attributes, _links: Link[]): SamplingResult {
    if (kind === SpanKind.SERVER || ctx.getValue(DRAWN) === true) return { decision: SamplingDecision.RECORD_AND_SAMPLED };
    return this.byTraceId.shouldSample(ctx, traceId);
  }

  toString(): string {
    return `RootSampler{server spans and newTraceContext() draws recorded, others ${this.ratio}}`;
  }
}

type EmitRequest = (this: unknown, event: string, ...args: unknown[]) => boolean;

class LeanHttpInstrumentation extends HttpInstrumentation {}
{
  const proto = LeanHttpInstrumentation.prototype as unknown as { _incomingRequestFunction(component: string, original: EmitRequest): EmitRequest };
  const full = proto._incomingRequestFunction;
  proto._incomingRequestFunction = function (component, original) {
    const traced = full.call(this, component, original);
    return function incomingRequest(this: unknown, event, ...args) {
      if (event !== 'request') return original.apply(this, [event, ...args]);
      const { headers } = args[0] as IncomingMessage;
      // Inside a caller's trace (a valid traceparent) the caller decided, and the full path follows that decision.
      const parent = headers.traceparent === undefined ? undefined : trace.getSpanContext(propagation.extract(ROOT_CONTEXT, headers));
      if (parent && isSpanContextValid(parent)) return traced.apply(this, [event, ...args]);
      // A new trace, drawn (its server span recorded: the root sampler records every server span) or not. Not drawn,
      // the request's emitters are not bound to its context (the full path binds them): a listener that logs must be
      // bound itself (inActiveContext).
      const started = newTraceContext();
      if (!inUnsampledTrace(started)) return traced.apply(this, [event, ...args]);
      return context.with(started, () => original.apply(this, [event, ...args]));
    };
  };
}

{
  // Outbound http (the S3 client's requests) inside an unsampled trace: only the traceparent header, as for undici
  // below (issue 12: the full path's non-recording span, attributes and bindings were a twentieth of the archiver's
  // CPU per task, for its one PutObject). Options that are not a plain object (a URL string) take the full path.
  type RequestFn = (this: unknown, options: unknown, ...args: unknown[]) => unknown;
  const proto = LeanHttpInstrumentation.prototype as unknown as { _outgoingRequestFunction(component: string, original: RequestFn): RequestFn };
  const full = proto._outgoingRequestFunction;
  proto._outgoingRequestFunction = function (component, original) {
    const traced = full.call(this, component, original);
    return function outgoingRequest(this: unknown, options, ...args) {
      const active = context.active();
      if (!inUnsampledTrace(active) || typeof options !== 'object' || options === null || options instanceof URL) return traced.apply(this, [options, ...args]);
      const headers = { ...((options as { headers?: Record<string, unknown> }).headers ?? {}) };
      propagation.inject(active, headers);
      const last = args.length - 1;
      // The response callback runs in the caller's context, as the full path binds it.
      if (typeof args[last] === 'function') args[last] = context.bind(active, args[last] as RequestFn);
      return original.apply(this, [{ ...options, headers }, ...args]);
    };
  };
}

interface UndiciRequest {
  addHeader(name: string, value: string): unknown;
}

class LeanUndiciInstrumentation extends UndiciInstrumentation {}
{
  // Prototype-level: the instrumentation subscribes `this.onRequestCreated.bind(this)` while it is constructed.
  const proto = LeanUndiciInstrumentation.prototype as unknown as { onRequestCreated(message: { request: UndiciRequest }): void };
  const full = proto.onRequestCreated;
  proto.onRequestCreated = function (message) {
    const active = context.active();
    if (!inUnsampledTrace(active)) return full.call(this, message);
    const carrier: Record<string, string> = {};
    propagation.inject(active, carrier);
    for (const name in carrier) message.request.addHeader(name, carrier[name]!);
  };
}

/**
 * Called while a request is handled (the HTTP server span is active): returns a function that gives that span its
 * route once the router has matched it (`http.route`, and the name `<METHOD> <route>`). Call it before the response
 * closes (the span ends on 'close'), e.g. on 'finish'. A no-op for requests whose trace is not sampled.
 */
export function nameServerSpan(): (method: string, route: string) => void {
  const span = trace.getActiveSpan();
  return (method, route) => {
    if (!span?.isRecording()) return;
    span.setAttribute('http.route', route);
    // The raw path is not recorded (span-redaction.ts): the route stands for it.
    span.setAttribute('url.path', route);
    span.updateName(`${method} ${route}`);
  };
}

/** `fn` run in the context active now, wherever it is called from (an event listener of the request, say). */
export function inActiveContext<F extends (...args: never[]) => unknown>(fn: F): F {
  return context.bind(context.active(), fn);
}

/** The OTel convention for OTEL_EXPORTER_OTLP_ENDPOINT: the signal path is appended to the base URL, path kept. */
export function tracesUrl(baseEndpoint: string): string {
  return `${baseEndpoint.endsWith('/') ? baseEndpoint : `${baseEndpoint}/`}v1/traces`;
}
