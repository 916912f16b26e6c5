// Prometheus metrics in a registry per service instance, never prom-client's global one: a test or a process that
// builds two apps must not collide on metric names, and every series carries the `service` label. Names follow
// Prometheus conventions, in base units: seconds, bytes, and money in micro-units (1 USD = 1 000 000), the unit the
// ledger keeps. Each service moves the ones that concern it; the ops port serves them (ops-server.ts).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  httpRequests: Histogram<'method' | 'route' | 'status'>;
  /** One call to one channel (a failover makes several), by how it ended. */
  upstreamRequests: Histogram<'channel' | 'model' | 'outcome'>;
  tokens: Counter<'model' | 'direction'>;
  spend: Counter<'model'>;
  reservationsRefused: Counter<'reason'>;
  jobDuration: Histogram<'queue' | 'job' | 'outcome'>;
  callbackAttempts: Counter<'outcome'>;
  archives: Counter<'outcome'>;
  archiveBytes: Counter;
  retentionRemoved: Counter<'kind'>;
}

// prom-client's default buckets stop at 10 s; evaluate waits on its job and chat streams for far longer.
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
// Jobs run from milliseconds (a poll) to minutes (a 512 MiB archive).
const JOB_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

export function createMetrics(service: string): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  // The event-loop lag is sampled every 100 ms, not prom-client's 10, so an idle process is not woken a hundred times a
  // second; a stall of the loop longer than 100 ms is still caught whole, and shorter ones are sampled.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  const registers = [registry];
  return {
    registry,
    httpRequests: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration in seconds, by method, route template (never the raw path) and status code.',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: HTTP_BUCKETS,
      registers,
    }),
    upstreamRequests: new Histogram({
      name: 'gensvc_upstream_request_duration_seconds',
      help:
        'Calls to upstream channels until the answer (headers, for streams), by channel name, model and outcome ' +
        '(ok, failover, rejected, invalid_response, aborted).',
      labelNames: ['channel', 'model', 'outcome'] as const,
      buckets: HTTP_BUCKETS,
      registers,
    }),
    tokens: new Counter({
      name: 'gensvc_tokens_total',
      help: 'Tokens billed, by model and direction (input, output).',
      labelNames: ['model', 'direction'] as const,
      registers,
    }),
    spend: new Counter({
      name: 'gensvc_spend_microunits_total',
      help: 'Money charged to workspaces at settlement, in micro-units of the currency (1 USD = 1000000), by model.',
      labelNames: ['model'] as const,
      registers,
    }),
    reservationsRefused: new Counter({
      name: 'gensvc_reservations_refused_total',
      help: 'Paid calls refused before reaching a provider, by reason (spend_cap, balance, rate).',
      labelNames: ['reason'] as const,
      registers,
    }),
    jobDuration: new Histogram({
      name: 'gensvc_job_duration_seconds',
      help: 'Queue jobs this process ran, from start to end, by queue, job name and outcome (completed, failed).',
      labelNames: ['queue', 'job', 'outcome'] as const,
      buckets: JOB_BUCKETS,
      registers,
    }),
    callbackAttempts: new Counter({
      name: 'gensvc_callback_attempts_total',
      help: 'Callback delivery attempts, by outcome (delivered, failed).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    archives: new Counter({
      name: 'gensvc_archives_total',
      help: 'Generated outputs the archiver dealt with, by outcome (archived, too_large, failed).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    archiveBytes: new Counter({
      name: 'gensvc_archive_bytes_total',
      help: 'Bytes of generated outputs stored into S3 by the archiver.',
      registers,
    }),
    retentionRemoved: new Counter({
      name: 'gensvc_retention_removed_total',
      help: 'Expired rows removed by the retention sweep, by kind (file: row and bytes).',
      labelNames: ['kind'] as const,
      registers,
    }),
  };
}

/** A settlement's money and tokens (chat, evaluate, image edits, generation tasks). */
export function recordSpend(
  metrics: Metrics,
  s: { model: string; cost: bigint; inputTokens?: number | null; outputTokens?: number | null },
) {
  if (s.cost > 0n) metrics.spend.inc({ model: s.model }, Number(s.cost));
  if (s.inputTokens) metrics.tokens.inc({ model: s.model, direction: 'input' }, s.inputTokens);
  if (s.outputTokens) metrics.tokens.inc({ model: s.model, direction: 'output' }, s.outputTokens);
}

/**
 * A gauge read at scrape time (queue depths, circuit states, parked callbacks): `collect` returns the current
 * series. A failing read leaves the gauge empty for that scrape rather than failing the whole scrape.
 */
export function scrapedGauge<L extends string>(
  metrics: Metrics,
  spec: { name: string; help: string; labelNames: readonly L[] },
  collect: () =>
    | Promise<{ labels: Partial<Record<L, string>>; value: number }[]>
    | { labels: Partial<Record<L, string>>; value: number }[],
): Gauge<L> {
  return new Gauge<L>({
    name: spec.name,
    help: spec.help,
    labelNames: spec.labelNames,
    registers: [metrics.registry],
    async collect() {
      this.reset();
      try {
        for (const { labels, value } of await collect()) this.set(labels, value);
      } catch {
        // Left empty: the absence of the series says the read failed.
      }
    },
  });
}

/** The Prometheus text exposition of every metric in the registry, with the content type to answer it with. */
export async function renderMetrics(metrics: Metrics): Promise<{ contentType: string; body: string }> {
  return { contentType: metrics.registry.contentType, body: await metrics.registry.metrics() };
}
