// The edge's HTTP server with its slow-client bounds set deliberately (issue 14) rather than Node's defaults (300 s
// for a whole request, 60 s for headers, 5 s keep-alive). Bodies are bounded per route by their readers
// (body-deadline.ts, which answer 408 in the API's error shape); the server's request timeout is only the backstop
// for a request no reader watches, past the longest route's own bound.
import { createServer, IncomingMessage, ServerResponse, type RequestListener, type Server } from 'node:http';
import type { HttpTimeouts } from '@gensvc/config';
import type { Express } from 'express';

/**
 * A constructor of `Base`'s objects (node:http's IncomingMessage, ServerResponse: plain constructor functions) whose
 * prototype is `proto` from the start. Express gives every request and response its own prototypes (app.request,
 * app.response) with Object.setPrototypeOf as it takes them; an object made with them already keeps one shape from
 * its birth, and that call finds nothing to change (it was a prototype switch per object, which also leaves the
 * code that reads them facing two shapes of each).
 */
function madeWith<T>(Base: (...args: never[]) => void, proto: object): T {
  const Made = function (this: object, ...args: never[]) {
    Base.apply(this, args);
  };
  Made.prototype = proto;
  return Made as unknown as T;
}

export function createEdgeServer(
  app: RequestListener & Partial<Pick<Express, 'request' | 'response'>>,
  t: HttpTimeouts,
): Server {
  const server = createServer(
    {
      ...(app.request && app.response
        ? {
            IncomingMessage: madeWith<typeof IncomingMessage>(IncomingMessage as never, app.request),
            ServerResponse: madeWith<typeof ServerResponse>(ServerResponse as never, app.response),
          }
        : {}),
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
