// The README's promises to a newcomer: every `curl` example in its sh blocks answers 2xx, run as printed against a
// fleet started as `npm start` starts it (with the base URL and key it printed, and the ids earlier examples
// answered); the configuration table names every variable the services read; and it stays under 400 lines.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CONFIG_VARIABLES } from '@gensvc/config';
import { freePort } from '@gensvc/local-stack';
import { REPO_ROOT, useTestContext } from '@gensvc/testing';
import { startFleet, storesOf } from './fleet-under-test';

const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
const dataDir = mkdtempSync(join(tmpdir(), 'gensvc-readme-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const ctx = useTestContext();
const run = promisify(execFile);

/** The commands of the README's sh blocks that start with `curl`, continuation lines joined as a shell would. */
function readmeCurls(): string[] {
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  return blocks
    .flatMap((block) => block.replace(/\\\n\s*/g, ' ').split('\n'))
    .map((line) => line.trim())
    .filter((line) => line.startsWith('curl '));
}

/** The variables the examples use that a reader sets from what came before: the printed base URL and key, and ids. */
const VARIABLES = ['BASE', 'GENSVC_KEY', 'FILE_ID', 'TASK_ID'];

it('tells the reader to set the base URL and the key npm start printed', () => {
  expect(readme).toContain('export BASE=http://localhost:8080 GENSVC_KEY=gsk_…');
});

it('names every configuration variable in its table, and stays under 400 lines', () => {
  const missing = CONFIG_VARIABLES.filter((name) => !readme.includes(`\`${name}\``));
  expect(missing).toEqual([]);
  expect(readme.split('\n').length).toBeLessThanOrEqual(400);
});

it('has curl examples that use only the variables a reader sets, and never a pipe', () => {
  const curls = readmeCurls();
  expect(curls.length).toBeGreaterThanOrEqual(10);
  for (const curl of curls) {
    const used = [...curl.matchAll(/\$([A-Z_]+)/g)].map((m) => m[1]!);
    expect({ curl, unknown: used.filter((v) => !VARIABLES.includes(v)) }).toEqual({ curl, unknown: [] });
    expect(curl).not.toContain(' | ');
  }
});

it('answers every curl example 2xx against npm start, in order', async () => {
  const port = await freePort();
  const fleet = startFleet(port, storesOf(ctx), dataDir);
  const { key } = await fleet.printed;
  const base = `http://localhost:${port}`;
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', BASE: base, GENSVC_KEY: key };
  const answers: { curl: string; status: number; body: string }[] = [];
  for (const curl of readmeCurls()) {
    for (const name of ['FILE_ID', 'TASK_ID']) {
      if (curl.includes(`$${name}`)) expect({ curl, [name]: env[name] }).toEqual({ curl, [name]: expect.any(String) });
    }
    // The status on a line of its own after the body (which an example's -N stream may end without a newline).
    // Run asynchronously: the test's S3 answers from this process, which a synchronous child would block.
    const { stdout: out } = await run('sh', ['-c', `${curl} -w '\\n%{http_code}'`], {
      cwd: REPO_ROOT,
      env,
      encoding: 'utf8',
    });
    const cut = out.lastIndexOf('\n');
    const [body, status] = [out.slice(0, cut), Number(out.slice(cut + 1))];
    answers.push({ curl, status, body: body.slice(0, 300) });
    try {
      const json = JSON.parse(body) as { object?: string; id?: string; task_id?: string };
      if (json.object === 'file' && json.id) env.FILE_ID = json.id;
      if (json.task_id) env.TASK_ID = json.task_id;
    } catch {
      // a stream or a page: nothing to learn from it
    }
  }
  fleet.ctrlC();
  expect(await fleet.exited).toBe(0);
  expect(answers.filter((a) => a.status < 200 || a.status > 299)).toEqual([]);
}, 120_000);
