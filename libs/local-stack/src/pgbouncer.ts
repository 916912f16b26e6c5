// PgBouncer in transaction mode in front of a Postgres (Debian's `pgbouncer`, no prepared-statement tracking), for
// the tests that prove gensvc runs behind a transaction-mode pooler. Every database of that Postgres is reachable
// through it under its own name; clients sign in with the Postgres user and password of the URL given (md5).
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './free-port';
import { stopChild, waitForPort } from './stack';

export const PGBOUNCER_INSTALL_HINT =
  'pgbouncer was not found (PGBOUNCER_PATH, PATH, /usr/sbin): install it (Debian/Ubuntu: apt-get install -y ' +
  'pgbouncer; macOS: brew install pgbouncer); npm test installs it when run as root.';

export interface PgBouncer {
  /** `databaseUrl` with PgBouncer's host and port: the same user, password and database. */
  url: string;
  /** The admin console (database `pgbouncer`): SHOW POOLS, SHOW STATS. Simple-query protocol only. */
  adminUrl: string;
  stop(): Promise<void>;
}

/** The pgbouncer binary: PGBOUNCER_PATH, else on PATH, else Debian's /usr/sbin (not on a non-root PATH). */
export function findPgBouncer(env: Record<string, string | undefined> = process.env): string | null {
  if (env.PGBOUNCER_PATH) return existsSync(env.PGBOUNCER_PATH) ? env.PGBOUNCER_PATH : null;
  const onPath = spawnSync('pgbouncer', ['--version'], { env: { ...process.env, PATH: env.PATH ?? '' } });
  if (!onPath.error) return 'pgbouncer';
  return existsSync('/usr/sbin/pgbouncer') ? '/usr/sbin/pgbouncer' : null;
}

export async function startPgBouncer(opts: {
  databaseUrl: string;
  dir: string;
  log?: (m: string) => void;
}): Promise<PgBouncer> {
  const bin = findPgBouncer();
  if (!bin) throw new Error(PGBOUNCER_INSTALL_HINT);
  const target = new URL(opts.databaseUrl);
  const user = decodeURIComponent(target.username);
  const password = decodeURIComponent(target.password);
  mkdirSync(opts.dir, { recursive: true });
  // As root, PgBouncer refuses to run unless it drops to `user`; that user must read its files.
  const root = process.getuid?.() === 0;
  if (root) chmodSync(opts.dir, 0o755);
  const port = await freePort();
  const quote = (s: string) => `"${s.replaceAll('"', '""')}"`;
  const authFile = join(opts.dir, 'userlist.txt');
  writeFileSync(authFile, `${quote(user)} ${quote(password)}\n`, { mode: 0o644 });
  const ini = join(opts.dir, 'pgbouncer.ini');
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${target.hostname} port=${target.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'pool_mode = transaction',
      'auth_type = md5',
      `auth_file = ${authFile}`,
      `admin_users = ${user}`,
      'max_client_conn = 500',
      'default_pool_size = 20',
      // Startup parameters PgBouncer does not track would refuse the connection; these carry nothing gensvc needs.
      'ignore_startup_parameters = extra_float_digits,options',
      ...(root ? ['user = postgres'] : []),
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const child = spawn(bin, [ini], { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr?.on('data', (d) => {
    const text = String(d).trim();
    if (/ ERROR | FATAL /.test(text)) opts.log?.(`pgbouncer: ${text}`);
  });
  await waitForPort(port, child, 'pgbouncer');
  const at = (database: string) => {
    const url = new URL(opts.databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(port);
    url.pathname = `/${database}`;
    return url.toString();
  };
  return { url: at(target.pathname.slice(1)), adminUrl: at('pgbouncer'), stop: () => stopChild(child) };
}
