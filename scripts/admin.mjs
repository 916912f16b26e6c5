// `npm run admin -- <command>`: set-up (install, Prisma client, build; progress on stderr only), then the admin CLI
// with the same arguments. stdout belongs to the CLI alone, so `--json` answers stay one clean JSON object.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';

await bootstrap();
const child = spawn(
  process.execPath,
  [join(root, 'services', 'admin-cli', 'dist', 'main.js'), ...process.argv.slice(2)],
  {
    cwd: root,
    stdio: 'inherit',
  },
);
// The CLI stops what it starts (the embedded Postgres) on SIGINT/SIGTERM; the terminal sends them to both of us, so
// this process waits for the child's exit instead of dying first.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
