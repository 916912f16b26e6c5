import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { privateAncestor, REDIS_INSTALL_HINT, startStack } from './stack';

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

describe('privateAncestor', () => {
  it('finds the first directory others cannot enter on the way to a path', () => {
    const top = mkdtempSync(join(tmpdir(), 'gensvc-reach-'));
    try {
      chmodSync(top, 0o755);
      mkdirSync(join(top, 'open', 'deeper'), { recursive: true });
      expect(privateAncestor(join(top, 'open', 'deeper', 'file'))).toBeNull();
      chmodSync(join(top, 'open'), 0o700);
      expect(privateAncestor(join(top, 'open', 'deeper', 'file'))).toEqual({ dir: join(top, 'open'), mode: '0700' });
      // Its owner enters it (Postgres's own data directory is 0700 and its own).
      const { uid, gid } = { uid: process.getuid!(), gid: process.getgid!() };
      expect(privateAncestor(join(top, 'open', 'deeper', 'file'), { uid, gid })).toBeNull();
      expect(privateAncestor(join(top, 'not-yet', 'file'))).toBeNull();
    } finally {
      rmSync(top, { recursive: true, force: true });
    }
  });
});
