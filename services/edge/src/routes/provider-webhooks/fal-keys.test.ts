// fal's JWKS is fetched through libs/outbound (the address policy, the certificate, the size bound) and cached.
import { generateKeyPairSync } from 'node:crypto';
import { rejectionOf, startTlsServer, type TlsTestServer } from '@gensvc/testing';
import { isAppError } from '@gensvc/errors';
import { falKeyCache } from './fal-keys';

const jwk = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
let server: TlsTestServer;
let answer: { status: number; body: string };

beforeAll(async () => {
  server = await startTlsServer((_req, res) =>
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body),
  );
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  answer = { status: 200, body: JSON.stringify({ keys: [jwk, { kty: 'RSA', n: 'x', e: 'AQAB' }] }) };
  server.requests.length = 0;
});

const trusted = () => ({ allowCidrs: ['127.0.0.1/32'], ca: server.caPem });

it('fetches the Ed25519 keys once, then serves them cached; a refresh within a minute does not refetch', async () => {
  const cache = falKeyCache(`${server.url}/jwks.json`, trusted());
  const [a, b] = await Promise.all([cache.get(false), cache.get(false)]);
  expect(a).toHaveLength(1);
  expect(b).toBe(a);
  expect(await cache.get(true)).toBe(a);
  expect(server.requests).toHaveLength(1);
});

it('refuses a loopback JWKS host the address policy does not allow (no request is made)', async () => {
  const e = await rejectionOf(falKeyCache(`${server.url}/jwks.json`, { ca: server.caPem }).get(false), Error);
  expect(isAppError(e) && e.code).toBe('webhook_keys_unavailable');
  expect(server.requests).toHaveLength(0);
});

it('refuses plain http and an oversized or failing answer', async () => {
  const http = await rejectionOf(falKeyCache(server.url.replace('https:', 'http:'), trusted()).get(false), Error);
  expect(isAppError(http) && http.code).toBe('webhook_keys_unavailable');
  answer = { status: 200, body: JSON.stringify({ keys: [jwk], pad: 'x'.repeat(100_000) }) };
  expect(isAppError(await rejectionOf(falKeyCache(`${server.url}/big`, trusted()).get(false), Error))).toBe(true);
  answer = { status: 500, body: '{}' };
  expect(isAppError(await rejectionOf(falKeyCache(`${server.url}/down`, trusted()).get(false), Error))).toBe(true);
});
