import { ConfigError, loadConfig } from './config';

const base = {
  DATABASE_URL: 'postgresql://db/gensvc',
  REDIS_URL: 'redis://redis:6379',
  SIGNING_SECRET: 'x'.repeat(32),
  ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
  S3_ENDPOINT: 'http://minio:9000',
};

describe('FILE_BASE_URL', () => {
  it('is required in production (NODE_ENV=production, as the image sets it), with a message naming it', () => {
    let error: unknown;
    try {
      loadConfig({ ...base, NODE_ENV: 'production' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      expect.stringMatching(/^FILE_BASE_URL is required when NODE_ENV=production: the public, path-style address/),
    ]);
    expect(
      loadConfig({ ...base, NODE_ENV: 'production', FILE_BASE_URL: 'https://files.example.com/' }).fileBaseUrl,
    ).toBe('https://files.example.com');
  });

  it('is listed with every other problem, not instead of them', () => {
    expect(() => loadConfig({ ...base, NODE_ENV: 'production', REDIS_URL: 'http://nope' })).toThrow(
      /REDIS_URL[\s\S]*FILE_BASE_URL is required/,
    );
  });

  it('defaults to S3_ENDPOINT locally (npm start, tests), where the store is reachable as it is', () => {
    expect(loadConfig(base).fileBaseUrl).toBe('http://minio:9000');
  });

  it('gives the ops port: 9464 unless OPS_PORT says (0: any free port)', () => {
    expect(loadConfig(base).opsPort).toBe(9464);
    expect(loadConfig({ ...base, OPS_PORT: '0' }).opsPort).toBe(0);
    expect(() => loadConfig({ ...base, OPS_PORT: '70000' })).toThrow(/OPS_PORT/);
  });
});
