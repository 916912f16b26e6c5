// `npm start`: brings up what the environment does not name (Postgres, Redis, S3 under .data/, an SMTP server with a
// web inbox), migrates, seeds the demo workspace, runs every service of the fleet as its own process, and prints the
// base URL, a key and a first request. Ctrl-C stops the children, then the stores; the data stays in .data/ for the
// next start.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { databasePooler, parseEncryptionKeys, poolerOf } from '@gensvc/config';
import {
  callbackRepository,
  channelRepository,
  closeDb,
  createDb,
  migrate,
  SecretBox,
  SecretBoxError,
} from '@gensvc/db';
import {
  freePort,
  localSecrets,
  serviceArgs,
  startStack,
  stopChild,
  waitForHttp,
  writeStackRecord,
  type Stack,
} from '@gensvc/local-stack';
import { FLEET } from './fleet-services';
import { makeLocalTls } from './local-tls';
import { seedDemo } from './seed-demo';
import { seedSim } from './seed-sim';

const root = resolve(__dirname, '../../..');
// GENSVC_DATA_DIR lets a test (or a second checkout) keep its stores elsewhere.
const dataDir = process.env.GENSVC_DATA_DIR ? resolve(process.env.GENSVC_DATA_DIR) : join(root, '.data');
const stackFile = join(dataDir, 'stack.json');
const say = (msg: string) => process.stdout.write(`[gensvc] ${msg}\n`);

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, () => server.close(() => resolve(true)));
  });
}

interface Child {
  name: string;
  proc: ChildProcess;
  restarts: number[];
}

async function main() {
  // Whoever reads our output may go first (a closed terminal, a pipe): losing the output must not stop the cleanup.
  process.stdout.on('error', () => {});
  process.stderr.on('error', () => {});
  const startedAt = Number(process.env.GENSVC_STARTED_AT) || Date.now();
  mkdirSync(dataDir, { recursive: true });
  let stopping = false;
  let stack: Stack | undefined;
  const children = new Map<string, Child>();

  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('stopping…');
    await Promise.all([...children.values()].map((c) => stopChild(c.proc, 10_000)));
    await stack?.stop();
    rmSync(stackFile, { force: true });
    say('stopped; data kept in .data/');
    process.exit(code);
  };
  // Ctrl-C reaches this process twice (from the terminal's process group, and forwarded by scripts/start.mjs):
  // only a signal more than a second after the first means "stop now".
  let firstSignalAt = 0;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      const now = Date.now();
      if (firstSignalAt && now - firstSignalAt > 1000) {
        for (const c of children.values()) c.proc.kill('SIGKILL');
        process.exit(1);
      }
      firstSignalAt ||= now;
      void stop(0);
    });
  }

  stack = await startStack({
    dataDir,
    persistent: true,
    env: process.env,
    need: { smtp: true },
    log: (m) => say(m),
  });
  const wanted = Number(process.env.PORT ?? 8080);
  const port = (await portIsFree(wanted)) ? wanted : await freePort();
  if (port !== wanted) say(`port ${wanted} is taken; the edge listens on ${port}`);
  const tls = makeLocalTls(join(dataDir, 'tls'), process.env.NODE_EXTRA_CA_CERTS || undefined);
  const local = localSecrets(dataDir);
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    SIGNING_SECRET: process.env.SIGNING_SECRET || local.SIGNING_SECRET,
    ENCRYPTION_KEYS: process.env.ENCRYPTION_KEYS || local.ENCRYPTION_KEYS,
    ...(stack.env as unknown as Record<string, string>),
    QUEUE_PREFIX: process.env.QUEUE_PREFIX ?? 'gensvc',
    PORT: String(port),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    // Node 20 is this project's runtime; the AWS SDK's notice about its 2027 releases is not news at every start.
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    // The sim's outputs are served over HTTPS on 127.0.0.1 with a certificate from a local CA: the archiver trusts
    // the CA (after the user's own NODE_EXTRA_CA_CERTS, kept in the bundle), and the outbound policy lets loopback
    // through (local runs only; a deployment leaves it empty).
    NODE_EXTRA_CA_CERTS: tls.trustFile,
    OUTBOUND_ALLOW_CIDRS: process.env.OUTBOUND_ALLOW_CIDRS ?? '127.0.0.1/32',
  };
  // Past a transaction-mode pooler when DIRECT_DATABASE_URL names Postgres itself (the migrator's lock is a session's).
  const { applied } = await migrate(env.DIRECT_DATABASE_URL || env.DATABASE_URL!);
  if (applied.length) say(`applied migrations: ${applied.join(', ')}`);
  const simWanted = Number(process.env.SIM_PORT ?? 8090);
  const simPort = (await portIsFree(simWanted)) && simWanted !== port ? simWanted : await freePort();
  const simUrl = `http://127.0.0.1:${simPort}`;
  const pooler = poolerOf(env.DATABASE_URL!, databasePooler.optional().parse(env.DATABASE_POOLER || undefined));
  const db = createDb(env.DATABASE_URL!, { max: 2, pooler });
  const secrets = new SecretBox(parseEncryptionKeys(env.ENCRYPTION_KEYS));
  const demo = await seedDemo(db, join(dataDir, 'demo.json'));
  await seedSim(db, secrets, simUrl);
  // Secrets stored in plaintext or under a key no longer first are sealed under the first one before services start.
  for (const [what, repository] of [
    ['channel credentials', channelRepository],
    ['callback secrets', callbackRepository],
  ] as const) {
    const { sealed, rekeyed } = await repository.resealAll(db, secrets).catch((err: unknown) => {
      if (!(err instanceof SecretBoxError)) throw err;
      throw new Error(
        `${what}: ${err.message}. Set ENCRYPTION_KEYS to the keys this database's secrets were sealed with ` +
          `(a local run keeps its own in ${join(dataDir, 'secrets.json')}).`,
      );
    });
    if (sealed + rekeyed) say(`${what}: ${sealed} sealed, ${rekeyed} moved to key "${secrets.currentKeyId}"`);
  }
  await closeDb(db);
  writeStackRecord(stackFile, { pid: process.pid, env });

  // Every service's internal ops port (/healthz, /readyz, /metrics), each its own on this one machine.
  const opsPorts: Record<string, number> = {};
  for (const name of FLEET) opsPorts[name] = await freePort();
  const launch = (name: string, extra: Record<string, string> = {}) => {
    const proc = spawn(process.execPath, serviceArgs(root, name), {
      env: { ...env, ...extra },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const prefix = `[${name}] `;
    // Lines reach the pipe in blocks (a service's logger writes 4 KiB at a time), cut anywhere: a line is written
    // once whole, and the decoder keeps a character split between two reads whole.
    const pipe = (from: NodeJS.ReadableStream, to: NodeJS.WritableStream) => {
      let rest = '';
      from.setEncoding('utf8');
      from.on('data', (d: string) => {
        const lines = (rest + d).split('\n');
        rest = lines.pop() ?? '';
        if (lines.length > 0) to.write(lines.map((line) => `${prefix}${line}\n`).join(''));
      });
    };
    pipe(proc.stdout!, process.stdout);
    pipe(proc.stderr!, process.stderr);
    const child: Child = { name, proc, restarts: children.get(name)?.restarts ?? [] };
    children.set(name, child);
    proc.on('exit', (code, signal) => {
      if (stopping) return;
      const now = Date.now();
      child.restarts = child.restarts.filter((t) => now - t < 60_000);
      if (child.restarts.length >= 5) {
        say(`${name} exited (${code ?? signal}) 5 times in a minute; stopping the fleet`);
        void stop(1);
        return;
      }
      child.restarts.push(now);
      say(`${name} exited (${code ?? signal}); restarting in 1 s`);
      setTimeout(() => !stopping && launch(name, extra), 1000);
    });
  };
  // The sim stands in for the providers the seeded channels point at: local runs only, never deployed.
  launch('upstream-sim', {
    PORT: String(simPort),
    SIM_OUTPUTS_TLS_CERT_FILE: tls.certFile,
    SIM_OUTPUTS_TLS_KEY_FILE: tls.keyFile,
  });
  for (const name of FLEET) launch(name, { OPS_PORT: String(opsPorts[name]) });
  await waitForHttp(`${simUrl}/healthz`, { timeoutMs: 30_000 });

  const base = `http://localhost:${port}`;
  await waitForHttp(`${base}/readyz`, { timeoutMs: 30_000 });
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
  process.stdout.write(
    [
      '',
      `gensvc is up (${seconds} s): ${FLEET.join(', ')}; upstream-sim on ${simUrl}`,
      `  dashboard  ${base}/dashboard/   sign in as ${demo.email} / ${demo.password} (owner of "Demo")`,
      `  base URL   ${base}   (API reference ${base}/docs, OpenAPI ${base}/openapi.json)`,
      `  API key    ${demo.secret}`,
      `             workspace "Demo" (${demo.workspaceId}), every scope`,
      `  ops ports  ${FLEET.map((n) => `${n} ${opsPorts[n]}`).join(', ')} (/healthz, /readyz, /metrics)`,
      stack.mailInboxUrl
        ? `  mail inbox ${stack.mailInboxUrl}   (invitations and password resets sent through ${env.SMTP_URL})`
        : `  mail       sent through your SMTP_URL`,
      '',
      'First request:',
      `  curl -s ${base}/api/v1/evaluate -H "Authorization: Bearer ${demo.secret}" -H 'Content-Type: ` +
        `application/json' \\`,
      `    -d '{"model":"sim/eval-1","state":"The sky is ` +
        `green.","questions":{"true":{"type":"boolean","instructions":"Is the statement true?"}}}'`,
      `  curl -s ${base}/api/v1/me/balance -H "Authorization: Bearer ${demo.secret}"`,
      `  curl -s ${base}/api/v1/sim/text-to-image -H "Authorization: Bearer ${demo.secret}" -H 'Content-Type: ` +
        `application/json' \\`,
      `    -d '{"model":"sim/image-1","prompt":"a lighthouse at dawn","size":"512x512"}'      # then GET ` +
        `/api/v1/tasks/<task_id>`,
      `  Models: sim/eval-1, sim/eval-input-only (evaluation), sim/chat-1 (chat: /v1/chat/completions, ` +
        `/v1/messages, /v1beta),`,
      `          sim/image-1 (text-to-image, image-to-image), sim/video-1 (text-to-video, image-to-video)`,
      '',
      'Admin CLI: npm run admin -- workspace list      Ctrl-C stops everything; data stays in .data/',
      '',
    ].join('\n'),
  );
}

main().catch((err) => {
  process.stderr.write(`[gensvc] could not start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
