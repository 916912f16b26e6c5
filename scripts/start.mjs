// `npm start`: set-up (install, Prisma client, build), then the fleet supervisor (services/fleet). Signals are
// passed on to it; it stops the services and the stores it started.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';

const startedAt = Date.now();
await bootstrap();
const child = spawn(process.execPath, [join(root, 'services', 'fleet', 'dist', 'main.js')], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, GENSVC_STARTED_AT: String(startedAt) },
});
// Ctrl-C reaches the whole process group already; a signal sent to this process alone is forwarded.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
