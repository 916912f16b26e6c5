import { ConfigError, loadConfig } from './config';
import { parseRedisTarget, redisTargetUrl } from './redis-url';

const base = {
  DATABASE_URL: 'postgresql://u@127.0.0.1:5432/db',
  SIGNING_SECRET: 'x'.repeat(32),
  ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
};

describe('REDIS_URL and REDIS_CLUSTER', () => {
  it('keeps a single Redis as given', () => {
    expect(loadConfig({ ...base, REDIS_URL: 'redis://:pw@10.0.0.1:6380/2' }).redisUrl).toBe(
      'redis://:pw@10.0.0.1:6380/2',
    );
    expect(parseRedisTarget('rediss://cache:6379')).toEqual({ cluster: false, url: 'rediss://cache:6379' });
  });

  it('reads a cluster from redis+cluster:// seeds, or from one node with REDIS_CLUSTER=true', () => {
    expect(parseRedisTarget('rediss+cluster://app:p%40ss@a.example:7000,[::1]:7001')).toEqual({
      cluster: true,
      nodes: [
        { host: 'a.example', port: 7000 },
        { host: '::1', port: 7001 },
      ],
      tls: true,
      username: 'app',
      password: 'p@ss',
    });
    const flagged = loadConfig({ ...base, REDIS_URL: 'redis://:s3cret@10.0.0.5:7000', REDIS_CLUSTER: 'true' });
    expect(flagged.redisUrl).toBe('redis+cluster://:s3cret@10.0.0.5:7000');
    expect(parseRedisTarget(flagged.redisUrl)).toMatchObject({ cluster: true, password: 's3cret' });
    const seeds = 'redis+cluster://127.0.0.1:7000,127.0.0.1:7001';
    expect(redisTargetUrl(parseRedisTarget(seeds) as never)).toBe(seeds);
    // Without the flag a plain URL stays one Redis.
    expect(loadConfig({ ...base, REDIS_URL: 'redis://10.0.0.5:7000' }).redisUrl).toBe('redis://10.0.0.5:7000');
  });

  it('refuses what names no Redis, a bad seed, and a database on a cluster, without echoing the password', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig({ ...base, ...env });
      } catch (e) {
        if (e instanceof ConfigError) return e.problems.join('\n');
      }
      return 'accepted';
    };
    expect(problems({ REDIS_URL: 'http://cache:6379' })).toMatch(/^REDIS_URL: must be a redis:\/\//);
    expect(problems({ REDIS_URL: 'redis+cluster://:pw@a:7000,b' })).toMatch(/"b" is not a host:port/);
    expect(problems({ REDIS_URL: 'redis+cluster://:pw@a:7000,b' })).not.toMatch(/pw/);
    expect(problems({ REDIS_URL: 'redis+cluster://a:70000' })).toMatch(/is not a host:port/);
    expect(problems({ REDIS_URL: 'redis://a:7000/3', REDIS_CLUSTER: 'true' })).toMatch(/database/);
    expect(problems({ REDIS_URL: 'redis://a:7000', REDIS_CLUSTER: 'yes' })).toMatch(/^REDIS_CLUSTER/);
  });
});
