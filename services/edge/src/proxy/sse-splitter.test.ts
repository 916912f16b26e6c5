import { parseSseEvent, SseSplitter } from './sse-splitter';

const feed = (splitter: SseSplitter, parts: (string | Buffer)[]) =>
  parts.flatMap((p) => splitter.push(typeof p === 'string' ? Buffer.from(p) : p));

describe('SseSplitter', () => {
  it('cuts events at blank lines whatever the chunk boundaries', () => {
    const text = 'data: {"a":1}\n\nevent: ping\ndata: {}\n\ndata: [DONE]\n\n';
    const whole = feed(new SseSplitter(), [text]);
    expect(whole).toEqual(['data: {"a":1}', 'event: ping\ndata: {}', 'data: [DONE]']);
    for (let size = 1; size < text.length; size++) {
      const parts: string[] = [];
      for (let i = 0; i < text.length; i += size) parts.push(text.slice(i, i + size));
      expect(feed(new SseSplitter(), parts)).toEqual(whole);
    }
  });

  it('reads CRLF and CR line ends, and a multi-byte character split across chunks', () => {
    expect(feed(new SseSplitter(), ['data: 1\r\n\r\ndata: 2\r\n', '\r\n'])).toEqual(['data: 1', 'data: 2']);
    expect(feed(new SseSplitter(), ['data: 1\r\rdata: 2\r\r'])).toEqual(['data: 1', 'data: 2']);
    const bytes = Buffer.from('data: "héllo ✓"\n\n');
    const at = bytes.indexOf(0xc3) + 1;
    expect(feed(new SseSplitter(), [bytes.subarray(0, at), bytes.subarray(at)])).toEqual(['data: "héllo ✓"']);
  });

  it('hands back an unterminated last event at the end, and nothing after a clean end', () => {
    const s = new SseSplitter();
    expect(feed(s, ['data: 1\n\ndata: 2\n'])).toEqual(['data: 1']);
    expect(s.end()).toBe('data: 2');
    const clean = new SseSplitter();
    feed(clean, ['data: 1\n\n']);
    expect(clean.end()).toBeNull();
  });
});

describe('parseSseEvent', () => {
  it('reads the event name and joins data lines, skipping comments', () => {
    expect(parseSseEvent('data: {"x":1}')).toEqual({ event: undefined, data: '{"x":1}' });
    expect(parseSseEvent('data:{"x":1}')).toEqual({ event: undefined, data: '{"x":1}' });
    expect(parseSseEvent(': keep-alive\r\nevent: message_delta\r\ndata: a\r\ndata: b')).toEqual({
      event: 'message_delta',
      data: 'a\nb',
    });
    expect(parseSseEvent(': comment only')).toEqual({ event: undefined, data: null });
  });
});
