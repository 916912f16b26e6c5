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

export async function build() {
  const started = Date.now();
  let count = 0;
  for (const group of ['libs', 'services']) {
    for (const pkg of readdirSync(join(root, group))) {
      const src = join(root, group, pkg, 'src');
      if (!existsSync(src) || !statSync(src).isDirectory()) continue;
      const dist = join(root, group, pkg, 'dist');
      rmSync(dist, { recursive: true, force: true });
      await Promise.all(
        [...sources(src)].map(async (file) => {
          const out = join(dist, relative(src, file)).replace(/\.ts$/, '.js');
          const { code, map } = await swc.transformFile(file, options(file));
          mkdirSync(dirname(out), { recursive: true });
          writeFileSync(out, `${code}\n//# sourceMappingURL=${out.split('/').pop()}.map\n`);
          if (map) writeFileSync(`${out}.map`, map);
          count++;
        }),
      );
    }
  }
  return { count, ms: Date.now() - started };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { count, ms } = await build();
  console.error(`built ${count} files in ${ms} ms`);
}
