// The logger's own stdout (no destination given): lines leave in blocks, so a process that logs and then exits, or
// logs and then idles, must still have every line out, whole and in order.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const dist = join(__dirname, '..', 'dist', 'index.js');

function run(script: string) {
  const child = spawn(process.execPath, ['-e', script, dist], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, output: () => out, exited };
}

const lines = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

it('writes out every line, whole and in order, when the process exits with lines still gathered', async () => {
  // ~180 KiB of lines: many 4 KiB blocks, and a last partial one only the exit writes.
  const proc = run(`
    const { createLogger } = require(process.argv[1]);
    const log = createLogger({ service: 'exit-test', level: 'info' });
    for (let i = 0; i < 1000; i++) log.info({ i, pad: 'é'.repeat(40) }, 'line');
    process.exit(3);
  `);
  expect(await proc.exited).toBe(3);
  const got = lines(proc.output());
  expect(got).toHaveLength(1000);
  for (const [i, line] of got.entries()) {
    expect(line).toMatchObject({ service: 'exit-test', msg: 'line', i, pad: 'é'.repeat(40) });
  }
});

it('writes a lone line within its 100 ms period while the process keeps running', async () => {
  const proc = run(`
    const { createLogger } = require(process.argv[1]);
    createLogger({ service: 'idle-test', level: 'info' }).info('ready');
    setTimeout(() => {}, 30_000);
  `);
  try {
    const started = Date.now();
    while (!proc.output().includes('"msg":"ready"') && Date.now() - started < 5_000)
      await new Promise((r) => setTimeout(r, 20));
    expect(lines(proc.output())).toEqual([expect.objectContaining({ service: 'idle-test', msg: 'ready' })]);
    // The process is still running: the line was not written by its exit.
    expect(proc.child.exitCode).toBeNull();
  } finally {
    proc.child.kill('SIGKILL');
    await proc.exited;
  }
});
