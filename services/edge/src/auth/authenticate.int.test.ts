import { newApiKey } from '@gensvc/auth';
import { makeKey, makeWorkspace, useTestContext, jsonOf } from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../edge-under-test';

const ctx = useTestContext();
let edge: EdgeUnderTest;
beforeAll(async () => (edge = await startEdge(ctx)));
afterAll(() => edge.close());

const balance = (headers: Record<string, string>) => fetch(`${edge.url}/api/v1/me/balance`, { headers });

async function expectError(res: Response, status: number, type: string, code: string, param: string | null = null) {
  expect(res.status).toBe(status);
  const requestId = res.headers.get('x-request-id');
  expect(requestId).toBeTruthy();
  expect(await jsonOf(res)).toEqual({
    error: { type, code, message: expect.any(String), param, request_id: requestId },
  });
}

describe('bearer authentication on native routes', () => {
  it('answers 401 missing_api_key without credentials', async () => {
    await expectError(await balance({}), 401, 'authentication_error', 'missing_api_key');
  });

  it('answers 401 malformed_api_key for anything but "Bearer <the whole key>"', async () => {
    const ws = await makeWorkspace(ctx.db);
    const { secret } = await makeKey(ctx.db, ws.id);
    for (const value of [
      `bearer ${secret}`,
      `Bearer  ${secret}`,
      `Bearer ${secret.slice(0, 20)}`,
      `Token ${secret}`,
      secret,
      'Bearer',
      `Bearer ${secret},x`,
    ]) {
      await expectError(await balance({ authorization: value }), 401, 'authentication_error', 'malformed_api_key');
    }
  });

  it('answers 401 invalid_api_key for a well-formed key nobody issued', async () => {
    await expectError(
      await balance({ authorization: `Bearer ${newApiKey().secret}` }),
      401,
      'authentication_error',
      'invalid_api_key',
    );
  });

  it('answers 401 revoked_api_key and expired_api_key', async () => {
    const ws = await makeWorkspace(ctx.db);
    const revoked = await makeKey(ctx.db, ws.id, { revoked: true });
    const expired = await makeKey(ctx.db, ws.id, { expiresAt: new Date(Date.now() - 1000) });
    await expectError(
      await balance({ authorization: `Bearer ${revoked.secret}` }),
      401,
      'authentication_error',
      'revoked_api_key',
    );
    await expectError(
      await balance({ authorization: `Bearer ${expired.secret}` }),
      401,
      'authentication_error',
      'expired_api_key',
    );
  });

  it('answers 402 spending_cap_exhausted once the key has spent its cap, and 200 just below it', async () => {
    const ws = await makeWorkspace(ctx.db);
    const spent = await makeKey(ctx.db, ws.id, { spendCap: 1_000_000n, spent: 1_000_000n });
    const below = await makeKey(ctx.db, ws.id, { spendCap: 1_000_000n, spent: 999_999n });
    await expectError(
      await balance({ authorization: `Bearer ${spent.secret}` }),
      402,
      'billing_error',
      'spending_cap_exhausted',
    );
    expect((await balance({ authorization: `Bearer ${below.secret}` })).status).toBe(200);
  });

  it('answers 403 insufficient_scope naming the missing scope', async () => {
    const ws = await makeWorkspace(ctx.db);
    const { secret } = await makeKey(ctx.db, ws.id, { scopes: ['llm.evaluate', 'files.write'] });
    const res = await balance({ authorization: `Bearer ${secret}` });
    expect(res.status).toBe(403);
    const body = await jsonOf(res);
    expect(body.error).toMatchObject({ type: 'permission_error', code: 'insufficient_scope', param: 'account.read' });
    expect(body.error.message).toContain('account.read');
  });

  it("reads the balance of the key's own workspace in the DESIGN.md shape", async () => {
    const ws = await makeWorkspace(ctx.db, { balance: 12_345_678n });
    const { key, secret } = await makeKey(ctx.db, ws.id, {
      spendCap: 5_000_000n,
      spent: 1_250_000n,
      scopes: ['account.read'],
    });
    const res = await balance({ authorization: `Bearer ${secret}` });
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toEqual({
      object: 'balance',
      workspace_id: ws.id,
      amount: 12.345678,
      currency: 'USD',
      key: { spend_cap: 5, spent: 1.25 },
    });
    await new Promise((r) => setTimeout(r, 100));
    expect((await ctx.db.apiKey.findUniqueOrThrow({ where: { id: key.id } })).lastUsedAt).toBeInstanceOf(Date);
    const uncapped = await makeKey(ctx.db, ws.id);
    expect((await jsonOf(await balance({ authorization: `Bearer ${uncapped.secret}` }))).key).toEqual({
      spend_cap: null,
      spent: 0,
    });
  });

  it('keeps the old secret through its grace period after a rotation, then refuses it as expired', async () => {
    const ws = await makeWorkspace(ctx.db);
    const { key, secret: old } = await makeKey(ctx.db, ws.id);
    const next = newApiKey();
    await ctx.db.apiKey.update({
      where: { id: key.id },
      data: {
        hash: next.hash,
        prefix: next.prefix,
        previousHash: key.hash,
        previousExpiresAt: new Date(Date.now() + 60_000),
      },
    });
    expect((await balance({ authorization: `Bearer ${old}` })).status).toBe(200);
    expect((await balance({ authorization: `Bearer ${next.secret}` })).status).toBe(200);
    await ctx.db.apiKey.update({ where: { id: key.id }, data: { previousExpiresAt: new Date(Date.now() - 1) } });
    edge.deps.keyCache.invalidate(key.id);
    await expectError(
      await balance({ authorization: `Bearer ${old}` }),
      401,
      'authentication_error',
      'expired_api_key',
    );
  });
});

describe('vendor credential conventions', () => {
  // Against the real vendor routes with no body: 400 is the route refusing the request itself, which it reaches only
  // once the key has passed authentication and the llm.chat scope check (a refusal there is 401 or 403).
  const AUTHENTICATED = 400;

  it('Anthropic-style routes read x-api-key (or a bearer key, as its SDK does), errors Anthropic-shaped', async () => {
    const ws = await makeWorkspace(ctx.db);
    const { secret } = await makeKey(ctx.db, ws.id);
    const noChat = await makeKey(ctx.db, ws.id, { scopes: ['account.read'] });
    const post = (headers: Record<string, string>) => fetch(`${edge.url}/v1/messages`, { method: 'POST', headers });
    expect((await post({ 'x-api-key': secret })).status).toBe(AUTHENTICATED);
    expect((await post({ authorization: `Bearer ${secret}` })).status).toBe(AUTHENTICATED);
    // x-api-key wins
    expect((await post({ 'x-api-key': `gsk_${'x'.repeat(43)}`, authorization: `Bearer ${secret}` })).status).toBe(401);
    const none = await post({});
    expect(none.status).toBe(401);
    expect(await jsonOf(none)).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: expect.stringContaining('x-api-key') },
    });
    const malformed = await post({ 'x-api-key': 'sk-ant-nope' });
    expect(await jsonOf(malformed)).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: expect.any(String) },
    });
    const forbidden = await post({ 'x-api-key': noChat.secret });
    expect(forbidden.status).toBe(403);
    expect(await jsonOf(forbidden)).toEqual({
      type: 'error',
      error: { type: 'permission_error', message: expect.stringContaining('llm.chat') },
    });
  });

  it("Google-style routes take x-goog-api-key or a bearer token and answer in Google's shape", async () => {
    const ws = await makeWorkspace(ctx.db);
    const { secret } = await makeKey(ctx.db, ws.id);
    const post = (headers: Record<string, string>) =>
      fetch(`${edge.url}/v1beta/models/m:generateContent`, { method: 'POST', headers });
    expect((await post({ 'x-goog-api-key': secret })).status).toBe(AUTHENTICATED);
    expect((await post({ authorization: `Bearer ${secret}` })).status).toBe(AUTHENTICATED);
    const unknown = await post({ 'x-goog-api-key': newApiKey().secret });
    expect(unknown.status).toBe(401);
    expect(await jsonOf(unknown)).toEqual({
      error: { code: 401, message: 'The API key is not valid.', status: 'UNAUTHENTICATED' },
    });
    const none = await post({});
    expect(await jsonOf(none)).toEqual({
      error: { code: 401, message: expect.stringContaining('x-goog-api-key'), status: 'UNAUTHENTICATED' },
    });
  });
});
