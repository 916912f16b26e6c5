// A Redis Cluster of three primaries and no replicas on this machine (redis-server --cluster-enabled yes), for the
// tests that prove gensvc runs on a cluster. Each node keeps its own directory and nodes.conf; the slots are
// spread by `redis-cli --cluster create`.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './free-port';
import { REDIS_INSTALL_HINT, stopChild, waitForPort } from './stack';

export interface RedisCluster {
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3` (every primary a seed). */
  url: string;
  ports: number[];
  stop(): Promise<void>;
}

export async function startRedisCluster(opts: {
  dir: string;
  primaries?: number;
  log?: (m: string) => void;
}): Promise<RedisCluster> {
  if (spawnSync('redis-server', ['--version']).error || spawnSync('redis-cli', ['--version']).error)
    throw new Error(REDIS_INSTALL_HINT);
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(children.map((c) => stopChild(c)));
  };
  const ports: number[] = [];
  try {
    for (let i = 0; i < (opts.primaries ?? 3); i++) {
      const dir = join(opts.dir, `node${i}`);
      mkdirSync(dir, { recursive: true });
      // The bus port is chosen too: the default (port + 10000) may fall in the range outgoing connections use.
      const [port, bus] = [await freePort(), await freePort()];
      const args = ['--port', String(port), '--cluster-port', String(bus), '--bind', '127.0.0.1', '--dir', dir];
      args.push('--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'));
      args.push('--appendonly', 'no', '--save', '', '--daemonize', 'no', '--loglevel', 'warning');
      const child = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
      child.stderr?.on('data', (d) => opts.log?.(`redis cluster node ${port}: ${String(d).trim()}`));
      children.push(child);
      await waitForPort(port, child, 'redis-server (cluster node)');
      ports.push(port);
    }
    const nodes = ports.map((p) => `127.0.0.1:${p}`);
    await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes']);
    for (const port of ports) await untilClusterOk(port);
  } catch (e) {
    await stop();
    throw e;
  }
  return { url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`, ports, stop };
}

/** Every node must see all slots served before a client's first command (else CLUSTERDOWN). */
async function untilClusterOk(port: number, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const info = spawnSync('redis-cli', ['-p', String(port), 'CLUSTER', 'INFO'], { encoding: 'utf8' }).stdout ?? '';
    if (/cluster_state:ok/.test(info)) return;
    if (Date.now() > deadline) throw new Error(`the Redis Cluster node on ${port} is not ok: ${info.trim()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout?.on('data', (d) => (out += String(d)));
    child.stderr?.on('data', (d) => (out += String(d)));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args[1]} failed: ${out.trim()}`))));
  });
}
