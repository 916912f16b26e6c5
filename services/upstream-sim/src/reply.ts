// What a protocol answers, as data, and the one writer that puts it on the wire. Keeping replies as data lets
// the fault layer cut, slow down or corrupt any protocol's answer the same way.
import type { ServerResponse } from 'node:http';
import type { FaultRule } from './faults';

export interface SseEvent {
  event?: string;
  /** A JSON value, or a string sent verbatim (OpenAI's `[DONE]`). */
  data: unknown;
  raw?: boolean;
}

export type Reply =
  | { kind: 'json'; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: 'bytes'; status: number; body: Buffer; contentType: string; headers?: Record<string, string> }
  | { kind: 'sse'; status: number; events: SseEvent[]; eol: '\n' | '\r\n'; headers?: Record<string, string> }
  /** Google's streamed JSON array: `[` item `,` item ... `]`, written item by item. */
  | { kind: 'json-stream'; status: number; items: unknown[]; headers?: Record<string, string> };

export const json = (status: number, body: unknown, headers?: Record<string, string>): Reply => ({
  kind: 'json',
  status,
  body,
  headers,
});

/** How the delivery ended, for the request log. */
export type Outcome = 'complete' | 'cut' | 'client-closed';

export interface DeliveryOptions {
  fault?: FaultRule;
  /** Rewrites a JSON body or stream item into valid JSON of the wrong shape. */
  malformShape: (body: unknown, fault: FaultRule) => unknown;
  onStatus: (status: number) => void;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Half of a JSON text: never valid JSON when the text is an object or array. */
const truncated = (text: string) => text.slice(0, Math.max(1, Math.floor(text.length / 2)));

export async function deliver(res: ServerResponse, reply: Reply, options: DeliveryOptions): Promise<Outcome> {
  const fault = options.fault;
  const cutAfter = fault?.cutAfterChunks;
  options.onStatus(reply.status);

  if (reply.kind === 'json' || reply.kind === 'bytes') {
    let body: Buffer;
    let contentType: string;
    if (reply.kind === 'json') {
      const value = fault?.malformed === 'shape' ? options.malformShape(reply.body, fault) : reply.body;
      const text = JSON.stringify(value);
      body = Buffer.from(fault?.malformed === 'json' ? truncated(text) : text);
      contentType = 'application/json';
    } else {
      body = reply.body;
      contentType = reply.contentType;
    }
    res.writeHead(reply.status, { ...reply.headers, 'content-type': contentType, 'content-length': body.length });
    if (cutAfter !== undefined) return cut(res, body.subarray(0, Math.floor(body.length / 2)));
    res.end(body);
    return finished(res);
  }

  const frames = reply.kind === 'sse' ? sseFrames(reply, options) : arrayFrames(reply.items, options);
  res.writeHead(reply.status, {
    ...reply.headers,
    'content-type': reply.kind === 'sse' ? 'text/event-stream; charset=utf-8' : 'application/json; charset=UTF-8',
    'cache-control': 'no-cache',
  });
  res.flushHeaders();
  const delay = fault?.chunkDelayMs ?? 0;
  for (let i = 0; i < frames.length; i++) {
    if (cutAfter !== undefined && i >= cutAfter) return cut(res);
    if (res.destroyed) return 'client-closed';
    if (delay > 0 && i > 0) await sleep(delay);
    if (!res.write(frames[i]!)) await drained(res);
  }
  // A cut never ends cleanly, even when every chunk fitted under the count.
  if (cutAfter !== undefined) return cut(res);
  res.end();
  return finished(res);
}

function sseFrames(reply: Extract<Reply, { kind: 'sse' }>, options: DeliveryOptions): string[] {
  const fault = options.fault;
  let corrupted = false;
  return reply.events.map((e) => {
    let data: string;
    if (e.raw) data = String(e.data);
    else {
      data = JSON.stringify(fault?.malformed === 'shape' ? options.malformShape(e.data, fault) : e.data);
      if (fault?.malformed === 'json' && !corrupted) {
        corrupted = true;
        data = truncated(data);
      }
    }
    return `${e.event === undefined ? '' : `event: ${e.event}${reply.eol}`}data: ${data}${reply.eol}${reply.eol}`;
  });
}

function arrayFrames(items: unknown[], options: DeliveryOptions): string[] {
  const fault = options.fault;
  const frames = items.map((item, i) => {
    let text = JSON.stringify(fault?.malformed === 'shape' ? options.malformShape(item, fault) : item);
    if (fault?.malformed === 'json' && i === 0) text = truncated(text);
    return `${i === 0 ? '[' : '\n,\r\n'}${text}`;
  });
  if (frames.length === 0) frames.push('[');
  frames[frames.length - 1] += '\n]';
  return frames;
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/** Flushes what was written, then drops the connection: the body ends without its terminator or full length. */
function cut(res: ServerResponse, last?: Buffer): Promise<Outcome> {
  if (!res.headersSent) res.flushHeaders();
  return new Promise((resolve) => {
    const destroy = () => {
      res.socket?.destroy();
      resolve('cut');
    };
    if (last && last.length > 0) res.write(last, destroy);
    else if (res.socket && res.socket.writableLength > 0) res.socket.write('', destroy);
    else setImmediate(destroy);
  });
}

function finished(res: ServerResponse): Promise<Outcome> {
  return new Promise((resolve) => {
    if (res.writableFinished) return resolve('complete');
    res.once('finish', () => resolve('complete'));
    res.once('close', () => resolve(res.writableFinished ? 'complete' : 'client-closed'));
  });
}
