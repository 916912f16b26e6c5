// Test support: `npm start` (the built services/fleet) as a real process group, with what it prints parsed: the key,
// the first requests and each service's ops port. The jest process group must not receive the Ctrl-C, so the fleet
// runs as its own group leader.
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT, type TestContext } from '@gensvc/testing';

export interface Printed {
  key: string;
  evaluate: string;
  curl: string;
  task: string;
  /** service → its ops port (/healthz, /readyz, /metrics). */
  opsPorts: Record<string, number>;
}

/**
 * Fleets started and not yet exited: a test that fails half-way must not leave its fleet running (jest would wait on
 * it).
 */
const running = new Set<number>();
afterAll(() => {
  for (const pid of running) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  running.clear();
});

export function startFleet(port: number, env: Record<string, string>, dataDir: string) {
  const full: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    GENSVC_DATA_DIR: dataDir,
    PORT: String(port),
    LOG_LEVEL: 'warn',
    ...env,
  };
  const child = spawn(process.execPath, [join(REPO_ROOT, 'services', 'fleet', 'dist', 'main.js')], {
    env: full,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  running.add(child.pid!);
  const exited = new Promise<number | null>((r) =>
    child.once('exit', (code) => {
      running.delete(child.pid!);
      r(code);
    }),
  );
  const printed = new Promise<Printed>((resolve, reject) => {
    const timer = setInterval(() => {
      const curls = printedCurls(out);
      const key = /API key\s+(gsk_[A-Za-z0-9_-]{43})/.exec(out)?.[1];
      const evaluate = curls.find((c) => c.includes('/api/v1/evaluate'));
      const curl = curls.find((c) => c.includes('/api/v1/me/balance'));
      const task = curls.find((c) => c.includes('/api/v1/sim/text-to-image'));
      const ops = /ops ports\s+(.*) \(/.exec(out)?.[1];
      if (evaluate && curl && task && key && ops) {
        clearInterval(timer);
        const opsPorts = Object.fromEntries(
          ops.split(', ').map((pair) => [pair.split(' ')[0]!, Number(pair.split(' ')[1])]),
        );
        resolve({ key, evaluate, curl, task, opsPorts });
      } else if (child.exitCode !== null) {
        clearInterval(timer);
        reject(new Error(`fleet exited ${child.exitCode}:\n${out}`));
      }
    }, 50);
  });
  // As a terminal's Ctrl-C under `npm start`: the whole group gets SIGINT, and scripts/start.mjs forwards another.
  const ctrlC = () => {
    process.kill(-child.pid!, 'SIGINT');
    process.kill(child.pid!, 'SIGINT');
  };
  return { child, printed, exited, ctrlC, output: () => out };
}

/** The test context's stores (and queue prefix) as the variables a fleet is given, so it brings up none of its own. */
export function storesOf(ctx: TestContext): Record<string, string> {
  const {
    DATABASE_URL,
    REDIS_URL,
    QUEUE_PREFIX,
    S3_ENDPOINT,
    S3_BUCKET,
    S3_FORCE_PATH_STYLE,
    S3_ACCESS_KEY_ID = '',
    S3_SECRET_ACCESS_KEY = '',
    ENCRYPTION_KEYS,
    SMTP_URL,
  } = ctx.env;
  return {
    DATABASE_URL,
    REDIS_URL,
    QUEUE_PREFIX,
    S3_ENDPOINT,
    S3_BUCKET,
    S3_FORCE_PATH_STYLE,
    S3_ACCESS_KEY_ID,
    S3_SECRET_ACCESS_KEY,
    // The database holds secrets sealed under the test's keys (its fixtures, an earlier fleet on it).
    ENCRYPTION_KEYS,
    SMTP_URL,
  } as Record<string, string>;
}

/** The commands printed under "First request:", continuation lines joined as a shell would. */
function printedCurls(out: string): string[] {
  const block = /First request:\n((?: {2}.*\n)+)/.exec(out)?.[1];
  if (!block) return [];
  return block
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .map((l) => l.replace(/\s+#.*$/, ''))
    .filter((l) => l.startsWith('curl '));
}

/** Runs a printed curl command itself (it must work as printed). */
export const runCurl = (curl: string) => JSON.parse(execFileSync('sh', ['-c', curl], { encoding: 'utf8' }));
