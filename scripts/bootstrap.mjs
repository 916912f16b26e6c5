// Zero-dependency set-up shared by `npm start`, `npm test` and `npm run admin`: pnpm, dependencies, Prisma client,
// build. Each step is skipped when what it depends on has not changed. Progress goes to stderr so that commands
// printing JSON on stdout stay clean.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PNPM_VERSION = '12.21.0';
const stampDir = join(root, 'node_modules', '.gensvc');

const say = (msg) => process.stderr.write(`[gensvc] ${msg}\n`);

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', 2, 2], ...opts });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status}`);
}

function works(cmd) {
  const r = spawnSync(cmd, ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

/** pnpm from PATH when it is the right major, else a project-local copy installed with npm into .tools/. */
function ensurePnpm() {
  const onPath = works('pnpm');
  if (onPath && onPath.split('.')[0] === PNPM_VERSION.split('.')[0]) return 'pnpm';
  const local = join(root, '.tools', 'node_modules', '.bin', 'pnpm');
  if (works(local) === PNPM_VERSION) return local;
  say(`installing pnpm ${PNPM_VERSION} into .tools/`);
  mkdirSync(join(root, '.tools'), { recursive: true });
  run('npm', [
    'install',
    '--prefix',
    join(root, '.tools'),
    '--no-audit',
    '--no-fund',
    '--loglevel=error',
    `pnpm@${PNPM_VERSION}`,
  ]);
  return local;
}

function digest(files) {
  const h = createHash('sha256');
  for (const f of files) h.update(f).update(existsSync(f) ? readFileSync(f) : '');
  return h.digest('hex');
}

function stamped(name, value, step) {
  const file = join(stampDir, name);
  if (existsSync(file) && readFileSync(file, 'utf8') === value) return false;
  step();
  mkdirSync(stampDir, { recursive: true });
  writeFileSync(file, value);
  return true;
}

const manifests = () => [
  join(root, 'package.json'),
  join(root, 'pnpm-lock.yaml'),
  join(root, 'pnpm-workspace.yaml'),
  join(root, 'bench', 'package.json'),
  ...['libs', 'services'].flatMap((g) => readdirSync(join(root, g)).map((p) => join(root, g, p, 'package.json'))),
];

export async function bootstrap() {
  const started = Date.now();
  const pnpm = ensurePnpm();
  stamped('install', digest(manifests()), () => {
    say('installing dependencies');
    const frozen = existsSync(join(root, 'pnpm-lock.yaml')) ? ['--frozen-lockfile'] : [];
    run(pnpm, ['install', ...frozen, '--reporter=append-only'], { env: { ...process.env, CI: 'true' } });
  });
  const schema = join(root, 'prisma', 'schema.prisma');
  const generated = join(root, 'libs', 'db', 'src', 'generated', 'prisma', 'client.ts');
  stamped('prisma', digest([schema]) + existsSync(generated), () => {
    say('generating the Prisma client');
    // The schema reads DATABASE_URL through env(); generation needs a value but never connects.
    run(join(root, 'node_modules', '.bin', 'prisma'), ['generate'], {
      env: {
        ...process.env,
        DATABASE_URL: process.env.DATABASE_URL || 'postgresql://localhost/unused',
        CHECKPOINT_DISABLE: '1',
      },
    });
  });
  const { build } = await import('./build.mjs');
  const built = await build();
  say(`ready in ${Date.now() - started} ms (compiled ${built.count} of ${built.total} files in ${built.ms} ms)`);
  return { pnpm };
}
