// Forgotten passwords through the dashboard's JSON routes and a real mail sender and SMTP server: a one-hour,
// single-use link mailed to the account's address sets the password and ends every session; the request's answer
// never tells whether an account has the address.
import { hashToken, linkToken } from '@gensvc/auth';
import { createQueues, type Queues } from '@gensvc/queue';
import {
  awaitMail,
  deleteKeys,
  eventually,
  linkIn,
  mailTo,
  makeKey,
  makeMember,
  makeWorkspace,
  startMailSender,
  useTestContext,
  type ServiceProcess,
} from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { DashboardClient } from './dashboard-test-support';

const ctx = useTestContext();
let edge: EdgeUnderTest;
let mailSender: ServiceProcess;
let queues: Queues;

beforeAll(async () => {
  [edge, mailSender] = await Promise.all([startEdge(ctx), startMailSender(ctx)]);
  queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
}, 120_000);
afterAll(async () => {
  await queues.close();
  await edge.close();
  await mailSender.stop();
});
beforeEach(() => deleteKeys(ctx.redis, `${ctx.config.queuePrefix}:*login:*`));

const RESET = '/api/v1/dashboard/password-reset';

/** A browser on the sign-in page: the page's GET set the CSRF cookie. */
async function signInPage() {
  const c = new DashboardClient(edge.url);
  await c.get('/api/v1/dashboard/session');
  return c;
}

async function person() {
  const ws = await makeWorkspace(ctx.db);
  return makeMember(ctx.db, ws.id, 'member');
}

/** Every mail job has run: the reset jobs of a request were taken and finished (or found nothing to send). */
const mailQueueIdle = () =>
  eventually(
    async () => {
      const counts = await queues.get('mail').getJobCounts('wait', 'active', 'delayed', 'prioritized');
      return Object.values(counts).every((n) => n === 0);
    },
    'the mail queue to be idle',
    15_000,
  );

const tokenOf = (link: string) => link.split('/').pop()!;

it('mails a link that sets the password once and ends every session of the person', async () => {
  const p = await person();
  const [one, two] = [new DashboardClient(edge.url), new DashboardClient(edge.url)];
  expect((await one.signIn(p.email, p.password)).status).toBe(200);
  expect((await two.signIn(p.email, p.password)).status).toBe(200);

  const asked = await (await signInPage()).post(RESET, { email: p.email.toUpperCase() });
  expect(asked.status).toBe(202);
  const mail = await awaitMail(p.email);
  expect(mail.subject).toBe('Set a new gensvc password');
  const link = linkIn(mail, `${ctx.config.publicBaseUrl}/dashboard/reset-password/`);
  const token = tokenOf(link);
  expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  // Stored hashed only.
  expect(await ctx.db.passwordReset.count({ where: { tokenHash: token } })).toBe(0);
  const row = await ctx.db.passwordReset.findFirstOrThrow({ where: { userId: p.user.id } });
  expect(row.expiresAt.getTime() - row.createdAt.getTime()).toBe(3600_000);

  const page = await signInPage();
  expect((await page.get(`${RESET}/${token}`)).body).toEqual({ valid: true });
  expect((await page.post(`${RESET}/${token}`, { password: 'short' })).status).toBe(400);
  const set = await page.post(`${RESET}/${token}`, { password: 'a brand new password' });
  expect(set.status).toBe(204);
  expect((await one.get('/api/v1/dashboard/session')).status).toBe(401);
  expect((await two.get('/api/v1/dashboard/session')).status).toBe(401);
  expect((await new DashboardClient(edge.url).signIn(p.email, p.password)).status).toBe(401);
  expect((await new DashboardClient(edge.url).signIn(p.email, 'a brand new password')).status).toBe(200);

  // Once: a second use is refused and changes nothing.
  const reused = await page.post(`${RESET}/${token}`, { password: 'yet another password' });
  expect(reused.status).toBe(404);
  expect(reused.body.error).toMatchObject({ type: expect.any(String), code: 'reset_link_not_found' });
  expect((await new DashboardClient(edge.url).signIn(p.email, 'a brand new password')).status).toBe(200);
}, 60_000);

it('answers an unknown address exactly as a known one, and mails nothing to it', async () => {
  const p = await person();
  const stranger = `nobody-${Date.now()}@example.com`;
  const page = await signInPage();
  const known = await page.post(RESET, { email: p.email });
  const unknown = await page.post(RESET, { email: stranger });
  expect(unknown.status).toBe(known.status);
  expect(unknown.body).toEqual(known.body);
  const headerNames = (h: Headers) =>
    [...h.keys()].filter((k) => !['date', 'x-request-id', 'set-cookie', 'content-length'].includes(k)).sort();
  expect(headerNames(unknown.headers)).toEqual(headerNames(known.headers));
  // The same work: a row (never mailed) and a job.
  expect(await ctx.db.passwordReset.count({ where: { userId: null } })).toBeGreaterThanOrEqual(1);
  await awaitMail(p.email);
  await mailQueueIdle();
  expect(await mailTo(stranger)).toEqual([]);
}, 60_000);

it('refuses expired, unknown and malformed links, and a link made for no account, changing nothing', async () => {
  const p = await person();
  const page = await signInPage();
  await page.post(RESET, { email: p.email });
  const token = tokenOf(linkIn(await awaitMail(p.email), ctx.config.publicBaseUrl));
  await ctx.db.passwordReset.updateMany({
    where: { userId: p.user.id },
    data: { expiresAt: new Date(Date.now() - 1) },
  });
  // A row made for an address without an account: its link (remade here from the server's secret) works for nobody.
  await page.post(RESET, { email: `nobody-${Date.now()}@example.com` });
  const userless = await ctx.db.passwordReset.findFirstOrThrow({ where: { userId: null } });
  const noAccount = linkToken(ctx.env.SIGNING_SECRET!, 'password-reset', userless.id).token;
  expect(await ctx.db.passwordReset.count({ where: { tokenHash: hashToken(noAccount) } })).toBe(1);
  for (const t of [token, noAccount, 'A'.repeat(43), 'short', 'x'.repeat(400)]) {
    const seen = await page.get(`${RESET}/${t}`);
    const used = await page.post(`${RESET}/${t}`, { password: 'a brand new password' });
    for (const res of [seen, used]) {
      expect({ t, status: res.status, code: res.body.error.code }).toEqual({
        t,
        status: 404,
        code: 'reset_link_not_found',
      });
      expect(res.body.error.request_id).toBe(res.headers.get('x-request-id'));
    }
  }
  expect((await new DashboardClient(edge.url).signIn(p.email, p.password)).status).toBe(200);
}, 60_000);

it('refuses bad bodies, a missing CSRF token and an API key with the error shape', async () => {
  const p = await person();
  const before = await ctx.db.passwordReset.count();
  const page = await signInPage();
  const bad = [
    await page.post(RESET, {}),
    await page.post(RESET, { email: 'not an address' }),
    await page.post(RESET, { email: p.email, extra: 1 }),
    await page.post(RESET, { email: `${'a'.repeat(70_000)}@example.com` }),
    await page.post(`${RESET}/${'A'.repeat(43)}`, { password: 'p'.repeat(70_000) }),
    await page.post(`${RESET}/${'A'.repeat(43)}`, { password: 'a brand new password', email: p.email }),
  ];
  expect(bad.map((r) => r.status)).toEqual([400, 400, 400, 413, 413, 400]);
  for (const r of bad) expect(r.body.error).toMatchObject({ type: expect.any(String), code: expect.any(String) });
  const noCsrf = await page.request('POST', RESET, { email: p.email }, { 'x-csrf-token': '' });
  expect(noCsrf.status).toBe(403);
  expect(noCsrf.body.error.code).toBe('csrf_failed');

  const { secret } = await makeKey(ctx.db, (await makeWorkspace(ctx.db)).id);
  for (const [method, path] of [
    ['POST', RESET],
    ['GET', `${RESET}/${'A'.repeat(43)}`],
    ['POST', `${RESET}/${'A'.repeat(43)}`],
  ] as const) {
    const res = await fetch(`${edge.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: method === 'POST' ? JSON.stringify({ email: p.email, password: 'a brand new password' }) : undefined,
    });
    expect({ path, status: res.status }).toEqual({ path, status: 403 });
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('wrong_credential_class');
  }
  expect(await ctx.db.passwordReset.count()).toBe(before);
}, 60_000);

it('throttles requests per address alike for known and unknown addresses, and bounds mails per hour', async () => {
  const p = await person();
  const stranger = `nobody-${Date.now()}@example.com`;
  const page = await signInPage();
  const statuses = async (email: string) => {
    const out: number[] = [];
    for (let i = 0; i < 11; i++) out.push((await page.post(RESET, { email })).status);
    return out;
  };
  const known = await statuses(p.email);
  await deleteKeys(ctx.redis, `${ctx.config.queuePrefix}:reset:login:address:*`);
  expect(await statuses(stranger)).toEqual(known);
  expect(known.slice(0, 10).every((s) => s === 202)).toBe(true);
  expect(known[10]).toBe(429);
  await mailQueueIdle();
  // Ten links were made for the account; three reached its inbox.
  expect(await ctx.db.passwordReset.count({ where: { userId: p.user.id } })).toBe(10);
  expect(await mailTo(p.email)).toHaveLength(3);
}, 60_000);
