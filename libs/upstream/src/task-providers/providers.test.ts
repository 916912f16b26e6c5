// The two protocols' reading of provider answers, against canned answers from a local HTTP server through the real
// UpstreamClient (the int tests run them against the sim).
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UpstreamFailure } from '../failover';
import { UpstreamClient } from '../upstream-http';
import { appIdOf, createFalProvider, falInput, falWebhookState } from './fal';
import { JobRejected, isTransient, submitFailure, type ProviderChannel } from './provider';
import {
  aspectRatio,
  createReplicateProvider,
  predictionState,
  replicateInput,
  replicateWebhookState,
} from './replicate';

/** What the server answers next: JSON `body`, or raw `text`. */
interface Canned {
  status?: number;
  body?: unknown;
  text?: string;
}

/** A request as the server received it; `url` is absolute, `body` parsed JSON (undefined when there was none). */
interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

const http = new UpstreamClient();
let server: Server;
/** http://127.0.0.1:<port>, the provider's origin. */
let origin: string;
let channel: ProviderChannel;
const pending: Canned[] = [];
const sent: Received[] = [];
/** Requests that came when no answer was queued. */
const unexpected: string[] = [];

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    sent.push({
      method: req.method ?? '',
      url: `${origin}${req.url}`,
      headers: req.headers,
      body: raw ? JSON.parse(raw) : undefined,
    });
    const a = pending.shift();
    if (!a) {
      unexpected.push(`${req.method} ${req.url}`);
      res.writeHead(599).end();
      return;
    }
    const json = a.text === undefined;
    res.writeHead(a.status ?? 200, { 'content-type': json ? 'application/json' : 'text/html' });
    res.end(json ? (a.body === undefined ? '' : JSON.stringify(a.body)) : a.text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  channel = { id: 'ch_1', kind: 'fal', baseUrl: `${origin}/base/`, secret: 's3cret', timeoutMs: 5_000 };
});
afterAll(async () => {
  await http.close();
  await new Promise((resolve) => server.close(resolve));
});
afterEach(() => {
  // Every canned answer was asked for, and nothing else was.
  expect(pending.splice(0)).toEqual([]);
  expect(unexpected.splice(0)).toEqual([]);
});

/** Queues the server's next answers and returns the requests it receives from now on. */
function answers(...canned: Canned[]): Received[] {
  pending.push(...canned);
  sent.length = 0;
  return sent;
}

const job = (urls: Record<string, string> | null) => ({ channel, upstreamId: 'req-1', urls });

describe('input mapping', () => {
  it('names the aspect ratio when the size has one, else "custom"', () => {
    expect(aspectRatio(1024, 768)).toBe('4:3');
    expect(aspectRatio(1280, 720)).toBe('16:9');
    expect(aspectRatio(1000, 700)).toBe('custom');
  });

  it('maps a video request with a reference image for Replicate and fal', () => {
    const input = {
      kind: 'video' as const,
      prompt: 'waves',
      width: 1280,
      height: 720,
      durationSeconds: 5,
      imageUrl: 'https://files.example/a.png',
    };
    expect(replicateInput(input)).toEqual({
      prompt: 'waves',
      width: 1280,
      height: 720,
      aspect_ratio: '16:9',
      duration: 5,
      image: 'https://files.example/a.png',
    });
    expect(falInput(input)).toEqual({
      prompt: 'waves',
      duration: '5',
      aspect_ratio: '16:9',
      image_url: 'https://files.example/a.png',
    });
    expect(falInput({ kind: 'image', prompt: 'p', width: 640, height: 480 })).toEqual({
      prompt: 'p',
      image_size: { width: 640, height: 480 },
    });
  });

  it('finds fal app ids', () => {
    expect(appIdOf('fal-ai/flux/dev')).toBe('fal-ai/flux');
    expect(appIdOf('workflows/someone/app/x')).toBe('workflows/someone/app');
  });
});

describe('failure classes', () => {
  it.each([
    [500, true],
    [429, true],
    [401, true],
    [402, true],
    [404, true],
    [422, false],
    [400, false],
  ])('a %i on submit fails over: %s', (status, failover) => {
    const failure = submitFailure(status, 'm', false);
    expect(failure.failover).toBe(failover);
    expect(failure instanceof JobRejected).toBe(!failover);
  });

  it('a content refusal on submit is content_rejected', () => {
    expect(submitFailure(422, 'flagged', true)).toMatchObject({
      code: 'content_rejected',
      answer: { code: 'content_rejected', message: 'flagged' },
    });
  });

  it('connection failures and 5xx are transient, a 404 is not', () => {
    expect(isTransient(new UpstreamFailure('x', 'connection', true))).toBe(true);
    expect(isTransient(new UpstreamFailure('x', 'status', true, 503))).toBe(true);
    expect(isTransient(new UpstreamFailure('x', 'status', false, 404))).toBe(false);
    expect(isTransient(new Error('bug'))).toBe(false);
  });
});

describe('replicate', () => {
  it('keeps only links on the channel origin, and reads every status', async () => {
    const sent = answers(
      {
        status: 201,
        body: {
          id: 'p1',
          status: 'starting',
          urls: { get: `${origin}/v1/predictions/p1`, cancel: 'https://evil.example/c' },
        },
      },
      { body: { status: 'processing' } },
      { body: { status: 'succeeded', output: ['https://cdn.example/a.png', 'https://cdn.example/b.png'] } },
      { body: { status: 'succeeded', output: null } },
      { body: { status: 'failed', error: 'NSFW content detected. Try running it again, or try a different prompt.' } },
      { body: { status: 'canceled' } },
    );
    const replicate = createReplicateProvider(http);
    const submitted = await replicate.submit({
      channel,
      upstreamModel: 'black-forest-labs/flux-dev',
      input: { kind: 'image', prompt: 'p', width: 512, height: 512 },
    });
    expect(submitted).toEqual({ upstreamId: 'p1', urls: { get: `${origin}/v1/predictions/p1` } });
    expect(sent[0]).toMatchObject({
      method: 'POST',
      url: `${origin}/base/v1/models/black-forest-labs/flux-dev/predictions`,
      headers: { authorization: 'Bearer s3cret', 'content-type': 'application/json' },
      body: { input: { prompt: 'p', width: 512, height: 512, aspect_ratio: '1:1' } },
    });

    const status = () => replicate.status(job(submitted.urls));
    expect(await status()).toEqual({ state: 'running' });
    expect(await status()).toEqual({
      state: 'succeeded',
      outputs: [{ url: 'https://cdn.example/a.png' }, { url: 'https://cdn.example/b.png' }],
    });
    expect(await status()).toMatchObject({
      state: 'failed',
      code: 'upstream_error',
      message: expect.stringMatching(/without an output/),
    });
    expect(await status()).toMatchObject({ state: 'failed', code: 'content_rejected' });
    expect(await status()).toEqual({ state: 'canceled' });
    expect(sent[1]).toMatchObject({ method: 'GET', url: `${origin}/v1/predictions/p1`, body: undefined });
  });

  it('posts a pinned version to /v1/predictions and refuses a model without an owner', async () => {
    const sent = answers({ status: 201, body: { id: 'p2' } });
    const replicate = createReplicateProvider(http);
    const version = `stability-ai/sdxl:${'a'.repeat(64)}`;
    await replicate.submit({
      channel,
      upstreamModel: version,
      input: { kind: 'image', prompt: 'p', width: 512, height: 512 },
    });
    expect(sent[0]).toMatchObject({ url: `${origin}/base/v1/predictions`, body: { version } });
    await expect(
      replicate.submit({
        channel,
        upstreamModel: 'image-1',
        input: { kind: 'image', prompt: 'p', width: 1, height: 1 },
      }),
    ).rejects.toMatchObject({ failover: true });
  });

  it('treats a cancel of an unknown prediction as done and retries a 503', async () => {
    const sent = answers({ status: 404, body: { detail: 'Not found.' } }, { status: 503, body: { detail: 'down' } });
    const replicate = createReplicateProvider(http);
    await expect(replicate.cancel(job(null))).resolves.toBeUndefined();
    await expect(replicate.cancel(job(null))).rejects.toMatchObject({ status: 503, failover: true });
    expect(sent[0]).toMatchObject({ method: 'POST', url: `${origin}/base/v1/predictions/req-1/cancel` });
  });
});

describe('fal', () => {
  let urls: Record<'model' | 'status_url' | 'response_url' | 'cancel_url', string>;
  beforeAll(() => {
    urls = {
      model: 'fal-ai/flux/dev',
      status_url: `${origin}/fal-ai/flux/requests/req-1/status`,
      response_url: `${origin}/fal-ai/flux/requests/req-1`,
      cancel_url: `${origin}/fal-ai/flux/requests/req-1/cancel`,
    };
  });
  const completed = { status: 200, body: { status: 'COMPLETED' } };

  it('submits with the Key scheme and keeps the request URLs', async () => {
    const sent = answers({ body: { request_id: 'req-1', ...urls, status_url: 'https://elsewhere.example/s' } });
    const fal = createFalProvider(http);
    const submitted = await fal.submit({
      channel,
      upstreamModel: 'fal-ai/flux/dev',
      input: { kind: 'image', prompt: 'p', width: 512, height: 512 },
    });
    expect(submitted).toEqual({
      upstreamId: 'req-1',
      urls: { model: 'fal-ai/flux/dev', response_url: urls.response_url, cancel_url: urls.cancel_url },
    });
    expect(sent[0]).toMatchObject({
      method: 'POST',
      url: `${origin}/base/fal-ai/flux/dev`,
      headers: { authorization: 'Key s3cret' },
      body: { prompt: 'p', image_size: { width: 512, height: 512 } },
    });
  });

  it('builds the request URLs from the app id when none were kept', async () => {
    const sent = answers({ status: 202, body: { status: 'IN_PROGRESS' } });
    await createFalProvider(http).status(job({ model: 'fal-ai/flux/dev' }));
    expect(sent[0]!.url).toBe(`${origin}/base/fal-ai/flux/requests/req-1/status`);
  });

  it.each<[string, Canned, unknown]>([
    [
      'images, dropping those flagged NSFW',
      {
        body: {
          images: [
            { url: 'https://cdn.example/a.png', width: 8, height: 8, content_type: 'image/png' },
            { url: 'https://cdn.example/b.png' },
          ],
          has_nsfw_concepts: [false, true],
        },
      },
      {
        state: 'succeeded',
        outputs: [{ url: 'https://cdn.example/a.png', width: 8, height: 8, content_type: 'image/png' }],
      },
    ],
    [
      'only flagged images',
      { body: { images: [{ url: 'https://cdn.example/a.png' }], has_nsfw_concepts: [true] } },
      { state: 'failed', code: 'content_rejected', message: expect.any(String) },
    ],
    [
      'a video',
      { body: { video: { url: 'https://cdn.example/v.mp4', content_type: 'video/mp4' } } },
      { state: 'succeeded', outputs: [{ url: 'https://cdn.example/v.mp4', content_type: 'video/mp4' }] },
    ],
    [
      'a validation error',
      { status: 422, body: { detail: [{ loc: ['body', 'prompt'], msg: 'Field required', type: 'missing' }] } },
      { state: 'failed', code: 'invalid_input', message: 'prompt: Field required' },
    ],
    [
      'a content policy violation',
      {
        status: 422,
        body: { detail: [{ loc: ['body', 'prompt'], msg: 'flagged', type: 'content_policy_violation' }] },
      },
      { state: 'failed', code: 'content_rejected', message: 'prompt: flagged' },
    ],
    [
      'a model error',
      { status: 500, body: { detail: [{ loc: ['body'], msg: 'boom', type: 'internal_server_error' }] } },
      { state: 'failed', code: 'upstream_error', message: 'boom' },
    ],
    [
      'a cancel',
      { status: 499, body: { detail: 'Request was cancelled by the client', error_type: 'client_cancelled' } },
      { state: 'canceled' },
    ],
  ])('reads a result with %s', async (_what, result, expected) => {
    const sent = answers(completed, result);
    expect(await createFalProvider(http).status(job(urls))).toEqual(expected);
    expect(sent.map((r) => `${r.method} ${r.url}`)).toEqual([`GET ${urls.status_url}`, `GET ${urls.response_url}`]);
  });

  it('reads the result alone when the webhook said the request ended, and one still running as running', async () => {
    const images = { body: { images: [{ url: 'https://cdn.example/a.png' }] } };
    const sent = answers(images);
    expect(await createFalProvider(http).status({ ...job(urls), ended: true })).toEqual({
      state: 'succeeded',
      outputs: [{ url: 'https://cdn.example/a.png' }],
    });
    expect(sent.map((r) => `${r.method} ${r.url}`)).toEqual([`GET ${urls.response_url}`]);
    answers({ status: 400, body: { detail: 'Request is still in progress' } });
    expect(await createFalProvider(http).status({ ...job(urls), ended: true })).toEqual({ state: 'running' });
  });

  it('says a bare 502 on the result is worth asking again', async () => {
    answers(completed, { status: 502, text: '<html>bad gateway</html>' });
    const error = await createFalProvider(http)
      .status(job(urls))
      .catch((e: unknown) => e);
    expect(isTransient(error)).toBe(true);
  });

  it('cancels with PUT and takes ALREADY_COMPLETED as done', async () => {
    const sent = answers({ status: 400, body: { status: 'ALREADY_COMPLETED' } });
    await expect(createFalProvider(http).cancel(job(urls))).resolves.toBeUndefined();
    expect(sent[0]).toMatchObject({ method: 'PUT', url: urls.cancel_url });
  });
});

describe('webhook bodies, read by the parsers of the status answers', () => {
  it('Replicate: the prediction a webhook carries reads as its GET would', () => {
    const done = { id: 'p1', status: 'succeeded', output: ['https://cdn.example/a.png', 'https://cdn.example/b.png'] };
    expect(replicateWebhookState(done)).toEqual(predictionState(done));
    expect(replicateWebhookState(done)).toEqual({
      state: 'succeeded',
      outputs: [{ url: 'https://cdn.example/a.png' }, { url: 'https://cdn.example/b.png' }],
    });
    expect(replicateWebhookState({ id: 'p1', status: 'succeeded', output: null })).toMatchObject({
      state: 'failed',
      code: 'upstream_error',
    });
    expect(replicateWebhookState({ id: 'p1', status: 'failed', error: 'NSFW content detected' })).toMatchObject({
      state: 'failed',
      code: 'content_rejected',
    });
    expect(replicateWebhookState({ id: 'p1', status: 'canceled' })).toEqual({ state: 'canceled' });
    // Not a prediction we can read: nothing, rather than a throw.
    expect(replicateWebhookState({ id: 'p1', status: 'exploded' })).toBeNull();
    expect(replicateWebhookState('succeeded')).toBeNull();
  });

  it("fal: an OK payload is the result, as the response URL's; ERROR, payload_error, another request's are not", () => {
    const payload = {
      images: [{ url: 'https://cdn.example/a.png', width: 64, height: 48, content_type: 'image/png' }],
      has_nsfw_concepts: [false],
    };
    expect(
      falWebhookState({ request_id: 'req-1', gateway_request_id: 'req-1', status: 'OK', payload }, 'req-1'),
    ).toEqual({
      state: 'succeeded',
      outputs: [{ url: 'https://cdn.example/a.png', width: 64, height: 48, content_type: 'image/png' }],
    });
    // A flagged image is a placeholder, as on the result endpoint.
    expect(
      falWebhookState(
        { request_id: 'req-1', status: 'OK', payload: { ...payload, has_nsfw_concepts: [true] } },
        'req-1',
      ),
    ).toMatchObject({ state: 'failed', code: 'content_rejected' });
    // The body of another request than the signed one.
    expect(falWebhookState({ request_id: 'req-2', status: 'OK', payload }, 'req-1')).toBeNull();
    // A payload fal could not send.
    expect(
      falWebhookState(
        { request_id: 'req-1', status: 'OK', payload: null, payload_error: 'Response payload is too large' },
        'req-1',
      ),
    ).toBeNull();
    // A failure: read from the result endpoint, whose status code and error type tell a refusal from a failure.
    expect(
      falWebhookState(
        {
          request_id: 'req-1',
          status: 'ERROR',
          error: 'Invalid status code: 422',
          payload: { detail: [{ msg: 'no', type: 'content_policy_violation' }] },
        },
        'req-1',
      ),
    ).toBeNull();
    expect(falWebhookState(null, 'req-1')).toBeNull();
  });
});
