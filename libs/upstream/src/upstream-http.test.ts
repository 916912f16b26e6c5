// UpstreamClient against a local HTTP server: where requests go, and what each kind of answer or failure becomes.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UpstreamFailure } from './failover';
import { readBody, UpstreamClient } from './upstream-http';

interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

const client = new UpstreamClient();
let server: Server;
let origin: string;
const received: Received[] = [];
/** How the server answers the next request (never, when silent); then it answers 200 {"ok":true}. */
let answer: { status: number; body: string } | 'silent' | null = null;

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    received.push({
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    });
    const a = answer ?? { status: 200, body: '{"ok":true}' };
    answer = null;
    if (a === 'silent') return;
    res.writeHead(a.status, { 'content-type': 'application/json', 'x-answer': 'yes' }).end(a.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await client.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  received.length = 0;
  answer = null;
});

const call = { headers: { authorization: 'Bearer k' }, timeoutMs: 2_000 };

describe('send', () => {
  it("POSTs to the path under the base URL's own path and hands back a 2xx answer unread", async () => {
    const res = await client.send({
      ...call,
      baseUrl: `${origin}/v1/`,
      path: 'chat/completions?x=1',
      body: Buffer.from('{"a":1}'),
    });
    expect(res.statusCode).toBe(200);
    expect((await readBody(res.body, 1024)).toString()).toBe('{"ok":true}');
    expect(received).toEqual([
      expect.objectContaining({
        method: 'POST',
        path: '/v1/chat/completions?x=1',
        body: '{"a":1}',
        headers: expect.objectContaining({ authorization: 'Bearer k' }),
      }),
    ]);
  });

  it("throws failureFromStatus's failure for any other status, with the provider's message", async () => {
    answer = { status: 400, body: '{"error":{"message":"prompt too long"}}' };
    await expect(client.send({ ...call, baseUrl: origin, path: '/x', body: '' })).rejects.toMatchObject({
      failover: false,
      status: 400,
      answer: { code: 'upstream_rejected_request', message: expect.stringContaining('prompt too long') },
    });
    answer = { status: 503, body: '' };
    await expect(client.send({ ...call, baseUrl: origin, path: '/x', body: '' })).rejects.toMatchObject({
      kind: 'status',
      failover: true,
      status: 503,
    });
  });
});

describe('exchange', () => {
  it('sends the method asked to a whole URL, query kept, and hands back a non-2xx answer read whole', async () => {
    answer = { status: 404, body: '{"detail":"Not found."}' };
    const res = await client.exchange(
      { ...call, method: 'GET', baseUrl: `${origin}/v1/predictions/p1?fields=all` },
      1024,
    );
    expect(res).toMatchObject({ status: 404, headers: expect.objectContaining({ 'x-answer': 'yes' }) });
    expect(res.body.toString()).toBe('{"detail":"Not found."}');
    const put = await client.exchange({ ...call, method: 'PUT', baseUrl: `${origin}/requests/r1/cancel` }, 1024);
    expect(put.status).toBe(200);
    expect(received.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /v1/predictions/p1?fields=all',
      'PUT /requests/r1/cancel',
    ]);
  });

  it('refuses an answer past the limit', async () => {
    answer = { status: 200, body: 'x'.repeat(2048) };
    await expect(client.exchange({ ...call, method: 'GET', baseUrl: origin }, 1024)).rejects.toMatchObject({
      kind: 'invalid_response',
      failover: true,
    });
  });

  it('turns a refused connection and a silent server into failover-able failures', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await client
      .exchange({ ...call, method: 'GET', baseUrl: `http://127.0.0.1:${port}/` }, 1024)
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(UpstreamFailure);
    expect(refused).toMatchObject({ kind: 'connection', failover: true });

    answer = 'silent';
    await expect(
      client.exchange({ ...call, timeoutMs: 100, method: 'GET', baseUrl: origin }, 1024),
    ).rejects.toMatchObject({ kind: 'timeout', failover: true });
  });
});
