// The callback secret's retirement over a real socket: POST /api/v1/me/callback-secret/retire-previous ends a
// rotation's overlap at once, under the rotate route's rules (scope tasks.write, an admin's or the CLI's key).
import { callbackRepository } from '@gensvc/db';
import { jsonOf, makeCustomer, makeKey, makeMember, useTestContext } from '@gensvc/testing';
import { newCallbackSecret } from '@gensvc/webhooks';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { bearer } from '../files/files-test-support';

const ctx = useTestContext();
let edge: EdgeUnderTest;
beforeAll(async () => {
  edge = await startEdge(ctx);
});
afterAll(async () => {
  await edge?.close();
});

const RETIRE = '/api/v1/me/callback-secret/retire-previous';
const call = (path: string, secret?: string, method = 'POST') =>
  fetch(`${edge.url}${path}`, { method, headers: secret ? bearer(secret) : {} });

async function errorOf(res: Response, status: number, code: string) {
  const body = await jsonOf(res);
  expect({ status: res.status, keys: Object.keys(body.error ?? {}).sort() }).toEqual({
    status,
    keys: ['code', 'message', 'param', 'request_id', 'type'],
  });
  expect(body.error).toMatchObject({ code, message: expect.any(String), request_id: res.headers.get('x-request-id') });
}

it('ends the overlap at once: the current secret alone signs, and a second call changes nothing', async () => {
  const c = await makeCustomer(ctx.db);
  const first = await jsonOf(await call('/api/v1/me/callback-secret', c.secret, 'GET'));
  const rotated = await jsonOf(await call('/api/v1/me/callback-secret/rotate', c.secret));
  expect(rotated.previous_secret_expires_at).not.toBeNull();
  expect(await callbackRepository.signingSecrets(ctx.db, ctx.secrets, c.ws.id, newCallbackSecret)).toEqual([
    rotated.secret,
    first.secret,
  ]);

  const res = await call(RETIRE, c.secret);
  expect(res.status).toBe(200);
  const retired = await jsonOf(res);
  expect(retired).toEqual({ ...rotated, previous_secret_expires_at: null });
  expect(await callbackRepository.signingSecrets(ctx.db, ctx.secrets, c.ws.id, newCallbackSecret)).toEqual([
    rotated.secret,
  ]);
  const row = await ctx.db.callbackSecret.findUniqueOrThrow({ where: { workspaceId: c.ws.id } });
  expect(row).toMatchObject({ previousSecret: null, previousExpiresAt: null });
  expect(row.secret).not.toContain(rotated.secret);

  expect(await jsonOf(await call(RETIRE, c.secret))).toEqual(retired);
  expect(await jsonOf(await call('/api/v1/me/callback-secret', c.secret, 'GET'))).toEqual(retired);
});

it('makes the secret on first use, as a read does, with nothing to retire', async () => {
  const c = await makeCustomer(ctx.db);
  const made = await jsonOf(await call(RETIRE, c.secret));
  expect(made).toMatchObject({
    object: 'callback_secret',
    secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    previous_secret_expires_at: null,
    rotated_at: null,
  });
  expect(await jsonOf(await call('/api/v1/me/callback-secret', c.secret, 'GET'))).toEqual(made);
});

it("answers bad calls in the error shape, changing nothing: no key, no tasks.write, a member's key", async () => {
  const c = await makeCustomer(ctx.db);
  await call('/api/v1/me/callback-secret/rotate', c.secret);
  const before = await ctx.db.callbackSecret.findUniqueOrThrow({ where: { workspaceId: c.ws.id } });

  await errorOf(await call(RETIRE), 401, 'missing_api_key');
  const reader = await makeKey(ctx.db, c.ws.id, { scopes: ['tasks.read'] });
  await errorOf(await call(RETIRE, reader.secret), 403, 'insufficient_scope');
  const member = await makeMember(ctx.db, c.ws.id, 'member');
  const memberKey = await makeKey(ctx.db, c.ws.id);
  await ctx.db.apiKey.update({
    where: { id: memberKey.key.id },
    data: { creatorId: member.user.id, createdVia: 'dashboard' },
  });
  await errorOf(await call(RETIRE, memberKey.secret), 403, 'insufficient_role');
  await errorOf(await call(RETIRE, c.secret, 'GET'), 404, 'route_not_found');

  expect(await ctx.db.callbackSecret.findUniqueOrThrow({ where: { workspaceId: c.ws.id } })).toEqual(before);
  // An admin's key may.
  const admin = await makeMember(ctx.db, c.ws.id, 'admin');
  const adminKey = await makeKey(ctx.db, c.ws.id);
  await ctx.db.apiKey.update({
    where: { id: adminKey.key.id },
    data: { creatorId: admin.user.id, createdVia: 'dashboard' },
  });
  expect((await call(RETIRE, adminKey.secret)).status).toBe(200);
});
