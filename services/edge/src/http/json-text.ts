// One pass over a JSON text before it is parsed: how deep it nests, and whether a string holds what no store or
// walker should meet. JSON.parse copes with any depth, but whatever walks the value afterwards recursively
// (JSON.stringify for the Idempotency-Key hash, zod, the protocol code, the workers) overflows the stack a few
// thousand levels down; a limit checked here, once, protects every JSON route and everything behind it.

/** Objects and arrays inside one another; no API body comes near it (tool schemas nest a dozen levels). */
export const MAX_JSON_DEPTH = 64;

export type JsonTextProblem =
  | { kind: 'depth' }
  /** "\u0000" in a string: Postgres text and jsonb cannot hold it. */
  | { kind: 'nul' }
  /** "\ud800" without its pair (or a low half alone): not Unicode text; Postgres jsonb refuses it. */
  | { kind: 'surrogate' };

export interface ScanOptions {
  maxDepth: number;
  /** Refuse "\u0000" in strings (bodies whose strings may be stored); bodies only passed on to a provider allow it. */
  refuseNul: boolean;
}

const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

/** The code unit of the `\uXXXX` escape at `i` (the backslash), or -1 when there is none. */
function escapedUnit(text: string, i: number): number {
  if (text.charCodeAt(i) !== 0x5c || text.charCodeAt(i + 1) !== 0x75 || i + 6 > text.length) return -1;
  for (let k = i + 2; k < i + 6; k++) if (!isHex(text.charCodeAt(k))) return -1;
  return parseInt(text.slice(i + 2, i + 6), 16);
}

/**
 * The first problem of `text` (a JSON text, decoded), or null. Malformed JSON is left to JSON.parse: whatever this
 * reports of it, the text is refused either way. Strings are scanned for escapes only: a raw control character is
 * invalid JSON, and a raw lone surrogate cannot come out of a strict UTF-8 decoder.
 */
export function scanJsonText(text: string, opts: ScanOptions): JsonTextProblem | null {
  let depth = 0;
  let inString = false;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x22) inString = false;
      else if (c === 0x5c) {
        const unit = escapedUnit(text, i);
        if (unit < 0) {
          i++; // \" \\ \n ...: the escaped character is not a quote that ends the string
          continue;
        }
        if (unit === 0 && opts.refuseNul) return { kind: 'nul' };
        if (unit >= 0xd800 && unit <= 0xdbff) {
          const low = escapedUnit(text, i + 6);
          if (low < 0xdc00 || low > 0xdfff) return { kind: 'surrogate' };
          i += 11;
          continue;
        }
        if (unit >= 0xdc00 && unit <= 0xdfff) return { kind: 'surrogate' };
        i += 5;
      }
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > opts.maxDepth) return { kind: 'depth' };
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return null;
}
