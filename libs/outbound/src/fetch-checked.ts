// The one HTTP client for URLs a caller gave us (DESIGN.md §5). The host is resolved and checked once per request,
// and the request goes to a checked address itself: the original host name only names the server for SNI,
// certificate verification and the Host header, so a second DNS answer (rebinding) can never redirect the connection.
//
// Connections are kept alive and reused through an OutboundAgents a service makes once (its deps) and
// passes in every request's options: one undici Agent per (host name, policy), whose pools are keyed by the checked
// address (the origin `https://<address>:<port>`), and whose `connect` judges that address against the address policy
// again and opens the TLS socket to it, pinned. A request reuses a connection only to an address its
// own fresh resolution checked just now, so reuse changes nothing of what a name may reach: a name that now resolves
// to a forbidden address is refused by checkUrl before any pool is asked for a connection.
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { createSecureContext, connect as tlsConnect, rootCertificates, type TLSSocket } from 'node:tls';
import { Agent, type Dispatcher } from 'undici';
import { compileAllowList, judgeAddress, type AllowList } from './address-policy';
import { checkUrl, type CheckUrlOptions, type CheckedUrl, type ResolvedAddress } from './check-url';
import { OutboundError } from './outbound-error';

export interface RequestOptions extends CheckUrlOptions {
  method?: 'GET' | 'POST' | 'HEAD';
  headers?: Record<string, string>;
  body?: string | Buffer;
  /**
   * Extra trusted CA certificates (PEM), added to Node's roots. Production trusts extra CAs through
   * NODE_EXTRA_CA_CERTS, which Node applies itself; tests pass their test CA here.
   */
  ca?: string | readonly string[];
  /** TCP connect plus TLS handshake, per address tried. Default 5 s. */
  connectTimeoutMs?: number;
  /** The whole exchange, until the last body byte is read. Default 30 s. */
  timeoutMs?: number;
  /** No byte either way for this long fails the request. Default: timeoutMs. */
  idleTimeoutMs?: number;
  /** The body may not exceed this; enforced while streaming (reason `too_large`). Default 10 MiB. */
  maxBytes?: number;
  /** Which statuses count as success; any other is an OutboundError `http_status`. Default: 2xx. */
  acceptStatus?: (status: number) => boolean;
  signal?: AbortSignal;
  /**
   * The process's kept-alive connections (made once in main/deps). Without it the request opens its own, closed after.
   */
  agents?: OutboundAgents;
  /**
   * A body whose declared Content-Length is at most this many bytes is read whole before the call resolves (`whole`,
   * and no stream): one buffer instead of a stream's layers, held no longer than the declared length (the HTTP
   * client fails a body longer or shorter than it declared). Bodies without a length, or a longer one, stream.
   */
  wholeUpTo?: number;
}

export interface OutboundResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** Ends when the body is complete; errors with an OutboundError (too_large, timeout, connection). */
  body: Readable;
  /** The checked address the socket went to. */
  address: ResolvedAddress;
  url: URL;
  whole?: undefined;
}

/** A response whose body came whole (RequestOptions.wholeUpTo): its bytes, read to the end. */
export interface OutboundWholeResponse extends Omit<OutboundResponse, 'body' | 'whole'> {
  body?: undefined;
  whole: Buffer;
}

type WholeOption = { wholeUpTo: number };

const DEFAULTS = { connectTimeoutMs: 5_000, timeoutMs: 30_000, maxBytes: 10 * 1024 * 1024 };
const USER_AGENT = 'gensvc-outbound/1';
/** An idle connection is kept this long (less when the server's Keep-Alive hint says so). */
const KEEP_ALIVE_MS = 30_000;
/** Agents kept (one per host name and policy); the least recently used is closed past this. */
const MAX_AGENTS = 256;
const NO_CIDRS: readonly string[] = [];
/** TLS sessions an Agent keeps, one per address and port it connects to (a name has a few addresses). */
const MAX_TLS_SESSIONS = 16;

/** GET a caller-given URL. Redirects are never followed: a 3xx is an OutboundError `redirect`. */
export function fetchChecked(
  url: string | URL,
  opts: Omit<RequestOptions, 'method' | 'body'> & WholeOption,
): Promise<OutboundResponse | OutboundWholeResponse>;
export function fetchChecked(
  url: string | URL,
  opts?: Omit<RequestOptions, 'method' | 'body' | 'wholeUpTo'>,
): Promise<OutboundResponse>;
export function fetchChecked(
  url: string | URL,
  opts: Omit<RequestOptions, 'method' | 'body'> = {},
): Promise<OutboundResponse | OutboundWholeResponse> {
  return requestChecked(url, { ...opts, method: 'GET' });
}

/** POST a body to a caller-given URL (callbacks). */
export function postChecked(
  url: string | URL,
  body: string | Buffer,
  opts: Omit<RequestOptions, 'method' | 'body' | 'wholeUpTo'> = {},
): Promise<OutboundResponse> {
  return requestChecked(url, { ...opts, method: 'POST', body });
}

type AnyResponse = OutboundResponse | OutboundWholeResponse;

/**
 * The first `limit` bytes of a response's body, or fewer if it ends, fails or is cut by the deadline first (what
 * arrived: it never rejects). The rest is not read: the body is destroyed, and its connection with it.
 */
export async function readHead(body: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) break;
    }
  } catch {
    // A body that failed or was cut: what arrived before is the head.
  }
  return Buffer.concat(chunks, size).subarray(0, limit);
}

export function requestChecked(
  url: string | URL,
  opts: RequestOptions & WholeOption,
): Promise<OutboundResponse | OutboundWholeResponse>;
export function requestChecked(url: string | URL, opts?: Omit<RequestOptions, 'wholeUpTo'>): Promise<OutboundResponse>;
export async function requestChecked(url: string | URL, opts: RequestOptions = {}): Promise<AnyResponse> {
  const deadline = Date.now() + (opts.timeoutMs ?? DEFAULTS.timeoutMs);
  throwIfAborted(opts.signal);
  const checked = await withDeadline(checkUrl(url, opts), deadline);
  let lastError: OutboundError | undefined;
  // Every address passed the check; when one cannot be reached the next one is tried (the reason a host publishes
  // several), never an address that was not checked.
  for (const address of checked.addresses) {
    try {
      return await attempt(checked, address, opts, deadline);
    } catch (e) {
      if (!(e instanceof OutboundError) || !(e as ConnectFailure).beforeConnect || Date.now() >= deadline) throw e;
      lastError = e;
    }
  }
  throw lastError ?? new OutboundError('connection', 'No address to connect to.');
}

/**
 * How every socket to a caller-given host is opened, a request's and checkTls's handshake alike: to the checked
 * address itself (an IP literal, so no resolution happens on the socket), the host name only naming the server for
 * SNI and the certificate check, the certificate verified, `ca` added to Node's roots.
 */
export function tlsConnectOptions(
  checked: Pick<CheckedUrl, 'hostname' | 'port'>,
  address: ResolvedAddress,
  ca: RequestOptions['ca'],
) {
  return { ...socketOptions(checked, address), ...tlsContextOptions(ca) };
}

/** tlsConnectOptions' part of each socket: where it goes and the name its certificate must carry. */
function socketOptions(checked: Pick<CheckedUrl, 'hostname' | 'port'>, address: ResolvedAddress) {
  return {
    host: address.address,
    family: address.family,
    port: checked.port,
    // SNI carries names only; for an IP-literal URL the certificate is matched against the IP (Node checks the
    // identity against servername, or host when there is none).
    servername: isIP(checked.hostname) ? undefined : checked.hostname,
    rejectUnauthorized: true,
  };
}

/** tlsConnectOptions' part that makes the TLS context: the oldest version accepted and whom to trust. */
function tlsContextOptions(ca: RequestOptions['ca']) {
  return {
    minVersion: 'TLSv1.2' as const,
    ...(ca !== undefined ? { ca: [...rootCertificates, ...(typeof ca === 'string' ? [ca] : ca)] } : {}),
  };
}

type ConnectFailure = OutboundError & { beforeConnect?: boolean };

/** What an Agent's connections share: the name they serve, the policy their addresses are judged by, the trust. */
interface AgentKey {
  hostname: string;
  allowCidrs: readonly string[];
  ca: RequestOptions['ca'];
  connectTimeoutMs: number;
}

/** An Agent for one AgentKey: its allow-list compiled once, for every connection it opens. */
const newAgent = (key: AgentKey) =>
  new Agent({
    keepAliveTimeout: KEEP_ALIVE_MS,
    keepAliveMaxTimeout: KEEP_ALIVE_MS,
    connect: pinnedConnector(key, compileAllowList(key.allowCidrs)),
  });

/**
 * A process's kept-alive outbound connections: one Agent per AgentKey, the least recently used closed past
 * MAX_AGENTS. Made once per service (main.ts, through its deps) and closed at shutdown after the work that uses it.
 */
export class OutboundAgents {
  private readonly agents = new Map<string, Agent>();
  /**
   * A small number per trusted-CA text, so an Agent's key costs a Map look-up rather than a hash of the PEM per
   * request (the CA is the same string object every time, whose hash V8 keeps).
   */
  private readonly caIds = new Map<string, number>();
  /** Never reused, so no Agent made for one CA is ever found under another's number. */
  private lastCaId = 0;

  agentFor(key: AgentKey): Agent {
    const id = `${key.hostname} ${key.allowCidrs.join(',')} ${this.caId(key.ca)} ${key.connectTimeoutMs}`;
    let agent = this.agents.get(id);
    if (agent) {
      // Most recently used last, so the first is the one to close.
      this.agents.delete(id);
      this.agents.set(id, agent);
      return agent;
    }
    agent = newAgent(key);
    this.agents.set(id, agent);
    if (this.agents.size > MAX_AGENTS) {
      const [oldest, evicted] = this.agents.entries().next().value as [string, Agent];
      this.agents.delete(oldest);
      void evicted.close().catch(() => {});
    }
    return agent;
  }

  /** Closes every kept connection (shutdown, tests), letting requests in flight finish. */
  async close(): Promise<void> {
    const all = [...this.agents.values()];
    this.agents.clear();
    await Promise.all(all.map((a) => a.close().catch(() => {})));
  }

  private caId(ca: RequestOptions['ca']): number {
    if (ca === undefined) return 0;
    const text = typeof ca === 'string' ? ca : ca.join('\n');
    let id = this.caIds.get(text);
    if (id === undefined) {
      // Only a process that keeps changing its CA gets here often; a new number only costs a new Agent.
      if (this.caIds.size >= MAX_AGENTS) this.caIds.clear();
      id = ++this.lastCaId;
      this.caIds.set(text, id);
    }
    return id;
  }
}

/**
 * The Agent's `connect`: the origin's host is the checked address (an IP literal), judged again against the policy
 * here (so no pool ever opens a socket to an address the policy refuses), and the TLS socket opened to it, pinned,
 * the host name naming the server.
 */
function pinnedConnector(key: AgentKey, allow: AllowList) {
  // Resumable TLS sessions of this Agent's verified connections, by address and port, as undici's own connector
  // keeps them: a new connection resumes (the certificate kept in the session is still checked against the name).
  const tlsSessions = new Map<string, Buffer>();
  // One TLS context for every connection of this Agent, whose trust is the Agent's: tls.connect would otherwise
  // build one per socket, parsing the trusted roots again each time.
  const secureContext = createSecureContext(tlsContextOptions(key.ca));
  return (
    options: { hostname: string; port: string },
    callback: (...args: [null, TLSSocket] | [Error, null]) => void,
  ) => {
    const text = options.hostname.replace(/^\[|\]$/g, '');
    const port = Number(options.port) || 443;
    const url = new URL(`https://${isIP(key.hostname) === 6 ? `[${key.hostname}]` : key.hostname}:${port}`);
    let verdict: ReturnType<typeof judgeAddress>;
    try {
      verdict = judgeAddress(text, allow);
    } catch (e) {
      return callback(new OutboundError('connection', `Not an address: ${text}.`, { cause: e }), null);
    }
    const address: ResolvedAddress = { address: verdict.address, family: verdict.family };
    if (!verdict.allowed) {
      const message = `${verdict.address} is not a public address (${verdict.range}).`;
      return callback(new OutboundError('private_address', message, { range: verdict.range }), null);
    }
    let phase: 'tcp' | 'tls' = 'tcp';
    let done = false;
    const finish = (err: OutboundError | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.off('error', onError);
      if (err) {
        if (phase === 'tcp') (err as ConnectFailure).beforeConnect = true;
        socket.destroy();
        callback(err, null);
      } else {
        if (offered && socket.authorized) keep(offered);
        socket.setNoDelay(true);
        socket.setKeepAlive(true, 60_000);
        callback(null, socket);
      }
    };
    const onError = (e: Error) => finish(connectFailure(e, phase, url, address));
    // TLS resumption data is kept per pinned address and port: a ticket is only good with the server that issued it.
    const resumptionKey = `${address.address} ${port}`;
    const socket = tlsConnect({
      ...socketOptions({ hostname: key.hostname, port }, address),
      secureContext,
      ALPNProtocols: ['http/1.1'],
      session: tlsSessions.get(resumptionKey),
    });
    // Kept only from a connection whose handshake verified (TLS 1.3 sends its tickets after the handshake; a TLS 1.2
    // session may arrive just before the verdict, and waits for it).
    let offered: Buffer | undefined;
    const keep = (session: Buffer) => {
      tlsSessions.delete(resumptionKey);
      tlsSessions.set(resumptionKey, session);
      if (tlsSessions.size > MAX_TLS_SESSIONS) tlsSessions.delete(tlsSessions.keys().next().value!);
    };
    socket.on('session', (session: Buffer) => {
      if (done && socket.authorized) keep(session);
      else offered = session;
    });
    const timer = setTimeout(
      () => finish(new OutboundError('timeout', `Could not connect to ${url.host} within ${key.connectTimeoutMs} ms.`)),
      key.connectTimeoutMs,
    );
    socket.once('connect', () => (phase = 'tls'));
    socket.once('secureConnect', () => finish(null));
    socket.on('error', onError);
  };
}

/** undici's own failures as OutboundErrors; ours pass through. */
function undiciFailure(e: unknown, url: URL, address: ResolvedAddress, idleMs: number): OutboundError {
  if (e instanceof OutboundError) return e;
  const code = (e as { code?: string })?.code ?? '';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new OutboundError('timeout', `${url.host} sent nothing for ${idleMs} ms.`, { cause: e });
  }
  if (code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH' || code === 'UND_ERR_SOCKET') {
    return new OutboundError('connection', `${url.host} closed the connection before the body was complete.`, {
      cause: e,
    });
  }
  return connectFailure(e, 'http', url, address);
}

async function attempt(
  checked: CheckedUrl,
  address: ResolvedAddress,
  opts: RequestOptions,
  deadline: number,
): Promise<AnyResponse> {
  const { url } = checked;
  const maxBytes = opts.maxBytes ?? DEFAULTS.maxBytes;
  const accept = opts.acceptStatus ?? ((s: number) => s >= 200 && s < 300);
  const idleMs = opts.idleTimeoutMs ?? opts.timeoutMs ?? DEFAULTS.timeoutMs;
  const body = opts.body === undefined ? undefined : Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(opts.body);
  const headers: Record<string, string> = {
    'user-agent': USER_AGENT,
    ...opts.headers,
    host: url.host,
    ...(body ? { 'content-length': String(body.length) } : {}),
  };
  const key: AgentKey = {
    hostname: checked.hostname,
    allowCidrs: opts.allowCidrs ?? NO_CIDRS,
    ca: opts.ca,
    connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs,
  };
  // Without the process's agents the request has an Agent of its own, closed once the exchange is over.
  const own = opts.agents ? null : newAgent(key);
  const agent = own ?? opts.agents!.agentFor(key);
  const origin = `https://${address.family === 6 ? `[${address.address}]` : address.address}:${checked.port}`;
  // A request's own Agent goes once the exchange is over: its answer refused, or its body ended or dropped.
  const release = () => void own?.destroy().catch(() => {});
  const request = {
    origin,
    path: `${url.pathname}${url.search}`,
    method: opts.method ?? 'GET',
    headers,
    body,
    headersTimeout: idleMs,
    bodyTimeout: idleMs,
  };

  // One controller stops the request, or its body once it streams: the total deadline, or the caller's signal.
  const controller = new AbortController();
  let failure: OutboundError | undefined;
  let output: Transform | undefined;
  const stop = (err: OutboundError) => {
    failure ??= err;
    clear();
    controller.abort(failure);
    if (output && !output.destroyed) output.destroy(failure);
  };
  const clear = watchStops(opts, url, deadline, stop);

  let res: Dispatcher.ResponseData;
  try {
    res = await agent.request({ ...request, signal: controller.signal });
  } catch (e) {
    clear();
    release();
    throw failure ?? undiciFailure(e, url, address, idleMs);
  }

  const status = res.statusCode;
  const source = res.body;
  const reject = (err: OutboundError): never => {
    clear();
    source.on('error', () => {});
    source.destroy();
    release();
    throw err;
  };
  const refused = refusedStatus(url, status, res.headers, accept);
  if (refused) reject(refused);
  const headersOut = res.headers as IncomingHttpHeaders;
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    reject(new OutboundError('too_large', `The body (${declared} bytes) exceeds the limit of ${maxBytes} bytes.`));
  }
  if (
    opts.wholeUpTo !== undefined &&
    /^\d{1,15}$/.test(String(res.headers['content-length'])) &&
    declared <= opts.wholeUpTo
  ) {
    // Read by undici itself (its body's own consumer, no stream piped): the deadline and the caller's signal abort
    // it through the controller, a stall fails it at the body timeout, and a body that ends short of its length or
    // runs past it fails it, so what resolves is exactly the declared bytes, within maxBytes (checked above).
    let whole: Buffer;
    try {
      const bytes = await source.bytes();
      whole = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    } catch (e) {
      throw failure ?? undiciFailure(e, url, address, idleMs);
    } finally {
      clear();
      release();
    }
    return { status, headers: headersOut, whole, address, url };
  }

  let received = 0;
  let complete = false;
  const out = new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      received += chunk.length;
      if (received > maxBytes)
        return cb(new OutboundError('too_large', `The body exceeds the limit of ${maxBytes} bytes.`));
      cb(null, chunk);
    },
    flush(cb) {
      // undici ends the body only when it is whole (Content-Length met, or the chunked body's end); a connection
      // closed early errors it instead.
      complete = true;
      clear();
      // undici hands the connection back to its pool a turn after the body ends: ending ours a turn later lets a
      // caller that sends its next request at once find it there, rather than open another.
      setImmediate(cb);
    },
    destroy(err, cb) {
      // Whoever stops reading (a failed upload) also stops the download; a whole body leaves the connection to its
      // pool for the next request.
      clear();
      if (!complete) source.destroy();
      cb(err);
    },
  });
  output = out;
  if (own) out.once('close', release);
  // A consumer that stops listening must not crash the process when a late timeout destroys the body; readers
  // (pipeline, for await) attach their own listeners and still see the error.
  out.on('error', () => {});
  source.on('error', (e) => {
    if (!out.destroyed) out.destroy(failure ?? undiciFailure(e, url, address, idleMs));
  });
  source.pipe(out);
  return { status, headers: headersOut, body: out, address, url };
}

/** What each certificate failure means, in words the URL's owner can act on. */
const CERT_RULES: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'is self-signed; it must be issued by a trusted certificate authority',
  SELF_SIGNED_CERT_IN_CHAIN:
    'chains to a self-signed root that is not trusted; it must be issued by a trusted certificate authority',
  CERT_HAS_EXPIRED: 'has expired',
  CERT_NOT_YET_VALID: 'is not valid yet',
  ERR_TLS_CERT_ALTNAME_INVALID: 'is not valid for this host name',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    'is not issued by a trusted certificate authority (or the server does not send its intermediate certificates)',
  UNABLE_TO_GET_ISSUER_CERT: 'is not issued by a trusted certificate authority',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'is not issued by a trusted certificate authority',
  CERT_REVOKED: 'has been revoked',
  CERT_SIGNATURE_FAILURE: 'has an invalid signature',
};

const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|ERR_OSSL_)/;

/**
 * A socket's error as an OutboundError, for a request and checkTls's handshake alike: a certificate that does not
 * verify says which rule it breaks; any other failure during the handshake is `tls`; otherwise `timeout` or
 * `connection`, naming the address tried.
 */
export function connectFailure(
  e: unknown,
  phase: 'tcp' | 'tls' | 'http',
  url: URL,
  address: ResolvedAddress,
): OutboundError {
  if (e instanceof OutboundError) return e;
  const err = e as NodeJS.ErrnoException;
  const code = err?.code ?? '';
  const what = code || err?.message;
  const rule = CERT_RULES[code];
  if (rule)
    return new OutboundError('tls', `The TLS certificate of ${url.host} ${rule} (${code}).`, {
      cause: e,
      rule: `The server's TLS certificate ${rule}.`,
    });
  if (phase === 'tls' || TLS_CODES.test(code))
    return new OutboundError('tls', `The TLS handshake with ${url.host} failed (${what}).`, { cause: e });
  if (code === 'ETIMEDOUT')
    return new OutboundError('timeout', `Connecting to ${url.host} (${address.address}) timed out.`, { cause: e });
  if (phase === 'tcp')
    return new OutboundError('connection', `Could not connect to ${url.host} (${address.address}): ${what}.`, {
      cause: e,
    });
  return new OutboundError('connection', `The connection to ${url.host} (${address.address}) failed: ${what}.`, {
    cause: e,
  });
}

/**
 * A request's stops: at the deadline (`timeout`), or when the caller's signal aborts (`connection`), `stop` is called
 * with the reason. Returns the function that stops watching, once the exchange is over.
 */
function watchStops(
  opts: Pick<RequestOptions, 'signal' | 'timeoutMs'>,
  url: URL,
  deadline: number,
  stop: (err: OutboundError) => void,
): () => void {
  const onAbort = () =>
    stop(new OutboundError('connection', 'The request was aborted.', { cause: opts.signal?.reason }));
  const timer = setTimeout(
    () =>
      stop(
        new OutboundError('timeout', `No answer from ${url.host} within ${opts.timeoutMs ?? DEFAULTS.timeoutMs} ms.`),
      ),
    Math.max(0, deadline - Date.now()),
  );
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  return () => {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  };
}

/**
 * The refusal of a status the request does not take: a redirect (never followed), or one `accept` refuses; else null.
 */
function refusedStatus(
  url: URL,
  status: number,
  headers: IncomingHttpHeaders,
  accept: (status: number) => boolean,
): OutboundError | null {
  if (status >= 300 && status < 400) {
    const location = headers.location;
    const where = Array.isArray(location) ? location[0] : location;
    return new OutboundError(
      'redirect',
      `${url.host} answered ${status}${where ? ` (to ${truncate(where)})` : ''}; redirects are not followed.`,
      { status },
    );
  }
  return accept(status) ? null : new OutboundError('http_status', `${url.host} answered ${status}.`, { status });
}

function throwIfAborted(signal: AbortSignal | undefined) {
  if (signal?.aborted) throw new OutboundError('connection', 'The request was aborted.', { cause: signal.reason });
}

async function withDeadline<T>(p: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new OutboundError('timeout', 'Resolving the host took too long.')),
      Math.max(0, deadline - Date.now()),
    );
  });
  try {
    return await Promise.race([p, expired]);
  } finally {
    clearTimeout(timer);
  }
}

const truncate = (s: string) => (s.length > 200 ? `${s.slice(0, 200)}…` : s);
