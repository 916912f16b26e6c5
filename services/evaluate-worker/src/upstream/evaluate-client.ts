// The upstream evaluate protocol: POST {channel.baseUrl}{channel.evaluatePath} with {model, state, questions} and
// the channel's bearer secret; the answer is JSON. Every way a call can fail becomes an UpstreamFailure saying
// whether the next channel may be tried (withFailover).
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { errors } from '@gensvc/errors';
import { UpstreamFailure } from '@gensvc/upstream';

/** Larger answers are refused: 20 questions of at most 100 levels fit in a small fraction of it. */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export interface EvaluateCall {
  url: string;
  /** The channel's credential; no Authorization header when empty. */
  secret: string;
  /** The JSON body, serialised once by the caller. */
  body: string;
  timeoutMs: number;
  /** Abandons the call (worker shutdown); the failure then does not fail over. */
  signal?: AbortSignal;
}

export interface EvaluateClient {
  /** The parsed JSON of a 2xx answer. */
  call(call: EvaluateCall): Promise<unknown>;
  close(): void;
}

/** The channel's evaluate URL: its base URL (which may carry a path) joined with its evaluatePath. */
export const evaluateUrl = (baseUrl: string, evaluatePath: string) => `${baseUrl.replace(/\/+$/, '')}${evaluatePath.startsWith('/') ? '' : '/'}${evaluatePath}`;

/** One client per process: keep-alive connections to each channel are reused across jobs. */
export function createEvaluateClient(): EvaluateClient {
  const http = new HttpAgent({ keepAlive: true, scheduling: 'lifo' });
  const https = new HttpsAgent({ keepAlive: true, scheduling: 'lifo' });
  return {
    call: (call) => send(call, http, https),
    close() {
      http.destroy();
      https.destroy();
    },
  };
}

function send(call: EvaluateCall, http: HttpAgent, https: HttpsAgent): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let url: URL;
    try {
      url = new URL(call.url);
    } catch {
      return reject(new UpstreamFailure(`the channel URL ${JSON.stringify(call.url)} is not a URL`, 'connection', true));
    }
    const secure = url.protocol === 'https:';
    const headers: Record<string, string | number> = {
      'content-type': 'application/json',
      accept: 'application/json',
      'content-length': Buffer.byteLength(call.body),
    };
    if (call.secret) headers.authorization = `Bearer ${call.secret}`;

    let done = false;
    const finish = (outcome: { value: unknown } | { failure: UpstreamFailure }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      call.signal?.removeEventListener('abort', onAbort);
      if ('failure' in outcome) {
        req.destroy();
        reject(outcome.failure);
      } else resolve(outcome.value);
    };
    const timer = setTimeout(() => finish({ failure: new UpstreamFailure(`no answer within ${call.timeoutMs} ms`, 'timeout', true) }), call.timeoutMs);
    const onAbort = () => finish({ failure: new UpstreamFailure('the call was abandoned', 'connection', false) });

    const req = (secure ? httpsRequest : httpRequest)(url, { method: 'POST', headers, agent: secure ? https : http }, (res) => {
      read(res).then(
        (text) => finish(answerOf(res.statusCode ?? 0, text)),
        (failure: UpstreamFailure) => finish({ failure }),
      );
    });
    req.on('error', (e) => finish({ failure: new UpstreamFailure(`connection failed: ${e.message}`, 'connection', true) }));
    if (call.signal?.aborted) return onAbort();
    call.signal?.addEventListener('abort', onAbort, { once: true });
    req.end(call.body);
  });
}

function read(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES) {
        reject(new UpstreamFailure(`the answer exceeds ${MAX_ANSWER_BYTES} bytes`, 'invalid_response', false));
        res.destroy();
      } else chunks.push(chunk);
    });
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    // A connection cut in the middle of the answer: the provider may not have finished, so try the next channel.
    res.on('error', (e) => reject(new UpstreamFailure(`the answer was cut: ${e.message}`, 'connection', true)));
    res.on('close', () => {
      if (!res.complete) reject(new UpstreamFailure('the answer was cut', 'connection', true));
    });
  });
}

function answerOf(status: number, text: string): { value: unknown } | { failure: UpstreamFailure } {
  if (status >= 200 && status < 300) {
    try {
      return { value: JSON.parse(text) };
    } catch {
      return { failure: new UpstreamFailure('the answer is not valid JSON', 'invalid_response', false) };
    }
  }
  // The provider judged the caller's request itself: tell the caller, and do not try another channel.
  if (status === 400 || status === 413 || status === 422) {
    const detail = providerMessage(text);
    return {
      failure: new UpstreamFailure(`status ${status}`, 'status', false, status, errors.invalidRequest(`The model provider refused the request${detail ? `: ${detail}` : '.'}`)),
    };
  }
  // Not only 429 and 5xx (failsOverOnStatus) move on: 401, 403, 404 and the like say that this channel's
  // credential or path is broken, not the request, and another channel may well answer.
  return { failure: new UpstreamFailure(`status ${status}`, 'status', status >= 400, status) };
}

/** The provider's own error message, when it gives one in a common shape; short and single-line. */
function providerMessage(text: string): string | null {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const message = typeof body.error === 'string' ? body.error : (body.error?.message ?? body.message);
    return typeof message === 'string' ? message.replace(/\s+/g, ' ').slice(0, 300) : null;
  } catch {
    return null;
  }
}
