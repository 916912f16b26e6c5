// Prometheus metrics in a registry per service instance, never prom-client's global one: a test or a process that
// builds two apps must not collide on metric names, and every series carries the `service` label.
import { Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  httpRequests: Histogram<'method' | 'route' | 'status'>;
}

// prom-client's default buckets stop at 10 s; evaluate waits on its job and chat streams for far longer.
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export function createMetrics(service: string): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  const httpRequests = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration in seconds, by method, route template (never the raw path) and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });
  return { registry, httpRequests };
}

/** The Prometheus text exposition of every metric in the registry, with the content type to answer it with. */
export async function renderMetrics(metrics: Metrics): Promise<{ contentType: string; body: string }> {
  return { contentType: metrics.registry.contentType, body: await metrics.registry.metrics() };
}
