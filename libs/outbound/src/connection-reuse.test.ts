// Connection reuse: requests to one receiver share kept-alive TLS connections, and reuse weakens none of
// the address rules: every request resolves and checks its host afresh, so a name that now resolves to a forbidden
// address is refused even though a warm connection to its old address sits in the pool.
import type { TLSSocket } from 'node:tls';
import { buffer } from 'node:stream/consumers';
import { createTestCa, rejectionOf, sharedTestCa, startTlsServer, type TlsTestServer } from '@gensvc/testing';
import type { LookupFn } from './check-url';
import { fetchChecked, OutboundAgents, postChecked, readHead, type RequestOptions } from './fetch-checked';
import { OutboundError } from './outbound-error';

const ALLOW = ['127.0.0.1/32'];
let receiver: TlsTestServer;
/** The process's kept-alive connections, as a service's deps hold them. */
let agents = new OutboundAgents();
let privateSide: TlsTestServer;
/** TLS handshakes each server completed, and the distinct sockets its requests came over. */
const handshakes = { receiver: 0, private: 0 };
const sockets = new Set<TLSSocket>();

beforeAll(async () => {
  const cert = sharedTestCa().ca.issue(['receiver.example', '127.0.0.1']);
  receiver = await startTlsServer(
    (req, res) => {
      sockets.add(req.socket as TLSSocket);
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    },
    { cert },
  );
  receiver.server.on('secureConnection', () => handshakes.receiver++);
  // The same port on the private address: where a rebound name would land.
  privateSide = await startTlsServer((_req, res) => res.end('private side'), {
    host: '127.0.0.2',
    port: receiver.port,
    cert,
  });
  privateSide.server.on('secureConnection', () => handshakes.private++);
});
afterAll(async () => {
  await agents.close();
  await Promise.all([receiver.close(), privateSide.close()]);
});
beforeEach(async () => {
  await agents.close();
  agents = new OutboundAgents();
  handshakes.receiver = handshakes.private = 0;
  sockets.clear();
  receiver.requests.length = 0;
  privateSide.requests.length = 0;
});

const opts = (extra: Partial<RequestOptions> = {}): RequestOptions => ({
  allowCidrs: ALLOW,
  ca: receiver.caPem,
  agents,
  ...extra,
});

it("callbacks that read only the answer's head (readHead) reuse the connection too", async () => {
  for (let i = 0; i < 10; i++) {
    const res = await postChecked(`${receiver.url}/cb`, JSON.stringify({ i }), opts());
    expect(res.status).toBe(204);
    expect(await readHead(res.body, 1024)).toEqual(Buffer.alloc(0));
  }
  expect(receiver.requests).toHaveLength(10);
  expect(handshakes.receiver).toBe(1);
  expect(sockets.size).toBe(1);
});

it('N callbacks to one receiver, one after another, make one TLS handshake over one socket', async () => {
  for (let i = 0; i < 20; i++) {
    const res = await postChecked(
      `${receiver.url}/cb`,
      JSON.stringify({ i }),
      opts({ headers: { 'content-type': 'application/json' } }),
    );
    expect(res.status).toBe(204);
    await buffer(res.body);
  }
  expect(receiver.requests).toHaveLength(20);
  expect(handshakes.receiver).toBe(1);
  expect(sockets.size).toBe(1);
});

it('lends no connection across trust: the same receiver under another CA is verified afresh, and fails', async () => {
  await buffer((await postChecked(`${receiver.url}/cb`, 'x', opts())).body);
  const other = createTestCa('another CA').certPem;
  expect((await rejectionOf(postChecked(`${receiver.url}/cb`, 'x', opts({ ca: other })), OutboundError)).reason).toBe(
    'tls',
  );
  // And back under the first CA it is served again; the refused request reached nothing.
  await buffer((await postChecked(`${receiver.url}/cb`, 'x', opts())).body);
  expect(receiver.requests).toHaveLength(2);
});

it('a burst side by side opens at most one connection per request in flight, and reuses them afterwards', async () => {
  const burst = () =>
    Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        postChecked(`${receiver.url}/cb`, String(i), opts()).then((r) => buffer(r.body)),
      ),
    );
  await burst();
  const afterFirst = handshakes.receiver;
  expect(afterFirst).toBeGreaterThanOrEqual(1);
  expect(afterFirst).toBeLessThanOrEqual(8);
  await burst();
  await burst();
  expect(receiver.requests).toHaveLength(24);
  expect(handshakes.receiver).toBe(afterFirst);
});

it('a new connection to a verified receiver resumes its TLS session; the certificate is still checked', async () => {
  const resumed: boolean[] = [];
  const onSecure = (socket: TLSSocket) => resumed.push(socket.isSessionReused());
  receiver.server.on('secureConnection', onSecure);
  try {
    for (let i = 0; i < 3; i++) {
      await buffer((await postChecked(`${receiver.url}/cb`, 'x', opts())).body);
      // The receiver drops its idle connections: the next request opens another.
      receiver.server.closeIdleConnections();
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(receiver.requests).toHaveLength(3);
    expect(resumed).toEqual([false, true, true]);
    // Under another trust (another Agent) nothing is resumed: the certificate is verified afresh, and fails.
    const other = createTestCa('another CA').certPem;
    expect((await rejectionOf(postChecked(`${receiver.url}/cb`, 'x', opts({ ca: other })), OutboundError)).reason).toBe(
      'tls',
    );
    expect(receiver.requests).toHaveLength(3);
  } finally {
    receiver.server.off('secureConnection', onSecure);
  }
});

it('reuses by host name too; once it resolves to a forbidden address, refuses, the warm one unused', async () => {
  let target = '127.0.0.1';
  let lookups = 0;
  const lookup: LookupFn = async () => {
    lookups++;
    return [{ address: target, family: 4 }];
  };
  const url = `https://receiver.example:${receiver.port}/cb`;
  for (let i = 0; i < 5; i++) await buffer((await postChecked(url, 'x', opts({ lookup }))).body);
  expect(handshakes.receiver).toBe(1);
  expect(lookups).toBe(5);

  target = '127.0.0.2';
  const e = await rejectionOf(postChecked(url, 'x', opts({ lookup })), OutboundError);
  expect(e.reason).toBe('private_address');
  expect(privateSide.requests).toHaveLength(0);
  expect(handshakes.private).toBe(0);
  expect(receiver.requests).toHaveLength(5);

  // Back to the allowed address: the kept connection serves it again.
  target = '127.0.0.1';
  const res = await fetchChecked(url, opts({ lookup }));
  await buffer(res.body);
  expect(res.address.address).toBe('127.0.0.1');
  expect(handshakes.receiver).toBe(1);
});

it('a request whose body was cut off does not leave its connection for the next one', async () => {
  const res = await postChecked(`${receiver.url}/cb`, 'x', opts());
  await buffer(res.body);
  // The caller stops reading a body mid-way: that connection is closed, the next request opens a new one.
  const cut = await startTlsServer((_req, res2) => {
    res2.writeHead(200, { 'content-length': '100000' });
    res2.write(Buffer.alloc(1000));
  });
  try {
    const partial = await fetchChecked(`${cut.url}/big`, {
      allowCidrs: ALLOW,
      ca: cut.caPem,
      agents,
      timeoutMs: 2_000,
    });
    partial.body.destroy();
    const again = await fetchChecked(`${cut.url}/big`, { allowCidrs: ALLOW, ca: cut.caPem, agents, timeoutMs: 300 });
    expect((await rejectionOf(buffer(again.body), OutboundError)).reason).toBe('timeout');
    expect(cut.requests).toHaveLength(2);
  } finally {
    await cut.close();
  }
});
