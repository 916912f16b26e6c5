// Provider webhooks as the real providers send them when a job ends: Replicate's signed with Standard
// Webhooks (HMAC-SHA256 with the account's whsec_ secret over `${webhook-id}.${webhook-timestamp}.${body}`), fal's
// with ED25519 over the request id, user id, timestamp and the body's hex SHA-256, the public key served as a JWKS
// (GET /__sim/fal/jwks.json). Signed here on their own, with nothing of gensvc's code, so gensvc's verification is
// checked against an independent signer. Sent once at the job's end, never retried (the caller's polls are the
// fallback); each attempt is kept for tests.
import { createHash, createHmac, generateKeyPairSync, randomUUID, sign, type JsonWebKey } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/** The sim's Replicate webhook secret unless SIM_REPLICATE_WEBHOOK_SECRET says otherwise. */
const SECRET_SEED = 'gensvc upstream-sim replicate webhooks';
export const DEFAULT_REPLICATE_WEBHOOK_SECRET = `whsec_${Buffer.from(SECRET_SEED).toString('base64')}`;
/** The user id fal puts in x-fal-webhook-user-id. */
export const SIM_FAL_USER_ID = 'sim-user';

export interface WebhookAttempt {
  provider: 'replicate' | 'fal';
  url: string;
  id: string;
  status: number | null;
  error: string | null;
}

export interface WebhookSender {
  /** Sends `body()` to `url` at `at` (epoch ms), as `provider` signs it; `id` is the job's id. */
  schedule(provider: 'replicate' | 'fal', url: string, at: number, id: string, body: () => unknown): void;
  jwks(): { keys: JsonWebKey[] };
  /** The headers fal would send with `body` for request `id` of the account `userId` (tests: another account's). */
  falHeaders(id: string, body: string, userId?: string): Record<string, string>;
  attempts(): WebhookAttempt[];
  close(): void;
}

/**
 * The headers Node's fetch adds to such a POST, so the sim's webhooks look on the wire as a fetch client's do while
 * they are sent with node:http, which is lighter than fetch's WHATWG streams.
 */
const FETCH_HEADERS = {
  accept: '*/*',
  'accept-language': '*',
  'sec-fetch-mode': 'cors',
  'user-agent': 'node',
  'accept-encoding': 'gzip, deflate',
};
const TIMEOUT_MS = 10_000;

/** POSTs `body` to `url` on a kept-alive connection; answers the status (the answer's body is read and dropped). */
function post(
  agents: { http: HttpAgent; https: HttpsAgent },
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<number> {
  const target = new URL(url);
  const https = target.protocol === 'https:';
  if (!https && target.protocol !== 'http:')
    return Promise.reject(new Error(`unsupported protocol ${target.protocol}`));
  return new Promise((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(
      target,
      {
        method: 'POST',
        agent: https ? agents.https : agents.http,
        headers: { ...headers, ...FETCH_HEADERS, 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        resolve(res.statusCode!);
        res.on('error', () => undefined);
        res.resume();
      },
    );
    // fetch's AbortSignal.timeout: the whole exchange, answer included.
    const timer = setTimeout(() => req.destroy(new Error('The operation was aborted due to timeout')), TIMEOUT_MS);
    timer.unref();
    req.on('close', () => clearTimeout(timer));
    req.on('error', reject);
    req.end(body);
  });
}

export function createWebhookSender(replicateSecret: string = DEFAULT_REPLICATE_WEBHOOK_SECRET): WebhookSender {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const jwk = { ...(publicKey.export({ format: 'jwk' }) as JsonWebKey), kid: 'sim-1', use: 'sig', alg: 'EdDSA' };
  const hmacKey = Buffer.from(replicateSecret.replace(/^whsec_/, ''), 'base64');
  const attempts: WebhookAttempt[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

  function headersFor(provider: 'replicate' | 'fal', id: string, body: string): Record<string, string> {
    const timestamp = String(Math.floor(Date.now() / 1000));
    if (provider === 'fal') return falHeaders(id, body);
    const webhookId = `msg_${randomUUID().replace(/-/g, '')}`;
    const mac = createHmac('sha256', hmacKey).update(`${webhookId}.${timestamp}.${body}`).digest('base64');
    return { 'webhook-id': webhookId, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${mac}` };
  }

  function falHeaders(id: string, body: string, userId = SIM_FAL_USER_ID): Record<string, string> {
    const timestamp = String(Math.floor(Date.now() / 1000));
    const digest = createHash('sha256').update(body).digest('hex');
    const message = Buffer.from([id, userId, timestamp, digest].join('\n'));
    return {
      'x-fal-webhook-request-id': id,
      'x-fal-webhook-user-id': userId,
      'x-fal-webhook-timestamp': timestamp,
      'x-fal-webhook-signature': sign(null, message, privateKey).toString('hex'),
    };
  }

  async function send(provider: 'replicate' | 'fal', url: string, id: string, body: unknown) {
    const text = JSON.stringify(body);
    const attempt: WebhookAttempt = { provider, url, id, status: null, error: null };
    attempts.push(attempt);
    if (attempts.length > 10_000) attempts.shift();
    try {
      attempt.status = await post(
        agents,
        url,
        { 'content-type': 'application/json', ...headersFor(provider, id, text) },
        text,
      );
    } catch (e) {
      attempt.error = e instanceof Error ? ((e.cause as Error | undefined)?.message ?? e.message) : String(e);
    }
  }

  return {
    schedule(provider, url, at, id, body) {
      const timer = setTimeout(
        () => {
          timers.delete(timer);
          void send(provider, url, id, body());
        },
        Math.max(0, at - Date.now()),
      );
      timer.unref();
      timers.add(timer);
    },
    jwks: () => ({ keys: [jwk] }),
    falHeaders,
    attempts: () => attempts.slice(),
    close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
