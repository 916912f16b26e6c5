// Sessions, CSRF, throttling and credential classes of the dashboard's JSON routes, over real sockets against real
// Postgres and Redis.
import { hashToken, newOpaqueToken } from '@gensvc/auth';
import { sessionRepository } from '@gensvc/db';
import { deleteKeys, makeKey, makeMember, makeWorkspace, useTestContext } from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { DashboardClient } from './dashboard-test-support';

const ctx = useTestContext();
let edge: EdgeUnderTest;

beforeAll(async () => {
  edge = await startEdge(ctx);
});
afterAll(() => edge.close());
beforeEach(() => deleteKeys(ctx.redis, `${ctx.config.queuePrefix}:login:*`));

const client = () => new DashboardClient(edge.url);

async function owner() {
  const ws = await makeWorkspace(ctx.db, { name: 'Acme' });
  const m = await makeMember(ctx.db, ws.id, 'owner');
  return { ws, ...m };
}

describe('signing in', () => {
  it('sets an HttpOnly, SameSite=Lax session cookie and answers the user, workspaces and CSRF token', async () => {
    const { ws, email, password, user } = await owner();
    const c = client();
    const before = await c.get('/api/v1/dashboard/session');
    expect(before.status).toBe(401);
    expect(before.body.error.code).toBe('not_signed_in');
    expect(c.cookies.get('gsvc_csrf')).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const res = await c.post('/api/v1/dashboard/session', { email: email.toUpperCase(), password });
    expect(res.status).toBe(200);
    expect(res.body.user).toEqual({ id: user.id, email, name: null });
    expect(res.body.workspaces).toEqual([{ id: ws.id, name: 'Acme', tier: 'payg', role: 'owner' }]);
    const session = c.lastSetCookie.find((h) => h.startsWith('gsvc_session='))!;
    expect(session).toMatch(/; HttpOnly/);
    expect(session).toMatch(/; SameSite=Lax/);
    expect(session).not.toMatch(/Secure/); // the base URL is http here
    const csrf = c.lastSetCookie.find((h) => h.startsWith('gsvc_csrf='))!;
    expect(csrf).not.toMatch(/HttpOnly/);
    expect(res.body.csrf_token).toBe(c.cookies.get('gsvc_csrf'));

    // The session id is stored hashed: no row holds the cookie's value.
    const token = c.cookies.get('gsvc_session')!;
    expect(await ctx.db.session.count({ where: { tokenHash: token } })).toBe(0);
    expect(await ctx.db.session.count({ where: { tokenHash: hashToken(token) } })).toBe(1);

    const me = await c.get('/api/v1/dashboard/session');
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(user.id);
  });

  it('gives an unknown email and a wrong password the same answer', async () => {
    const { email } = await owner();
    const c = client();
    await c.get('/api/v1/dashboard/session');
    const wrong = await c.post('/api/v1/dashboard/session', { email, password: 'not the password' });
    const unknown = await c.post('/api/v1/dashboard/session', {
      email: 'nobody@example.com',
      password: 'not the password',
    });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    const strip = (b: { error: Record<string, unknown> }) => ({ ...b.error, request_id: undefined });
    expect(strip(wrong.body)).toEqual(strip(unknown.body));
    expect(wrong.body.error.code).toBe('invalid_credentials');
    expect(c.cookies.has('gsvc_session')).toBe(false);
  });

  it('refuses a sign-in without the double-submitted CSRF token, or from another origin', async () => {
    const { email, password } = await owner();
    const noToken = await fetch(`${edge.url}/api/v1/dashboard/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    expect(noToken.status).toBe(403);
    expect(((await noToken.json()) as { error: { code: string } }).error.code).toBe('csrf_failed');

    const evil = new DashboardClient(edge.url, 'https://evil.example');
    await evil.get('/api/v1/dashboard/session');
    const res = await evil.post('/api/v1/dashboard/session', { email, password });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('csrf_failed');
    expect(evil.cookies.has('gsvc_session')).toBe(false);
  });

  it('validates the body and names the field', async () => {
    const c = client();
    await c.get('/api/v1/dashboard/session');
    const res = await c.post('/api/v1/dashboard/session', { email: 'a@example.com' });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe('password');
    const extra = await c.post('/api/v1/dashboard/session', { email: 'a@example.com', password: 'x', admin: true });
    expect(extra.status).toBe(400);
    expect(extra.body.error.param).toBe('admin');
  });
});

describe('throttling', () => {
  it('allows 10 failures per account, then refuses even the right password with 429 and Retry-After', async () => {
    const { email, password } = await owner();
    const c = client();
    await c.get('/api/v1/dashboard/session');
    // Racing attempts: the count is taken before the password is checked, so a burst tests at most 10 passwords.
    const tries = await Promise.all(
      Array.from({ length: 14 }, () => c.post('/api/v1/dashboard/session', { email, password: 'wrong password!' })),
    );
    expect(tries.filter((t) => t.status === 401)).toHaveLength(10);
    expect(tries.filter((t) => t.status === 429)).toHaveLength(4);
    const right = await c.post('/api/v1/dashboard/session', { email, password });
    expect(right.status).toBe(429);
    expect(right.body.error.code).toBe('too_many_attempts');
    expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(800);
    expect(Number(right.headers.get('retry-after'))).toBeLessThanOrEqual(900);
  });

  it('counts per client address too, across accounts', async () => {
    const c = client();
    await c.get('/api/v1/dashboard/session');
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++)
      statuses.push(
        (await c.post('/api/v1/dashboard/session', { email: `someone${i}@example.com`, password: 'guess' })).status,
      );
    expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true);
    expect(statuses[10]).toBe(429);
  });

  it('counts only failures: many people signing in correctly from one address are never throttled', async () => {
    const people = await Promise.all(Array.from({ length: 3 }, () => owner()));
    const c = client();
    await c.get('/api/v1/dashboard/session');
    for (let round = 0; round < 5; round++) {
      for (const p of people)
        expect((await c.post('/api/v1/dashboard/session', { email: p.email, password: p.password })).status).toBe(200);
    }
  });

  it('forgives the account its failures once the right password is given', async () => {
    const { email, password } = await owner();
    const c = client();
    await c.get('/api/v1/dashboard/session');
    for (let i = 0; i < 5; i++)
      expect((await c.post('/api/v1/dashboard/session', { email, password: 'wrong' })).status).toBe(401);
    expect((await c.post('/api/v1/dashboard/session', { email, password })).status).toBe(200);
    const count = await ctx.redis.get(`${ctx.config.queuePrefix}:login:account:${hashToken(email)}`);
    expect(count).toBeNull();
  });
});

describe('a session', () => {
  it('is refused once forged, idle too long, past its absolute expiry, or signed out', async () => {
    const { email, password } = await owner();
    const c = client();
    expect((await c.signIn(email, password)).status).toBe(200);
    const token = c.cookies.get('gsvc_session')!;

    const forged = new DashboardClient(edge.url);
    forged.cookies.set('gsvc_session', token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A'));
    expect((await forged.get('/api/v1/dashboard/session')).status).toBe(401);
    forged.cookies.set('gsvc_session', '<script>');
    expect((await forged.get('/api/v1/dashboard/session')).status).toBe(401);

    const row = await ctx.db.session.findUniqueOrThrow({ where: { tokenHash: hashToken(token) } });
    await ctx.db.session.update({
      where: { id: row.id },
      data: { lastSeenAt: new Date(Date.now() - 12 * 3600_000 - 1000) },
    });
    expect((await c.get('/api/v1/dashboard/session')).status).toBe(401);
    await ctx.db.session.update({
      where: { id: row.id },
      data: { lastSeenAt: new Date(), expiresAt: new Date(Date.now() - 1000) },
    });
    expect((await c.get('/api/v1/dashboard/session')).status).toBe(401);
    await ctx.db.session.update({ where: { id: row.id }, data: { expiresAt: new Date(Date.now() + 3600_000) } });
    expect((await c.get('/api/v1/dashboard/session')).status).toBe(200);

    const out = await c.delete('/api/v1/dashboard/session');
    expect(out.status).toBe(204);
    expect(c.cookies.has('gsvc_session')).toBe(false);
    // The same cookie, replayed after sign-out, is refused: the session is revoked server-side.
    const replay = new DashboardClient(edge.url);
    replay.cookies.set('gsvc_session', token);
    expect((await replay.get('/api/v1/dashboard/session')).status).toBe(401);
  });

  it('needs the CSRF token bound to it for every state change', async () => {
    const { ws, email, password } = await owner();
    const c = client();
    await c.signIn(email, password);
    const keys = `/api/v1/dashboard/workspaces/${ws.id}/keys`;
    const missing = await c.request('POST', keys, { name: 'k', scopes: ['account.read'] }, { 'x-csrf-token': '' });
    expect(missing.status).toBe(403);
    expect(missing.body.error.code).toBe('csrf_failed');
    // Another session's token does not pass for this one.
    const other = client();
    await other.signIn(email, password);
    const foreign = await c.request(
      'POST',
      keys,
      { name: 'k', scopes: ['account.read'] },
      { 'x-csrf-token': other.cookies.get('gsvc_csrf')! },
    );
    expect(foreign.status).toBe(403);
    const crossSite = await c.request(
      'POST',
      keys,
      { name: 'k', scopes: ['account.read'] },
      { origin: 'https://evil.example' },
    );
    expect(crossSite.status).toBe(403);
    expect(await ctx.db.apiKey.count({ where: { workspaceId: ws.id } })).toBe(0);
    expect((await c.post(keys, { name: 'k', scopes: ['account.read'] })).status).toBe(201);
  });

  it('ends everywhere when the password changes; this browser gets a new one', async () => {
    const { email, password } = await owner();
    const a = client();
    const b = client();
    await a.signIn(email, password);
    await b.signIn(email, password);
    const wrong = await a.post('/api/v1/dashboard/password', {
      current_password: 'nope',
      new_password: 'a new long password',
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatchObject({ code: 'wrong_password', param: 'current_password' });
    const short = await a.post('/api/v1/dashboard/password', { current_password: password, new_password: 'short' });
    expect(short.status).toBe(400);
    expect(short.body.error.param).toBe('new_password');

    const oldCookie = a.cookies.get('gsvc_session');
    const changed = await a.post('/api/v1/dashboard/password', {
      current_password: password,
      new_password: 'a new long password',
    });
    expect(changed.status).toBe(200);
    expect(a.cookies.get('gsvc_session')).not.toBe(oldCookie);
    expect((await a.get('/api/v1/dashboard/session')).status).toBe(200);
    expect((await b.get('/api/v1/dashboard/session')).status).toBe(401);
    expect((await client().signIn(email, password)).status).toBe(401);
    expect((await client().signIn(email, 'a new long password')).status).toBe(200);
  });
});

describe('credential classes', () => {
  it('refuses an API key on the dashboard routes and a session on the API routes', async () => {
    const { ws, email, password } = await owner();
    const { secret } = await makeKey(ctx.db, ws.id);
    const withKey = await fetch(`${edge.url}/api/v1/dashboard/workspaces/${ws.id}/keys`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(withKey.status).toBe(403);
    expect(((await withKey.json()) as { error: { code: string } }).error.code).toBe('wrong_credential_class');

    const c = client();
    await c.signIn(email, password);
    const balance = await c.get('/api/v1/me/balance');
    expect(balance.status).toBe(403);
    expect(balance.body.error.code).toBe('wrong_credential_class');
    const files = await c.get('/v1/files');
    expect(files.status).toBe(403);
  });

  it('refuses a signed file link on an API route', async () => {
    const res = await fetch(`${edge.url}/v1/files?token=eyJhbGciOiJIUzI1NiJ9.e30.x`);
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('wrong_credential_class');
  });

  it('keeps a session out of a workspace it is not a member of (404, as for keys)', async () => {
    const a = await owner();
    const b = await owner();
    const c = client();
    await c.signIn(a.email, a.password);
    for (const path of ['', '/keys', '/members', '/outputs', '/tasks', '/usage']) {
      const res = await c.get(`/api/v1/dashboard/workspaces/${b.ws.id}${path}`);
      expect(res.status).toBe(404);
    }
    expect((await c.get(`/api/v1/dashboard/workspaces/${a.ws.id}`)).status).toBe(200);
    expect((await c.get('/api/v1/dashboard/workspaces/ws_0000000000000000000000')).status).toBe(404);
  });
});

describe('the sweep of dead sessions', () => {
  it('removes expired sessions and those revoked a day ago, and keeps the live ones', async () => {
    const { user } = await owner();
    const make = () => sessionRepository.create(ctx.db, { userId: user.id, tokenHash: newOpaqueToken().hash });
    const [live, expired, revokedLongAgo, revokedNow] = await Promise.all([make(), make(), make(), make()]);
    await ctx.db.session.update({ where: { id: expired.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await ctx.db.session.update({
      where: { id: revokedLongAgo.id },
      data: { revokedAt: new Date(Date.now() - 25 * 3600_000) },
    });
    await sessionRepository.revoke(ctx.db, revokedNow.id);
    expect(await sessionRepository.purge(ctx.db)).toBeGreaterThanOrEqual(2);
    const left = (await ctx.db.session.findMany({ where: { userId: user.id } })).map((s) => s.id).sort();
    expect(left).toEqual([live.id, revokedNow.id].sort());
  });
});
