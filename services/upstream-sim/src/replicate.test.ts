// The official replicate client pointed at the sim works unchanged: predictions.create/get/cancel, wait() and run()
// for image and video models, with real PNG / MP4 bytes behind the output URLs; errors and job faults surface in it
// the way Replicate's do.
import Replicate, { type Prediction } from 'replicate';
import { sniffMedia } from '@gensvc/media';
import { eventually, jsonOf } from '@gensvc/testing';
import {
  generatedImagePng,
  generatedVideoMp4,
  pngInfo,
  REPLICATE_SENSITIVE_ERROR,
  seedFor,
  startSim,
  type Sim,
} from './index';

let sim: Sim;
let client: Replicate;
beforeAll(async () => {
  sim = await startSim({ taskDurationMs: 200 });
  client = new Replicate({ auth: 'r8_sim', baseUrl: `${sim.url}/ch/rep/v1` });
});
afterAll(() => sim.close());
beforeEach(() => {
  sim.faults.clear();
  sim.resetRequests();
});

const bytesOf = async (url: string) => {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return {
    bytes: Buffer.from(await res.arrayBuffer()),
    type: res.headers.get('content-type'),
    length: Number(res.headers.get('content-length')),
  };
};

const post = (path: string, body: unknown, headers: Record<string, string> = { authorization: 'Bearer r8_sim' }) =>
  fetch(`${sim.url}/ch/rep/v1${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('predictions', () => {
  it('creates a starting prediction, moves it by the clock to succeeded, serves PNGs of the asked size', async () => {
    sim.faults.add({ job: { durationMs: 500 }, times: 1 });
    const input = { prompt: 'a lighthouse at dusk', width: 320, height: 192, num_outputs: 2 };
    const created = await client.predictions.create({ model: 'black-forest-labs/flux-schnell', input });
    expect(created).toMatchObject({
      id: expect.stringMatching(/^[a-z0-9]{26}$/),
      model: 'black-forest-labs/flux-schnell',
      version: expect.stringMatching(/^[0-9a-f]{64}$/),
      input,
      logs: '',
      output: null,
      error: null,
      status: 'starting',
      metrics: {},
      urls: {
        get: `${sim.url}/ch/rep/v1/predictions/${created.id}`,
        cancel: `${sim.url}/ch/rep/v1/predictions/${created.id}/cancel`,
      },
    });
    expect(created.started_at).toBeUndefined();
    expect(Date.parse(created.created_at)).toBeGreaterThan(Date.now() - 5_000);

    // Status follows elapsed time, not the number of polls: one late poll sees the end state.
    await new Promise((r) => setTimeout(r, 550));
    const done = await client.predictions.get(created.id);
    expect(done).toMatchObject({
      status: 'succeeded',
      error: null,
      logs: expect.stringContaining(`Using seed: ${seedFor(input.prompt)}`),
    });
    expect(done.completed_at).toBeDefined();
    expect(done.metrics!.predict_time).toBe(0.4);
    const output = done.output as string[];
    expect(output).toHaveLength(2);
    for (const [index, url] of output.entries()) {
      expect(url).toMatch(new RegExp(`^${sim.url}/ch/rep/outputs/${created.id}-${index}\\.png$`));
      const { bytes, type, length } = await bytesOf(url);
      expect(type).toBe('image/png');
      expect(length).toBe(bytes.length);
      expect(pngInfo(bytes)).toMatchObject({ width: 320, height: 192 });
      expect(
        bytes.equals(generatedImagePng({ prompt: input.prompt, seed: seedFor(input.prompt) }, index, 320, 192)),
      ).toBe(true);
    }
    expect(sim.requests().map((r) => [r.protocol, r.method, r.path, r.model, r.status])).toEqual([
      [
        'replicate',
        'POST',
        '/v1/models/black-forest-labs/flux-schnell/predictions',
        'black-forest-labs/flux-schnell',
        201,
      ],
      ['replicate', 'GET', `/v1/predictions/${created.id}`, 'black-forest-labs/flux-schnell', 200],
      ['outputs', 'GET', `/outputs/${created.id}-0.png`, 'black-forest-labs/flux-schnell', 200],
      ['outputs', 'GET', `/outputs/${created.id}-1.png`, 'black-forest-labs/flux-schnell', 200],
    ]);
  });

  it('shows processing between start and end, and wait() polls to the end', async () => {
    sim.faults.add({ job: { durationMs: 600 } });
    const created = await client.predictions.create({ model: 'stability-ai/sdxl', input: { prompt: 'slow one' } });
    await new Promise((r) => setTimeout(r, 200));
    const running = await client.predictions.get(created.id);
    expect(running).toMatchObject({ status: 'processing', output: null, logs: `Using seed: ${seedFor('slow one')}\n` });
    expect(running.started_at).toBeDefined();
    const done = await client.wait(running, { interval: 50 });
    expect(done.status).toBe('succeeded');
    const [url] = done.output as string[];
    expect(pngInfo((await bytesOf(url!)).bytes)).toMatchObject({ width: 1024, height: 1024 });
  });

  it('answers output URLs with 404 until the prediction has succeeded, and HEAD with the length', async () => {
    sim.faults.add({ job: { durationMs: 400 } });
    const created = await client.predictions.create({
      model: 'stability-ai/sdxl',
      input: { prompt: 'not yet', width: 64, height: 64 },
    });
    const url = `${sim.url}/ch/rep/outputs/${created.id}-0.png`;
    expect((await fetch(url)).status).toBe(404);
    await client.wait(created, { interval: 50 });
    const head = await fetch(url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('content-length'))).toBe(
      generatedImagePng({ prompt: 'not yet', seed: seedFor('not yet') }, 0, 64, 64).length,
    );
    expect((await fetch(url.replace('.png', '.mp4'))).status).toBe(404);
  });

  it('run() blocks with Prefer: wait and returns a single URL for flux-1.1-pro, sized by aspect_ratio', async () => {
    const output = await client.run('black-forest-labs/flux-1.1-pro', {
      input: { prompt: 'a wide valley', aspect_ratio: '16:9', seed: 42 },
    });
    expect(typeof output).toBe('string');
    const png = (await bytesOf(output as unknown as string)).bytes;
    expect(pngInfo(png)).toMatchObject({ width: 1024, height: 576 });
    expect(png.equals(generatedImagePng({ prompt: 'a wide valley', seed: 42 }, 0, 1024, 576))).toBe(true);
    // One create that waited for the end: no polls.
    expect(
      sim
        .requests()
        .filter((r) => r.protocol === 'replicate')
        .map((r) => [r.method, r.status]),
    ).toEqual([['POST', 201]]);
  });

  it('run() makes a video: an MP4 whose container says the asked duration', async () => {
    const output = (await client.run('kwaivgi/kling-v2.1', {
      input: { prompt: 'waves', duration: 10, start_image: 'https://example.com/first.png' },
    })) as unknown as string;
    expect(output).toMatch(/\.mp4$/);
    const { bytes, type } = await bytesOf(output);
    expect(type).toBe('video/mp4');
    expect(sniffMedia(bytes, true)).toMatchObject({ kind: 'video', contentType: 'video/mp4', durationSeconds: 10 });
    const spec = { prompt: 'waves', seed: seedFor('waves'), imageUrl: 'https://example.com/first.png' };
    expect(bytes.equals(generatedVideoMp4(spec, 10, 1280, 720))).toBe(true);
  });

  it('POST /v1/predictions takes a version as owner/name, owner/name:hash, or a hash it has seen', async () => {
    const byName = await client.predictions.create({ version: 'stability-ai/sdxl', input: { prompt: 'x' } });
    expect(byName.model).toBe('stability-ai/sdxl');
    const hash = 'a'.repeat(64);
    const pinned = await client.predictions.create({ version: `acme/painter:${hash}`, input: { prompt: 'x' } });
    expect(pinned).toMatchObject({ model: 'acme/painter', version: hash });
    const bare = await client.predictions.create({ version: hash, input: { prompt: 'x' } });
    expect(bare).toMatchObject({ model: 'acme/painter', version: hash });
    const res = await post('/predictions', { version: 'not a version', input: { prompt: 'x' } });
    expect(res.status).toBe(422);
    expect(await jsonOf(res)).toMatchObject({ title: 'Invalid version or not permitted', status: 422 });
  });

  it('cancels a running prediction; a finished one stays as it is', async () => {
    sim.faults.add({ job: { durationMs: 5_000 }, times: 1 });
    const created = await client.predictions.create({ model: 'stability-ai/sdxl', input: { prompt: 'long' } });
    const canceled = await client.predictions.cancel(created.id);
    expect(canceled).toMatchObject({ id: created.id, status: 'canceled', output: null, error: null });
    expect(canceled.completed_at).toBeDefined();
    expect((await client.predictions.get(created.id)).status).toBe('canceled');

    const quick = await client.predictions.create({
      model: 'stability-ai/sdxl',
      input: { prompt: 'quick', width: 64, height: 64 },
    });
    const finished = await client.wait(quick, { interval: 50 });
    const after = await client.predictions.cancel(quick.id);
    expect(after).toMatchObject({ status: 'succeeded', output: finished.output, completed_at: finished.completed_at });
  });

  it('answers 401 without a token, 404 for an unknown prediction, 422 listing every invalid input', async () => {
    const noAuth = await post('/models/a/b/predictions', { input: { prompt: 'x' } }, {});
    expect(noAuth.status).toBe(401);
    expect(await jsonOf(noAuth)).toEqual({
      title: 'Unauthenticated',
      detail: 'You did not pass an authentication token',
      status: 401,
    });
    const tokenScheme = await post(
      '/models/a/b/predictions',
      { input: { prompt: 'x' } },
      { authorization: 'Token r8_sim' },
    );
    expect(tokenScheme.status).toBe(201);

    const missing = await client.predictions.get('doesnotexist').catch((e: unknown) => e);
    expect(missing).toMatchObject({ name: 'ApiError', response: { status: 404 } });
    const unknown = await fetch(`${sim.url}/ch/rep/v1/predictions/doesnotexist`, {
      headers: { authorization: 'Bearer r8_sim' },
    });
    expect(await jsonOf(unknown)).toEqual({ detail: 'The requested resource could not be found.', status: 404 });

    const bad = await client.predictions
      .create({ model: 'a/b', input: { width: 'wide', height: 9000, aspect_ratio: '7:5' } })
      .catch((e: unknown) => e);
    expect(bad).toMatchObject({ name: 'ApiError', response: { status: 422 } });
    const body = await jsonOf(
      await post('/models/a/b/predictions', { input: { width: 'wide', height: 9000, aspect_ratio: '7:5' } }),
    );
    expect(body).toMatchObject({ status: 422, title: 'Input validation failed' });
    expect(body.invalid_fields).toEqual([
      { type: 'required', field: 'input', description: 'prompt is required' },
      { type: 'invalid_type', field: 'input.width', description: 'Invalid type. Expected: integer, given: string' },
      { type: 'number_lte', field: 'input.height', description: 'Must be less than or equal to 2048' },
      {
        type: 'enum',
        field: 'input.aspect_ratio',
        description: expect.stringContaining('aspect_ratio must be one of the following: "1:1"'),
      },
    ]);
    expect(body.detail).toBe(
      `- input: prompt is required\n- input.width: Invalid type. Expected: integer, given: string\n- input.height: ` +
        `Must be less than or equal to 2048\n- input.aspect_ratio: ${body.invalid_fields[3].description}\n`,
    );
    expect((await post('/models/a/b/predictions', { prompt: 'no input wrapper' })).status).toBe(422);
  });
});

describe('faults through the client', () => {
  it('fail: the prediction ends failed with the error; wait() and run() throw it', async () => {
    sim.faults.add({ model: 'acme/flaky', job: { outcome: 'fail', error: 'CUDA out of memory' }, times: 2 });
    const created = await client.predictions.create({ model: 'acme/flaky', input: { prompt: 'x' } });
    await expect(client.wait(created, { interval: 50 })).rejects.toThrow('Prediction failed: CUDA out of memory');
    const failed = await client.predictions.get(created.id);
    expect(failed).toMatchObject({ status: 'failed', output: null, error: 'CUDA out of memory' });
    expect(failed.metrics!.predict_time).toBeGreaterThan(0);
    await expect(client.run('acme/flaky', { input: { prompt: 'y' } })).rejects.toThrow(
      'Prediction failed: CUDA out of memory',
    );
    // The rule was for two jobs: the third succeeds.
    expect(await client.run('acme/flaky', { input: { prompt: 'z', width: 64, height: 64 } })).toHaveLength(1);
  });

  it('lost: the prediction runs, then GET answers 404 with the problem body once it would have ended', async () => {
    sim.faults.add({ model: 'acme/lost', job: { outcome: 'lost', durationMs: 150 }, times: 1 });
    const created = await client.predictions.create({ model: 'acme/lost', input: { prompt: 'x' } });
    expect((await client.predictions.get(created.id)).status).toMatch(/^(starting|processing)$/);
    await new Promise((r) => setTimeout(r, 200));
    const gone = await fetch(`${sim.url}/ch/rep/v1/predictions/${created.id}`, {
      headers: { authorization: 'Bearer r8_sim' },
    });
    expect(gone.status).toBe(404);
    expect(await jsonOf(gone)).toEqual({ detail: 'The requested resource could not be found.', status: 404 });
  });

  it('nsfw: the prediction fails with the E005 sensitive-content error', async () => {
    sim.faults.add({ channel: 'rep', job: { outcome: 'nsfw' } });
    const error = await client.run('black-forest-labs/flux-schnell', { input: { prompt: 'x' } }).catch((e: Error) => e);
    expect((error as Error).message).toBe(`Prediction failed: ${REPLICATE_SENSITIVE_ERROR}`);
    expect(REPLICATE_SENSITIVE_ERROR).toContain('flagged as sensitive');
  });

  it('stuck: the prediction never leaves processing, however long, until canceled', async () => {
    sim.faults.add({ job: { outcome: 'stuck', durationMs: 50 }, times: 1 });
    const created = await client.predictions.create({ model: 'acme/slow', input: { prompt: 'x' } });
    await new Promise((r) => setTimeout(r, 300));
    expect((await client.predictions.get(created.id)).status).toBe('processing');
    const blocked = await post(
      '/models/acme/slow/predictions',
      { input: { prompt: 'y' } },
      { authorization: 'Bearer r8_sim', prefer: 'wait=1' },
    );
    expect(blocked.status).toBe(201);
    expect((await jsonOf(blocked)).status).toBe('succeeded');
    expect((await client.predictions.cancel(created.id)).status).toBe('canceled');
  });

  it('latency and per-operation statuses: a slow create, polls answered 503 then retried by the client', async () => {
    sim.faults.add({ operation: 'create', latencyMs: 250 });
    sim.faults.add({ operation: 'status', status: 503, times: 2 });
    const started = performance.now();
    const created = await client.predictions.create({ model: 'acme/m', input: { prompt: 'x' } });
    expect(performance.now() - started).toBeGreaterThanOrEqual(240);
    const polled = await client.predictions.get(created.id);
    expect(polled.id).toBe(created.id);
    expect(sim.requests().map((r) => [r.method, r.status])).toEqual([
      ['POST', 201],
      ['GET', 503],
      ['GET', 503],
      ['GET', 200],
    ]);
  });

  it('a bodiless status fault answers Replicate problem details; malformed drops status and output', async () => {
    sim.faults.add({ operation: 'create', status: 429, headers: { 'retry-after': '1' }, times: 1 });
    const limited = await post('/models/acme/m/predictions', { input: { prompt: 'x' } });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(await jsonOf(limited)).toEqual({
      title: 'Request was throttled.',
      detail: 'Request was throttled. Expected available in 1 second.',
      status: 429,
    });

    sim.faults.add({ operation: 'create', malformed: 'shape', times: 1 });
    const odd = (await jsonOf(
      await post('/models/acme/m/predictions', { input: { prompt: 'x' } }),
    )) as Partial<Prediction>;
    expect(odd.id).toBeDefined();
    expect(odd).not.toHaveProperty('status');
    expect(odd).not.toHaveProperty('output');
  });

  it('output fetches can be faulted too, by operation', async () => {
    const created = await client.predictions.create({ model: 'acme/m', input: { prompt: 'x', width: 64, height: 64 } });
    const done = await client.wait(created, { interval: 50 });
    sim.faults.add({ operation: 'output', status: 500, times: 1 });
    const url = (done.output as string[])[0]!;
    expect((await fetch(url)).status).toBe(500);
    expect((await fetch(url)).status).toBe(200);
  });

  it('the control API validates job rules', async () => {
    const bad = await fetch(`${sim.url}/__sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        job: { outcome: 'explode', durationMs: -1, error: 'x', extra: 1 },
        status: 500,
        operation: 'poll',
      }),
    });
    expect(bad.status).toBe(400);
    expect((await jsonOf(bad)).error.problems).toEqual([
      'operation must be one of create, status, result, cancel, output',
      'a job rule takes only channel, model, times and job, not status, operation',
      'unknown field "job.extra"',
      'job.outcome must be one of succeed, fail, stuck, nsfw, lost',
      'job.durationMs must be an integer 0..3600000',
      'job.error goes with outcome "fail"',
    ]);
    expect(() => sim.faults.add({ job: {} })).toThrow('job needs an outcome or a durationMs');
    const ok = await fetch(`${sim.url}/__sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'acme/m', job: { outcome: 'nsfw' }, times: 1 }),
    });
    expect(ok.status).toBe(200);
    // A job rule never applies to polls: a request rule behind it still does.
    sim.faults.add({ operation: 'status', status: 502, times: 1 });
    const created = await client.predictions.create({ model: 'acme/m', input: { prompt: 'x' } });
    const first = await fetch(created.urls.get, { headers: { authorization: 'Bearer r8_sim' } });
    expect(first.status).toBe(502);
    await eventually(
      async () => (await client.predictions.get(created.id)).status === 'failed',
      'the nsfw job to fail',
    );
    expect(sim.faults.list()).toEqual([]);
  });
});
