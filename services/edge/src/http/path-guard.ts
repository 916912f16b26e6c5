// The one decoding guard for every path (and query) of the edge: mounted before any route, it refuses a
// request whose path the router could not decode into its parameters, or whose decoded path or query holds a
// character no id, model name or filter can hold, with a 400 naming the problem. Without it, the router's
// decodeURIComponent throws on `%ZZ`, `%E0%A4%A` (a cut sequence) or `%C0%AF` (overlong UTF-8), and a `%00` in
// a model id or a filter reaches Postgres, which refuses NUL: both were 500s.
import { errors, type AppError } from '@gensvc/errors';
import type { NextFunction, Request, Response } from 'express';

const BROKEN_PERCENT = /%(?![0-9A-Fa-f]{2})/;
/** C0 controls and DEL: no path segment or query value of this API holds one. */
const CONTROL = /[\u0000-\u001f\u007f]/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The problem with one percent-encoded part of a URL (`what`: "path" or "query"), or null. `plusIsSpace` for the
 * query, where "+" means a space. Characters above U+007F that arrive raw are taken as the bytes Node read them as.
 */
export function encodingProblem(raw: string, what: 'path' | 'query'): AppError | null {
  const broken = BROKEN_PERCENT.exec(raw);
  if (broken) {
    const near = raw.slice(broken.index, broken.index + 3);
    return errors.invalidEncoding(
      `The ${what} holds a broken percent-encoding ("${near}"): each % must be followed by two hexadecimal digits.`,
      what,
    );
  }
  let decoded = raw;
  try {
    // Plain ASCII (the usual path) is its own decoding.
    if (/[%\u0080-\uffff]/.test(raw)) decoded = utf8.decode(percentBytes(raw));
  } catch {
    return errors.invalidEncoding(
      `The ${what}'s percent-encoded bytes are not valid UTF-8 (a cut ` +
        `or overlong sequence, such as %C0%AF, or a byte that starts none).`,
      what,
    );
  }
  const control = CONTROL.exec(decoded);
  if (control) {
    const code = control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
    return errors.invalidCharacter(
      `The ${what} holds the control character U+${code}, which no id, name or value of this API holds.`,
      what,
    );
  }
  return null;
}

/** The bytes a percent-encoded string stands for: %XX as the byte, anything else as its own (latin1) byte. */
function percentBytes(raw: string): Buffer {
  const out = Buffer.allocUnsafe(raw.length);
  let n = 0;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === 0x25) {
      out[n++] = parseInt(raw.slice(i + 1, i + 3), 16);
      i += 2;
    } else out[n++] = c & 0xff;
  }
  return out.subarray(0, n);
}

export function pathGuard(req: Request, _res: Response, next: NextFunction) {
  const url = req.url;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const problem =
    encodingProblem(path, 'path') ?? (q < 0 ? null : encodingProblem(url.slice(q + 1).replace(/\+/g, ' '), 'query'));
  next(problem ?? undefined);
}
