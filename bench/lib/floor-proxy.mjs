// The thinnest correct gateway Node can be on this machine, for bench/chat's "floor" row (bench code, never
// production): node:http in, an undici Pool (keep-alive) to UPSTREAM out, method, path, headers and body forwarded,
// status, headers and body (SSE included, chunk by chunk) piped back. No auth, no billing, no logging, no JSON parse.
// Run by startFloorProxy (processes.mjs): PORT to listen on, UPSTREAM the origin to forward to.
import { createServer } from 'node:http';
import { Pool } from 'undici';

const upstream = new Pool(process.env.UPSTREAM, { keepAliveTimeout: 30_000 });
// Hop-by-hop headers (RFC 9110 §7.6.1) are the connection's, not the message's; host is the upstream's own.
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
]);
const endToEnd = (headers) => {
  const out = {};
  for (const k in headers) if (!HOP.has(k)) out[k] = headers[k];
  return out;
};

createServer((req, res) => {
  const body = req.method === 'GET' || req.method === 'HEAD' ? null : req;
  upstream.stream(
    { method: req.method, path: req.url, headers: endToEnd(req.headers), body },
    ({ statusCode, headers }) => {
      res.writeHead(statusCode, endToEnd(headers));
      return res;
    },
    (err) => {
      if (!err) return;
      if (res.headersSent) res.destroy(err);
      else res.writeHead(502, { 'content-type': 'text/plain' }).end(`floor proxy: ${err.message}`);
    },
  );
}).listen(Number(process.env.PORT), '127.0.0.1');
// An orderly exit on SIGTERM, so that `--cpu-prof` (bench/hot-path-profile) writes its profile.
process.on('SIGTERM', () => process.exit(0));
