import type { ObjectRange } from '@gensvc/storage';

/**
 * The single byte range a Range header asks for (RFC 9110 §14), clamped to the content. null means "send it all":
 * no header, a malformed one, or several ranges (a server may ignore Range). 'unsatisfiable' means 416.
 */
export function parseByteRange(header: string | undefined, size: number): ObjectRange | null | 'unsatisfiable' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  const [, first, last] = m as unknown as [string, string, string];
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  if (last !== '' && Number(last) < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end: last === '' ? size - 1 : Math.min(Number(last), size - 1) };
}
