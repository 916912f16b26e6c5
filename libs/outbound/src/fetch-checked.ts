// The one HTTP client for URLs a caller gave us (DESIGN.md §5). The host is resolved and checked once, and the
// socket is opened to a checked address itself: the original host name only names the server for SNI, certificate
// verification and the Host header, so a second DNS answer (rebinding) can never redirect the connection.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { rootCertificates } from 'node:tls';
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
}

export interface OutboundResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** Ends when the body is complete; errors with an OutboundError (too_large, timeout, connection). */
  body: Readable;
  /** The checked address the socket went to. */
  address: ResolvedAddress;
  url: URL;
}

const DEFAULTS = { connectTimeoutMs: 5_000, timeoutMs: 30_000, maxBytes: 10 * 1024 * 1024 };
const USER_AGENT = 'gensvc-outbound/1';

/** GET a caller-given URL. Redirects are never followed: a 3xx is an OutboundError `redirect`. */
export function fetchChecked(url: string | URL, opts: Omit<RequestOptions, 'method' | 'body'> = {}): Promise<OutboundResponse> {
  return requestChecked(url, { ...opts, method: 'GET' });
}

/** POST a body to a caller-given URL (callbacks). */
export function postChecked(url: string | URL, body: string | Buffer, opts: Omit<RequestOptions, 'method' | 'body'> = {}): Promise<OutboundResponse> {
  return requestChecked(url, { ...opts, method: 'POST', body });
}

export async function requestChecked(url: string | URL, opts: RequestOptions = {}): Promise<OutboundResponse> {
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
export function tlsConnectOptions(checked: CheckedUrl, address: ResolvedAddress, ca: RequestOptions['ca']) {
  return {
    host: address.address,
    family: address.family,
    port: checked.port,
    // SNI carries names only; for an IP-literal URL the certificate is matched against the IP (Node checks the
    // identity against servername, or host when there is none).
    servername: isIP(checked.hostname) ? undefined : checked.hostname,
    rejectUnauthorized: true,
    minVersion: 'TLSv1.2' as const,
    ...(ca !== undefined ? { ca: [...rootCertificates, ...(typeof ca === 'string' ? [ca] : ca)] } : {}),
  };
}

type ConnectFailure = OutboundError & { beforeConnect?: boolean };

function attempt(checked: CheckedUrl, address: ResolvedAddress, opts: RequestOptions, deadline: number): Promise<OutboundResponse> {
  const { url } = checked;
  const maxBytes = opts.maxBytes ?? DEFAULTS.maxBytes;
  const accept = opts.acceptStatus ?? ((s: number) => s >= 200 && s < 300);
  const body = opts.body === undefined ? undefined : Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(opts.body);
  const headers: Record<string, string> = {
    'user-agent': USER_AGENT,
    ...opts.headers,
    host: url.host,
    ...(body ? { 'content-length': String(body.length) } : {}),
  };

  return new Promise<OutboundResponse>((resolve, reject) => {
    let phase: 'tcp' | 'tls' | 'http' = 'tcp';
    let settled = false;
    let output: Transform | undefined;
    const timers: NodeJS.Timeout[] = [];
    const clearTimers = () => timers.splice(0).forEach(clearTimeout);

    const req = httpsRequest({
      ...tlsConnectOptions(checked, address, opts.ca),
      method: opts.method ?? 'GET',
      path: `${url.pathname}${url.search}`,
      headers,
      agent: false,
    });

    const fail = (err: OutboundError) => {
      clearTimers();
      opts.signal?.removeEventListener('abort', onAbort);
      if (!settled) {
        settled = true;
        if (phase === 'tcp') (err as ConnectFailure).beforeConnect = true;
        reject(err);
      } else if (output && !output.destroyed) {
        output.destroy(err);
      }
      req.destroy(err);
    };
    const onAbort = () => fail(new OutboundError('connection', 'The request was aborted.', { cause: opts.signal?.reason }));
    opts.signal?.addEventListener('abort', onAbort, { once: true });

    timers.push(setTimeout(() => fail(new OutboundError('timeout', `No answer from ${url.host} within ${opts.timeoutMs ?? DEFAULTS.timeoutMs} ms.`)), Math.max(0, deadline - Date.now())));
    const connectMs = opts.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs;
    const connectTimer = setTimeout(() => fail(new OutboundError('timeout', `Could not connect to ${url.host} within ${connectMs} ms.`)), connectMs);
    timers.push(connectTimer);

    req.on('socket', (socket) => {
      socket.once('connect', () => (phase = 'tls'));
      socket.once('secureConnect', () => {
        phase = 'http';
        clearTimeout(connectTimer);
      });
      const idleMs = opts.idleTimeoutMs ?? opts.timeoutMs ?? DEFAULTS.timeoutMs;
      socket.setTimeout(idleMs, () => fail(new OutboundError('timeout', `${url.host} sent nothing for ${idleMs} ms.`)));
    });

    req.on('error', (e) => fail(connectFailure(e, phase, url, address)));

    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        const location = res.headers.location;
        return fail(
          new OutboundError('redirect', `${url.host} answered ${status}${location ? ` (to ${truncate(location)})` : ''}; redirects are not followed.`, { status }),
        );
      }
      if (!accept(status)) return fail(new OutboundError('http_status', `${url.host} answered ${status}.`, { status }));
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) {
        return fail(new OutboundError('too_large', `The body (${declared} bytes) exceeds the limit of ${maxBytes} bytes.`));
      }

      let received = 0;
      output = new Transform({
        transform(chunk: Buffer, _enc, cb: TransformCallback) {
          received += chunk.length;
          if (received > maxBytes) return cb(new OutboundError('too_large', `The body exceeds the limit of ${maxBytes} bytes.`));
          cb(null, chunk);
        },
        flush(cb) {
          // A body cut short (connection closed before Content-Length was met) must not pass for a whole one.
          if (!res.complete) return cb(new OutboundError('connection', `${url.host} closed the connection before the body was complete.`));
          clearTimers();
          opts.signal?.removeEventListener('abort', onAbort);
          cb();
        },
        destroy(err, cb) {
          // Whoever stops reading (a failed upload) also stops the download.
          clearTimers();
          opts.signal?.removeEventListener('abort', onAbort);
          req.destroy();
          cb(err);
        },
      });
      // A consumer that stops listening must not crash the process when a late timeout destroys the body; readers
      // (pipeline, for await) attach their own listeners and still see the error.
      output.on('error', () => {});
      res.on('error', (e) => fail(connectFailure(e, phase, url, address)));
      res.on('aborted', () => fail(new OutboundError('connection', `${url.host} closed the connection before the body was complete.`)));
      res.pipe(output);
      settled = true;
      resolve({ status, headers: res.headers, body: output, address, url });
    });

    req.end(body);
  });
}

/** What each certificate failure means, in words the URL's owner can act on. */
const CERT_RULES: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'is self-signed; it must be issued by a trusted certificate authority',
  SELF_SIGNED_CERT_IN_CHAIN: 'chains to a self-signed root that is not trusted; it must be issued by a trusted certificate authority',
  CERT_HAS_EXPIRED: 'has expired',
  CERT_NOT_YET_VALID: 'is not valid yet',
  ERR_TLS_CERT_ALTNAME_INVALID: 'is not valid for this host name',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'is not issued by a trusted certificate authority (or the server does not send its intermediate certificates)',
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
export function connectFailure(e: unknown, phase: 'tcp' | 'tls' | 'http', url: URL, address: ResolvedAddress): OutboundError {
  if (e instanceof OutboundError) return e;
  const err = e as NodeJS.ErrnoException;
  const code = err?.code ?? '';
  const what = code || err?.message;
  const rule = CERT_RULES[code];
  if (rule) return new OutboundError('tls', `The TLS certificate of ${url.host} ${rule} (${code}).`, { cause: e, rule: `The server's TLS certificate ${rule}.` });
  if (phase === 'tls' || TLS_CODES.test(code)) return new OutboundError('tls', `The TLS handshake with ${url.host} failed (${what}).`, { cause: e });
  if (code === 'ETIMEDOUT') return new OutboundError('timeout', `Connecting to ${url.host} (${address.address}) timed out.`, { cause: e });
  if (phase === 'tcp') return new OutboundError('connection', `Could not connect to ${url.host} (${address.address}): ${what}.`, { cause: e });
  return new OutboundError('connection', `The connection to ${url.host} (${address.address}) failed: ${what}.`, { cause: e });
}

function throwIfAborted(signal: AbortSignal | undefined) {
  if (signal?.aborted) throw new OutboundError('connection', 'The request was aborted.', { cause: signal.reason });
}

async function withDeadline<T>(p: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new OutboundError('timeout', 'Resolving the host took too long.')), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([p, expired]);
  } finally {
    clearTimeout(timer);
  }
}

const truncate = (s: string) => (s.length > 200 ? `${s.slice(0, 200)}…` : s);
