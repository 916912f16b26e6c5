// A request answered before its body was whole (a 401 before the body is read, a 413 on the declared length, a
// route that reads no body) leaves the rest of the body in the connection: Node reads and drops it so the
// connection can carry the next request, however long that takes. This bounds that tail for every route: the
// client that keeps sending gets a little while to finish (so it reads the answer rather than a reset), one that
// stalls or sends on and on is cut.
import type { HttpTimeouts } from '@gensvc/config';
import type { NextFunction, Request, Response } from 'express';
import { watchBody } from './body-deadline';

/** How long, and for how many more bytes, the rest of an answered request's body is still read and dropped. */
const LINGER_MS = 5_000;
const LINGER_BYTES = 8 * 1024 * 1024;

export function boundUnreadBody(timeouts: Pick<HttpTimeouts, 'bodyIdleMs'>) {
  const deadline = { idleMs: Math.min(timeouts.bodyIdleMs, LINGER_MS), totalMs: LINGER_MS };
  return (req: Request, res: Response, next: NextFunction) => {
    res.once('finish', () => {
      if (req.complete) return;
      let extra = 0;
      const cut = () => {
        stop();
        req.off('data', count);
        req.socket.destroy();
      };
      const count = (chunk: Buffer) => {
        extra += chunk.length;
        if (extra > LINGER_BYTES) cut();
      };
      const stop = watchBody(req, deadline, cut);
      req.on('data', count);
      req.resume();
    });
    next();
  };
}
