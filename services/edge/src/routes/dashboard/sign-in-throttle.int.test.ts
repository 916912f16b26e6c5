// Sign-in throttling that cannot be turned against people (device cookies, the client's address behind a trusted
// proxy) and password hashing within its memory budget, over real sockets against real Postgres and Redis.
import { deleteKeys, makeMember, makeWorkspace, useTestContext } from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { DashboardClient } from './dashboard-test-support';

const ctx = useTestContext();
/** Each test checks up to 17 passwords one after another (memory-hard hashes): seconds each on a loaded machine. */
const HASHES_TIMEOUT_MS = 300_000;
/** TRUST_PROXY off (the default): the socket's address is the client's. */
let direct: EdgeUnderTest;
/** Behind a proxy on loopback (TRUST_PROXY=loopback): X-Forwarded-For names the client. One hash at a time. */
let proxied: EdgeUnderTest;

beforeAll(async () => {
  direct = await startEdge(ctx);
  proxied = await startEdge(ctx, { config: { ...ctx.config, trustProxy: ['loopback'], passwordHashConcurrency: 1 } });
});
afterAll(() => Promise.all([direct.close(), proxied.close()]));
beforeEach(() => deleteKeys(ctx.redis, `${ctx.config.queuePrefix}:login:*`));

async function person() {
  const ws = await makeWorkspace(ctx.db);
  return makeMember(ctx.db, ws.id, 'member');
}

/** A browser behind the proxy at `ip` (the proxy sets X-Forwarded-For). */
function behindProxy(edge: EdgeUnderTest, ip: string) {
  const c = new DashboardClient(edge.url);
  const request = c.request.bind(c);
  c.request = (method, path, body, headers = {}) => request(method, path, body, { 'x-forwarded-for': ip, ...headers });
  return c;
}

describe('device cookies', () => {
  it(
    'keep a browser that signed in before signing in while an attacker spends the account allowance',
    async () => {
      const { email, password } = await person();
      const owner = new DashboardClient(direct.url);
      expect((await owner.signIn(email, password)).status).toBe(200);
      const device = owner.lastSetCookie.find((h) => h.startsWith('gsvc_device='))!;
      expect(device).toMatch(/; Path=\/api\/v1\/dashboard\/session;/);
      expect(device).toMatch(/; HttpOnly/);

      // The attacker, from another address, spends the untrusted allowance of the account and then some.
      const attacker = behindProxy(proxied, '203.0.113.66');
      await attacker.get('/api/v1/dashboard/session');
      const tries: number[] = [];
      for (let i = 0; i < 11; i++)
        tries.push((await attacker.post('/api/v1/dashboard/session', { email, password: `guess ${i}` })).status);
      expect(tries.slice(0, 10)).toEqual(Array(10).fill(401));
      expect(tries[10]).toBe(429);
      // Even the right password is refused to a browser without the account's device cookie...
      expect((await attacker.post('/api/v1/dashboard/session', { email, password })).status).toBe(429);
      const stranger = new DashboardClient(direct.url);
      expect((await stranger.signIn(email, password)).status).toBe(429);

      // ...but the person's own browser has its own allowance: a typo, then the right password, on the same address.
      expect((await owner.post('/api/v1/dashboard/session', { email, password: 'typo' })).status).toBe(401);
      const back = await owner.post('/api/v1/dashboard/session', { email, password });
      expect(back.status).toBe(200);
      // Each sign-in renews the cookie; the renewed one still passes.
      expect(owner.lastSetCookie.find((h) => h.startsWith('gsvc_device='))).not.toBe(device);
      expect((await owner.post('/api/v1/dashboard/session', { email, password })).status).toBe(200);
    },
    HASHES_TIMEOUT_MS,
  );

  it(
    'give each device its own limit, and pass only for the account they were issued for',
    async () => {
      const ada = await person();
      const eve = await person();
      const browser = new DashboardClient(direct.url);
      expect((await browser.signIn(eve.email, eve.password)).status).toBe(200);
      // Eve's device cookie is nothing to Ada's account: these are untrusted attempts, spending its allowance.
      for (let i = 0; i < 10; i++)
        expect((await browser.post('/api/v1/dashboard/session', { email: ada.email, password: 'guess' })).status).toBe(
          401,
        );
      expect(
        (await browser.post('/api/v1/dashboard/session', { email: ada.email, password: ada.password })).status,
      ).toBe(429);
      // A device that guesses at its own account is held to its own allowance.
      for (let i = 0; i < 10; i++)
        expect((await browser.post('/api/v1/dashboard/session', { email: eve.email, password: 'guess' })).status).toBe(
          401,
        );
      expect(
        (await browser.post('/api/v1/dashboard/session', { email: eve.email, password: eve.password })).status,
      ).toBe(429);
    },
    HASHES_TIMEOUT_MS,
  );

  it(
    'refuse a forged device cookie: the attempt counts as untrusted',
    async () => {
      const { email, password } = await person();
      const forger = new DashboardClient(direct.url);
      await forger.get('/api/v1/dashboard/session');
      forger.cookies.set('gsvc_device', `${'A'.repeat(22)}.${'B'.repeat(43)}`);
      for (let i = 0; i < 10; i++)
        expect((await forger.post('/api/v1/dashboard/session', { email, password: 'guess' })).status).toBe(401);
      expect((await forger.post('/api/v1/dashboard/session', { email, password })).status).toBe(429);
    },
    HASHES_TIMEOUT_MS,
  );
});

describe('the client address', () => {
  it(
    'is X-Forwarded-For behind a trusted proxy: each client has its own allowance',
    async () => {
      const a = behindProxy(proxied, '198.51.100.1');
      const b = behindProxy(proxied, '198.51.100.2');
      await a.get('/api/v1/dashboard/session');
      await b.get('/api/v1/dashboard/session');
      for (let i = 0; i < 10; i++)
        expect(
          (await a.post('/api/v1/dashboard/session', { email: `a${i}@example.com`, password: 'guess' })).status,
        ).toBe(401);
      expect((await a.post('/api/v1/dashboard/session', { email: 'a10@example.com', password: 'guess' })).status).toBe(
        429,
      );
      expect((await b.post('/api/v1/dashboard/session', { email: 'b0@example.com', password: 'guess' })).status).toBe(
        401,
      );
    },
    HASHES_TIMEOUT_MS,
  );

  it(
    'ignores X-Forwarded-For without TRUST_PROXY: the socket address is the client',
    async () => {
      const a = behindProxy(direct, '198.51.100.1');
      const b = behindProxy(direct, '198.51.100.2');
      await a.get('/api/v1/dashboard/session');
      await b.get('/api/v1/dashboard/session');
      for (let i = 0; i < 10; i++)
        expect(
          (await a.post('/api/v1/dashboard/session', { email: `a${i}@example.com`, password: 'guess' })).status,
        ).toBe(401);
      expect((await b.post('/api/v1/dashboard/session', { email: 'b0@example.com', password: 'guess' })).status).toBe(
        429,
      );
    },
    HASHES_TIMEOUT_MS,
  );
});

describe('password hashing within its budget', () => {
  it(
    'checks one password at a time, queues sixteen, and answers the rest 503 with Retry-After at once',
    async () => {
      // 24 sign-ins at once, each from its own address to its own (unknown) e-mail, so that no allowance is what
      // refuses them: an unknown e-mail is checked against a decoy hash at the same cost.
      const clients = Array.from({ length: 24 }, (_, i) => behindProxy(proxied, `192.0.2.${i + 1}`));
      await Promise.all(clients.map((c) => c.get('/api/v1/dashboard/session')));
      const answers = await Promise.all(
        clients.map((c, i) =>
          c.post('/api/v1/dashboard/session', { email: `nobody${i}@example.com`, password: 'guess' }),
        ),
      );
      // One running and sixteen waiting are served; every later one is refused without waiting.
      expect(answers.filter((a) => a.status === 401)).toHaveLength(17);
      const busy = answers.filter((a) => a.status === 503);
      expect(busy).toHaveLength(7);
      for (const a of busy) {
        expect(a.headers.get('retry-after')).toBe('5');
        expect(a.body).toEqual({
          error: {
            type: 'api_error',
            code: 'service_unavailable',
            message: expect.any(String),
            param: null,
            request_id: a.headers.get('x-request-id'),
          },
        });
      }
    },
    HASHES_TIMEOUT_MS,
  );
});
