import { readFileSync } from 'node:fs';
import { createServer, connect, type Server } from 'node:net';
import { freePort } from './free-port';

const listen = (port: number) =>
  new Promise<Server>((resolve, reject) => {
    const server = createServer((socket) => socket.end());
    server.on('error', reject);
    server.listen(port, () => resolve(server));
  });

it("answers a listenable port below the kernel's ephemeral range, which outgoing connections never take", async () => {
  const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  const ports = await Promise.all(Array.from({ length: 5 }, () => freePort()));
  for (const port of ports) {
    expect(port).toBeGreaterThanOrEqual(1024);
    expect(port).toBeLessThan(low);
    const server = await listen(port);
    // An outgoing connection to it takes its own local port from the ephemeral range, never the one answered.
    const socket = connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    expect(socket.localPort).toBeGreaterThanOrEqual(low);
    socket.destroy();
    await new Promise((r) => server.close(r));
  }
});
