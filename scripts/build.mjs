// Compiles every package's src/ to dist/ with swc (type-checking is tsc --noEmit's job, in npm test).
import { readdirSync, mkdirSync, writeFileSync, existsSync, rmSync, statSync } from 'node:fs';
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
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') && !entry.name.endsWith('.test.ts')) yield path;
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
      const dist = join(root, group, pkg, 'dist');
      const files = [...sources(src)];
      const wanted = new Set(files.map((file) => join(dist, relative(src, file)).replace(/\.ts$/, '.js')));
      for (const out of outputs(dist)) if (!wanted.has(out.replace(/\.map$/, ''))) rmSync(out);
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
  return { count, total, ms: Date.now() - started };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { count, total, ms } = await build();
  console.error(`compiled ${count} of ${total} files in ${ms} ms`);
}
