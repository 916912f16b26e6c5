// Test support: a real HTTPS server on port 443 of a loopback address of its own (the only port an image reference
// may use), serving image references the way a web server does: a small image, a page that is not one, bodies that
// declare or stream more than 30 MB, a header showing 9000 px. Large bodies are pumped with backpressure, so the
// server's count of what it sent shows when the client stopped reading.
import { randomInt } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sampleMedia, sharedTestCa, startTlsServer, type TlsTestServer } from '@gensvc/testing';

interface Served {
  type: string;
  /** The first bytes; the rest, up to `total`, is zero filler. */
  head: Buffer;
  total?: number;
  /** Send Content-Length (default true). */
  declare?: boolean;
}

interface PumpRecord {
  /** Body bytes handed to the socket before it closed or the body ended. */
  sent: number;
  /** The whole body was sent. */
  finished: boolean;
  closed: Promise<void>;
}

export interface ImageUrlServer {
  tls: TlsTestServer;
  /** A loopback address let through OUTBOUND_ALLOW_CIDRS, with nothing listening on 443. */
  deadHost: string;
  served: Map<string, Served>;
  /** What each path's last response sent. */
  pumps: Map<string, PumpRecord>;
  url(path: string): string;
  close(): Promise<void>;
}

/** Picks the addresses before the test context is made (they go into OUTBOUND_ALLOW_CIDRS). */
export function imageUrlHosts() {
  const base = `127.${randomInt(64, 250)}.${randomInt(1, 250)}`;
  const last = randomInt(2, 250);
  return { host: `${base}.${last}`, deadHost: `${base}.${last === 250 ? 2 : last + 1}` };
}

export async function startImageUrlServer(hosts: { host: string; deadHost: string }): Promise<ImageUrlServer> {
  const served = new Map<string, Served>();
  const pumps = new Map<string, PumpRecord>();
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'https://x').pathname;
    const found = served.get(path);
    if (!found) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    const total = found.total ?? found.head.length;
    let resolveClosed!: () => void;
    const record: PumpRecord = { sent: 0, finished: false, closed: new Promise((r) => (resolveClosed = r)) };
    pumps.set(path, record);
    res.on('close', () => resolveClosed());
    res.writeHead(200, {
      'content-type': found.type,
      ...(found.declare === false ? {} : { 'content-length': String(total) }),
    });
    const filler = Buffer.alloc(64 * 1024);
    const pump = () => {
      while (record.sent < total) {
        if (res.destroyed) return;
        const piece = record.sent === 0 ? found.head : filler.subarray(0, Math.min(filler.length, total - record.sent));
        record.sent += piece.length;
        if (!res.write(piece)) return void res.once('drain', pump);
      }
      record.finished = true;
      res.end();
    };
    pump();
  };
  const { ca } = sharedTestCa();
  const tls = await startTlsServer(handler, { host: hosts.host, port: 443, cert: ca.issue([hosts.host]) });
  served.set('/ok.png', { type: 'image/png', head: sampleMedia.png(64, 48) });
  served.set('/page.html', { type: 'image/png', head: Buffer.from('<!doctype html><title>not an image</title>') });
  // A PNG whose header says 9000 px wide, then 20 MB (declared): refused on its first bytes.
  served.set('/wide.png', { type: 'image/png', head: sampleMedia.png(9000, 1), total: 20_000_000 });
  // 31 MB declared: refused on the header, before any body byte is read.
  served.set('/declared-huge.png', { type: 'image/png', head: sampleMedia.png(64, 48), total: 31_000_000 });
  // 31 MB with no Content-Length (chunked): counted as it streams past and refused once past 30 MB.
  served.set('/streamed-huge.png', {
    type: 'image/png',
    head: sampleMedia.png(64, 48),
    total: 31_000_000,
    declare: false,
  });
  return {
    tls,
    deadHost: hosts.deadHost,
    served,
    pumps,
    url: (path) => `https://${hosts.host}${path}`,
    close: () => tls.close(),
  };
}
