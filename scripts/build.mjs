// Compiles every package's src/ to dist/ with swc (type-checking is tsc --noEmit's job, in npm test), and bundles
// the dashboard with Vite.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, mkdirSync, writeFileSync, existsSync, rmSync, statSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join, dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const swc = createRequire(join(root, 'package.json'))('@swc/core');

const options = (file) => ({
  filename: file,
  sourceMaps: true,
  jsc: { parser: { syntax: 'typescript' }, target: 'es2022', keepClassNames: true },
  module: { type: 'commonjs' },
});

function* sources(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') && !entry.name.endsWith('.test.ts'))
      yield path;
  }
}

function* outputs(dir) {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* outputs(path);
    else yield path;
  }
}

/**
 * Incremental: a file is compiled only when its output is missing or older than it, and outputs whose source is
 * gone are removed. So `npm run admin` while `npm start` runs does not rewrite the code its services are running.
 */
export async function build() {
  const started = Date.now();
  let count = 0;
  let total = 0;
  for (const group of ['libs', 'services']) {
    for (const pkg of readdirSync(join(root, group))) {
      const src = join(root, group, pkg, 'src');
      if (!existsSync(src) || !statSync(src).isDirectory()) continue;
      // A browser app (services/dashboard) is bundled by its own Vite, below, not compiled file by file.
      if (existsSync(join(root, group, pkg, 'vite.config.ts'))) continue;
      const dist = join(root, group, pkg, 'dist');
      const files = [...sources(src)];
      const wanted = new Set(files.map((file) => join(dist, relative(src, file)).replace(/\.ts$/, '.js')));
      // Declarations are left alone: a published package (libs/webhooks) emits them with tsc when it is packed.
      for (const out of outputs(dist))
        if (!wanted.has(out.replace(/\.map$/, '')) && !/\.d\.ts(\.map)?$/.test(out)) rmSync(out);
      total += files.length;
      await Promise.all(
        files.map(async (file) => {
          const out = join(dist, relative(src, file)).replace(/\.ts$/, '.js');
          if (existsSync(out) && statSync(out).mtimeMs >= statSync(file).mtimeMs) return;
          const { code, map } = await swc.transformFile(file, options(file));
          mkdirSync(dirname(out), { recursive: true });
          writeFileSync(out, `${code}\n//# sourceMappingURL=${out.split('/').pop()}.map\n`);
          if (map) writeFileSync(`${out}.map`, map);
          count++;
        }),
      );
    }
  }
  const dashboard = buildDashboard();
  return { count, total, ms: Date.now() - started, dashboard };
}

/**
 * The dashboard's Vite build, run only when a file it is built from changed since the last build (a digest kept in
 * node_modules/.gensvc, as bootstrap.mjs does) or its output is missing. Prints the first-load size either way.
 */
export function buildDashboard() {
  const dir = join(root, 'services', 'dashboard');
  if (!existsSync(join(dir, 'vite.config.ts'))) return null;
  // The lockfile too: a new version of Vite, React or a plugin is a new build.
  const inputs = ['package.json', 'index.html', 'vite.config.ts', 'tsconfig.json']
    .map((f) => join(dir, f))
    .concat(join(root, 'pnpm-lock.yaml'));
  for (const sub of ['src', 'public'])
    if (existsSync(join(dir, sub))) inputs.push(...[...allFiles(join(dir, sub))].sort());
  const hash = createHash('sha256');
  for (const f of inputs)
    hash
      .update(relative(dir, f))
      .update('\0')
      .update(existsSync(f) ? readFileSync(f) : '');
  const digest = hash.digest('hex');
  const stamp = join(root, 'node_modules', '.gensvc', 'dashboard');
  const dist = join(dir, 'dist');
  let built = false;
  if (!existsSync(join(dist, 'index.html')) || !existsSync(stamp) || readFileSync(stamp, 'utf8') !== digest) {
    const vite = join(dir, 'node_modules', 'vite', 'bin', 'vite.js');
    // NODE_ENV=production whatever the caller's (jest sets test): otherwise React's development build is bundled.
    const env = { ...process.env, NODE_ENV: 'production' };
    const r = spawnSync(process.execPath, [vite, 'build', '--logLevel', 'warn'], {
      cwd: dir,
      stdio: ['ignore', 2, 2],
      env,
    });
    if (r.status !== 0) throw new Error(`the dashboard's vite build exited with ${r.status ?? r.signal}`);
    mkdirSync(dirname(stamp), { recursive: true });
    writeFileSync(stamp, digest);
    built = true;
  }
  const size = firstLoadSize(dist);
  process.stderr.write(
    `[gensvc] dashboard ${built ? 'built' : 'up to date'}: first load ${kb(size.total)} KB gzipped ` +
      `(JS ${kb(size.js)} KB + CSS ${kb(size.css)} KB; budget ${kb(FIRST_LOAD_BUDGET)} KB)\n`,
  );
  if (size.total > FIRST_LOAD_BUDGET)
    throw new Error(
      `the dashboard's first load is ${kb(size.total)} KB gzipped, over its ${kb(FIRST_LOAD_BUDGET)} KB budget`,
    );
  return { built, ...size };
}

export const FIRST_LOAD_BUDGET = 250 * 1024;
const kb = (n) => (n / 1024).toFixed(1);

/** Gzipped bytes of the scripts and style sheets index.html loads (what a first visit downloads before it renders). */
export function firstLoadSize(dist) {
  const html = readFileSync(join(dist, 'index.html'), 'utf8');
  const size = { js: 0, css: 0, total: 0, files: [] };
  for (const m of html.matchAll(/<(script|link)\b[^>]*?\b(?:src|href)="\/dashboard\/([^"]+\.(js|css))"/g)) {
    const file = join(dist, m[2]);
    const gz = gzipSync(readFileSync(file), { level: 9 }).length;
    size[m[3]] += gz;
    size.total += gz;
    size.files.push(m[2]);
  }
  return size;
}

function* allFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* allFiles(path);
    else yield path;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { count, total, ms } = await build();
  console.error(`compiled ${count} of ${total} files in ${ms} ms`);
}
