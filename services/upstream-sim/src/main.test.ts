// The built service as a real process (needs `node scripts/build.mjs` first): configuration from PORT and
// LOG_LEVEL, a clean SIGTERM, https image fetching that trusts NODE_EXTRA_CA_CERTS, and the CPU a small chat
// request costs — benchmarks measure gensvc's overhead against the sim, so the sim must stay cheap.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@gensvc/local-stack';
import {
  jsonOf,
  sharedTestCa,
  spawnService,
  startTlsServer,
  waitForHttp,
  type ServiceProcess,
  type TlsTestServer,
} from '@gensvc/testing';
import { editedImagePng, pngInfo, sha256Hex } from './index';

const children: ServiceProcess[] = [];
afterAll(async () => {
  await Promise.all(children.map((c) => c.stop()));
});

async function startProcess(env: Record<string, string>): Promise<{ proc: ServiceProcess; url: string }> {
  const port = await freePort();
  const proc = spawnService('upstream-sim', { PORT: String(port), ...env });
  children.push(proc);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/healthz`, proc);
  return { proc, url };
}

/** User plus system CPU time of a process so far, in milliseconds. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());
}

describe('upstream-sim process', () => {
  it('refuses a bad PORT or LOG_LEVEL, naming every problem', async () => {
    const proc = spawnService('upstream-sim', { PORT: 'eighty', LOG_LEVEL: 'loud' });
    const code = await new Promise<number | null>((resolve) => proc.child.once('exit', resolve));
    expect(code).toBe(1);
    expect(proc.output()).toContain('PORT must be an integer');
    expect(proc.output()).toContain('LOG_LEVEL must be one of');
  });

  it('listens on PORT, logs JSON, and exits 0 on SIGTERM', async () => {
    const { proc, url } = await startProcess({ LOG_LEVEL: 'debug' });
    const res = await fetch(`${url}/ch/x/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    expect((await jsonOf(await fetch(`${url}/__sim/requests`))).data).toMatchObject([
      { channel: 'x', protocol: 'openai-chat', status: 200 },
    ]);
    expect(await proc.stop('SIGTERM')).toBe(0);
    const lines = proc
      .output()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.find((l) => l.msg === 'upstream-sim listening')).toMatchObject({
      service: 'upstream-sim',
      level: 'info',
    });
    expect(lines.find((l) => l.msg === 'upstream request')).toMatchObject({
      level: 'debug',
      request: { channel: 'x', status: 200 },
    });
  });

  describe('https image URLs in responses', () => {
    let dir: string;
    let server: TlsTestServer;
    const png = editedImagePng({ prompt: 'over tls', images: [], index: 0, size: '256x256' });
    beforeAll(async () => {
      server = await startTlsServer((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(png));
      dir = mkdtempSync(join(tmpdir(), 'sim-tls-'));
      writeFileSync(join(dir, 'ca.pem'), server.caPem);
    });
    afterAll(async () => {
      await server?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    const ask = (url: string, imageUrl: string) =>
      fetch(`${url}/v1/responses`, {
        method: 'POST',
        headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'gpt-4.1-mini',
          input: [{ role: 'user', content: [{ type: 'input_image', image_url: imageUrl }] }],
        }),
      });

    it('fetches an https image with verified TLS and names its sha256', async () => {
      const imageUrl = `${server.url}/p.png`;
      const trusting = await startProcess({ NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') });
      const res = await ask(trusting.url, imageUrl);
      expect(res.status).toBe(200);
      expect((await jsonOf(res)).output[0].content[0].text).toContain(`input_image[0] sha256=${sha256Hex(png)}`);

      // Without the test CA the server's certificate is refused, as OpenAI would refuse it.
      const plain = await startProcess({});
      const refused = await ask(plain.url, imageUrl);
      expect(refused.status).toBe(400);
      expect((await jsonOf(refused)).error.message).toBe(`Error while downloading ${imageUrl}.`);
    });
  });

  describe('HTTPS outputs listener', () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'sim-outputs-'));
      const { leaf } = sharedTestCa();
      writeFileSync(join(dir, 'cert.pem'), leaf.certPem);
      writeFileSync(join(dir, 'key.pem'), leaf.keyPem);
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('refuses half a TLS configuration', async () => {
      const proc = spawnService('upstream-sim', { PORT: '0', SIM_OUTPUTS_PORT: '9443', SIM_TASK_MS: 'soon' });
      const code = await new Promise<number | null>((resolve) => proc.child.once('exit', resolve));
      expect(code).toBe(1);
      expect(proc.output()).toContain('SIM_OUTPUTS_PORT needs SIM_OUTPUTS_TLS_CERT_FILE and SIM_OUTPUTS_TLS_KEY_FILE');
      expect(proc.output()).toContain('SIM_TASK_MS must be an integer');
    });

    it('serves outputs on SIM_OUTPUTS_PORT over HTTPS with the given certificate, logging the URL', async () => {
      const outputsPort = await freePort();
      const { proc, url } = await startProcess({
        SIM_TASK_MS: '20',
        SIM_OUTPUTS_TLS_CERT_FILE: join(dir, 'cert.pem'),
        SIM_OUTPUTS_TLS_KEY_FILE: join(dir, 'key.pem'),
        SIM_OUTPUTS_PORT: String(outputsPort),
      });
      const created = await fetch(`${url}/ch/x/v1/models/acme/painter/predictions`, {
        method: 'POST',
        headers: { authorization: 'Bearer k', 'content-type': 'application/json', prefer: 'wait' },
        body: JSON.stringify({ input: { prompt: 'from the process', width: 64, height: 64 } }),
      });
      const prediction = await jsonOf(created);
      expect(prediction.status).toBe('succeeded');
      expect(prediction.output[0]).toBe(`https://127.0.0.1:${outputsPort}/ch/x/outputs/${prediction.id}-0.png`);
      const png = await new Promise<Buffer>((resolve, reject) => {
        httpsRequest(prediction.output[0], { ca: sharedTestCa().ca.certPem }, (res) => {
          const parts: Buffer[] = [];
          res.on('data', (d: Buffer) => parts.push(d));
          res.on('end', () => resolve(Buffer.concat(parts)));
        })
          .on('error', reject)
          .end();
      });
      expect(pngInfo(png)).toMatchObject({ width: 64, height: 64 });
      expect(await proc.stop('SIGTERM')).toBe(0);
      const lines = proc
        .output()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.find((l) => l.msg === 'upstream-sim listening')).toMatchObject({
        outputsUrl: `https://127.0.0.1:${outputsPort}`,
        taskDurationMs: 20,
      });
    });
  });

  it('answers a small chat request in well under 0.5 ms of CPU', async () => {
    const { proc, url } = await startProcess({});
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const body = JSON.stringify({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Say hello in five words.' }],
    });
    const one = () =>
      new Promise<void>((resolve, reject) => {
        const req = request(
          `${url}/v1/chat/completions`,
          { method: 'POST', agent, headers: { authorization: 'Bearer k', 'content-type': 'application/json' } },
          (res) => {
            res.resume();
            res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const run = async (count: number) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next++ < count) await one();
        }),
      );
    };
    await run(1_000); // warm-up: JIT and connection set-up are not the steady state
    const before = cpuMs(proc.child.pid!);
    const count = 4_000;
    await run(count);
    const perRequest = (cpuMs(proc.child.pid!) - before) / count;
    agent.destroy();
    process.stderr.write(`upstream-sim: ${(perRequest * 1000).toFixed(0)} µs CPU per small chat request\n`);
    expect(perRequest).toBeLessThan(0.5);
  });
});
