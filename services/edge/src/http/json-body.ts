// The one JSON body reader of every JSON route, whose byte reader also serves the routes that need the raw
// bytes (readRawBody: provider webhooks, signed over them). Everything a caller can get wrong about the bytes is a
// 4xx decided here, before any store is touched: a Content-Encoding the bytes do not follow (400 invalid_encoding),
// bytes that are not UTF-8 (400 invalid_encoding), malformed JSON (400 invalid_json), nesting beyond MAX_JSON_DEPTH
// (400 json_too_deep), "\u0000" or an unpaired surrogate in a string (400 invalid_character), a body over the
// route's limit, declared or decoded (413), and a body that stalls or takes too long (408, connection closed).
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { HttpTimeouts } from '@gensvc/config';
import { type AppError, errors } from '@gensvc/errors';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { jsonDeadline, watchBody } from './body-deadline';
import { bufferedWhole, declaredTooLarge } from './declared-length';
import { formatBytes } from './errors';
import { MAX_JSON_DEPTH, scanJsonText } from './json-text';

const JSON_TYPES = ['application/json', 'application/*+json'];

export interface JsonBodyOptions {
  /** Decoded bytes allowed. */
  limitBytes: number;
  timeouts: HttpTimeouts;
  /**
   * The body is passed on to a provider and none of its strings is stored (chat routes): "\u0000" is left for the
   * provider to judge. The fields the gateway itself stores or looks up (the model id) are checked by their schemas.
   */
  passThrough?: boolean;
}

const DECODERS: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/** Stateless between calls (no `stream` option): one decoder serves every request. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** A request with a body (a Content-Length, even 0, or chunked), as body-parser judges it. */
const hasBody = (req: IncomingMessage) =>
  req.headers['transfer-encoding'] !== undefined ||
  !Number.isNaN(Number.parseInt(req.headers['content-length'] ?? '', 10));

/**
 * JSON bodies for one route. Mounted per route, after authentication, so the bodies of unauthenticated callers are
 * never read. A request that is not JSON (by Content-Type) is left alone (req.body stays undefined) for the route to
 * refuse or read otherwise (multipart).
 */
export function jsonBody(o: JsonBodyOptions): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    if (req.body !== undefined || req.readableEnded || !hasBody(req) || !isJson(req)) return next();
    const charset = contentCharset(req.headers['content-type']);
    if (charset !== null && charset !== 'utf-8' && charset !== 'utf8') {
      return next(errors.unsupportedMediaType('JSON bodies must be UTF-8 (charset=utf-8).', { param: 'Content-Type' }));
    }
    const coding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (coding !== 'identity' && !DECODERS[coding]) {
      return next(
        errors.unsupportedMediaType('Content-Encoding must be gzip, deflate, br or identity.', {
          param: 'Content-Encoding',
        }),
      );
    }
    if (coding === 'identity' && declaredTooLarge(req, o.limitBytes))
      return next(errors.payloadTooLarge(formatBytes(o.limitBytes)));
    readBody(req, coding, o).then(
      (text) => {
        try {
          req.body = parseJson(text, o);
          next();
        } catch (e) {
          next(e);
        }
      },
      (e: unknown) => next(e),
    );
  };
}

/** The decoded body as text, or the AppError that refuses it. */
async function readBody(req: IncomingMessage, coding: string, o: JsonBodyOptions): Promise<string> {
  const bytes = await readBytes(req, coding, o);
  try {
    return UTF8.decode(bytes);
  } catch {
    throw errors.invalidEncoding('The request body is not valid UTF-8.', 'body');
  }
}

/**
 * The body's bytes exactly as received, for a route that must see them unparsed (a signature over the raw body), with
 * the JSON routes' limit and deadline; `Content-Encoding` is not undone (the bytes are what was signed).
 */
export function readRawBody(
  req: IncomingMessage,
  o: Pick<JsonBodyOptions, 'limitBytes' | 'timeouts'>,
): Promise<Buffer> {
  return readBytes(req, 'identity', o);
}

/** The body's bytes, decoded by `coding` (one of DECODERS, or identity), or the AppError that refuses it. */
function readBytes(
  req: IncomingMessage,
  coding: string,
  o: Pick<JsonBodyOptions, 'limitBytes' | 'timeouts'>,
): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const decoder = coding === 'identity' ? null : DECODERS[coding]!();
    const source: Readable = (decoder as unknown as Readable | null) ?? req;
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (error: AppError | null) => {
      if (settled) return;
      settled = true;
      stopWatching();
      source.off('data', onData).off('end', onEnd).off('error', onError);
      req.off('close', onClose);
      if (decoder) {
        req.unpipe(decoder as unknown as NodeJS.WritableStream);
        (decoder as unknown as Readable).on('error', () => {}).destroy();
      }
      if (error) reject(error);
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > o.limitBytes) return settle(errors.payloadTooLarge(formatBytes(o.limitBytes)));
      chunks.push(chunk);
    };
    const onEnd = () => settle(null);
    const aborted = () => errors.invalidRequest('The request body could not be read: the client aborted it.');
    const onError = () =>
      settle(
        decoder
          ? errors.invalidEncoding(
              `The request body is not valid ${coding} data, as its Content-Encoding says it is.`,
              'Content-Encoding',
            )
          : aborted(),
      );
    // The client left before the body was whole: nobody is there to answer, but the route must not run.
    const onClose = () => {
      if (!req.complete) settle(aborted());
    };
    // A body already whole (it came with the headers, as a JSON call's usually does) can no longer stall: no timers.
    const stopWatching =
      req.complete || bufferedWhole(req)
        ? () => {}
        : watchBody(req, jsonDeadline(o.timeouts), (timeout) => settle(timeout));
    source.on('data', onData).once('end', onEnd).once('error', onError);
    req.once('close', onClose);
    if (decoder) {
      req.once('error', () => settle(aborted()));
      req.pipe(decoder as unknown as NodeJS.WritableStream);
    }
  });
}

function parseJson(text: string, o: JsonBodyOptions): unknown {
  if (text.length === 0) return {}; // an empty body: body-parser's answer, so the schema names the missing fields
  const c = text[text.search(/\S/)];
  if (c !== '{' && c !== '[')
    throw errors.invalidJson('The request body is not valid JSON: it must be an object or an array.');
  const problem = scanJsonText(text, { maxDepth: MAX_JSON_DEPTH, refuseNul: !o.passThrough });
  if (problem?.kind === 'depth') throw errors.jsonTooDeep(MAX_JSON_DEPTH);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw errors.invalidJson('The request body is not valid JSON.');
  }
  if (problem?.kind === 'nul')
    throw errors.invalidCharacter(
      'A string in the request body holds the NUL character (\\u0000), which no field may hold.',
      'body',
    );
  if (problem?.kind === 'surrogate') {
    throw errors.invalidCharacter(
      'A string in the request body holds an unpaired UTF-16 ' +
        'surrogate escape (\\ud800-\\udfff): it is not Unicode text.',
      'body',
    );
  }
  return value;
}

/** JSON by its Content-Type; the header every client sends is recognised without parsing it (type-is does the rest). */
function isJson(req: Request): boolean {
  const type = req.headers['content-type'];
  return type === 'application/json' || type === 'application/json; charset=utf-8' || Boolean(req.is(JSON_TYPES));
}

/** The charset parameter of a Content-Type, lower-cased, or null when there is none. */
function contentCharset(contentType: string | undefined): string | null {
  const m = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(contentType ?? '');
  return m ? m[1]!.toLowerCase() : null;
}
