// REDIS_URL names one Redis (`redis://`, `rediss://`) or a Redis Cluster: `redis+cluster://[user:pass@]h:p,h:p`
// (`rediss+cluster://` for TLS), or a single seed node with REDIS_CLUSTER=true. The cluster's other nodes are
// discovered from the seeds (CLUSTER SLOTS), so one reachable seed is enough.

export interface RedisNode {
  host: string;
  port: number;
}

export type RedisTarget =
  | { cluster: false; url: string }
  | { cluster: true; nodes: RedisNode[]; username?: string; password?: string; tls: boolean };

const CLUSTER_SCHEME = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#]+)\/?$/;
const NODE = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

/** The target REDIS_URL names, or the reason it names none. `cluster` is REDIS_CLUSTER. */
export function parseRedisTarget(url: string, cluster = false): RedisTarget | { error: string } {
  const m = CLUSTER_SCHEME.exec(url);
  if (m) return clusterOf(m[1] === 'rediss', m[2], m[3]!);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { error: 'must be a redis://, rediss:// or redis+cluster://host:port,host:port URL' };
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:')
    return { error: 'must be a redis://, rediss:// or redis+cluster://host:port,host:port URL' };
  if (!cluster) return { cluster: false, url };
  // A cluster has only database 0: a path naming another would be silently ignored.
  if (parsed.pathname.replace(/^\/0?$/, '') !== '') return { error: 'names a database, which a cluster does not have' };
  const userinfo = parsed.username || parsed.password ? `${parsed.username}:${parsed.password}` : undefined;
  return clusterOf(parsed.protocol === 'rediss:', userinfo, `${parsed.hostname}:${parsed.port || 6379}`);
}

function clusterOf(tls: boolean, userinfo: string | undefined, hosts: string) {
  const nodes: RedisNode[] = [];
  for (const entry of hosts.split(',')) {
    const node = NODE.exec(entry.trim());
    const port = Number(node?.[2]);
    if (!node || port < 1 || port > 65535) return { error: `"${entry}" is not a host:port` };
    nodes.push({ host: node[1]!.replace(/^\[|\]$/g, ''), port });
  }
  const [user, ...rest] = (userinfo ?? '').split(':');
  const password = rest.join(':');
  return {
    cluster: true as const,
    nodes,
    tls,
    ...(user ? { username: decodeURIComponent(user) } : {}),
    ...(password ? { password: decodeURIComponent(password) } : {}),
  };
}

/** The one string form of a target, which parseRedisTarget reads back without REDIS_CLUSTER. */
export function redisTargetUrl(target: RedisTarget): string {
  if (!target.cluster) return target.url;
  const auth =
    target.username || target.password
      ? `${encodeURIComponent(target.username ?? '')}:${encodeURIComponent(target.password ?? '')}@`
      : '';
  const hosts = target.nodes.map((n) => `${n.host.includes(':') ? `[${n.host}]` : n.host}:${n.port}`).join(',');
  return `${target.tls ? 'rediss' : 'redis'}+cluster://${auth}${hosts}`;
}
