// The official @fal-ai/client pointed at the sim (a request middleware swaps https://queue.fal.run for the channel's
// base URL) works unchanged: queue.submit/status/result/cancel and subscribe, with real PNG / MP4 bytes behind the
// output URLs; input errors, failures, content-policy rejections and stuck jobs surface the way fal's do.
import { ApiError, fal, ValidationError } from '@fal-ai/client';
import { sniffMedia } from '@gensvc/media';
import { eventually, jsonOf } from '@gensvc/testing';
import {
  FAL_CONTENT_POLICY_MSG,
  generatedImagePng,
  generatedVideoMp4,
  pngInfo,
  seedFor,
  startSim,
  type Sim,
} from './index';

let sim: Sim;
let base: string;
beforeAll(async () => {
  sim = await startSim({ taskDurationMs: 200 });
  base = `${sim.url}/ch/fal`;
  fal.config({
    credentials: 'fal-sim-key',
    requestMiddleware: async (request) => ({ ...request, url: request.url.replace('https://queue.fal.run', base) }),
  });
});
afterAll(() => sim.close());
beforeEach(() => {
  sim.faults.clear();
  sim.resetRequests();
});

const FLUX = 'fal-ai/flux/dev';
const KLING = 'fal-ai/kling-video/v2.1/master/text-to-video';

const bytesOf = async (url: string) => {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return { bytes: Buffer.from(await res.arrayBuffer()), type: res.headers.get('content-type') };
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('queue', () => {
  it('submit answers IN_QUEUE with URLs under the app id; status moves by the clock; result has images', async () => {
    // Long enough phases (500 ms queued, 2 s running) that a slow first request still sees each one, on a loaded
    // machine too (200 ms queued was missed once with the whole suite and three benchmarks sharing two cores).
    sim.faults.add({ job: { durationMs: 2_500 }, times: 1 });
    const input = { prompt: 'a red fox', image_size: { width: 256, height: 128 } };
    const submitted = await fal.queue.submit(FLUX, { input });
    const id = submitted.request_id;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(submitted).toMatchObject({
      status: 'IN_QUEUE',
      queue_position: 0,
      response_url: `${base}/fal-ai/flux/requests/${id}`,
      status_url: `${base}/fal-ai/flux/requests/${id}/status`,
      cancel_url: `${base}/fal-ai/flux/requests/${id}/cancel`,
    });
    expect(await fal.queue.status(FLUX, { requestId: id })).toMatchObject({
      status: 'IN_QUEUE',
      queue_position: 0,
      request_id: id,
    });
    await sleep(600);
    expect(await fal.queue.status(FLUX, { requestId: id, logs: true })).toMatchObject({
      status: 'IN_PROGRESS',
      logs: [{ message: `Using seed: ${seedFor('a red fox')}`, level: 'INFO' }],
    });
    await sleep(2_000);
    const done = await fal.queue.status(FLUX, { requestId: id });
    expect(done).toMatchObject({ status: 'COMPLETED', logs: null, metrics: { inference_time: 2 } });

    const { data, requestId } = await fal.queue.result(FLUX, { requestId: id });
    expect(requestId).toBe(id);
    expect(data).toMatchObject({ seed: seedFor('a red fox'), prompt: 'a red fox', has_nsfw_concepts: [false] });
    expect(data.images).toEqual([
      { url: `${base}/outputs/${id}-0.png`, width: 256, height: 128, content_type: 'image/png' },
    ]);
    const { bytes, type } = await bytesOf(data.images[0]!.url);
    expect(type).toBe('image/png');
    expect(pngInfo(bytes)).toMatchObject({ width: 256, height: 128 });
    expect(bytes.equals(generatedImagePng({ prompt: 'a red fox', seed: seedFor('a red fox') }, 0, 256, 128))).toBe(
      true,
    );

    // The raw status answers 202 while queued or running and 200 once completed, as fal does.
    const raw = await fetch(submitted.status_url, { headers: { authorization: 'Key k' } });
    expect(raw.status).toBe(200);
    expect(sim.requests().map((r) => [r.protocol, r.method, r.path, r.model, r.status])).toEqual([
      ['fal', 'POST', `/${FLUX}`, FLUX, 200],
      ['fal', 'GET', `/fal-ai/flux/requests/${id}/status`, FLUX, 202],
      ['fal', 'GET', `/fal-ai/flux/requests/${id}/status`, FLUX, 202],
      ['fal', 'GET', `/fal-ai/flux/requests/${id}/status`, FLUX, 200],
      ['fal', 'GET', `/fal-ai/flux/requests/${id}`, FLUX, 200],
      ['outputs', 'GET', `/outputs/${id}-0.png`, FLUX, 200],
      ['fal', 'GET', `/fal-ai/flux/requests/${id}/status`, FLUX, 200],
    ]);
  });

  it('subscribe polls to the end; image_size names and num_images are honoured', async () => {
    const updates: string[] = [];
    const { data } = await fal.subscribe(FLUX, {
      input: { prompt: 'two boats', image_size: 'landscape_16_9', num_images: 2, seed: 7 },
      pollInterval: 50,
      onQueueUpdate: (u) => updates.push(u.status),
    });
    expect(updates.at(-1)).toBe('COMPLETED');
    expect(data.images).toHaveLength(2);
    for (const [index, image] of data.images.entries()) {
      expect(image).toMatchObject({ width: 1024, height: 576 });
      expect(
        (await bytesOf(image.url)).bytes.equals(generatedImagePng({ prompt: 'two boats', seed: 7 }, index, 1024, 576)),
      ).toBe(true);
    }
  });

  it('makes a video: an MP4 whose container says the asked duration ("10"), sized by aspect_ratio', async () => {
    const { data } = await fal.subscribe(KLING, {
      input: { prompt: 'rain on a window', duration: '10', aspect_ratio: '9:16' },
      pollInterval: 50,
    });
    expect(data.video).toMatchObject({
      url: expect.stringMatching(/\.mp4$/),
      content_type: 'video/mp4',
      file_name: 'output.mp4',
    });
    const { bytes, type } = await bytesOf(data.video.url);
    expect(type).toBe('video/mp4');
    expect(data.video.file_size).toBe(bytes.length);
    expect(sniffMedia(bytes, true)).toMatchObject({ kind: 'video', durationSeconds: 10 });
    expect(
      bytes.equals(generatedVideoMp4({ prompt: 'rain on a window', seed: seedFor('rain on a window') }, 10, 720, 1280)),
    ).toBe(true);
    const first = sim.requests()[0]!;
    expect(first).toMatchObject({ method: 'POST', path: `/${KLING}`, model: KLING });
  });

  it('answers the result 400 while in progress, and cancel 202 then 400 ALREADY_COMPLETED', async () => {
    sim.faults.add({ job: { durationMs: 5_000 }, times: 1 });
    const { request_id: id } = await fal.queue.submit(FLUX, { input: { prompt: 'long' } });
    const early = await fal.queue.result(FLUX, { requestId: id }).catch((e: unknown) => e);
    expect(early).toBeInstanceOf(ApiError);
    expect(early).toMatchObject({ status: 400, body: { detail: 'Request is still in progress' } });

    await fal.queue.cancel(FLUX, { requestId: id });
    expect(await fal.queue.status(FLUX, { requestId: id })).toMatchObject({ status: 'COMPLETED' });
    const canceled = await fal.queue.result(FLUX, { requestId: id }).catch((e: unknown) => e);
    expect(canceled).toMatchObject({ status: 499, body: { error_type: 'client_cancelled' } });
    const again = await fal.queue.cancel(FLUX, { requestId: id }).catch((e: unknown) => e);
    expect(again).toMatchObject({ status: 400, body: { status: 'ALREADY_COMPLETED' } });
    const statuses = sim
      .requests()
      .filter((r) => r.method === 'PUT')
      .map((r) => r.status);
    expect(statuses).toEqual([202, 400]);
  });

  it('answers 401 without a key, 404 for an unknown request or another app', async () => {
    const noKey = await fetch(`${base}/${FLUX}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"prompt":"x"}',
    });
    expect(noKey.status).toBe(401);
    expect(await jsonOf(noKey)).toEqual({ detail: 'Unauthorized' });
    const bearer = await fetch(`${base}/${FLUX}`, {
      method: 'POST',
      headers: { authorization: 'Bearer k' },
      body: '{"prompt":"x"}',
    });
    expect(bearer.status).toBe(401);

    const { request_id: id } = await fal.queue.submit(FLUX, { input: { prompt: 'x' } });
    await expect(fal.queue.status(FLUX, { requestId: 'nope' })).rejects.toMatchObject({ status: 404 });
    await expect(fal.queue.status('fal-ai/other-app', { requestId: id })).rejects.toMatchObject({ status: 404 });
    const put = await fetch(`${base}/fal-ai/flux/requests/nope/cancel`, {
      method: 'PUT',
      headers: { authorization: 'Key k' },
    });
    expect(put.status).toBe(404);
    expect(await jsonOf(put)).toEqual({ status: 'NOT_FOUND' });
    // Unknown versioned paths are still no protocol's.
    expect((await fetch(`${base}/v2/anything`, { method: 'POST', headers: { authorization: 'Key k' } })).status).toBe(
      404,
    );
  });

  it('takes any JSON object on submit; the model rejects a bad input at the result with 422 detail items', async () => {
    const error = await fal
      .subscribe(FLUX, { input: { image_size: 'huge', num_images: 9 } as never, pollInterval: 50 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    const fields = (error as ValidationError).fieldErrors;
    expect(fields.map((f) => [f.loc.join('.'), f.type])).toEqual([
      ['body.prompt', 'missing'],
      ['body.num_images', 'less_than_equal'],
      ['body.image_size', 'literal_error'],
    ]);
    // The submit, then status polls (202 while queued or running, 200 once COMPLETED), then the result's 422.
    const reqs = sim.requests();
    expect(reqs[0]).toMatchObject({ method: 'POST', status: 200 });
    expect(reqs.at(-1)).toMatchObject({
      method: 'GET',
      status: 422,
      path: expect.stringMatching(/\/requests\/[0-9a-f-]{36}$/),
    });
    const polls = reqs.slice(1, -1);
    expect(polls.length).toBeGreaterThan(0);
    expect(polls.every((r) => r.method === 'GET' && r.path.endsWith('/status') && [200, 202].includes(r.status!))).toBe(
      true,
    );
    const notJson = await fetch(`${base}/${FLUX}`, {
      method: 'POST',
      headers: { authorization: 'Key k' },
      body: 'not json',
    });
    expect(notJson.status).toBe(422);
  });
});

describe('faults through the client', () => {
  it('fail: COMPLETED, and the result answers 500 with the error', async () => {
    sim.faults.add({ model: FLUX, job: { outcome: 'fail', error: 'Runner ran out of memory' }, times: 1 });
    const error = await fal.subscribe(FLUX, { input: { prompt: 'x' }, pollInterval: 50 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      status: 500,
      body: { detail: [{ loc: ['body'], msg: 'Runner ran out of memory', type: 'internal_server_error' }] },
    });
  });

  it('lost: the request is IN_QUEUE or IN_PROGRESS, then status and result answer 404 Request not found', async () => {
    sim.faults.add({ job: { outcome: 'lost', durationMs: 150 }, times: 1 });
    const { request_id: id } = await fal.queue.submit(FLUX, { input: { prompt: 'x' } });
    expect((await fal.queue.status(FLUX, { requestId: id })).status).toMatch(/^(IN_QUEUE|IN_PROGRESS)$/);
    await sleep(200);
    for (const path of [`/requests/${id}/status`, `/requests/${id}`]) {
      const res = await fetch(`${base}/fal-ai/flux${path}`, { headers: { authorization: 'Key k' } });
      expect(res.status).toBe(404);
      expect(await jsonOf(res)).toEqual({ detail: 'Request not found' });
    }
  });

  it('nsfw: the result answers 422 content_policy_violation', async () => {
    sim.faults.add({ channel: 'fal', job: { outcome: 'nsfw' }, times: 1 });
    const error = await fal
      .subscribe(FLUX, { input: { prompt: 'something' }, pollInterval: 50 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).fieldErrors).toEqual([
      expect.objectContaining({
        loc: ['body', 'prompt'],
        type: 'content_policy_violation',
        msg: FAL_CONTENT_POLICY_MSG,
        input: 'something',
      }),
    ]);
  });

  it('stuck: stays IN_PROGRESS; subscribe with a timeout gives up and cancels it', async () => {
    sim.faults.add({ job: { outcome: 'stuck', durationMs: 20 }, times: 1 });
    const error = await fal
      .subscribe(FLUX, { input: { prompt: 'x' }, pollInterval: 50, timeout: 400 })
      .catch((e: Error) => e);
    expect((error as Error).message).toMatch(/timed out/);
    // The client cancels in the background once it gives up.
    const cancel = await eventually(
      () => sim.requests().find((r) => r.method === 'PUT' && r.status !== null),
      'the cancel request',
    );
    expect(cancel.status).toBe(202);
    const polls = sim.requests().filter((r) => r.path.endsWith('/status'));
    expect(polls.length).toBeGreaterThan(2);
    expect(polls.every((r) => r.status === 202)).toBe(true);
  });

  it('latency on submit, and a 503 on one status poll that the client retries', async () => {
    sim.faults.add({ operation: 'create', latencyMs: 250, times: 1 });
    sim.faults.add({ operation: 'status', status: 503, times: 1 });
    const started = performance.now();
    const { request_id: id } = await fal.queue.submit(FLUX, { input: { prompt: 'x' } });
    expect(performance.now() - started).toBeGreaterThanOrEqual(240);
    expect((await fal.queue.status(FLUX, { requestId: id })).status).toMatch(/^(IN_QUEUE|IN_PROGRESS|COMPLETED)$/);
    expect(sim.requests().map((r) => [r.method, r.status])).toEqual([
      ['POST', 200],
      ['GET', 503],
      ['GET', expect.any(Number)],
    ]);
  });

  it("a status fault on the result surfaces as an ApiError with fal's detail body", async () => {
    sim.faults.add({ operation: 'result', status: 500, times: 1 });
    const { request_id: id } = await fal.queue.submit(FLUX, { input: { prompt: 'x', image_size: 'square' } });
    await eventually(
      async () => (await fal.queue.status(FLUX, { requestId: id })).status === 'COMPLETED',
      'the job to complete',
    );
    await expect(fal.queue.result(FLUX, { requestId: id })).rejects.toMatchObject({
      status: 500,
      body: { detail: 'Internal Server Error' },
    });
    expect((await fal.queue.result(FLUX, { requestId: id })).data.images[0]).toMatchObject({ width: 512, height: 512 });
  });
});
