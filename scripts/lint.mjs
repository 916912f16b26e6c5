// `npm run lint` (and the first step of `npm test`): Biome's formatter and linter, knip (unused files, exports and
// dependencies), and the one rule neither checks: no line longer than 120 characters in the sources.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './bootstrap.mjs';

const MAX_LINE = 120;
const bin = (name) => join(root, 'node_modules', '.bin', name);
const fix = process.argv.includes('--fix');

function step(name, cmd, args) {
  process.stderr.write(`[gensvc] ${name}\n`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  return r.status === 0;
}

function longLines() {
  const tracked = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
  });
  const files = tracked.stdout.split('\0').filter((f) => /\.(ts|tsx|mjs|js|cjs)$/.test(f));
  const found = [];
  for (const file of files) {
    let text;
    try {
      text = readFileSync(join(root, file), 'utf8');
    } catch {
      continue; // listed by git but deleted in the work tree
    }
    text.split('\n').forEach((line, i) => {
      if (line.length > MAX_LINE && !/https?:\/\/\S{60,}/.test(line)) found.push(`${file}:${i + 1} (${line.length})`);
    });
  }
  return found;
}

const ok = [
  step(
    fix ? 'biome check --write' : 'biome ci',
    bin('biome'),
    fix ? ['check', '--write', '.'] : ['ci', '--error-on-warnings', '.'],
  ),
  step('knip', bin('knip'), ['--no-progress']),
  (() => {
    process.stderr.write(`[gensvc] lines at most ${MAX_LINE} characters\n`);
    const found = longLines();
    for (const where of found) process.stderr.write(`  ${where}\n`);
    return found.length === 0;
  })(),
].every(Boolean);
process.exit(ok ? 0 : 1);
