// Starts a built service as a real child process, for tests that need several replicas or a real exit.
import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(__dirname, '../../..');

export interface ServiceProcess {
  child: ChildProcess;
  output: () => string;
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

export function spawnService(service: string, env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'services', service, 'dist', 'main.js')], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return {
    child,
    output: () => out,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Resolves once GET url answers 200, or fails with the process output after the timeout. */
export async function waitForHttp(url: string, proc?: ServiceProcess, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc && proc.child.exitCode !== null) throw new Error(`process exited (${proc.child.exitCode}):\n${proc.output()}`);
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms\n${proc?.output() ?? ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A response's JSON body, typed loosely for assertions. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const jsonOf = (res: Response): Promise<any> => res.json();
