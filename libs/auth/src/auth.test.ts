import { randomBytes, scryptSync } from 'node:crypto';
import { SignJWT } from 'jose';
import { API_KEY_PATTERN, hashApiKey, newApiKey, parseBareKey, parseBearer, sameHash } from './api-key';
import { signFileToken, verifyFileToken } from './file-token';
import { hashPassword, PasswordHashing, verifyPassword } from './password';
import { deviceNonce, newDeviceToken } from './session-token';

describe('API keys', () => {
  it('makes a 256-bit secret, a display prefix and its SHA-256', () => {
    const k = newApiKey();
    expect(k.secret).toMatch(API_KEY_PATTERN);
    expect(Buffer.from(k.secret.slice(4), 'base64url')).toHaveLength(32);
    expect(k.secret.startsWith(k.prefix)).toBe(true);
    expect(k.prefix).toHaveLength(12);
    expect(k.hash).toBe(hashApiKey(k.secret));
    expect(k.hash).not.toContain(k.secret.slice(4));
    expect(newApiKey().secret).not.toBe(k.secret);
  });

  it('compares hashes in constant time and only equal ones match', () => {
    const a = newApiKey().hash;
    expect(sameHash(a, a)).toBe(true);
    expect(sameHash(a, newApiKey().hash)).toBe(false);
    expect(sameHash(a, 'abc')).toBe(false);
  });

  it('reads the bearer header exactly as spec section 5 says', () => {
    const { secret } = newApiKey();
    expect(parseBearer(`Bearer ${secret}`)).toEqual({ key: secret });
    expect(parseBearer(undefined)).toEqual({ problem: 'missing' });
    expect(parseBearer('')).toEqual({ problem: 'missing' });
    for (const bad of [
      `bearer ${secret}`,
      `Bearer  ${secret}`,
      `Bearer ${secret} `,
      `Basic ${secret}`,
      secret,
      `Bearer ${secret.slice(0, -1)}`,
      'Bearer ',
      `Bearer ${secret}x`,
    ]) {
      expect(parseBearer(bad)).toEqual({ problem: 'malformed' });
    }
    expect(parseBareKey(secret)).toEqual({ key: secret });
    expect(parseBareKey(`Bearer ${secret}`)).toEqual({ problem: 'malformed' });
  });
});

describe('passwords', () => {
  it('hashes with scrypt and verifies', async () => {
    const stored = await hashPassword('correct horse');
    expect(stored).toMatch(/^scrypt\$65536\$8\$2\$/);
    expect(stored).not.toContain('correct horse');
    await expect(verifyPassword('correct horse', stored)).resolves.toBe(true);
    await expect(verifyPassword('wrong horse', stored)).resolves.toBe(false);
    await expect(verifyPassword('x', 'plain')).resolves.toBe(false);
  });

  it('checks a hash made with other parameters by its own (N=2^17, r=8, p=1)', async () => {
    const salt = randomBytes(16);
    const key = scryptSync('correct horse', salt, 64, { N: 2 ** 17, r: 8, p: 1, maxmem: 256 * 2 ** 17 * 8 });
    const stored = ['scrypt', 2 ** 17, 8, 1, salt.toString('base64'), key.toString('base64')].join('$');
    await expect(verifyPassword('correct horse', stored)).resolves.toBe(true);
    await expect(verifyPassword('wrong horse', stored)).resolves.toBe(false);
  });
});

describe('password hashing within a budget', () => {
  it('runs one hash at a time, queues up to the limit, refuses more, verifies unknown accounts as false', async () => {
    const busy = new Error('busy');
    const hashing = new PasswordHashing({ concurrency: 1, queueLimit: 1, busy: () => busy });
    const stored = await hashing.hash('correct horse');
    const finished: string[] = [];
    const right = hashing.verify('correct horse', stored).then((ok) => {
      finished.push('right');
      return ok;
    });
    const unknown = hashing.verify('correct horse', null).then((ok) => {
      finished.push('unknown');
      return ok;
    });
    const refused = hashing.verify('correct horse', stored);
    await expect(refused).rejects.toBe(busy);
    expect(finished).toEqual([]);
    await expect(right).resolves.toBe(true);
    await expect(unknown).resolves.toBe(false);
    expect(finished).toEqual(['right', 'unknown']);
    // The queue has drained: the next hash is taken.
    await expect(hashing.verify('wrong horse', stored)).resolves.toBe(false);
  });
});

describe('device tokens', () => {
  it("pass only for the account they were issued for, under the server's secret", () => {
    const secret = 's'.repeat(32);
    const token = newDeviceToken(secret, 'Ada@Example.com');
    const nonce = deviceNonce(secret, 'ada@example.com', token);
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(token.startsWith(`${nonce}.`)).toBe(true);
    expect(deviceNonce(secret, 'eve@example.com', token)).toBeNull();
    expect(deviceNonce('t'.repeat(32), 'ada@example.com', token)).toBeNull();
    expect(deviceNonce(secret, 'ada@example.com', `${nonce}.${'A'.repeat(43)}`)).toBeNull();
    expect(deviceNonce(secret, 'ada@example.com', undefined)).toBeNull();
    expect(newDeviceToken(secret, 'ada@example.com')).not.toBe(token);
  });
});

describe('file tokens', () => {
  const secret = 's'.repeat(32);
  it('round-trips and rejects tampering, expiry, other secrets and other algorithms', async () => {
    const { token, expiresAt } = await signFileToken(secret, { fileId: 'file_1', workspaceId: 'ws_1' });
    expect(expiresAt.getTime() - Date.now()).toBeGreaterThan(3590_000);
    await expect(verifyFileToken(secret, token)).resolves.toEqual({ fileId: 'file_1', workspaceId: 'ws_1' });
    const [h, p, s] = token.split('.');
    const forged = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), sub: 'file_2' }),
    ).toString('base64url');
    await expect(verifyFileToken(secret, `${h}.${forged}.${s}`)).resolves.toBeNull();
    await expect(verifyFileToken('t'.repeat(32), token)).resolves.toBeNull();
    const expired = await signFileToken(secret, { fileId: 'file_1', workspaceId: 'ws_1' }, -10);
    await expect(verifyFileToken(secret, expired.token)).resolves.toBeNull();
    const hs512 = await new SignJWT({ ws: 'ws_1', scope: 'download' })
      .setProtectedHeader({ alg: 'HS512' })
      .setSubject('file_1')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(secret));
    await expect(verifyFileToken(secret, hs512)).resolves.toBeNull();
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${p}.`;
    await expect(verifyFileToken(secret, none)).resolves.toBeNull();
  });

  it('is the very token jose signs for the same claims and times', async () => {
    const { token } = await signFileToken(secret, { fileId: 'file_1', workspaceId: 'ws_1' });
    const { iat, exp } = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as {
      iat: number;
      exp: number;
    };
    expect(exp - iat).toBe(3600);
    const jose = await new SignJWT({ ws: 'ws_1', scope: 'download' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('file_1')
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(new TextEncoder().encode(secret));
    expect(token).toBe(jose);
  });
});
