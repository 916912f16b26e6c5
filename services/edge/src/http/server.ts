// The edge's HTTP server with its slow-client bounds set deliberately rather than Node's defaults (300 s
// for a whole request, 60 s for headers, 5 s keep-alive). Bodies are bounded per route by their readers
// (body-deadline.ts, which answer 408 in the API's error shape); the server's request timeout is only the backstop
// for a request no reader watches, past the longest route's own bound.
import { createServer, type RequestListener, type Server } from 'node:http';
import type { HttpTimeouts } from '@gensvc/config';

export function createEdgeServer(app: RequestListener, t: HttpTimeouts): Server {
  const server = createServer(
    {
      headersTimeout: t.headersMs,
      requestTimeout: Math.max(t.uploadMs, t.jsonBodyMs) + t.headersMs + 10_000,
      keepAliveTimeout: t.keepAliveMs,
      // How often Node checks the two timeouts above; its 30 s default would let a short headers timeout run long.
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(t.headersMs / 4))),
    },
    app,
  );
  return server;
}
