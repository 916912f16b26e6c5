// Starts a built service as a real child process, for tests that need several replicas or a real exit.
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { serviceArgs, stopChild, waitForHttp as waitUntilAnswers } from '@gensvc/local-stack';
import { eventually } from './eventually';

export { freePort } from '@gensvc/local-stack';

export const REPO_ROOT = resolve(__dirname, '../../..');

export interface ServiceProcess {
  child: ChildProcess;
  output: () => string;
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

export function spawnService(service: string, env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, serviceArgs(REPO_ROOT, service), {
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
      await stopChild(child, 10_000, signal);
      return exited;
    },
  };
}

/**
 * Resolves once GET url answers 2xx; on failure the error carries the process's output. The default wait is generous
 * (a service boots in seconds on an idle machine, many times that on a loaded 2-core one): what a caller proves is
 * that it becomes ready, and a process that exits meanwhile fails at once.
 */
export async function waitForHttp(url: string, proc?: ServiceProcess, timeoutMs = 60_000): Promise<void> {
  const gone = () => (proc && proc.child.exitCode !== null ? `process exited (${proc.child.exitCode})` : null);
  try {
    await waitUntilAnswers(url, { timeoutMs, gone });
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${proc?.output() ?? ''}`);
  }
}

/** A response's JSON body, typed loosely for assertions. */
// biome-ignore lint/suspicious/noExplicitAny: tests read fields of any JSON body without declaring its shape
export const jsonOf = (res: Response): Promise<any> => res.json();

/** Resolves once the process has printed `text`; fails with its output if it exits first. */
export function waitForOutput(proc: ServiceProcess, text: string, timeoutMs = 60_000): Promise<true> {
  return eventually(
    () => {
      if (proc.child.exitCode !== null)
        throw new Error(`exited (${proc.child.exitCode}) before printing "${text}":\n${proc.output()}`);
      return proc.output().includes(text);
    },
    `"${text}" in the output`,
    timeoutMs,
  );
}
