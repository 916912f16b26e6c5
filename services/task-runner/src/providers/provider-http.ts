// The HTTP client for the task providers. Like @gensvc/upstream's UpstreamClient it is one undici Agent per process
// (a keep-alive pool per provider origin, shared by every job), but it speaks the methods the task APIs need (GET a
// status, PUT a fal cancel) and hands back every answer, 2xx or not, with its parsed body: the providers say what
// went wrong in their bodies (Replicate's problem details, fal's `detail` items) and only the protocol code can read
// them. Channels are configured by platform admins, so they are not subject to the SSRF rules of caller-given URLs.
import { failureOf, readBody } from '@gensvc/upstream';
import { Agent } from 'undici';

/** Larger answers are refused: a status or result is a few kilobytes. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export interface ProviderRequest {
  url: string;
  method: 'GET' | 'POST' | 'PUT';
  headers: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  /** Time to the answer's headers, and the longest silence while its body arrives. */
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface ProviderAnswer {
  status: number;
  /** The body parsed as JSON; null when it is empty or not JSON. */
  body: unknown;
  /** The body as text (for messages when it is not JSON). */
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

export class ProviderHttp {
  private readonly agent = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, connect: { timeout: 10_000 } });

  /** The answer, whatever its status; connection failures and timeouts throw failover-able UpstreamFailures. */
  async request(req: ProviderRequest): Promise<ProviderAnswer> {
    const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
    let body: string | undefined;
    if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers['content-type'] = 'application/json';
    }
    try {
      const url = new URL(req.url);
      const answer = await this.agent.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: req.method,
        headers,
        body,
        headersTimeout: req.timeoutMs,
        bodyTimeout: req.timeoutMs,
        signal: req.signal,
      });
      const text = (await readBody(answer.body, MAX_ANSWER_BYTES)).toString('utf8');
      return { status: answer.statusCode, body: parseJson(text), text, headers: answer.headers };
    } catch (e) {
      throw failureOf(e);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

function parseJson(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
