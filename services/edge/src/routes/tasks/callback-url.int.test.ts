// callback_url at creation, against real TLS servers on loopback: a matrix of hostile URLs, each refused
// with 400 invalid_callback_url naming the rule and leaving no task; and a valid receiver accepted. Local receivers
// are reached as in production only through OUTBOUND_ALLOW_CIDRS (127.0.0.1/32) and a trusted test CA; 127.0.0.2
// (loopback too) plays the private host. Names resolve through a fake DNS the test controls, never the real one.
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import type { LookupFn, ResolvedAddress } from '@gensvc/outbound';
import {
  createTestCa,
  eventually,
  jsonOf,
  makeCustomer,
  selfSignedCert,
  sharedTestCa,
  startTlsServer,
  useTestContext,
  type TlsTestServer,
} from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { createTask, errorOf, MODELS, seedTaskModels, workspaceState } from './tasks-test-support';

const ctx = useTestContext({ OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32' });

/** name → the answers it gives, one per look-up (the last repeats). */
const dns = new Map<string, string[][]>();
const lookups: string[] = [];
const fakeDns: LookupFn = async (name) => {
  lookups.push(name);
  const answers = dns.get(name);
  if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  const answer = answers.length > 1 ? answers.shift()! : answers[0]!;
  return answer.map((address): ResolvedAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
};

let edge: EdgeUnderTest;
let c: Awaited<ReturnType<typeof makeCustomer>>;
/** Every TLS server of this file: none may ever be sent an HTTP request at creation. */
const servers: TlsTestServer[] = [];
let receiver: TlsTestServer;
/** TLS handshakes each server completed, by host and port (counted when the server's side ends, after the client's). */
const handshakes = new Map<string, number>();

async function serve(
  opts: Parameters<typeof startTlsServer>[1] = {},
  handler: Parameters<typeof startTlsServer>[0] = (_req, res) => res.end('ok'),
) {
  const server = await startTlsServer(handler, opts);
  server.server.on('secureConnection', () =>
    handshakes.set(`${server.host}:${server.port}`, (handshakes.get(`${server.host}:${server.port}`) ?? 0) + 1),
  );
  servers.push(server);
  return server;
}
const handshakesOf = (s: TlsTestServer) => handshakes.get(`${s.host}:${s.port}`) ?? 0;

beforeAll(async () => {
  receiver = await serve({ cert: sharedTestCa().ca.issue(['127.0.0.1', 'hooks.example']) });
  edge = await startEdge(ctx, { outbound: { ca: receiver.caPem, lookup: fakeDns } });
  await seedTaskModels(ctx.db);
  c = await makeCustomer(ctx.db);
  dns.set('hooks.example', [['127.0.0.1']]);
  dns.set('internal.example', [['10.0.0.5']]);
  dns.set('metadata.example', [['169.254.169.254']]);
  dns.set('loopback6.example', [['::1']]);
  dns.set('mapped.example', [['::ffff:192.168.0.10']]);
  dns.set('mixed.example', [['93.184.216.34', '10.0.0.5']]);
  dns.set('mixed-allowed.example', [['127.0.0.1', '127.0.0.2']]);
});
afterAll(async () => {
  await edge?.close();
  await Promise.all(servers.map((s) => s.close()));
});
afterEach(() => {
  // No check at creation ever makes an HTTP request, to the receiver or anyone.
  for (const s of servers) expect(s.requests).toEqual([]);
});

const body = (callback_url: string) => ({ model: MODELS.image, prompt: 'a storm over the sea', callback_url });

async function refused(url: string, rule: RegExp) {
  const before = await workspaceState(ctx.db, c.ws.id);
  const res = await createTask(edge.url, c.secret, 'sim/text-to-image', body(url));
  const error = await errorOf(res, 400, 'invalid_callback_url');
  expect(error.param).toBe('callback_url');
  expect(error.message).toMatch(rule);
  expect(error.message).not.toMatch(NETWORK_ERROR);
  // An IP literal is the caller's own text and may be named; a host name's addresses may not.
  if (!/^https:\/\/\[?[0-9a-fx.:]+\]?[:/]/i.test(url)) expect(error.message).not.toMatch(RESOLVED);
  expect(await workspaceState(ctx.db, c.ws.id)).toEqual(before);
}

const UNREACHABLE = new RegExp(
  String.raw`^callback_url was refused \(tls\): The server must accept an HTTPS connection at the URL's host ` +
    String.raw`and port and complete a TLS handshake; no server there did\.$`,
);
const PRIVATE = /is not a public address \(private network\)/;
const NAME_RULE = new RegExp(
  String.raw`\(private_address\): Every address the host resolves to must be a public unicast address; ` +
    String.raw`this host resolves to one that is not\.`,
);
/** What the network answered, which a refusal never shows: socket and TLS error codes, a name's resolved addresses. */
const NETWORK_ERROR = /ECONN|ETIMEDOUT|ERR_SSL|DEPTH_ZERO|CERT_HAS_EXPIRED|ERR_TLS|UNABLE_TO/;
const RESOLVED = /10\.0\.0\.5|169\.254|::1|::ffff|127\.0\.0\.[12]/;
describe('the URL and its addresses', () => {
  it.each<[string, string, RegExp]>([
    ['http', 'http://hooks.example/cb', /\(scheme\).*must use https \(got "http"\)/],
    ['another scheme', 'ftp://hooks.example/cb', /must use https/],
    ['not a URL', 'hooks.example/cb', /not a valid absolute URL/],
    ['userinfo', 'https://user:pass@hooks.example/cb', /\(userinfo\).*user name or password/],
    ['a user name alone', 'https://admin@hooks.example/cb', /user name or password/],
    // IPv4 ranges.
    ['private 10/8', 'https://10.0.0.1/cb', /The address 10\.0\.0\.1 is not a public address \(private network\)/],
    ['private 172.16/12', 'https://172.16.5.4/cb', PRIVATE],
    ['private 192.168/16', 'https://192.168.1.1:8443/cb', PRIVATE],
    ['loopback outside the allow-list', 'https://127.0.0.2/cb', /\(loopback\)/],
    ['loopback elsewhere in 127/8', 'https://127.45.6.7/cb', /\(loopback\)/],
    ['link-local', 'https://169.254.10.20/cb', /\(link-local\)/],
    [
      'the cloud metadata address',
      'https://169.254.169.254/latest/meta-data/',
      /169\.254\.169\.254 is not a public address \(link-local\)/,
    ],
    ['CGNAT', 'https://100.64.0.1/cb', /\(carrier-grade NAT\)/],
    ['multicast', 'https://224.0.0.251/cb', /\(multicast\)/],
    ['reserved', 'https://240.0.0.1/cb', /\(reserved\)/],
    ['broadcast', 'https://255.255.255.255/cb', /\(broadcast\)/],
    ['unspecified', 'https://0.0.0.0/cb', /\(unspecified\)/],
    ['documentation (TEST-NET)', 'https://192.0.2.1/cb', /is not a public address/],
    // The same addresses in the other forms a URL parser accepts.
    ['decimal', 'https://2852039166/cb', /169\.254\.169\.254 is not a public address/],
    ['octal', 'https://0251.0376.0251.0376/cb', /169\.254\.169\.254 is not a public address/],
    ['hex', 'https://0xA9FEA9FE/cb', /169\.254\.169\.254 is not a public address/],
    ['dotted hex', 'https://0x7f.0.0.2/cb', /127\.0\.0\.2 is not a public address \(loopback\)/],
    ['short form', 'https://10.1/cb', /10\.0\.0\.1 is not a public address \(private network\)/],
    ['short form of loopback', 'https://127.2/cb', /127\.0\.0\.2 is not a public address \(loopback\)/],
    ['decimal loopback', 'https://2130706434/cb', /127\.0\.0\.2 is not a public address \(loopback\)/],
    // IPv6.
    ['IPv6 loopback', 'https://[::1]/cb', /::1 is not a public address \(loopback\)/],
    ['IPv6 unspecified', 'https://[::]/cb', /\(unspecified\)/],
    ['IPv6 ULA', 'https://[fd12:3456:789a::1]/cb', /\(unique local\)/],
    ['IPv6 link-local', 'https://[fe80::1]/cb', /\(link-local\)/],
    ['IPv6 multicast', 'https://[ff02::1]/cb', /\(multicast\)/],
    ['IPv4-mapped private', 'https://[::ffff:10.0.0.1]/cb', /\(IPv4-mapped, to a non-public IPv4 address\)/],
    ['IPv4-mapped metadata', 'https://[::ffff:a9fe:a9fe]/cb', /\(IPv4-mapped, to a non-public IPv4 address\)/],
    ['NAT64 to metadata', 'https://[64:ff9b::169.254.169.254]/cb', /\(NAT64, to a non-public IPv4 address\)/],
    ['NAT64 to private', 'https://[64:ff9b::a00:1]/cb', /\(NAT64, to a non-public IPv4 address\)/],
    // Names.
    // Names: the rule, never the address the name resolved to (a caller must not learn our DNS's answers).
    ['a name resolving to a private address', 'https://internal.example/cb', NAME_RULE],
    ['a name resolving to the metadata address', 'https://metadata.example/cb', NAME_RULE],
    ['a name resolving to IPv6 loopback', 'https://loopback6.example/cb', NAME_RULE],
    ['a name resolving to an IPv4-mapped private address', 'https://mapped.example/cb', NAME_RULE],
    ['a name with one private address among public ones', 'https://mixed.example/cb', NAME_RULE],
    ['a name with one private address among allowed ones', 'https://mixed-allowed.example/cb', NAME_RULE],
    [
      'a name that does not resolve',
      'https://nowhere.example/cb',
      /\(dns\): The host must resolve to at least one IP address/,
    ],
  ])('%s: %s', async (_what, url, rule) => {
    await refused(url, rule);
  });
});

describe('DNS rebinding: a name that resolves public, then private', () => {
  it('is checked once and reached at the checked address; the next creation sees the private one', async () => {
    // Both sides serve the same name and port with a valid certificate: only the address decides which is reached.
    const cert = sharedTestCa().ca.issue(['rebind.example']);
    const publicSide = await serve({ cert });
    const privateSide = await serve({ cert, host: '127.0.0.2', port: publicSide.port });
    // 127.0.0.1 is the allowed ("public") answer; 127.0.0.2 the private one given to every later look-up.
    dns.set('rebind.example', [['127.0.0.1'], ['127.0.0.2']]);
    lookups.length = 0;
    const url = `https://rebind.example:${publicSide.port}/cb`;

    const res = await createTask(edge.url, c.secret, 'sim/text-to-image', body(url));
    expect(res.status).toBe(202);
    expect(lookups).toEqual(['rebind.example']);
    await eventually(() => handshakesOf(publicSide) === 1, 'the handshake with the checked address');
    expect(handshakesOf(privateSide)).toBe(0);

    await refused(url, NAME_RULE);
    expect(handshakesOf(privateSide)).toBe(0);
  });
});

describe('redirects', () => {
  it('play no part at creation: the check is a TLS handshake, no HTTP request to redirect', async () => {
    // At delivery, the dispatcher refuses to follow it (its own tests); here the receiver is never asked anything.
    const redirecting = await serve({}, (_req, res) => {
      res.writeHead(302, { location: 'https://169.254.169.254/latest/meta-data/' });
      res.end();
    });
    const res = await createTask(edge.url, c.secret, 'sim/text-to-image', body(`${redirecting.url}/cb`));
    expect(res.status).toBe(202);
    await eventually(() => handshakesOf(redirecting) === 1, 'the handshake');
    expect(redirecting.requests).toEqual([]);
  });
});

describe('the certificate', () => {
  it.each<[string, () => Promise<{ url: string }>, RegExp]>([
    [
      'self-signed',
      async () => serve({ cert: selfSignedCert() }),
      /\(tls\): The server's TLS certificate is self-signed/,
    ],
    [
      'expired',
      async () => serve({ cert: sharedTestCa().ca.issue(['127.0.0.1'], { expired: true }) }),
      /\(tls\): The server's TLS certificate has expired/,
    ],
    [
      'issued for another host',
      async () => {
        const s = await serve({ cert: sharedTestCa().ca.issue(['someone-else.example']) });
        dns.set('hooks-wrong.example', [['127.0.0.1']]);
        return { url: `https://hooks-wrong.example:${s.port}` };
      },
      /is not valid for this host name\.$/,
    ],
    [
      'issued by an untrusted CA',
      async () => serve({ cert: createTestCa('rogue CA').issue(['127.0.0.1']) }),
      /not issued by a trusted certificate authority/,
    ],
    [
      'no TLS server at all',
      async () => {
        const s = await serve();
        await s.close();
        return { url: s.url };
      },
      UNREACHABLE,
    ],
  ])('%s', async (_what, make, rule) => {
    const { url } = await make();
    await refused(`${url}/cb`, rule);
  });

  it('answers a closed port and a non-TLS open port in the same words: no port probing via the gateway', async () => {
    const closed = await serve();
    await closed.close();
    const plain = createNetServer((socket) => socket.end('SSH-2.0-OpenSSH_9.6\r\n'));
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    try {
      const messages = [];
      for (const port of [closed.port, (plain.address() as AddressInfo).port]) {
        dns.set('probe.example', [['127.0.0.1']]);
        const res = await createTask(edge.url, c.secret, 'sim/text-to-image', body(`https://probe.example:${port}/cb`));
        const error = await errorOf(res, 400, 'invalid_callback_url');
        messages.push(error.message);
      }
      expect(messages[0]).toMatch(UNREACHABLE);
      expect(messages[1]).toBe(messages[0]);
    } finally {
      plain.close();
    }
  });
});

describe('a valid receiver', () => {
  it.each([
    ['an allowed address with a port', () => `${receiver.url}/hooks/task?x=1`],
    ['a name resolving to it', () => `https://hooks.example:${receiver.port}/cb`],
  ])('%s is accepted after a TLS handshake, and shown in the envelope', async (_what, make) => {
    const url = make();
    const before = handshakesOf(receiver);
    const res = await createTask(edge.url, c.secret, 'sim/text-to-image', body(url));
    const envelope = await jsonOf(res);
    expect(res.status).toBe(202);
    expect(envelope.callback).toEqual({ url, state: 'none' });
    await eventually(() => handshakesOf(receiver) === before + 1, 'the handshake');
    expect(await ctx.db.task.findUniqueOrThrow({ where: { id: envelope.task_id } })).toMatchObject({
      callbackUrl: url,
      callbackState: 'none',
    });
  });
});

describe('the TLS check is kept for a minute per host, port and checked addresses', () => {
  it('a burst of creations to one receiver makes one handshake; the name is still resolved for each', async () => {
    const burst = await serve({ cert: sharedTestCa().ca.issue(['burst.example']) });
    dns.set('burst.example', [['127.0.0.1']]);
    lookups.length = 0;
    const url = `https://burst.example:${burst.port}/cb`;
    const results = await Promise.all(
      Array.from({ length: 8 }, () => createTask(edge.url, c.secret, 'sim/text-to-image', body(url))),
    );
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(202));
    expect((await createTask(edge.url, c.secret, 'sim/text-to-image', body(url))).status).toBe(202);
    expect(lookups.filter((n) => n === 'burst.example')).toHaveLength(9);
    await eventually(() => handshakesOf(burst) === 1, 'the one handshake');
    await new Promise((r) => setTimeout(r, 100));
    expect(handshakesOf(burst)).toBe(1);
  });

  it('a failed check is not kept: each creation to a failing receiver handshakes again, and is refused', async () => {
    const bad = await serve({ cert: selfSignedCert(['127.0.0.1']) });
    // The client refuses the certificate, so the server completes no handshake: count the client's tries by connection.
    let connections = 0;
    bad.server.on('connection', () => connections++);
    for (let i = 0; i < 3; i++) await refused(`${bad.url}/cb`, /\(tls\): The server's TLS certificate is self-signed/);
    await eventually(() => connections === 3, 'a handshake tried for each creation');
    expect(handshakesOf(bad)).toBe(0);
  });

  it('a cached verdict does not outlive a changed answer: a name now resolving elsewhere is rechecked', async () => {
    const first = await serve({ cert: sharedTestCa().ca.issue(['moving.example']) });
    dns.set('moving.example', [['127.0.0.1']]);
    const url = `https://moving.example:${first.port}/cb`;
    expect((await createTask(edge.url, c.secret, 'sim/text-to-image', body(url))).status).toBe(202);
    dns.set('moving.example', [['127.0.0.2']]);
    await refused(url, NAME_RULE);
  });
});
