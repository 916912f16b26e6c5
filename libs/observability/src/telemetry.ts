// OpenTelemetry bootstrap. main.ts calls startTelemetry() before it requires express, ioredis or pg: the
// instrumentations patch those modules through require hooks, so a module loaded earlier is never traced.
import { context, isSpanContextValid, propagation, trace, TraceFlags, type Context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import {
  defaultResource,
  detectResources,
  envDetector,
  hostDetector,
  processDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
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
   * regardless (prom-client, metrics.ts). With neither otlpEndpoint nor spanProcessors telemetry stays off.
   */
  sampleRatio?: number;
}

export interface Telemetry {
  /** Flushes pending spans, then unregisters everything so a later startTelemetry() in this process starts clean. */
  shutdown(): Promise<void>;
}

/**
 * The OpenTelemetry SDK set up by hand, as NodeSDK.start() would with this configuration but without its metric and
 * log SDKs (metrics are prom-client's, metrics.ts; logs go to stdout, logger.ts): the instrumentations, an
 * AsyncLocalStorage context manager, the W3C trace-context and baggage propagators, and one tracer provider with the
 * resource (defaults, then the env/process/host detectors, then the service name, so OTEL_SERVICE_NAME cannot rename a
 * service behind its entrypoint), the sampler and the span processors. Span limits come from the environment.
 */
export function startTelemetry(options: TelemetryOptions): Telemetry {
  const spanProcessors = [...(options.spanProcessors ?? [])];
  if (options.otlpEndpoint) {
    // Loaded only when traces are exported: a process that exports nothing does not load the exporter's modules.
    const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp;
    spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url: tracesUrl(options.otlpEndpoint) })));
  }
  // Nothing takes spans (no endpoint, no processor): OpenTelemetry stays off (its API's no-op defaults, nothing
  // instrumented), so no request or job pays for spans that go nowhere, and logs correlate by request id alone.
  if (spanProcessors.length === 0) return { shutdown: async () => {} };
  const ratio = options.sampleRatio ?? 1;
  const instrumentations = processInstrumentations();
  registerInstrumentations({ instrumentations });

  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
  const provider = new BasicTracerProvider({
    resource: defaultResource()
      .merge(detectResources({ detectors: [envDetector, processDetector, hostDetector] }))
      .merge(resourceFromAttributes({ 'service.name': options.serviceName })),
    // A trace is recorded whole or not at all: the root draws by trace id, and everything under it (a request that
    // arrives with a traceparent, a job that carries one) follows its parent's decision.
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) }),
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
 * Only what a trace needs: inbound and outbound HTTP (http; undici for fetch and the upstream pools), Postgres and
 * Redis. Express is not instrumented: it would add a span per middleware; the HTTP server span gets its route from the
 * edge instead (nameServerSpan). Postgres and Redis calls outside any trace (pool upkeep, queue polling) make no span.
 */
function processInstrumentations(): Instrumentation[] {
  if (created) {
    for (const instrumentation of created) instrumentation.enable();
  } else {
    created = [
      new HttpInstrumentation(httpSpanRedaction),
      new UndiciInstrumentation(undiciSpanRedaction),
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
    ];
  }
  return created;
}

/** True when `ctx` is inside a trace that is not recorded: a valid span context without the sampled flag. */
export function inUnsampledTrace(ctx: Context): boolean {
  const span = trace.getSpanContext(ctx);
  return span !== undefined && isSpanContextValid(span) && (span.traceFlags & TraceFlags.SAMPLED) === 0;
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
