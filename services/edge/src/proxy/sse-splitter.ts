import { StringDecoder } from 'node:string_decoder';

/**
 * Cuts a byte stream of Server-Sent Events into whole events (the text between blank lines), whatever the chunk
 * boundaries: an event, a line or a multi-byte character may be split across chunks. Events end at a blank line
 * in any of the three line-end styles the SSE spec allows ("\n", "\r\n", "\r").
 */
export class SseSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';

  /** The events completed by this chunk, without their terminating blank line. */
  push(chunk: Buffer): string[] {
    this.buffer += this.decoder.write(chunk);
    const events: string[] = [];
    let start = 0;
    for (;;) {
      const at = nextBlankLine(this.buffer, start);
      if (at < 0) break;
      if (at > start) events.push(this.buffer.slice(start, at));
      start = at + (this.buffer.charCodeAt(at) === 13 && this.buffer.charCodeAt(at + 1) === 10 ? 4 : 2);
    }
    if (start > 0) this.buffer = this.buffer.slice(start);
    return events;
  }

  /** What is left when the stream ends: an unterminated last event, if any. */
  end(): string | null {
    const rest = (this.buffer + this.decoder.end()).replace(/[\r\n]+$/, '');
    this.buffer = '';
    return rest.length ? rest : null;
  }
}

/** Where the next blank line starts ("\n\n", "\r\n\r\n" or "\r\r"), or -1. */
function nextBlankLine(text: string, from: number): number {
  const lf = text.indexOf('\n\n', from);
  const crlf = text.indexOf('\r\n\r\n', from);
  let at = lf < 0 ? crlf : crlf < 0 ? lf : Math.min(lf, crlf);
  // A lone "\r" line end is rare (no provider uses it): looked for only in text without any "\n".
  if (at < 0 && text.indexOf('\n', from) < 0) at = text.indexOf('\r\r', from);
  return at;
}

export interface SseEvent {
  /** The `event:` field, or undefined for the default "message" event. */
  event: string | undefined;
  /** The `data:` lines joined by "\n"; null when the event has no data (a comment or keep-alive). */
  data: string | null;
}

/** The fields of one event. The common single-line `data: …` event is read without splitting lines. */
export function parseSseEvent(raw: string): SseEvent {
  if (raw.startsWith('data:') && raw.indexOf('\n') < 0 && raw.indexOf('\r') < 0) {
    return { event: undefined, data: raw.charCodeAt(5) === 32 ? raw.slice(6) : raw.slice(5) };
  }
  let event: string | undefined;
  let data: string | null = null;
  for (const line of raw.split(/\r\n|\r|\n/)) {
    if (line === '' || line.charCodeAt(0) === 58 /* ':' comment */) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data = data === null ? value : `${data}\n${value}`;
  }
  return { event, data };
}
