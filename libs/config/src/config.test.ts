import { randomBytes } from 'node:crypto';
import { ConfigError, REQUIRED_VARIABLES, loadConfig } from './config';
import { parseDuration } from './duration';

const base = {
  DATABASE_URL: 'postgresql://u@127.0.0.1:5432/db',
  REDIS_URL: 'redis://127.0.0.1:6379',
  SIGNING_SECRET: 'x'.repeat(32),
  ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
};

describe('loadConfig', () => {
  it('applies the defaults of DESIGN.md §6', () => {
    const c = loadConfig(base);
    expect(c.port).toBe(8080);
    expect(c.publicBaseUrl).toBe('http://localhost:8080');
    expect(c.fileBaseUrl).toBe('https://s3.us-east-1.amazonaws.com'); // no S3_ENDPOINT: AWS itself
    expect(loadConfig({ ...base, S3_ENDPOINT: 'http://127.0.0.1:9000/' }).fileBaseUrl).toBe('http://127.0.0.1:9000');
    expect(c.callbacks).toEqual({ retryScheduleMs: [0, 30_000, 120_000, 600_000, 3_600_000], timeoutMs: 10_000 });
    expect(c.outbound.allowCidrs).toEqual([]);
    expect(c.s3.forcePathStyle).toBe(false);
  });

  it('reads every variable into the nested object', () => {
    const c = loadConfig({
      ...base,
      PORT: '9000',
      PUBLIC_BASE_URL: 'https://api.example.com/',
      FILE_BASE_URL: 'https://files.example.com',
      S3_ENDPOINT: 'http://127.0.0.1:9001',
      S3_FORCE_PATH_STYLE: 'true',
      CALLBACK_RETRY_SCHEDULE: '0,300ms,1s',
      OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8, ::1',
      EVALUATE_CONCURRENCY: '7',
    });
    expect(c.port).toBe(9000);
    expect(c.publicBaseUrl).toBe('https://api.example.com');
    expect(c.fileBaseUrl).toBe('https://files.example.com');
    expect(c.s3).toMatchObject({ endpoint: 'http://127.0.0.1:9001', forcePathStyle: true });
    expect(c.callbacks.retryScheduleMs).toEqual([0, 300, 1000]);
    expect(c.outbound.allowCidrs).toEqual(['127.0.0.0/8', '::1']);
    expect(c.concurrency.evaluate).toBe(7);
  });

  it('lists every bad variable at once, without echoing secrets', () => {
    let error: unknown;
    try {
      loadConfig({
        PORT: 'eighty',
        DATABASE_URL: 'mysql://x',
        SIGNING_SECRET: 'short-secret',
        CALLBACK_RETRY_SCHEDULE: '0,soon',
        OUTBOUND_ALLOW_CIDRS: '10.0.0.0/99',
        LOG_LEVEL: 'loud',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const name of [
      'PORT',
      'DATABASE_URL',
      'REDIS_URL',
      'SIGNING_SECRET',
      'CALLBACK_RETRY_SCHEDULE',
      'OUTBOUND_ALLOW_CIDRS',
      'LOG_LEVEL',
    ]) {
      expect(problems).toContain(name);
    }
    expect(problems).toContain('REDIS_URL is required');
    expect(problems).not.toContain('short-secret');
  });

  it("reads TRUST_PROXY as Express's trust proxy (default off) and PASSWORD_HASH_CONCURRENCY (default 1)", () => {
    expect(loadConfig(base)).toMatchObject({ trustProxy: false, passwordHashConcurrency: 1 });
    expect(loadConfig({ ...base, TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ ...base, TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ ...base, TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::/8' }).trustProxy).toEqual([
      'loopback',
      '10.0.0.0/8',
      'fd00::/8',
    ]);
    expect(loadConfig({ ...base, PASSWORD_HASH_CONCURRENCY: '2' }).passwordHashConcurrency).toBe(2);
    expect(() => loadConfig({ ...base, TRUST_PROXY: 'loopback,proxy.internal' })).toThrow(
      /TRUST_PROXY.*proxy\.internal/,
    );
    expect(() => loadConfig({ ...base, PASSWORD_HASH_CONCURRENCY: '0' })).toThrow(/PASSWORD_HASH_CONCURRENCY/);
  });

  it('reads TASK_MAX_RESUBMITS (default 2), a whole number 0..10', () => {
    expect(loadConfig(base).tasks.maxResubmits).toBe(2);
    expect(loadConfig({ ...base, TASK_MAX_RESUBMITS: '0' }).tasks.maxResubmits).toBe(0);
    for (const bad of ['-1', '11', '1.5', 'two'])
      expect(() => loadConfig({ ...base, TASK_MAX_RESUBMITS: bad })).toThrow(/TASK_MAX_RESUBMITS/);
  });

  it('reads ENCRYPTION_KEYS as key ids and 32-byte keys, the first one sealing; a bad list is named, unechoed', () => {
    const k2 = randomBytes(32);
    const k1 = randomBytes(32);
    const c = loadConfig({ ...base, ENCRYPTION_KEYS: `k2:${k2.toString('base64')}, k1:${k1.toString('base64url')}` });
    expect(c.encryptionKeys).toEqual([
      { id: 'k2', key: k2 },
      { id: 'k1', key: k1 },
    ]);
    const short = randomBytes(16).toString('base64');
    for (const [value, why] of [
      [`k1:${short}`, /ENCRYPTION_KEYS: key "k1" must be 32 bytes/],
      [`k1:${k1.toString('base64')},k1:${k2.toString('base64')}`, /ENCRYPTION_KEYS: key id "k1" appears twice/],
      [k1.toString('base64'), /ENCRYPTION_KEYS: entry 1 must be <key id>:<base64 key>/],
      [`bad id:${k1.toString('base64')}`, /ENCRYPTION_KEYS: entry 1 must be/],
      [' , ', /ENCRYPTION_KEYS: must list at least one/],
    ] as const) {
      expect(() => loadConfig({ ...base, ENCRYPTION_KEYS: value })).toThrow(why);
      const message = (() => {
        try {
          loadConfig({ ...base, ENCRYPTION_KEYS: value });
        } catch (e) {
          return (e as Error).message;
        }
      })();
      expect(message).not.toContain(short);
      expect(message).not.toContain(k1.toString('base64'));
    }
    const { ENCRYPTION_KEYS: _, ...without } = base;
    expect(() => loadConfig(without)).toThrow(/ENCRYPTION_KEYS is required/);
  });

  it('reads SMTP_URL and MAIL_FROM, refusing other schemes, header injection and echoing no SMTP password', () => {
    expect(loadConfig(base).mail).toEqual({ smtpUrl: undefined, from: 'gensvc <no-reply@localhost>' });
    const mail = { SMTP_URL: 'smtps://u:p@smtp.example.com:465', MAIL_FROM: 'Gensvc <no-reply@example.com>' };
    expect(loadConfig({ ...base, ...mail }).mail).toEqual({
      smtpUrl: 'smtps://u:p@smtp.example.com:465',
      from: 'Gensvc <no-reply@example.com>',
    });
    expect(loadConfig({ ...base, MAIL_FROM: 'ops@example.com' }).mail.from).toBe('ops@example.com');
    for (const bad of ['Gensvc <a@b>\r\nBcc: x@y', 'not an address', 'a@b, c@d']) {
      expect(() => loadConfig({ ...base, MAIL_FROM: bad })).toThrow(/MAIL_FROM/);
    }
    let problem = '';
    try {
      loadConfig({ ...base, SMTP_URL: 'http://user:hunter2@smtp.example.com' });
    } catch (e) {
      problem = (e as ConfigError).message;
    }
    expect(problem).toMatch(/SMTP_URL: must be a URL with scheme smtp or smtps/);
    expect(problem).not.toContain('hunter2');
  });

  it('reads DATABASE_POOLER (or pgbouncer=true in the URL) and DIRECT_DATABASE_URL, defaulting to DATABASE_URL', () => {
    expect(loadConfig(base)).toMatchObject({ databasePooler: 'none', directDatabaseUrl: base.DATABASE_URL });
    const pooled = 'postgresql://u:pw@bouncer:6432/db';
    const direct = 'postgresql://u:pw@postgres:5432/db';
    expect(
      loadConfig({ ...base, DATABASE_URL: pooled, DATABASE_POOLER: 'transaction', DIRECT_DATABASE_URL: direct }),
    ).toMatchObject({ databaseUrl: pooled, databasePooler: 'transaction', directDatabaseUrl: direct });
    const flagged = `${pooled}?pgbouncer=true`;
    expect(loadConfig({ ...base, DATABASE_URL: flagged }).databasePooler).toBe('transaction');
    expect(loadConfig({ ...base, DATABASE_URL: flagged, DATABASE_POOLER: 'none' }).databasePooler).toBe('none');
    const bad = () => loadConfig({ ...base, DATABASE_POOLER: 'session', DIRECT_DATABASE_URL: 'mysql://u:secret@x/db' });
    expect(bad).toThrow(ConfigError);
    expect(bad).toThrow(/DATABASE_POOLER/);
    expect(bad).toThrow(/DIRECT_DATABASE_URL: must be a URL with scheme postgres or postgresql/);
    expect(bad).not.toThrow(/secret/);
  });

  it('knows which variables have no default', () => {
    expect([...REQUIRED_VARIABLES].sort()).toEqual(['DATABASE_URL', 'ENCRYPTION_KEYS', 'REDIS_URL', 'SIGNING_SECRET']);
  });
});

describe('parseDuration', () => {
  it.each([
    ['0', 0],
    ['30s', 30_000],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['30d', 2_592_000_000],
    ['250ms', 250],
    ['45', 45_000],
  ])('%s is %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms));
  it.each(['', 'soon', '-1s', '1w'])('rejects %j', (text) => expect(parseDuration(text)).toBeNull());
});
