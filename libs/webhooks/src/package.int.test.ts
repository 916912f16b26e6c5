// @gensvc/webhooks as a receiver gets it: `npm pack` (its prepack emits dist/ with tsc, declarations included), the
// tarball installed into an empty project outside the workspace, a callback signed by hand with node:crypto verified
// from plain Node, and a TypeScript receiver type-checked against the installed declarations.
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

jest.setTimeout(180_000);

const pkgDir = resolve(__dirname, '..');
const repoRoot = resolve(pkgDir, '..', '..');
let work: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'gensvc-webhooks-receiver-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const npm = (args: string[], cwd: string) =>
  execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });

it('packs with its declarations, installs outside the workspace and verifies a signature from plain Node', () => {
  npm(['pack', '--pack-destination', work], pkgDir);
  const tarball = readdirSync(work).find((f) => /^gensvc-webhooks-.*\.tgz$/.test(f));
  expect(tarball).toBeDefined();

  const app = join(work, 'receiver');
  execFileSync('mkdir', ['-p', app]);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'receiver', version: '1.0.0', private: true }));
  npm(['install', '--offline', join(work, tarball!)], app);
  const installed = join(app, 'node_modules', '@gensvc', 'webhooks');
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
  expect(manifest.exports['.']).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
  expect(readFileSync(join(installed, 'dist', 'index.d.ts'), 'utf8')).toContain('./verify');
  expect(readFileSync(join(installed, 'dist', 'verify.d.ts'), 'utf8')).toMatch(
    /export declare function verifyCallback\(/,
  );
  expect(existsSync(join(installed, 'README.md'))).toBe(true);
  expect(existsSync(join(installed, 'src'))).toBe(false);
  expect(existsSync(join(installed, 'dist', 'examples'))).toBe(false);

  // Signed here by hand, as spec §6 says: hex HMAC-SHA256 of "<t>.<raw body>" keyed with the secret.
  const secret = `whsec_${'A'.repeat(43)}`;
  const body = JSON.stringify({ object: 'task', task_id: 'tsk_0000000000000000000001', status: 'completed' });
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  writeFileSync(
    join(app, 'verify.js'),
    `const { verifyCallback, isWebhookVerificationError } = require('@gensvc/webhooks');
const [secret, body, t, v1] = process.argv.slice(2);
const headers = {
  'svc-signature': 't=' + t + ',v1=' + v1,
  'svc-task-id': 'tsk_0000000000000000000001',
  'svc-delivery-id': 'dlv_1',
};
const reason = (fn) => {
  try {
    fn();
    return 'ok';
  } catch (e) {
    if (isWebhookVerificationError(e)) return e.reason;
    throw e;
  }
};
const verified = verifyCallback(Buffer.from(body), headers, secret);
console.log(JSON.stringify({
  verified,
  tampered: reason(() => verifyCallback(body.replace('completed', 'failed'), headers, secret)),
  otherSecret: reason(() => verifyCallback(body, headers, 'whsec_' + 'B'.repeat(43))),
  stale: reason(() => verifyCallback(body, headers, secret, { now: Number(t) + 301 })),
}));
`,
  );
  const out = JSON.parse(
    execFileSync(process.execPath, ['verify.js', secret, body, String(t), v1], { cwd: app, encoding: 'utf8' }),
  );
  expect(out.verified).toMatchObject({ taskId: 'tsk_0000000000000000000001', deliveryId: 'dlv_1', timestamp: t });
  expect(out).toMatchObject({
    tampered: 'no_matching_signature',
    otherSecret: 'no_matching_signature',
    stale: 'timestamp_outside_tolerance',
  });

  // A TypeScript receiver compiles against the installed declarations (through `exports`' types).
  writeFileSync(
    join(app, 'receiver.ts'),
    `import { verifyCallback, type VerifiedCallback } from '@gensvc/webhooks';
export const check = (raw: Buffer, headers: Record<string, string>, secret: string): VerifiedCallback =>
  verifyCallback(raw, headers, [secret]);
// @ts-expect-error a secret is a string or a list of strings
verifyCallback('{}', {}, 42);
`,
  );
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        noEmit: true,
        types: ['node'],
        typeRoots: [join(repoRoot, 'node_modules', '@types')],
      },
      files: ['receiver.ts'],
    }),
  );
  execFileSync(join(repoRoot, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json'], { cwd: app, encoding: 'utf8' });
});
