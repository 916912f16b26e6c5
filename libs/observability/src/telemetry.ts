// OpenTelemetry bootstrap. main.ts calls startTelemetry() before it requires express, ioredis or pg: the
// instrumentations patch those modules through require hooks, so a module loaded earlier is never traced.
import { context, propagation, trace } from '@opentelemetry/api';
import { getNodeAutoInstrumentations } from '@opentelemetry/auto-instrumentations-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, NoopSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type SpanProcessor } from '@opentelemetry/sdk-trace-base';

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
   * regardless (prom-client, metrics.ts).
   */
  sampleRatio?: number;
}

export interface Telemetry {
  /** Flushes pending spans, then unregisters everything so a later startTelemetry() in this process starts clean. */
  shutdown(): Promise<void>;
}

export function startTelemetry(options: TelemetryOptions): Telemetry {
  const spanProcessors = [...(options.spanProcessors ?? [])];
  if (options.otlpEndpoint) {
    spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url: tracesUrl(options.otlpEndpoint) })));
  }
  // NodeSDK registers no tracer provider without a processor, and without one new root spans carry no ids: the
  // no-op processor keeps ids being made and propagated (and so written into logs) while exporting nothing.
  if (spanProcessors.length === 0) spanProcessors.push(new NoopSpanProcessor());

  const instrumentations = processInstrumentations();

  const sdk = new NodeSDK({
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': options.serviceName })),
    // Merged after the resource detectors, so OTEL_SERVICE_NAME cannot rename a service behind its entrypoint.
    serviceName: options.serviceName,
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(options.sampleRatio ?? 1) }),
    spanProcessors,
    instrumentations,
    // Left unset, NodeSDK would build OTLP metric and log exporters from the environment and post to
    // localhost:4318. Metrics are prom-client's (metrics.ts) and logs go to stdout (logger.ts).
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();

  let stopped: Promise<void> | undefined;
  return {
    shutdown() {
      stopped ??= sdk.shutdown().finally(() => {
        // NodeSDK.shutdown() flushes and closes the providers but leaves the globals registered and the modules
        // patched; a second SDK in the same process (tests) could then register nothing.
        for (const instrumentation of instrumentations) instrumentation.disable();
        trace.disable();
        context.disable();
        propagation.disable();
      });
      return stopped;
    },
  };
}

type Instrumentations = ReturnType<typeof getNodeAutoInstrumentations>;

// Require hooks are process-wide and see each module once, at its first require: instrumentations made by a
// second startTelemetry() in the same process (tests) would never see http or pg again. So the first set is kept
// for the life of the process, and a later start re-enables it (shutdown disabled it).
let created: Instrumentations | undefined;

/**
 * The libraries the services use and whose spans a trace needs: inbound and outbound HTTP (http, undici for fetch
 * and the upstream pools), Express route handlers, Postgres and Redis. Every other instrumentation of the bundle
 * patches modules nobody here loads, or adds spans nobody reads, and each costs CPU on every request it sees.
 */
const USED = new Set([
  '@opentelemetry/instrumentation-http',
  '@opentelemetry/instrumentation-undici',
  '@opentelemetry/instrumentation-express',
  '@opentelemetry/instrumentation-pg',
  '@opentelemetry/instrumentation-ioredis',
]);

function processInstrumentations(): Instrumentations {
  if (created) {
    for (const instrumentation of created) instrumentation.enable();
    return created;
  }
  const all = getNodeAutoInstrumentations({
    // One span per file read, lookup or socket: noise that drowns the request spans.
    '@opentelemetry/instrumentation-fs': { enabled: false },
    '@opentelemetry/instrumentation-dns': { enabled: false },
    '@opentelemetry/instrumentation-net': { enabled: false },
    // Our logger adds trace_id/span_id itself (logger.ts), whether pino was loaded before or after this call.
    '@opentelemetry/instrumentation-pino': { enabled: false },
    // A span per Express middleware (request id, metrics, auth, body parser…) costs more than the handler itself;
    // the route handler's span and the HTTP server span (named after the route) remain.
    '@opentelemetry/instrumentation-express': { ignoreLayersType: [ExpressLayerType.MIDDLEWARE] },
    // Express 5 routes through the standalone `router` package, whose instrumentation makes a span for every layer
    // (every middleware of every request) regardless of the setting above: measured, the largest tracing cost.
    '@opentelemetry/instrumentation-router': { enabled: false },
  });
  // Instrumentations enable themselves when made: the unused ones are switched off again and dropped.
  for (const instrumentation of all) if (!USED.has(instrumentation.instrumentationName)) instrumentation.disable();
  created = all.filter((instrumentation) => USED.has(instrumentation.instrumentationName));
  return created;
}

/** The OTel convention for OTEL_EXPORTER_OTLP_ENDPOINT: the signal path is appended to the base URL, path kept. */
export function tracesUrl(baseEndpoint: string): string {
  return `${baseEndpoint.endsWith('/') ? baseEndpoint : `${baseEndpoint}/`}v1/traces`;
}
