// The project's libraries as built to libs/<name>/dist (npm run bench builds first), for the .mjs benchmarks.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(import.meta.url);

/** `@gensvc/<name>`, loaded from its build. */
export const gensvc = (name) => require(join(root, 'libs', name, 'dist', 'index.js'));

/** A module of a built service, e.g. service('fleet', 'seed-sim'). */
export const service = (name, module) => require(join(root, 'services', name, 'dist', `${module}.js`));
