// The sim's HTTP server on plain node:http: channel prefixes, the request log, fault injection, the /__sim
// control routes, and dispatch to the protocol files. The hot path does no logging and no allocation beyond the
// request's own: benchmarks compare gensvc against calling the sim directly.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { FaultStore, faultRuleProblems, type FaultControl, type FaultRule } from './faults';
import { OutputStore, type TaskContext } from './jobs';
import type { Protocol, ProtocolName, SimRequest } from './protocol';
import { anthropicMessagesProtocol } from './protocols/anthropic-messages';
import { evaluateProtocol } from './protocols/evaluate';
import { createFalQueueProtocol } from './protocols/fal-queue';
import { geminiProtocol } from './protocols/gemini';
import { openAiChatProtocol } from './protocols/openai-chat';
import { createFilesProtocol, createImagesProtocol, FileStore } from './protocols/openai-images';
import { openAiResponsesProtocol } from './protocols/openai-responses';
import { createOutputsProtocol } from './protocols/outputs';
import { createReplicateProtocol } from './protocols/replicate';
import { deliver, json, sleep, type Reply } from './reply';
import { createWebhookSender, type WebhookAttempt } from './webhooks';

export interface RequestRecord {
  /** Arrival order, from 1; survives resetRequests() so later records never reuse a number. */
  seq: number;
  /** Arrival time, ISO 8601. */
  at: string;
  /** The `/ch/<name>` channel, or '' at the root. */
  channel: string;
  /** null when no protocol serves the path (answered 404). */
  protocol: ProtocolName | null;
  method: string;
  /** Path without the channel prefix and without the query. */
  path: string;
  model: string | null;
  /** Status sent; null when none was (hang, reset, or still pending). */
  status: number | null;
  outcome: 'pending' | 'complete' | 'cut' | 'reset' | 'hang' | 'client-closed';
  /** The fault rule applied, if any. */
  faultId: string | null;
}

export interface Sim {
  /** http://host:port with no trailing slash; a channel's base URL is `${url}/ch/<name>`. */
  url: string;
  /** Where Replicate and fal outputs are served: the HTTPS listener's https://host:port when `outputs.tls` was
   *  given, else `url`. Output URLs handed out use the host name the client addressed. */
  outputsUrl: string;
  faults: FaultControl;
  /** The most recent records (up to maxRecords), oldest first. */
  requests(): RequestRecord[];
  resetRequests(): void;
  /** Provider webhooks sent when jobs ended (Replicate `webhook`, fal `fal_webhook`), oldest first. */
  webhooks(): WebhookAttempt[];
  /**
   * The headers fal would sign a webhook with for request `id` and `body`, as account `userId` (default
   * SIM_FAL_USER_ID).
   */
  falWebhookHeaders(id: string, body: string, userId?: string): Record<string, string>;
  /** fal's webhook keys as fal publishes them (GET /__sim/fal/jwks.json), on the HTTPS listener when there is one. */
  falJwksUrl: string;
  /** Stops listening and drops every connection, hanging ones included. */
  close(): Promise<void>;
}

export interface SimOptions {
  /** 0 or unset: a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Records kept for requests() (default 10 000), so a long benchmark stays bounded. */
  maxRecords?: number;
  /** Called once per proxied request when its outcome is known (main.ts logs through it at debug level). */
  onRequest?: (record: RequestRecord) => void;
  /**
   * How long a Replicate prediction or fal request takes, queueing included (default 300 ms); job rules override it.
   */
  taskDurationMs?: number;
  /** Replicate and fal jobs kept per protocol (default 10 000); finished ones also go 30 minutes after they end. */
  maxJobs?: number;
  /** Serve output files over HTTPS too, on a second listener (same host, `port` or a free one) that serves
   *  /outputs/* only, and hand out its URLs: gensvc's archiver fetches HTTPS only. */
  outputs?: { tls: { key: string; cert: string }; port?: number };
  /** The whsec_ secret Replicate webhooks are signed with (default DEFAULT_REPLICATE_WEBHOOK_SECRET). */
  replicateWebhookSecret?: string;
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;
const CONTROL = '/__sim/';
const FAL_JWKS_PATH = '/__sim/fal/jwks.json';

class RequestLog {
  private records: RequestRecord[] = [];
  private seq = 0;
  constructor(private readonly max: number) {}

  add(record: Omit<RequestRecord, 'seq' | 'at'>): RequestRecord {
    const full = { seq: ++this.seq, at: new Date().toISOString(), ...record };
    this.records.push(full);
    // Trimmed in batches so appending stays O(1) amortised.
    if (this.records.length >= this.max * 2) this.records.splice(0, this.records.length - this.max);
    return full;
  }

  list(): RequestRecord[] {
    return this.records.slice(-this.max).map((r) => ({ ...r }));
  }

  reset(): void {
    this.records = [];
  }
}

class ClientGone extends Error {}

/** The whole body; null when it exceeds the limit. Rejects with ClientGone when the client leaves first. */
function readBody(req: IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (d: Buffer) => {
      size += d.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else parts.push(d);
    });
    req.on('end', () => resolve(tooLarge ? null : parts.length === 1 ? parts[0]! : Buffer.concat(parts)));
    req.on('error', () => reject(new ClientGone()));
    req.on('close', () => {
      if (!req.complete) reject(new ClientGone());
    });
  });
}

function sendJson(res: ServerResponse, status: number, body?: unknown) {
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function faultReply(protocol: Protocol, fault: FaultRule): Reply {
  const status = fault.status!;
  if (fault.body === undefined) return protocol.errorReply(status);
  if (typeof fault.body === 'string')
    return { kind: 'bytes', status, body: Buffer.from(fault.body), contentType: 'text/plain; charset=utf-8' };
  return json(status, fault.body);
}

/** What one listener serves: the main one everything, the HTTPS outputs one only output files. */
interface Listener {
  scheme: 'http' | 'https';
  protocols: Protocol[];
  control: boolean;
}

/** The host name of a Host header ("[::1]:8090" -> "[::1]", "sim:8090" -> "sim"). */
function hostName(host: string): string {
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  const colon = host.indexOf(':');
  return colon < 0 ? host : host.slice(0, colon);
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

export async function startSim(options: SimOptions = {}): Promise<Sim> {
  const faults = new FaultStore();
  const log = new RequestLog(options.maxRecords ?? 10_000);
  const files = new FileStore();
  const outputs = new OutputStore();
  const webhooks = createWebhookSender(options.replicateWebhookSecret);
  const tasks: TaskContext = {
    faults,
    outputs,
    taskDurationMs: options.taskDurationMs ?? 300,
    jobs: { maxJobs: options.maxJobs },
    webhooks,
  };
  const outputsProtocol = createOutputsProtocol(outputs) as Protocol;
  const main: Listener = {
    scheme: 'http',
    control: true,
    // Order matters: fal's submit route is any POST /{owner}/{app}/..., so it goes after every exact route.
    protocols: [
      openAiChatProtocol,
      anthropicMessagesProtocol,
      geminiProtocol,
      createImagesProtocol(files),
      openAiResponsesProtocol,
      createFilesProtocol(files),
      evaluateProtocol,
      createReplicateProtocol(tasks),
      outputsProtocol,
      createFalQueueProtocol(tasks),
    ] as Protocol[],
  };
  const outputsListener: Listener = { scheme: 'https', control: false, protocols: [outputsProtocol] };
  const host = options.host ?? '127.0.0.1';
  let baseUrl = '';
  // The HTTPS outputs listener's port, once listening.
  let tlsPort = 0;
  let tlsHandshakes = 0;

  async function control(req: IncomingMessage, res: ServerResponse, path: string) {
    const method = req.method ?? 'GET';
    if (path === '/__sim/webhooks' && method === 'GET')
      return sendJson(res, 200, { object: 'list', data: webhooks.attempts() });
    if (path === '/__sim/stats' && method === 'GET') {
      // TLS handshakes the outputs listener completed: how many connections its clients opened (bench/tasks).
      return sendJson(res, 200, { tls_handshakes: tlsHandshakes });
    }
    if (path === '/__sim/requests') {
      if (method === 'GET') return sendJson(res, 200, { object: 'list', data: log.list() });
      if (method === 'DELETE') {
        log.reset();
        return sendJson(res, 204);
      }
    } else if (path === '/__sim/faults') {
      if (method === 'GET') return sendJson(res, 200, { object: 'list', data: faults.list() });
      if (method === 'DELETE') {
        faults.clear();
        return sendJson(res, 204);
      }
      if (method === 'POST') {
        const body = await readBody(req);
        let rule: unknown;
        try {
          rule = JSON.parse(body?.toString('utf8') ?? '');
        } catch {
          return sendJson(res, 400, { error: { message: 'the body must be a JSON fault rule' } });
        }
        const problems = faultRuleProblems(rule);
        if (problems.length) return sendJson(res, 400, { error: { message: problems.join('; '), problems } });
        return sendJson(res, 200, { id: faults.add(rule as FaultRule) });
      }
    } else if (path.startsWith('/__sim/faults/') && method === 'DELETE') {
      return faults.remove(decodeURIComponent(path.slice('/__sim/faults/'.length)))
        ? sendJson(res, 204)
        : sendJson(res, 404, { error: { message: 'no such fault' } });
    }
    sendJson(res, 404, { error: { message: `no control route ${method} ${path}` } });
  }

  async function serve(req: IncomingMessage, res: ServerResponse, listener: Listener) {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    let path = q < 0 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    let channel = '';
    let prefix = '';
    if (path.startsWith('/ch/')) {
      const end = path.indexOf('/', 4);
      prefix = end < 0 ? path : path.slice(0, end);
      try {
        channel = decodeURIComponent(prefix.slice(4));
      } catch {
        channel = prefix.slice(4);
      }
      path = end < 0 ? '/' : path.slice(end);
    } else if (path === FAL_JWKS_PATH && method === 'GET') {
      // On every listener: the gateway fetches it through its outbound client, which speaks https only.
      return sendJson(res, 200, webhooks.jwks());
    } else if (listener.control && path.startsWith(CONTROL)) {
      return control(req, res, path);
    } else if (path === '/healthz') {
      return sendJson(res, 200, { status: 'ok' });
    }

    const protocol = listener.protocols.find((p) => p.matches(method, path));
    const record = log.add({
      channel,
      protocol: protocol?.name ?? null,
      method,
      path,
      model: null,
      status: null,
      outcome: 'pending',
      faultId: null,
    });
    const finish = (outcome: RequestRecord['outcome']) => {
      record.outcome = outcome;
      options.onRequest?.(record);
    };
    let body: Buffer | null;
    try {
      body = await readBody(req);
    } catch (error) {
      if (error instanceof ClientGone) return finish('client-closed');
      throw error;
    }
    if (!protocol) {
      record.status = 404;
      sendJson(res, 404, {
        error: {
          message: `the upstream sim serves no ${method} ${path}`,
          type: 'invalid_request_error',
          param: null,
          code: 'unknown_url',
        },
      });
      return finish('complete');
    }
    const origin = req.headers.host ? `${listener.scheme}://${req.headers.host}` : baseUrl;
    const request: SimRequest = {
      req,
      method,
      path,
      query: new URLSearchParams(q < 0 ? '' : url.slice(q + 1)),
      channel,
      prefix,
      body: body ?? Buffer.alloc(0),
      origin,
      outputsOrigin:
        tlsPort && listener.scheme === 'http'
          ? `https://${hostName(req.headers.host ?? new URL(baseUrl).host)}:${tlsPort}`
          : origin,
    };
    const parsed = body
      ? await protocol.parse(request)
      : { error: protocol.errorReply(413, `request body larger than ${MAX_BODY_BYTES} bytes`) };
    record.model = 'model' in parsed && parsed.model !== undefined ? parsed.model : null;
    const fault = faults.take(channel, parsed.model, parsed.operation);
    if (fault) {
      record.faultId = fault.id;
      if (fault.latencyMs) await sleep(fault.latencyMs);
      if (fault.hang) return finish('hang');
      if (fault.reset) {
        req.socket.resetAndDestroy();
        return finish('reset');
      }
    }
    let reply: Reply;
    if (fault?.status !== undefined) reply = faultReply(protocol, fault);
    else if (parsed.error) reply = parsed.error;
    else reply = await protocol.answer(parsed.value, request);
    if (fault?.headers) reply = { ...reply, headers: { ...reply.headers, ...fault.headers } };
    const outcome = await deliver(res, reply, {
      fault,
      malformShape: protocol.malformShape,
      onStatus: (s) => (record.status = s),
    });
    finish(outcome);
  }

  const handler = (listener: Listener) => (req: IncomingMessage, res: ServerResponse) => {
    serve(req, res, listener).catch((err: unknown) => {
      // A sim bug, never a caller's doing: answer 500 if we still can, and say why.
      if (!res.headersSent)
        sendJson(res, 500, {
          error: {
            message: `upstream sim failure: ${err instanceof Error ? err.message : String(err)}`,
            type: 'server_error',
          },
        });
      else res.destroy();
    });
  };
  const servers: Server[] = [createServer(handler(main))];
  if (options.outputs) {
    const tls = createHttpsServer(
      { key: options.outputs.tls.key, cert: options.outputs.tls.cert },
      handler(outputsListener),
    );
    // A client refusing the certificate is the client's business, not a sim failure.
    tls.on('tlsClientError', () => {});
    tls.on('secureConnection', () => tlsHandshakes++);
    servers.push(tls);
  }
  // Longer than common client pools' idle timeouts, so a pooled connection is never closed under a request.
  for (const server of servers) server.keepAliveTimeout = 65_000;
  const close = () => {
    webhooks.close();
    return Promise.all(
      servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            if (!server.listening) return resolve();
            server.close(() => resolve());
            server.closeAllConnections();
          }),
      ),
    ).then(() => undefined);
  };
  const port = await listen(servers[0]!, options.port ?? 0, host);
  if (servers[1]) {
    // The main listener is up by now: a busy outputs port must not leave it running.
    tlsPort = await listen(servers[1], options.outputs!.port ?? 0, host).catch(async (error: unknown) => {
      await close();
      throw error;
    });
  }
  const reachable = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  baseUrl = `http://${reachable}:${port}`;

  const outputsUrl = tlsPort ? `https://${reachable}:${tlsPort}` : baseUrl;
  return {
    url: baseUrl,
    outputsUrl,
    faults,
    requests: () => log.list(),
    webhooks: () => webhooks.attempts(),
    falWebhookHeaders: webhooks.falHeaders,
    falJwksUrl: `${outputsUrl}${FAL_JWKS_PATH}`,
    resetRequests: () => log.reset(),
    close,
  };
}
