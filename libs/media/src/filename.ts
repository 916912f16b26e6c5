// Stored names are shown back to people and put into Content-Disposition headers: they carry no path, no control
// or invisible formatting characters, no quotes, a bounded length and an extension that matches the bytes.

/** UTF-8 bytes a stored name may take. */
export const MAX_FILENAME_BYTES = 200;

const UNSAFE = /[\u0000-\u001f\u007f-\u009f"'`<>:*?|\\/\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g;

function fitBytes(text: string, max: number): string {
  let out = '';
  let bytes = 0;
  for (const ch of text) {
    const n = Buffer.byteLength(ch);
    if (bytes + n > max) break;
    out += ch;
    bytes += n;
  }
  return out;
}

/**
 * `text` without its trailing dots and white space. A loop from the end rather than /[.\s]+$/, which retries from
 * every position of a long ". . ." run not at the end and so takes quadratic time on a hostile name.
 */
function trimDotsAndSpacesEnd(text: string): string {
  let end = text.length;
  while (end > 0 && /[.\s]/.test(text[end - 1]!)) end--;
  return text.slice(0, end);
}

/**
 * A safe stored name for an upload named `raw` whose bytes are of a type with these `extensions` (canonical first):
 * the name's own extension is kept when it is one of them, else replaced by the canonical one.
 */
export function sanitizeFilename(raw: string | undefined, extensions: string[]): string {
  const lastSegment = (raw ?? '').normalize('NFC').split(/[/\\]/).pop() ?? '';
  let name = lastSegment
    .replace(UNSAFE, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^[.\s]+/, '');
  const dot = name.lastIndexOf('.');
  let ext = extensions[0]!;
  if (dot > 0) {
    const own = name.slice(dot + 1).toLowerCase();
    if (extensions.includes(own)) ext = own;
    // A trailing extension-like suffix that does not match the bytes is dropped rather than kept in the name.
    if (extensions.includes(own) || /^[a-z0-9]{1,10}$/i.test(own)) name = name.slice(0, dot);
  }
  const base = fitBytes(trimDotsAndSpacesEnd(name), MAX_FILENAME_BYTES - ext.length - 1).trimEnd() || 'file';
  return `${base}.${ext}`;
}

/** RFC 6266 with an ASCII fallback and the exact name in filename* (RFC 8187). */
export function contentDisposition(kind: 'inline' | 'attachment', filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\%]/g, '_');
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `${kind}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
