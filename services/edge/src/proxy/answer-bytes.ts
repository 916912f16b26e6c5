// A non-streamed answer goes to the caller as the provider's own bytes with only the members the protocol rewrites
// (the public model id) spliced in: parsing is still needed for the usage, but serialising the parsed answer again
// (a walk of the whole object, a new string, its UTF-8 encoding on the socket) is work on every call that grows with
// the answer. The bytes the caller gets parse to exactly what the protocol made of the answer; formatting is the
// provider's, as any pass-through gateway leaves it.
import { isUtf8 } from 'node:buffer';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/** A top-level member's value in the text: its bytes are [start, end). */
interface Span {
  key: string;
  start: number;
  end: number;
}

const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function skipSpace(b: Buffer, i: number): number {
  while (isSpace(b[i])) i++;
  return i;
}

/** The index after the string that opens at `i` (its quote). */
function stringEnd(b: Buffer, i: number): number {
  let from = i + 1;
  for (;;) {
    const q = b.indexOf(QUOTE, from);
    if (q < 0) throw new Error('unterminated string');
    let slashes = 0;
    for (let k = q - 1; b[k] === BACKSLASH; k--) slashes++;
    if (slashes % 2 === 0) return q + 1;
    from = q + 1;
  }
}

/** The index after the value that starts at `i`. */
function valueEnd(b: Buffer, i: number): number {
  const c = b[i];
  if (c === QUOTE) return stringEnd(b, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    let depth = 0;
    for (let j = i; j < b.length; j++) {
      const d = b[j];
      if (d === QUOTE) j = stringEnd(b, j) - 1;
      else if (d === OPEN_OBJECT || d === OPEN_ARRAY) depth++;
      else if ((d === CLOSE_OBJECT || d === CLOSE_ARRAY) && --depth === 0) return j + 1;
    }
    throw new Error('unterminated value');
  }
  // A number, true, false or null: up to what ends a member.
  let j = i;
  while (j < b.length && b[j] !== COMMA && b[j] !== CLOSE_OBJECT && !isSpace(b[j])) j++;
  return j;
}

/** Every member of the top-level object in `b` (a valid JSON object text) whose name is one of `keys`. */
function memberSpans(b: Buffer, keys: readonly string[]): Span[] {
  const spans: Span[] = [];
  let i = skipSpace(b, 0);
  if (b[i] !== OPEN_OBJECT) throw new Error('not an object');
  i++;
  for (;;) {
    i = skipSpace(b, i);
    const c = b[i];
    if (c === CLOSE_OBJECT || c === undefined) return spans;
    if (c === COMMA) {
      i++;
      continue;
    }
    const nameEnd = stringEnd(b, i);
    // A name written with escapes ("mod\u0065l") is the same name to a parser: decoded before it is compared.
    const raw = b.toString('utf8', i + 1, nameEnd - 1);
    const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
    const start = skipSpace(b, skipSpace(b, nameEnd) + 1); // past the colon
    const end = valueEnd(b, start);
    if (keys.includes(key)) spans.push({ key, start, end });
    i = end;
  }
}

/**
 * The caller's bytes for an answer whose text is `raw` and which the protocol parsed into `json` and then rewrote in
 * the top-level members `fields` (and nowhere else). Each occurrence of a rewritten member gets its new value (a
 * duplicated name included: a parser keeps the last, so every one is rewritten); every other byte is the provider's.
 * An answer that is not valid UTF-8, or whose rewrite added or removed a member, is serialised from `json` instead,
 * as before (a decoder would have replaced the bad bytes; a member's place is not in the text).
 */
export function answerBytes(
  raw: Buffer,
  json: Record<string, unknown>,
  original: readonly unknown[],
  fields: readonly string[],
): Buffer {
  const changed: string[] = [];
  for (let f = 0; f < fields.length; f++) if (json[fields[f]!] !== original[f]) changed.push(fields[f]!);
  if (!isUtf8(raw)) return Buffer.from(JSON.stringify(json));
  if (changed.length === 0) return raw;
  let spans: Span[];
  try {
    spans = memberSpans(raw, changed);
  } catch {
    // A text JSON.parse took but this reader does not follow: never the caller's loss, the answer is serialised.
    return Buffer.from(JSON.stringify(json));
  }
  for (const key of changed) {
    const present = spans.some((s) => s.key === key);
    if (present !== (json[key] !== undefined)) return Buffer.from(JSON.stringify(json));
  }
  const parts: Buffer[] = [];
  let at = 0;
  for (const s of spans) {
    parts.push(raw.subarray(at, s.start), Buffer.from(JSON.stringify(json[s.key])));
    at = s.end;
  }
  parts.push(raw.subarray(at));
  return Buffer.concat(parts);
}
