// checkTls against real TLS servers on loopback (127.0.0.1 let through the allow-list, as in every test of the
// system): a certificate that verifies passes, and each way one can fail is refused with a message naming it.
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import {
  createTestCa,
  eventually,
  freePort,
  rejectionOf,
  selfSignedCert,
  sharedTestCa,
  startTlsServer,
  type CertPair,
  type TlsTestServer,
} from '@gensvc/testing';
import { checkTls, type CheckTlsOptions } from './check-tls';
import { checkUrl, type CheckedUrl } from './check-url';
import { OutboundError } from './outbound-error';

const ALLOW = ['127.0.0.1/32'];
const servers: { close(): Promise<void> }[] = [];
let good: TlsTestServer;
/** The server names (SNI) each server was sent, by port, as each handshake completes on the server's side. */
const sniSeen = new Map<number, (string | false | null)[]>();

async function serve(cert?: CertPair, host?: string): Promise<TlsTestServer> {
  // Any HTTP request reaching a server fails the test: the check makes none.
  const server = await startTlsServer((_req, res) => res.end('must not be asked'), {
    ...(cert && { cert }),
    ...(host && { host }),
  });
  server.server.on('secureConnection', (s: TLSSocket) =>
    sniSeen.set(server.port, [...(sniSeen.get(server.port) ?? []), s.servername]),
  );
  servers.push(server);
  return server;
}

beforeAll(async () => {
  good = await serve();
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

const trusted = (): CheckTlsOptions => ({ ca: good.caPem });
const checked = (url: string) => checkUrl(url, { allowCidrs: ALLOW });

describe('a certificate that verifies', () => {
  it('passes for an IP-literal URL, naming the address it reached and the expiry, and sends no request', async () => {
    const verdict = await checkTls(await checked(`${good.url}/hook`), trusted());
    expect(verdict.address).toEqual({ address: '127.0.0.1', family: 4 });
    expect(verdict.validTo.getTime()).toBeGreaterThan(Date.now());
    expect(good.requests).toEqual([]);
    // SNI carries names only: the handshake for an IP literal sent none.
    expect(await eventually(() => sniSeen.get(good.port), 'the server to complete the handshake')).toEqual([false]);
  });

  it('connects to the checked address and names the host by SNI; it does not resolve again', async () => {
    let lookups = 0;
    const url = await checkUrl(`https://localhost:${good.port}/hook`, {
      allowCidrs: ALLOW,
      lookup: async () => {
        lookups++;
        return [{ address: '127.0.0.1', family: 4 }];
      },
    });
    await checkTls(url, trusted());
    expect(lookups).toBe(1);
    // The earlier IP-literal check sent no name; this one sent the host's.
    await eventually(() => sniSeen.get(good.port)?.includes('localhost'), 'the server to see the SNI name');
  });

  it('tries the next checked address when one cannot be reached', async () => {
    const closedPortElsewhere: CheckedUrl = {
      url: new URL(`https://localhost:${good.port}/`),
      hostname: 'localhost',
      port: good.port,
      // Nothing listens on 127.0.0.3 at this port.
      addresses: [
        { address: '127.0.0.3', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ],
    };
    expect((await checkTls(closedPortElsewhere, trusted())).address.address).toBe('127.0.0.1');
  });

  it('tries every checked address in order, and names the last when none can be reached', async () => {
    const port = await freePort();
    const url = await checkUrl(`https://localhost:${port}/hook`, {
      allowCidrs: [...ALLOW, '127.0.0.3/32', '127.0.0.4/32'],
      lookup: async () => [
        { address: '127.0.0.3', family: 4 },
        { address: '127.0.0.4', family: 4 },
      ],
    });
    expect(await rejectionOf(checkTls(url, trusted()), OutboundError)).toMatchObject({
      reason: 'connection',
      message: expect.stringMatching(/\(127\.0\.0\.4\).*ECONNREFUSED/),
    });
  });
});

describe('a certificate that does not verify is refused with the rule it breaks', () => {
  it.each<[string, () => Promise<{ server: TlsTestServer; host?: string }>, RegExp]>([
    [
      'self-signed',
      async () => ({ server: await serve(selfSignedCert()) }),
      /is self-signed.*\(DEPTH_ZERO_SELF_SIGNED_CERT\)/,
    ],
    [
      'chained to an untrusted self-signed root',
      async () => {
        const rogue = createTestCa('rogue CA');
        const leaf = rogue.issue(['127.0.0.1']);
        return { server: await serve({ certPem: leaf.certPem + rogue.certPem, keyPem: leaf.keyPem }) };
      },
      /self-signed root that is not trusted.*\(SELF_SIGNED_CERT_IN_CHAIN\)/,
    ],
    [
      'expired',
      async () => ({ server: await serve(sharedTestCa().ca.issue(['127.0.0.1'], { expired: true })) }),
      /has expired \(CERT_HAS_EXPIRED\)/,
    ],
    [
      'issued for another host',
      async () => ({ server: good, host: 'evil.example' }),
      /is not valid for this host name \(ERR_TLS_CERT_ALTNAME_INVALID\)/,
    ],
    [
      'issued by an untrusted CA',
      async () => ({ server: await serve(createTestCa('other CA').issue(['127.0.0.1'])) }),
      /not issued by a trusted certificate authority.*\(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)/,
    ],
  ])('%s', async (_what, make, message) => {
    const { server, host } = await make();
    const before = server.requests.length;
    const url = host
      ? await checkUrl(`https://${host}:${server.port}/hook`, {
          allowCidrs: ALLOW,
          lookup: async () => [{ address: '127.0.0.1', family: 4 }],
        })
      : await checked(`${server.url}/hook`);
    const e = await rejectionOf(checkTls(url, trusted()), OutboundError);
    expect(e.reason).toBe('tls');
    expect(e.message).toMatch(message);
    expect(server.requests.length).toBe(before);
  });

  it('refuses the shared test CA itself when it is not trusted (production trusts only real roots)', async () => {
    const e = await rejectionOf(checkTls(await checked(`${good.url}/`)), OutboundError);
    expect(e).toMatchObject({
      reason: 'tls',
      message: expect.stringContaining('not issued by a trusted certificate authority'),
    });
  });
});

describe('a server that cannot be reached', () => {
  it('answers connection when nothing listens', async () => {
    const port = await freePort();
    expect(
      await rejectionOf(checkTls(await checked(`https://127.0.0.1:${port}/`), trusted()), OutboundError),
    ).toMatchObject({
      reason: 'connection',
      message: expect.stringContaining('ECONNREFUSED'),
    });
  });

  it('answers timeout when the handshake never completes, within the time given', async () => {
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
    const started = Date.now();
    const e = await rejectionOf(
      checkTls(await checked(`https://127.0.0.1:${port}/`), { ...trusted(), timeoutMs: 200 }),
      OutboundError,
    );
    expect(e).toMatchObject({ reason: 'timeout', message: expect.stringContaining('within 200 ms') });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('answers tls when the server is not speaking TLS', async () => {
    // It reads what it is sent (so it sees the client leave) and answers as an HTTP server would.
    const plain = createTcpServer((s) => {
      s.on('error', () => {});
      s.resume();
      s.end('HTTP/1.1 400 Bad Request\r\n\r\n');
    });
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    servers.push({ close: () => new Promise<void>((r) => plain.close(() => r())) });
    const port = (plain.address() as { port: number }).port;
    expect(
      (await rejectionOf(checkTls(await checked(`https://127.0.0.1:${port}/`), trusted()), OutboundError)).reason,
    ).toBe('tls');
  });
});
