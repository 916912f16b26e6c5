// What an error message may show of what a caller sent: escaped and capped. A message echoes model ids,
// paths, field names and values; unescaped, a control or bidi character can rewrite how a log line or a terminal
// shows the answer (Trojan Source), and kilobytes of echo cost bandwidth and logs for nothing.

/** Longest message an error answer carries; longer ones are cut with "…". */
export const MAX_MESSAGE_CHARS = 600;
/** Longest `param` (a field path built from the caller's keys). */
export const MAX_PARAM_CHARS = 200;

/**
 * C0 and C1 controls, DEL, the bidi embeddings, overrides, isolates and marks, zero-width characters, the BOM, the
 * line and paragraph separators, and unpaired surrogates: each becomes a visible \u{XXXX}.
 */
const UNSAFE = new RegExp(
  String.raw`[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]` +
    String.raw`|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]`,
  'g',
);

export function escapeUnsafe(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u{${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}}`);
}

/** `text` escaped, then cut to `max` characters (never inside a surrogate pair or an escape). */
export function shown(text: string, max: number): string {
  if (text.length > max * 8) text = text.slice(0, max * 8); // escaping grows a character at most 8 times
  const safe = escapeUnsafe(text);
  if (safe.length <= max) return safe;
  let cut = max - 1;
  const escapeStart = safe.lastIndexOf('\\u{', cut);
  if (escapeStart >= 0 && safe.indexOf('}', escapeStart) >= cut) cut = escapeStart;
  const code = safe.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  return `${safe.slice(0, cut)}…`;
}
