// `npm run bench -- <name>`: set-up (install, build), then bench/<name>.mjs. Benchmarks print figures; they are not tests.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { bootstrap, root } from './bootstrap.mjs';

const name = process.argv[2];
const file = name && join(root, 'bench', `${name}.mjs`);
if (!file || !existsSync(file)) {
  process.stderr.write(
    [
      'usage: npm run bench -- <name>      (DURATION_MS, WARMUP_MS tune the timed cases)',
      '  edge       the edge\'s own cost per request (healthz, balance with and without the key cache)',
      '  chat       chat completions direct to the upstream-sim, through gensvc and through Portkey, JSON and SSE',
      '  hot-path-profile  a CPU profile of the edge under chat load, summed by library and function',
      '  evaluate   POST /evaluate direct to the upstream-sim and through gensvc (edge + evaluate-worker), one and two edges',
      '  evaluate-trips  Redis commands, Postgres transactions and CPU per evaluate call, counted one call at a time',
      '  charge-statement  gensvc_lease_charge per batch size (current and first version) against a one-row INSERT commit',
      '  worker-loop  BullMQ\'s fetch loop against takeOnePerJob (libs/queue), interleaved: latency, CPU and syscalls per job',
      '  files      25 MiB uploads through the edge against PutObject to the same S3; the edge\'s memory meanwhile',
      '  tasks      generation tasks end to end (create → completed → callback) and callback deliveries, against raw BullMQ',
      '  task-statements  a task\'s Postgres statements and its deliveries replayed through the repositories: Postgres CPU per task and delivery, index reads',
      '',
    ].join('\n'),
  );
  process.exit(2);
}
await bootstrap();
const r = spawnSync(process.execPath, [file, ...process.argv.slice(3)], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
