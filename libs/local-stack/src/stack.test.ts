import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { privateAncestor, REDIS_INSTALL_HINT, startStack } from './stack';

it('says how to install redis-server when it is not on PATH', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-stack-'));
  try {
    // PATH: a directory with no redis-server in it.
    await expect(
      startStack({
        dataDir,
        persistent: false,
        env: { PATH: dataDir },
        need: { postgres: false, redis: true, s3: false },
      }),
    ).rejects.toThrow(REDIS_INSTALL_HINT);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  expect(REDIS_INSTALL_HINT).toMatch(/apt-get install -y redis-server/);
});

it('brings up nothing for what the environment names', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-stack-'));
  const env = {
    DATABASE_URL: 'postgresql://db.example/x',
    REDIS_URL: 'redis://cache.example:6379',
    S3_ENDPOINT: 'https://s3.example',
  };
  const stack = await startStack({ dataDir, persistent: false, env });
  expect(stack.embedded).toEqual({ postgres: false, redis: false, s3: false, smtp: false });
  expect(stack.env).toMatchObject(env);
  await stack.stop();
});

it('keeps the embedded S3 in s3Dir when given, and removes it with the data on stop', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-stack-'));
  const s3Dir = mkdtempSync(join(tmpdir(), 'gensvc-stack-s3-'));
  const stack = await startStack({
    dataDir,
    s3Dir,
    persistent: false,
    env: { S3_BUCKET: 'objects' },
    need: { postgres: false, redis: false, s3: true },
  });
  try {
    expect(stack.embedded.s3).toBe(true);
    expect(readdirSync(s3Dir)).toEqual(['objects']);
    expect(existsSync(join(dataDir, 's3'))).toBe(false);
  } finally {
    await stack.stop();
  }
  expect([existsSync(dataDir), existsSync(s3Dir)]).toEqual([false, false]);
});

/** The pid of the Redis at `url`, from its INFO. */
function redisPid(url: string): Promise<number> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = createConnection({ port: Number(port), host: '127.0.0.1' }, () => socket.write('INFO server\r\n'));
    let text = '';
    socket.on('data', (d) => {
      text += String(d);
      const pid = /process_id:(\d+)/.exec(text);
      if (pid) {
        socket.destroy();
        resolve(Number(pid[1]));
      }
    });
    socket.on('error', reject);
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

it('a persistent Redis whose data directory was deleted under it still exits on SIGTERM', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-stack-'));
  const stack = await startStack({
    dataDir,
    persistent: true,
    env: {},
    need: { postgres: false, redis: true, s3: false },
  });
  const pid = await redisPid(stack.env.REDIS_URL!);
  try {
    rmSync(dataDir, { recursive: true, force: true });
    // SIGTERM alone, as a supervisor that is itself exiting sends it (not stop(), which would SIGKILL after its grace).
    process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + 20_000;
    while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(alive(pid)).toBe(false);
  } finally {
    if (alive(pid)) process.kill(pid, 'SIGKILL');
    await stack.stop();
  }
}, 30_000);

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
