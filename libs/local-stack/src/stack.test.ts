import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REDIS_INSTALL_HINT, startStack } from './stack';

it('says how to install redis-server when it is not on PATH', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-stack-'));
  try {
    // PATH: a directory with no redis-server in it.
    await expect(startStack({ dataDir, persistent: false, env: { PATH: dataDir }, need: { postgres: false, redis: true, s3: false } })).rejects.toThrow(REDIS_INSTALL_HINT);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  expect(REDIS_INSTALL_HINT).toMatch(/apt-get install -y redis-server/);
});

it('brings up nothing for what the environment names', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-stack-'));
  const env = { DATABASE_URL: 'postgresql://db.example/x', REDIS_URL: 'redis://cache.example:6379', S3_ENDPOINT: 'https://s3.example' };
  const stack = await startStack({ dataDir, persistent: false, env });
  expect(stack.embedded).toEqual({ postgres: false, redis: false, s3: false });
  expect(stack.env).toMatchObject(env);
  await stack.stop();
});
