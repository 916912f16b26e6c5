// With `outputs.tls`, the sim also listens on HTTPS for output files only, and Replicate and fal hand out URLs on it
// (gensvc's archiver fetches HTTPS only): the files verify against the test CA and nothing else is served there.
import { request } from 'node:https';
import { sniffMedia } from '@gensvc/media';
import { eventually, jsonOf, sharedTestCa } from '@gensvc/testing';
import { pngInfo, startSim, type Sim } from './index';

interface Fetched {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** GET (or another method) over HTTPS trusting only `ca`. */
function httpsFetch(url: string, ca: string | undefined, method = 'GET'): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, ca }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

let sim: Sim;
let ca: string;
beforeAll(async () => {
  const shared = sharedTestCa();
  ca = shared.ca.certPem;
  sim = await startSim({
    taskDurationMs: 50,
    outputs: { tls: { key: shared.leaf.keyPem, cert: shared.leaf.certPem } },
  });
});
afterAll(() => sim.close());
beforeEach(() => {
  sim.faults.clear();
  sim.resetRequests();
});

const createPrediction = async (model: string, input: Record<string, unknown>) => {
  const res = await fetch(`${sim.url}/ch/tls/v1/models/${model}/predictions`, {
    method: 'POST',
    headers: { authorization: 'Bearer r8', 'content-type': 'application/json', prefer: 'wait=5' },
    body: JSON.stringify({ input }),
  });
  expect(res.status).toBe(201);
  return jsonOf(res);
};

describe('HTTPS outputs listener', () => {
  it('serves Replicate outputs over HTTPS with a certificate of the test CA', async () => {
    expect(sim.outputsUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(sim.outputsUrl).not.toBe(sim.url.replace('http:', 'https:'));
    const prediction = await createPrediction('acme/painter', {
      prompt: 'over tls',
      width: 96,
      height: 64,
      num_outputs: 1,
    });
    expect(prediction.status).toBe('succeeded');
    const [url] = prediction.output as string[];
    expect(url).toBe(`${sim.outputsUrl}/ch/tls/outputs/${prediction.id}-0.png`);
    // The prediction's own URLs stay on the API listener.
    expect(prediction.urls.get).toBe(`${sim.url}/ch/tls/v1/predictions/${prediction.id}`);

    const file = await httpsFetch(url!, ca);
    expect(file.status).toBe(200);
    expect(file.headers['content-type']).toBe('image/png');
    expect(Number(file.headers['content-length'])).toBe(file.body.length);
    expect(pngInfo(file.body)).toMatchObject({ width: 96, height: 64 });
    const head = await httpsFetch(url!, ca, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(sim.requests().at(-1)).toMatchObject({ protocol: 'outputs', channel: 'tls', method: 'HEAD', status: 200 });

    // Verified TLS: without the test CA the certificate is refused.
    await expect(httpsFetch(url!, undefined)).rejects.toMatchObject({ code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
  });

  it('serves fal video outputs there too, and faults apply to those fetches', async () => {
    const submit = await fetch(`${sim.url}/ch/tls/fal-ai/kling-video/v2/master/text-to-video`, {
      method: 'POST',
      headers: { authorization: 'Key k', 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'clouds', duration: '5' }),
    });
    const { response_url: responseUrl } = await jsonOf(submit);
    const result = await eventually(async () => {
      const res = await fetch(responseUrl, { headers: { authorization: 'Key k' } });
      return res.status === 200 && jsonOf(res);
    }, 'the fal result');
    expect(result.video.url.startsWith(`${sim.outputsUrl}/ch/tls/outputs/`)).toBe(true);

    sim.faults.add({ operation: 'output', status: 503, times: 1 });
    expect((await httpsFetch(result.video.url, ca)).status).toBe(503);
    const video = await httpsFetch(result.video.url, ca);
    expect(video.status).toBe(200);
    expect(sniffMedia(video.body, true)).toMatchObject({ kind: 'video', durationSeconds: 5 });
  });

  it('serves nothing but outputs: no API routes, no control routes', async () => {
    // The API and control routes exist on the main listener (an unknown prediction is Replicate's 404 there, the
    // request log a 200); on this one no protocol serves them: the sim's own unknown_url answer.
    expect((await fetch(`${sim.url}/v1/predictions/abc`, { headers: { authorization: 'Bearer t' } })).status).toBe(404);
    expect((await fetch(`${sim.url}/__sim/requests`)).status).toBe(200);
    for (const path of ['/v1/predictions/abc', '/__sim/requests']) {
      const res = await httpsFetch(`${sim.outputsUrl}${path}`, ca);
      expect(res.status).toBe(404);
      expect(JSON.parse(res.body.toString('utf8')).error.code).toBe('unknown_url');
    }
    expect((await httpsFetch(`${sim.outputsUrl}/outputs/unknown-0.png`, ca)).status).toBe(404);
  });

  it('without outputs.tls, outputs are served by the main listener', async () => {
    const plain = await startSim({ taskDurationMs: 10 });
    try {
      expect(plain.outputsUrl).toBe(plain.url);
    } finally {
      await plain.close();
    }
  });
});
