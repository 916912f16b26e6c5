// `npm test`: set-up (install, Prisma client, build), type-check, then the whole jest suite. Jest's global setup
// brings up Postgres, Redis and S3 where DATABASE_URL, REDIS_URL and S3_ENDPOINT are unset. Extra arguments go to jest.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';

await bootstrap();
const bin = (name) => join(root, 'node_modules', '.bin', name);
const step = (name, cmd, args) => {
  process.stderr.write(`[gensvc] ${name}\n`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } });
  if (r.status !== 0) process.exit(r.status ?? 1);
};
step('type-check (tsc --noEmit)', bin('tsc'), ['--noEmit', '-p', 'tsconfig.json']);
step('jest', bin('jest'), ['--ci', ...process.argv.slice(2)]);
