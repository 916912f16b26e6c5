// The bounds on a client sending its body: the longest pause between two chunks and the whole body's
// time, per route (a 25 MiB upload on a slow link needs far longer than a JSON body). Without them a body that never
// ends, or a Content-Length larger than what is sent, holds its connection until Node's 300 s request timeout.
import type { IncomingMessage } from 'node:http';
import type { HttpTimeouts } from '@gensvc/config';
import { errors, type AppError } from '@gensvc/errors';

export interface BodyDeadline {
  /** Longest pause between two chunks. */
  idleMs: number;
  /** The whole body, from when reading it starts. */
  totalMs: number;
}

export const jsonDeadline = (t: HttpTimeouts): BodyDeadline => ({ idleMs: t.bodyIdleMs, totalMs: t.jsonBodyMs });
export const uploadDeadline = (t: HttpTimeouts): BodyDeadline => ({ idleMs: t.bodyIdleMs, totalMs: t.uploadMs });

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** 408 for a body that stalled or took too long: the answer tells the client which bound it broke. */
function bodyTimeout(which: 'idle' | 'total', deadline: BodyDeadline): AppError {
  return which === 'idle'
    ? errors.requestTimeout(
        `The request body stalled: no byte arrived for ${seconds(deadline.idleMs)}. Nothing was stored or charged.`,
      )
    : errors.requestTimeout(
        `The request body did not arrive whole within ${seconds(deadline.totalMs)}. Nothing was stored or charged.`,
      );
}

/**
 * Watches `req`'s body while it is read: calls `onTimeout` once (with the 408 to answer) when it pauses longer than
 * `idleMs` or is not whole within `totalMs`. Returns the function that stops watching (call it when the body is read
 * or refused). Each chunk of the request counts, compressed or not.
 */
export function watchBody(
  req: IncomingMessage,
  deadline: BodyDeadline,
  onTimeout: (error: AppError) => void,
): () => void {
  let stopped = false;
  const fire = (which: 'idle' | 'total') => {
    if (stopped) return;
    // Paused by our own backpressure (the store is slower than the client): not the client's pause.
    if (which === 'idle' && req.readableFlowing === false) return void idle.refresh();
    stop();
    onTimeout(bodyTimeout(which, deadline));
  };
  const total = setTimeout(() => fire('total'), deadline.totalMs);
  const idle = setTimeout(() => fire('idle'), deadline.idleMs);
  const onData = () => {
    idle.refresh();
  };
  const stop = () => {
    if (stopped) return;
    stopped = true;
    clearTimeout(total);
    clearTimeout(idle);
    req.off('data', onData);
    req.off('end', stop);
    req.off('close', stop);
  };
  // Called as the reader starts reading (a 'data' listener sets the body flowing).
  req.on('data', onData);
  req.once('end', stop);
  req.once('close', stop);
  return stop;
}
