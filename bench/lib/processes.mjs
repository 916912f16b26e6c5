// The processes a benchmark measures, started as in production: one Node process per service, from its built dist/.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { gensvc, root } from './gensvc.mjs';

const { freePort, serviceNodeFlags, stopChild, waitForHttp } = gensvc('local-stack');

/**
 * Starts `node <script> ...args` with `env` (PORT set to a free port unless `port: false`), waits until `readyPath`
 * answers 2xx when given, and answers { url, port, pid, child, output(), stop() }. The output is kept (its last
 * 64 KiB) for the error when the process fails to start or dies during the run.
 */
/** `port`: true for a free one, a number for that one, false for none. */
/** `ipc`: the child gets Node's IPC channel (process.send / 'message'). */
export async function startNode({
  name,
  script,
  args = [],
  nodeArgs = [],
  env,
  port: wantPort = true,
  readyPath,
  timeoutMs = 60_000,
  ipc = false,
}) {
  const port = typeof wantPort === 'number' ? wantPort : wantPort ? await freePort() : undefined;
  const child = spawn(process.execPath, [...nodeArgs, script, ...args.map((a) => a.replace('{port}', String(port)))], {
    env: { PATH: process.env.PATH, ...env, ...(port ? { PORT: String(port) } : {}) },
    stdio: ['ignore', 'pipe', 'pipe', ...(ipc ? ['ipc'] : [])],
    cwd: root,
  });
  let out = '';
  const keep = (d) => (out = (out + d).slice(-65_536));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let stopping = false;
  child.once('exit', (code, signal) => {
    if (!stopping) process.stderr.write(`[bench] ${name} exited during the run (${code ?? signal}):\n${out}\n`);
  });
  const url = port ? `http://127.0.0.1:${port}` : undefined;
  const proc = {
    name,
    url,
    port,
    pid: child.pid,
    child,
    output: () => out,
    stop: async () => {
      stopping = true;
      await stopChild(child, 10_000);
    },
  };
  if (readyPath) {
    try {
      await waitForHttp(`${url}${readyPath}`, {
        timeoutMs,
        gone: () => (child.exitCode !== null ? `${name} exited (${child.exitCode})` : null),
      });
    } catch (e) {
      await proc.stop();
      throw new Error(`${e.message}\n${out}`);
    }
  }
  return proc;
}

/**
 * A gensvc service from services/<name>/dist/main.js with its node-flags (as production runs it), then `nodeArgs`;
 * HTTP services pass their readiness path.
 */
export function startService(name, env, { extra = {}, readyPath, port = Boolean(readyPath), nodeArgs = [] } = {}) {
  return startNode({
    name,
    script: join(root, 'services', name, 'dist', 'main.js'),
    nodeArgs: [...serviceNodeFlags(root, name), ...nodeArgs],
    // OPS_PORT 0: each service its own free ops port (/healthz, /readyz, /metrics), never the fixed 9464 twice.
    // warn unless the caller's LOG_LEVEL says otherwise (`LOG_LEVEL=info npm run bench -- chat`: as production logs).
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', OPS_PORT: '0', ...env, ...extra },
    port,
    readyPath,
  });
}

/** The edge, ready when /readyz answers (its stores are reachable). */
export const startEdge = (env, extra = {}, nodeArgs = []) =>
  startService('edge', env, { extra, readyPath: '/readyz', nodeArgs });

/** The upstream-sim as its own process (so its CPU is not the load generator's), with a quiet request log. */
export const startSim = () =>
  startNode({
    name: 'upstream-sim',
    script: join(root, 'services', 'upstream-sim', 'dist', 'main.js'),
    env: { LOG_LEVEL: 'warn' },
    readyPath: '/__sim/requests',
  });

/** Portkey's open-source gateway (@portkey-ai/gateway, bench/'s dependency), the peer bench/chat compares with. */
export const startPortkey = () =>
  startNode({
    name: 'portkey',
    script: join(root, 'bench', 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js'),
    args: ['--port={port}', '--headless'],
    env: {},
    readyPath: '/',
  });

/** bench/chat's floor: the thinnest pass-through gateway (floor-proxy.mjs) in front of `upstream`. */
export const startFloorProxy = (upstream, nodeArgs = []) =>
  startNode({
    name: 'floor-proxy',
    script: join(root, 'bench', 'lib', 'floor-proxy.mjs'),
    env: { UPSTREAM: upstream },
    nodeArgs,
  });

/**
 * bench/evaluate's floor (floor-queue.mjs) on its own queue prefix: the HTTP server that enqueues and awaits the
 * reply, and a plain BullMQ worker that calls the sim. Answers [server, worker].
 */
export async function startFloorQueue(env, simUrl) {
  const script = join(root, 'bench', 'lib', 'floor-queue.mjs');
  const floorEnv = { REDIS_URL: env.REDIS_URL, FLOOR_PREFIX: `${env.QUEUE_PREFIX}-floor` };
  const worker = await startNode({
    name: 'floor-worker',
    script,
    args: ['worker'],
    env: { ...floorEnv, SIM: simUrl },
    port: false,
  });
  const server = await startNode({ name: 'floor-server', script, args: ['server'], env: floorEnv });
  return [server, worker];
}
