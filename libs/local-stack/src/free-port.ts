import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * A TCP port that was free a moment ago, for a server of this machine to listen on.
 *
 * Chosen below the kernel's ephemeral range, where the operating system would pick it: a port asked of the kernel
 * (listen on 0) comes from the range every outgoing connection takes its local port from, so a pooled Postgres or
 * Redis connection opened meanwhile could hold it for as long as it lives, and the server meant for it then failed
 * with EADDRINUSE at every restart (seen in the fleet's test). A candidate is tried on the wildcard address, as the
 * services listen; after a few taken ones, the kernel's choice as before.
 */
export async function freePort(): Promise<number> {
  ephemeralLow ??= readEphemeralLow();
  const low = ephemeralLow;
  const from = Math.max(1024, low - 12_000);
  for (let tries = 0; tries < 20 && from < low; tries++) {
    const port = from + Math.floor(Math.random() * (low - from));
    if (await listenable(port)) return port;
  }
  return listenOnce(0);
}

let ephemeralLow: number | undefined;

/** The first port of the kernel's ephemeral range (Linux), or of IANA's elsewhere; read once per process. */
function readEphemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (low > 0) return low;
  } catch {
    // not Linux
  }
  return 49152;
}

const listenable = (port: number) =>
  listenOnce(port).then(
    () => true,
    () => false,
  );

function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(port, () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
}
