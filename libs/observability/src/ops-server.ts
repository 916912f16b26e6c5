// The internal ops port every service listens on (OPS_PORT, never the public API port): /healthz (the process
// answers), /readyz (its own stores answer, and for a worker: connected and not stalled) and /metrics (Prometheus).
// Probes and scrapers reach it inside the cluster; it is not published.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { renderMetrics, type Metrics } from './metrics';

const CHECK_TIMEOUT_MS = 2_000;

/** A readiness check: resolves when the dependency is fine, rejects (or times out) with why it is not. */
export type ReadinessCheck = (signal: AbortSignal) => Promise<unknown>;

/** Runs one check with a deadline: 'ok', or 'unreachable: <why>'. */
export async function runCheck(run: ReadinessCheck, timeoutMs = CHECK_TIMEOUT_MS): Promise<string> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    await Promise.race([run(controller.signal), timeout]);
    return 'ok';
  } catch (e) {
    return `unreachable: ${(e as Error).message}`;
  } finally {
    clearTimeout(timer);
  }
}

/** Every check at once: whether all passed, and each one's verdict by name. */
export async function runChecks(
  checks: Record<string, ReadinessCheck>,
): Promise<{ ready: boolean; checks: Record<string, string> }> {
  const names = Object.keys(checks);
  const verdicts = await Promise.all(names.map((n) => runCheck(checks[n]!)));
  const out = Object.fromEntries(names.map((n, i) => [n, verdicts[i]!]));
  return { ready: verdicts.every((v) => v === 'ok'), checks: out };
}

export interface OpsServerOptions {
  port: number;
  /** Default: every interface (probes come from the kubelet / the compose network). */
  host?: string;
  metrics: Metrics;
  checks: Record<string, ReadinessCheck>;
}

export interface OpsServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

export async function startOpsServer(opts: OpsServerOptions): Promise<OpsServer> {
  const server = createServer((req, res) => {
    const send = (status: number, body: object) =>
      res
        .writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        .end(JSON.stringify(body));
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return void send(405, { error: 'method not allowed' });
    if (path === '/healthz') return void send(200, { status: 'ok' });
    if (path === '/readyz') {
      void runChecks(opts.checks).then(({ ready, checks }) =>
        send(ready ? 200 : 503, { status: ready ? 'ready' : 'unavailable', checks }),
      );
      return;
    }
    if (path === '/metrics') {
      renderMetrics(opts.metrics).then(
        ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
        (err: unknown) => send(500, { error: `metrics: ${(err as Error).message}` }),
      );
      return;
    }
    send(404, { error: 'not found: /healthz, /readyz, /metrics' });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
