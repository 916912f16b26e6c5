// fetchChecked against real HTTPS servers on loopback. 127.0.0.1 passes only through the allow-list, as in every
// test of the system; 127.0.0.2 (also loopback on Linux) plays the private host an attacker wants to reach.
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { buffer } from 'node:stream/consumers';
import type { TLSSocket } from 'node:tls';
import {
  createTestCa,
  eventually,
  freePort,
  rejectionOf,
  selfSignedCert,
  sharedTestCa,
  startTlsServer,
  type TlsTestServer,
} from '@gensvc/testing';
import type { LookupFn } from './check-url';
import { fetchChecked, postChecked, readHead, type RequestOptions } from './fetch-checked';
import { OutboundError } from './outbound-error';

const ALLOW = ['127.0.0.1/32'];
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let route: Handler = (_req, res) => res.end('unset');
let server: TlsTestServer;
/** The private host: any request reaching it fails the test that says none may. */
let privateHost: TlsTestServer;
const servers: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  server = await startTlsServer((req, res) => route(req, res));
  privateHost = await startTlsServer((_req, res) => res.end('private data'), { host: '127.0.0.2' });
  servers.push(server, privateHost);
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});
beforeEach(() => {
  server.requests.length = 0;
  privateHost.requests.length = 0;
});

const trusted = (): RequestOptions => ({ allowCidrs: ALLOW, ca: server.caPem });

describe('the happy path', () => {
  it('fetches byte-exact from an allowed HTTPS server with a trusted CA', async () => {
    const payload = randomBytes(3 * 1024 * 1024 + 17);
    route = (_req, res) => {
      res.setHeader('content-type', 'image/png');
      res.end(payload);
    };
    const res = await fetchChecked(`${server.url}/out/1.png?sig=abc`, trusted());
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.address).toEqual({ address: '127.0.0.1', family: 4 });
    const body = await buffer(res.body);
    expect(body.length).toBe(payload.length);
    expect(sha256(body)).toBe(sha256(payload));
    expect(server.requests).toEqual([
      expect.objectContaining({
        method: 'GET',
        url: '/out/1.png?sig=abc',
        headers: expect.objectContaining({ host: `127.0.0.1:${server.port}` }),
      }),
    ]);
  });

  it('connects to the checked address, naming the host for SNI, the certificate and Host; resolves once', async () => {
    let servername: string | false | null | undefined;
    route = (req, res) => {
      servername = (req.socket as TLSSocket).servername;
      res.end('hello');
    };
    const lookups: string[] = [];
    const lookup: LookupFn = async (name) => {
      lookups.push(name);
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const res = await fetchChecked(`https://localhost:${server.port}/x`, { ...trusted(), lookup });
    expect((await buffer(res.body)).toString()).toBe('hello');
    expect(lookups).toEqual(['localhost']);
    expect(servername).toBe('localhost');
    expect(server.requests[0]!.headers.host).toBe(`localhost:${server.port}`);
  });

  it('POSTs a body with its headers (callbacks) and returns the answer', async () => {
    route = (req, res) => {
      void buffer(req).then((body) => {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            got: body.toString(),
            sig: req.headers['svc-signature'],
            len: req.headers['content-length'],
            ct: req.headers['content-type'],
          }),
        );
      });
    };
    const body = JSON.stringify({ task_id: 'tsk_1', status: 'completed', note: 'é' });
    const res = await postChecked(`${server.url}/hook`, body, {
      ...trusted(),
      headers: { 'content-type': 'application/json', 'svc-signature': 't=1,v1=ab' },
    });
    expect(res.status).toBe(200);
    const answer = JSON.parse((await buffer(res.body)).toString());
    expect(answer).toEqual({
      got: body,
      sig: 't=1,v1=ab',
      len: String(Buffer.byteLength(body)),
      ct: 'application/json',
    });
    expect(server.requests[0]!.method).toBe('POST');
  });
});

describe('addresses', () => {
  it('refuses a private server unless the allow-list names it, before any connection', async () => {
    route = (_req, res) => res.end('x');
    expect((await rejectionOf(fetchChecked(`${server.url}/`, { ca: server.caPem }), OutboundError)).reason).toBe(
      'private_address',
    );
    expect((await rejectionOf(fetchChecked(`${privateHost.url}/`, trusted()), OutboundError)).reason).toBe(
      'private_address',
    );
    expect(server.requests).toHaveLength(0);
    expect(privateHost.requests).toHaveLength(0);
  });

  it('refuses a name resolving to a private address (fake resolver) without connecting', async () => {
    const lookup: LookupFn = async () => [{ address: '127.0.0.2', family: 4 }];
    const e = await rejectionOf(
      fetchChecked(`https://innocent.example:${privateHost.port}/`, { ...trusted(), lookup }),
      OutboundError,
    );
    expect(e.reason).toBe('private_address');
    expect(privateHost.requests).toHaveLength(0);
  });

  it('DNS rebinding: a name resolving public, then private, only ever reaches the checked address', async () => {
    // The rebinding host serves the same port on the private address, so a second resolution would land there.
    const { ca } = sharedTestCa();
    const rebindCert = ca.issue(['rebind.example']);
    const publicSide = await startTlsServer((_req, res) => res.end('public side'), { cert: rebindCert });
    servers.push(publicSide);
    const privateSide = await startTlsServer((_req, res) => res.end('private side'), {
      host: '127.0.0.2',
      cert: rebindCert,
      port: publicSide.port,
    });
    servers.push(privateSide);
    let calls = 0;
    const lookup: LookupFn = async () =>
      calls++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '127.0.0.2', family: 4 }];
    const url = `https://rebind.example:${publicSide.port}/secret`;

    const res = await fetchChecked(url, { ...trusted(), lookup });
    expect((await buffer(res.body)).toString()).toBe('public side');
    expect(res.address.address).toBe('127.0.0.1');
    expect(calls).toBe(1);
    // The next request sees the rebound answer, and is refused at the check.
    expect((await rejectionOf(fetchChecked(url, { ...trusted(), lookup }), OutboundError)).reason).toBe(
      'private_address',
    );
    expect(publicSide.requests).toHaveLength(1);
    expect(privateSide.requests).toHaveLength(0);
  });

  it('refuses a connection that cannot be made', async () => {
    const port = await freePort();
    expect((await rejectionOf(fetchChecked(`https://127.0.0.1:${port}/`, trusted()), OutboundError)).reason).toBe(
      'connection',
    );
  });
});

describe('TLS', () => {
  it('refuses a server whose CA is not trusted', async () => {
    route = (_req, res) => res.end('x');
    const e = await rejectionOf(fetchChecked(`${server.url}/`, { allowCidrs: ALLOW }), OutboundError);
    expect(e.reason).toBe('tls');
    expect(server.requests).toHaveLength(0);
  });

  it('refuses a self-signed certificate', async () => {
    const selfSigned = await startTlsServer((_req, res) => res.end('x'), { cert: selfSignedCert() });
    servers.push(selfSigned);
    expect(await rejectionOf(fetchChecked(`${selfSigned.url}/`, trusted()), OutboundError)).toMatchObject({
      reason: 'tls',
      message: expect.stringContaining('DEPTH_ZERO_SELF_SIGNED_CERT'),
    });
    expect((await rejectionOf(fetchChecked(`${selfSigned.url}/`, { allowCidrs: ALLOW }), OutboundError)).reason).toBe(
      'tls',
    );
    expect(selfSigned.requests).toHaveLength(0);
  });

  it('refuses an expired certificate from a trusted CA', async () => {
    const expired = await startTlsServer((_req, res) => res.end('x'), {
      cert: sharedTestCa().ca.issue(['127.0.0.1'], { expired: true }),
    });
    servers.push(expired);
    const e = await rejectionOf(fetchChecked(`${expired.url}/`, trusted()), OutboundError);
    expect(e).toMatchObject({ reason: 'tls', message: expect.stringContaining('CERT_HAS_EXPIRED') });
    expect(expired.requests).toHaveLength(0);
  });

  it('refuses a certificate of a trusted CA issued for another name', async () => {
    const lookup: LookupFn = async () => [{ address: '127.0.0.1', family: 4 }];
    const e = await rejectionOf(
      fetchChecked(`https://evil.example:${server.port}/`, { ...trusted(), lookup }),
      OutboundError,
    );
    expect(e).toMatchObject({ reason: 'tls', message: expect.stringContaining('ERR_TLS_CERT_ALTNAME_INVALID') });
    expect(server.requests).toHaveLength(0);
  });

  it('refuses a certificate of another, untrusted CA', async () => {
    const other = await startTlsServer((_req, res) => res.end('x'), {
      cert: createTestCa('other CA').issue(['127.0.0.1']),
    });
    servers.push(other);
    expect((await rejectionOf(fetchChecked(`${other.url}/`, trusted()), OutboundError)).reason).toBe('tls');
  });
});

describe('answers', () => {
  it('does not follow redirects, to a private host or anywhere', async () => {
    route = (req, res) => {
      const to = req.url === '/meta' ? 'https://169.254.169.254/latest/meta-data/' : `${privateHost.url}/internal`;
      res.writeHead(302, { location: to });
      res.end();
    };
    const e = await rejectionOf(
      fetchChecked(`${server.url}/go`, { ...trusted(), allowCidrs: [...ALLOW, '127.0.0.2/32'] }),
      OutboundError,
    );
    expect(e).toMatchObject({
      reason: 'redirect',
      status: 302,
      message: expect.stringContaining(`${privateHost.url}/internal`),
    });
    expect((await rejectionOf(fetchChecked(`${server.url}/meta`, trusted()), OutboundError)).reason).toBe('redirect');
    expect(server.requests).toHaveLength(2);
    expect(privateHost.requests).toHaveLength(0);
  });

  it('answers http_status for an unaccepted status, or returns it when the caller accepts it', async () => {
    route = (_req, res) => {
      res.statusCode = 404;
      res.end('no such output');
    };
    expect(await rejectionOf(fetchChecked(`${server.url}/gone`, trusted()), OutboundError)).toMatchObject({
      reason: 'http_status',
      status: 404,
    });
    const res = await fetchChecked(`${server.url}/gone`, { ...trusted(), acceptStatus: () => true });
    expect(res.status).toBe(404);
    expect((await buffer(res.body)).toString()).toBe('no such output');
  });

  it('refuses a body above maxBytes: at once when declared, while streaming when not, and stops reading', async () => {
    const big = randomBytes(8 * 1024 * 1024);
    const sentWhenClosed: number[] = [];
    route = (req, res) => {
      if (req.url === '/declared') return res.end(big);
      // Chunked: the size is known only by counting.
      let sent = 0;
      res.on('close', () => sentWhenClosed.push(res.writableFinished ? -1 : sent));
      const pump = () => {
        while (sent < big.length) {
          const chunk = big.subarray(sent, sent + 64 * 1024);
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    };
    const limit = { ...trusted(), maxBytes: 1024 * 1024 };
    expect((await rejectionOf(fetchChecked(`${server.url}/declared`, limit), OutboundError)).reason).toBe('too_large');

    const res = await fetchChecked(`${server.url}/chunked`, limit);
    expect((await rejectionOf(buffer(res.body), OutboundError)).reason).toBe('too_large');
    // The download stopped: the server could not finish sending (-1 would mean it did).
    await eventually(() => sentWhenClosed.length > 0, 'the server to see the response closed', 1_000);
    expect(sentWhenClosed).toHaveLength(1);
    expect(sentWhenClosed[0]).toBeGreaterThan(0);
    expect(sentWhenClosed[0]).toBeLessThan(big.length);
    // Exactly at the limit is fine.
    const exact = await fetchChecked(`${server.url}/chunked`, { ...trusted(), maxBytes: big.length });
    expect(sha256(await buffer(exact.body))).toBe(sha256(big));
  });

  it('fails a body cut short of its Content-Length', async () => {
    route = (_req, res) => {
      res.writeHead(200, { 'content-length': '1000' });
      res.write(Buffer.alloc(500));
      setTimeout(() => res.socket?.destroy(), 20);
    };
    const res = await fetchChecked(`${server.url}/cut`, trusted());
    expect((await rejectionOf(buffer(res.body), OutboundError)).reason).toBe('connection');
  });
});

describe('timeouts', () => {
  it('gives up on a server that never answers', async () => {
    route = () => {};
    const t0 = Date.now();
    expect(
      (await rejectionOf(fetchChecked(`${server.url}/slow`, { ...trusted(), timeoutMs: 300 }), OutboundError)).reason,
    ).toBe('timeout');
    expect(Date.now() - t0).toBeLessThan(2_000);
  });

  it('gives up on a body that stalls, with the total deadline', async () => {
    route = (_req, res) => {
      res.writeHead(200, { 'content-type': 'video/mp4' });
      res.write(Buffer.alloc(1000));
    };
    const res = await fetchChecked(`${server.url}/stall`, { ...trusted(), timeoutMs: 400 });
    expect((await rejectionOf(buffer(res.body), OutboundError)).reason).toBe('timeout');
  });

  it('gives up on a server that accepts the connection but never completes the TLS handshake', async () => {
    const sockets: Socket[] = [];
    const mute: TcpServer = createTcpServer((s) => sockets.push(s));
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', r));
    servers.push({
      close: () =>
        new Promise<void>((r) => {
          for (const s of sockets) s.destroy();
          mute.close(() => r());
        }),
    });
    const port = (mute.address() as { port: number }).port;
    const e = await rejectionOf(
      fetchChecked(`https://127.0.0.1:${port}/`, { ...trusted(), connectTimeoutMs: 200 }),
      OutboundError,
    );
    expect(e).toMatchObject({ reason: 'timeout', message: expect.stringContaining('within 200 ms') });
  });

  it('stops when the caller aborts', async () => {
    route = () => {};
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const e = await rejectionOf(
      fetchChecked(`${server.url}/slow`, { ...trusted(), signal: controller.signal }),
      OutboundError,
    );
    expect(e).toMatchObject({ reason: 'connection', message: 'The request was aborted.' });
  });
});

describe('a body read whole (wholeUpTo)', () => {
  it('comes whole, byte-exact, when its declared length is at most wholeUpTo; else it streams', async () => {
    const payload = randomBytes(64 * 1024);
    route = (req, res) => {
      if (req.url === '/chunked') {
        res.write(payload.subarray(0, 1000));
        return void setTimeout(() => res.end(payload.subarray(1000)), 10);
      }
      res.end(payload);
    };
    const whole = await fetchChecked(`${server.url}/declared`, { ...trusted(), wholeUpTo: payload.length });
    expect(whole.body).toBeUndefined();
    expect(whole.whole).toBeInstanceOf(Buffer);
    expect(sha256(whole.whole!)).toBe(sha256(payload));

    const longer = await fetchChecked(`${server.url}/declared`, { ...trusted(), wholeUpTo: payload.length - 1 });
    expect(longer.whole).toBeUndefined();
    expect(sha256(await buffer(longer.body!))).toBe(sha256(payload));

    const undeclared = await fetchChecked(`${server.url}/chunked`, { ...trusted(), wholeUpTo: 10 * payload.length });
    expect(undeclared.whole).toBeUndefined();
    expect(sha256(await buffer(undeclared.body!))).toBe(sha256(payload));
  });

  it('fails as a streamed body does: cut short, stalled past the deadline, aborted by the caller', async () => {
    route = (req, res) => {
      res.writeHead(200, { 'content-length': '1000' });
      res.write(Buffer.alloc(500));
      if (req.url === '/cut') setTimeout(() => res.socket?.destroy(), 20);
    };
    const cut = await rejectionOf(fetchChecked(`${server.url}/cut`, { ...trusted(), wholeUpTo: 1000 }), OutboundError);
    expect(cut.reason).toBe('connection');
    const t0 = Date.now();
    const stalled = await rejectionOf(
      fetchChecked(`${server.url}/stall`, { ...trusted(), wholeUpTo: 1000, timeoutMs: 400 }),
      OutboundError,
    );
    expect(stalled.reason).toBe('timeout');
    expect(Date.now() - t0).toBeLessThan(2_000);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const aborted = await rejectionOf(
      fetchChecked(`${server.url}/stall`, { ...trusted(), wholeUpTo: 1000, signal: controller.signal }),
      OutboundError,
    );
    expect(aborted).toMatchObject({ reason: 'connection', message: 'The request was aborted.' });
  });

  it('a declared length over maxBytes is refused as before, whatever wholeUpTo says', async () => {
    route = (_req, res) => res.end(Buffer.alloc(2000));
    const e = await rejectionOf(
      fetchChecked(`${server.url}/big`, { ...trusted(), maxBytes: 1000, wholeUpTo: 4000 }),
      OutboundError,
    );
    expect(e.reason).toBe('too_large');
  });
});

describe('only the head of a body (readHead)', () => {
  it('reads the first bytes of a longer body, or the whole of a shorter one', async () => {
    const payload = randomBytes(64 * 1024);
    route = (req, res) => {
      if (req.url === '/none') return void res.writeHead(204).end();
      if (req.url === '/short') return void res.end('thanks');
      res.write(payload.subarray(0, 100));
      setTimeout(() => res.end(payload.subarray(100)), 20);
    };
    const head = async (path: string) =>
      readHead((await postChecked(`${server.url}${path}`, '{}', trusted())).body, 1024);
    const long = await postChecked(`${server.url}/long`, '{}', trusted());
    expect(long.status).toBe(200);
    expect(await readHead(long.body, 1024)).toEqual(payload.subarray(0, 1024));
    expect((await head('/short')).toString()).toBe('thanks');
    expect(await head('/none')).toEqual(Buffer.alloc(0));
  });

  it('keeps what arrived of a stalled body: cut at the deadline, or by the caller (never rejects)', async () => {
    route = (_req, res) => {
      res.writeHead(200, { 'content-length': '1000' });
      res.write('partial');
    };
    const t0 = Date.now();
    const stalled = await postChecked(`${server.url}/stall`, '{}', { ...trusted(), timeoutMs: 400 });
    expect(stalled.status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(400);
    expect((await readHead(stalled.body, 1024)).toString()).toBe('partial');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(390);
    expect(Date.now() - t0).toBeLessThan(2_000);

    const controller = new AbortController();
    const aborted = await postChecked(`${server.url}/stall`, '{}', { ...trusted(), signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    expect((await readHead(aborted.body, 1024)).toString()).toBe('partial');
  });

  it('fails as before when no status arrives within the deadline', async () => {
    route = () => {};
    const silent = postChecked(`${server.url}/silent`, '{}', { ...trusted(), timeoutMs: 300 });
    const e = await rejectionOf(silent, OutboundError);
    expect(e.reason).toBe('timeout');
  });

  it('refuses a redirect and an unaccepted status as the streamed path does, and passes what it accepts', async () => {
    route = (req, res) => {
      if (req.url === '/moved')
        return void res.writeHead(302, { location: 'https://elsewhere.example/x' }).end('see there');
      res.writeHead(503).end('busy');
    };
    const moved = await rejectionOf(postChecked(`${server.url}/moved`, '{}', trusted()), OutboundError);
    expect(moved).toMatchObject({ reason: 'redirect', status: 302 });
    expect(moved.message).toContain('https://elsewhere.example/x');
    const busy = await rejectionOf(postChecked(`${server.url}/busy`, '{}', trusted()), OutboundError);
    expect(busy).toMatchObject({ reason: 'http_status', status: 503 });
    const kept = await postChecked(`${server.url}/busy`, '{}', { ...trusted(), acceptStatus: () => true });
    expect(kept.status).toBe(503);
    expect((await readHead(kept.body, 1024)).toString()).toBe('busy');
  });
});
