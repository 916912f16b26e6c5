// The HTTP client for channels: one undici Agent (a keep-alive connection pool per upstream origin), so a call
// costs no TCP or TLS handshake once warm. One per process, shared by every route or job that calls channels.
// Channels are configured by platform admins, so they are not subject to the SSRF rules of caller-given URLs.
import { Agent, type Dispatcher } from 'undici';
import { failureFromStatus, UpstreamFailure } from './failover';

/** An upstream answer's body: read whole with readBody, or streamed. */
export type UpstreamBody = Dispatcher.ResponseData['body'];

/** Largest error answer read for the provider's message. */
const MAX_ERROR_BYTES = 64 * 1024;

export interface UpstreamCall {
  /** The channel's base URL, which may carry a path of its own; or the whole URL (with its query) without `path`. */
  baseUrl: string;
  /** Path after the base URL, with its query. */
  path?: string;
  /** POST when left out. */
  method?: 'GET' | 'POST' | 'PUT';
  headers: Record<string, string>;
  body?: Buffer | string;
  /** Time to the answer's headers, and the longest silence while its body streams. */
  timeoutMs: number;
  /** Aborts the request and its body. */
  signal?: AbortSignal;
}

/** An answer read whole, whatever its status. */
export interface UpstreamAnswer {
  status: number;
  headers: Dispatcher.ResponseData['headers'];
  body: Buffer;
}

export class UpstreamClient {
  private readonly agent = new Agent({
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 600_000,
    connect: { timeout: 10_000 },
  });

  /**
   * Sends the request and returns its 2xx answer, the body unread. Connection failures and timeouts become
   * failover-able UpstreamFailures; any other status becomes failureFromStatus's, with the provider's message.
   */
  send(call: UpstreamCall): Promise<Dispatcher.ResponseData> {
    // Chained rather than awaited in layers: on every chat call's path, each async layer is a promise more.
    return this.dispatch(call).then((answer) => {
      if (answer.statusCode >= 200 && answer.statusCode < 300) {
        // Errors are handled by whoever reads the body at the time; this keeps one arriving between readers from
        // becoming an uncaught 'error' event.
        answer.body.on('error', ignore);
        return answer;
      }
      return refused(answer);
    });
  }

  /**
   * Sends the request and reads its whole answer, whatever its status, for protocols whose error answers only they
   * can read (the task providers'). Connection failures, timeouts and an answer past `maxBytes` are UpstreamFailures.
   */
  async exchange(call: UpstreamCall, maxBytes: number): Promise<UpstreamAnswer> {
    const answer = await this.dispatch(call);
    return { status: answer.statusCode, headers: answer.headers, body: await readBody(answer.body, maxBytes) };
  }

  close(): Promise<void> {
    return this.agent.close();
  }

  private dispatch(call: UpstreamCall): Promise<Dispatcher.ResponseData> {
    try {
      const url = new URL(call.baseUrl);
      const path =
        call.path === undefined
          ? url.pathname + url.search
          : url.pathname.replace(/\/+$/, '') + (call.path.startsWith('/') ? '' : '/') + call.path;
      return this.agent
        .request({
          origin: url.origin,
          path,
          method: call.method ?? 'POST',
          headers: call.headers,
          body: call.body,
          headersTimeout: call.timeoutMs,
          bodyTimeout: call.timeoutMs,
          signal: call.signal,
        })
        .catch(rethrowAsFailure);
    } catch (e) {
      return Promise.reject(failureOf(e));
    }
  }
}

const ignore = () => {};

/** A non-2xx answer as the failure it means, with the provider's message. */
async function refused(answer: Dispatcher.ResponseData): Promise<never> {
  const text = await readBody(answer.body, MAX_ERROR_BYTES).then(
    (b) => b.toString('utf8'),
    () => '',
  );
  throw failureFromStatus(answer.statusCode, text);
}
const rethrowAsFailure = (e: unknown): never => {
  throw failureOf(e);
};

/** What an error while calling or reading an upstream means for failover. */
export function failureOf(e: unknown): UpstreamFailure {
  if (e instanceof UpstreamFailure) return e;
  const code = (e as { code?: string } | null)?.code;
  const message = (e as Error)?.message ?? String(e);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new UpstreamFailure(`upstream timed out (${code})`, 'timeout', true);
  }
  return new UpstreamFailure(`upstream connection failed: ${code ?? ''} ${message}`.trim(), 'connection', true);
}

/**
 * The whole body, or an UpstreamFailure past `limit` bytes or when the connection fails while reading. Read from its
 * events rather than an async iterator (a promise per chunk): it is on every JSON call's path.
 */
export function readBody(body: UpstreamBody, limit: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let ended = false;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void parts.push(chunk);
      body.off('data', onData);
      body.destroy();
      reject(new UpstreamFailure(`upstream answer exceeds ${limit} bytes`, 'invalid_response', true));
    };
    body.on('data', onData);
    body.once('end', () => {
      ended = true;
      resolve(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size));
    });
    body.once('error', (e) => reject(failureOf(e)));
    // Closed without an end or an error (destroyed elsewhere): the answer is cut. A settled promise ignores it.
    body.once('close', () => {
      if (!ended) reject(failureOf(new Error('the answer was closed before its end')));
    });
  });
}
