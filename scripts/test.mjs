// `npm test`: set-up (install, Prisma client, build), type-check, then the whole jest suite. Jest's global setup
// brings up Postgres, Redis and S3 where DATABASE_URL, REDIS_URL and S3_ENDPOINT are unset. Extra arguments go to jest.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';

await bootstrap();
const bin = (name) => join(root, 'node_modules', '.bin', name);
const step = (name, cmd, args) => {
  process.stderr.write(`[gensvc] ${name}\n`);
  const r = spawnSync(cmd, args, {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  });
  if (r.status !== 0) process.exit(r.status ?? 1);
};
step('lint (npm run lint)', process.execPath, [join(root, 'scripts', 'lint.mjs')]);
step('type-check (tsc --noEmit)', bin('tsc'), ['--noEmit', '-p', 'tsconfig.json']);
// The dashboard is a browser app (DOM, JSX) and its browser tests drive it from Node: each has its own tsconfig.
step('type-check the dashboard (tsc --noEmit)', bin('tsc'), ['--noEmit', '-p', 'services/dashboard']);
step('type-check the dashboard tests (tsc --noEmit)', bin('tsc'), [
  '--noEmit',
  '-p',
  'services/dashboard/tsconfig.test.json',
]);
ensureChromium();
ensurePgBouncer();
step('jest', bin('jest'), ['--ci', ...process.argv.slice(2)]);

/**
 * The dashboard's browser tests drive Debian's Chromium through playwright-core: never a browser download of its own.
 */
function ensureChromium() {
  const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(chromium)) aptInstall('chromium', `${chromium} is missing`, "the dashboard's browser tests");
}

/** The pooler suites (`*.pooler.int.test.ts`) run through Debian's PgBouncer, which jest's global setup starts. */
function ensurePgBouncer() {
  const onPath = spawnSync('pgbouncer', ['--version']).error === undefined;
  const found = process.env.PGBOUNCER_PATH
    ? existsSync(process.env.PGBOUNCER_PATH)
    : onPath || existsSync('/usr/sbin/pgbouncer');
  if (!found) aptInstall('pgbouncer', 'pgbouncer is missing', 'the suites that run through PgBouncer');
}

/** Installs a Debian package as root; otherwise says which tests will fail and how to install it. */
function aptInstall(pkg, missing, tests) {
  if (process.getuid?.() !== 0) {
    process.stderr.write(
      `[gensvc] ${missing} and this is not root: ${tests} will fail. Install it: ` +
        `apt-get install -y --no-install-recommends ${pkg}\n`,
    );
    return;
  }
  const apt = { DEBIAN_FRONTEND: 'noninteractive' };
  const run = (args) => {
    const r = spawnSync('apt-get', args, { stdio: 'inherit', env: { ...process.env, ...apt } });
    if (r.status !== 0) process.exit(r.status ?? 1);
  };
  process.stderr.write(`[gensvc] installing ${pkg} for ${tests} (apt-get)\n`);
  run(['update']);
  run(['install', '-y', '--no-install-recommends', pkg]);
}
