// How a built service is started outside the image: `node <its node-flags> services/<name>/dist/main.js`, the same
// command infra/docker/gensvc.sh runs in the image, so npm start, tests and benches measure what production runs.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The Node/V8 flags a service runs with, from `services/<name>/node-flags` (whitespace-separated, `#` starts a
 * comment; no file: none). One file per service, read by every launcher: gensvc.sh in the image, npm start's
 * supervisor, spawnService in tests, the benches.
 */
export function serviceNodeFlags(root: string, service: string): string[] {
  const file = join(root, 'services', service, 'node-flags');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line) => line.replace(/#.*/, '').trim().split(/\s+/))
    .filter(Boolean);
}

/** The arguments after `node` that start the built service: its flags, then its dist/main.js. */
export function serviceArgs(root: string, service: string): string[] {
  return [...serviceNodeFlags(root, service), join(root, 'services', service, 'dist', 'main.js')];
}
