// The HTTP client of the chat proxy: one undici Agent (a keep-alive connection pool per upstream origin), so a
// call costs no TCP or TLS handshake once warm. Channels are configured by platform admins, so they are not
// subject to the SSRF rules of caller-given URLs.
import { UpstreamFailure } from '@gensvc/upstream';
import { Agent, type Dispatcher } from 'undici';

export interface UpstreamCall {
  baseUrl: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  /** Time to the answer's headers, and the longest silence while its body streams. */
  timeoutMs: number;
  /** Aborts the request and its body. */
  signal?: AbortSignal;
}

export class UpstreamClient {
  private readonly agent: Agent;
  /** Channel base URLs, parsed once each. */
  private readonly targets = new Map<string, { origin: string; basePath: string }>();

  constructor() {
    this.agent = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connect: { timeout: 10_000 } });
  }

  /** Sends the request; connection failures and timeouts become failover-able UpstreamFailures. */
  async send(call: UpstreamCall): Promise<Dispatcher.ResponseData> {
    try {
      const { origin, basePath } = this.targetOf(call.baseUrl);
      return await this.agent.request({
        origin,
        path: basePath + call.path,
        method: 'POST',
        headers: call.headers,
        body: call.body,
        headersTimeout: call.timeoutMs,
        bodyTimeout: call.timeoutMs,
        signal: call.signal,
      });
    } catch (e) {
      throw failureOf(e);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }

  private targetOf(baseUrl: string) {
    let t = this.targets.get(baseUrl);
    if (!t) {
      const url = new URL(baseUrl);
      t = { origin: url.origin, basePath: url.pathname.replace(/\/+$/, '') };
      if (this.targets.size > 1000) this.targets.clear();
      this.targets.set(baseUrl, t);
    }
    return t;
  }
}

/** What an error while calling or reading an upstream means for failover. */
export function failureOf(e: unknown): UpstreamFailure {
  if (e instanceof UpstreamFailure) return e;
  const code = (e as { code?: string }).code;
  const message = (e as Error)?.message ?? String(e);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new UpstreamFailure(`upstream timed out (${code})`, 'timeout', true);
  }
  return new UpstreamFailure(`upstream connection failed: ${code ?? ''} ${message}`.trim(), 'connection', true);
}

/** The whole body, or an UpstreamFailure past `limit` bytes or when the connection fails while reading. */
export async function readBody(body: Dispatcher.ResponseData['body'], limit: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      size += (chunk as Buffer).length;
      if (size > limit) {
        body.destroy();
        throw new UpstreamFailure(`upstream answer exceeds ${limit} bytes`, 'invalid_response', true);
      }
      parts.push(chunk as Buffer);
    }
  } catch (e) {
    throw failureOf(e);
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
}
