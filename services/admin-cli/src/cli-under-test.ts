// Runs the BUILT CLI (services/admin-cli/dist/main.js) as a real child process with a test file's environment. It
// does not build: `npm test` builds before jest; alone, run `node scripts/build.mjs` first.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, type TestContext } from '@gensvc/testing';

const CLI = join(REPO_ROOT, 'services', 'admin-cli', 'dist', 'main.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The CLI run with `env` as its whole environment (PATH added). */
export function runCli(args: string[], env: Record<string, string>, cwd?: string): Promise<CliRun> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "node scripts/build.mjs" first (npm test does).`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The CLI against a test context's stores, with helpers that check the one-object promise of --json. */
export function cliFor(ctx: TestContext) {
  const cli = (args: string[]) => runCli(args, ctx.env);
  /** Runs with --json and checks the one-object promise: stdout is exactly one JSON object and a newline. */
  const cliJson = async (
    args: string[],
    // biome-ignore lint/suspicious/noExplicitAny: the printed JSON object, which the tests read field by field
  ): Promise<{ code: number | null; body: any; stdout: string; stderr: string }> => {
    const run = await cli([...args, '--json']);
    expect(run.stdout).toMatch(/^[^\n]+\n$/);
    const body = JSON.parse(run.stdout);
    expect(typeof body === 'object' && body !== null && !Array.isArray(body)).toBe(true);
    return { ...run, body };
  };
  const ok = async (args: string[]) => {
    const run = await cliJson(args);
    if (run.code !== 0) throw new Error(`${args.join(' ')} exited ${run.code}:\n${run.stdout}\n${run.stderr}`);
    return run.body;
  };
  return { cli, cliJson, ok };
}
