// A trace collector for tests of real service processes: an OTLP/HTTP (JSON) endpoint on loopback that keeps every
// span exported to it, flattened with its service's name. Point OTEL_EXPORTER_OTLP_ENDPOINT at `url`.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: OtlpValue }[];
}
interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: OtlpValue }[] };
    scopeSpans?: { spans?: OtlpSpan[] }[];
  }[];
}

export interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parent: string | null;
  name: string;
  kind: 'internal' | 'server' | 'client' | 'producer' | 'consumer' | 'unspecified';
  attributes: Record<string, string | number | undefined>;
}

const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'] as const;

function spansOf(body: ExportRequest): CollectedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs) => {
    const service = rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        service,
        traceId: s.traceId.toLowerCase(),
        spanId: s.spanId.toLowerCase(),
        parent: s.parentSpanId ? s.parentSpanId.toLowerCase() : null,
        name: s.name,
        kind: KINDS[s.kind] ?? 'unspecified',
        attributes: Object.fromEntries(
          (s.attributes ?? []).map((a) => [
            a.key,
            a.value.stringValue ?? (a.value.intValue !== undefined ? Number(a.value.intValue) : undefined),
          ]),
        ),
      })),
    );
  });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return (req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body).toString('utf8');
}

export interface OtlpCollector {
  /** http://127.0.0.1:<port>, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  /** Every span received so far. */
  spans: CollectedSpan[];
  /** Requests that were not trace exports (metrics, logs): "METHOD /path". */
  otherPosts: string[];
  close(): Promise<void>;
}

export async function startOtlpCollector(): Promise<OtlpCollector> {
  const spans: CollectedSpan[] = [];
  const otherPosts: string[] = [];
  const server = createServer(async (req, res) => {
    const text = await readBody(req);
    if (req.method === 'POST' && req.url === '/v1/traces') spans.push(...spansOf(JSON.parse(text) as ExportRequest));
    else otherPosts.push(`${req.method} ${req.url}`);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    otherPosts,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The spans of one trace, with look-ups by id and the chain of ancestors of a span (itself first). */
export function traceOf(spans: readonly CollectedSpan[], traceId: string) {
  const trace = spans.filter((s) => s.traceId === traceId);
  const byId = new Map(trace.map((s) => [s.spanId, s]));
  const one = (pred: (s: CollectedSpan) => boolean, what: string): CollectedSpan => {
    const found = trace.filter(pred);
    if (found.length !== 1)
      throw new Error(
        `expected one ${what}, found ${found.length} in ` +
          JSON.stringify(trace.map((s) => [s.service, s.kind, s.name])),
      );
    return found[0]!;
  };
  const chain = (s: CollectedSpan): CollectedSpan[] => {
    const up: CollectedSpan[] = [s];
    for (let p = s.parent ? byId.get(s.parent) : undefined; p; p = p.parent ? byId.get(p.parent) : undefined)
      up.push(p);
    return up;
  };
  return { trace, byId, one, chain };
}
