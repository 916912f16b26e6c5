// The pure parts of the edge's input guards: the JSON text scan, the path and query decoding check, and
// what an error message may show. Their wiring into the real edge is proved over sockets in hostile-input.int.test.ts.
import fc from 'fast-check';
import { MAX_JSON_DEPTH, scanJsonText } from './json-text';
import { encodingProblem } from './path-guard';
import { MAX_MESSAGE_CHARS, escapeUnsafe, shown } from './shown-text';

const scan = (text: string, refuseNul = true) => scanJsonText(text, { maxDepth: MAX_JSON_DEPTH, refuseNul });
const nested = (depth: number, open = '[', close = ']') => `${open.repeat(depth)}${close.repeat(depth)}`;

describe('scanJsonText', () => {
  it('allows exactly MAX_JSON_DEPTH levels and refuses one more, in arrays, objects and both', () => {
    expect(scan(nested(MAX_JSON_DEPTH))).toBeNull();
    expect(scan(nested(MAX_JSON_DEPTH + 1))).toEqual({ kind: 'depth' });
    const objects = `${'{"a":'.repeat(MAX_JSON_DEPTH)}1${'}'.repeat(MAX_JSON_DEPTH)}`;
    expect(scan(objects)).toBeNull();
    expect(scan(`[${objects}]`)).toEqual({ kind: 'depth' });
    expect(scan(nested(100_000))).toEqual({ kind: 'depth' });
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    const text = JSON.stringify({ a: '['.repeat(1000), b: 'x\\"[[[', c: ['\\', '"{{{'] });
    expect(scan(text)).toBeNull();
  });

  it('refuses an escaped NUL only where strings may be stored, and an unpaired surrogate everywhere', () => {
    expect(scan('{"a":"x\\u0000y"}')).toEqual({ kind: 'nul' });
    expect(scan('{"a":"x\\u0000y"}', false)).toBeNull();
    expect(scan('{"a\\u0000":1}')).toEqual({ kind: 'nul' });
    expect(scan('["\\ud800"]', false)).toEqual({ kind: 'surrogate' });
    expect(scan('["\\udc00\\ud800"]')).toEqual({ kind: 'surrogate' });
    expect(scan('["\\ud800x"]')).toEqual({ kind: 'surrogate' });
    // a pair, an ordinary escape, an escaped backslash
    expect(scan('["\\ud83d\\ude00", "\\u00e9", "\\\\u0000"]')).toBeNull();
  });

  it('agrees with a recursive depth count on any JSON value', () => {
    const depthOf = (v: unknown): number =>
      v !== null && typeof v === 'object' ? 1 + Math.max(0, ...Object.values(v as object).map(depthOf)) : 0;
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 1, max: 8 }), (value, max) => {
        const text = JSON.stringify(value);
        const problem = scanJsonText(text, { maxDepth: max, refuseNul: false });
        expect(problem?.kind === 'depth').toBe(depthOf(value) > max);
      }),
      { seed: 14, numRuns: 300 },
    );
  });
});

describe('encodingProblem (paths and queries)', () => {
  it.each([
    ['/v1/files/file_%E0%A4%A', 'invalid_encoding', /broken percent-encoding \("%A"\)/],
    ['/api/v1/tasks/tsk_%ZZ', 'invalid_encoding', /broken percent-encoding \("%ZZ"\)/],
    ['/v1/files/%C0%AF', 'invalid_encoding', /not valid UTF-8.*overlong/],
    ['/v1/files/%E0%A4', 'invalid_encoding', /not valid UTF-8/],
    ['/v1/files/%ED%A0%80', 'invalid_encoding', /not valid UTF-8/], // a UTF-16 surrogate encoded as UTF-8
    ['/v1beta/models/sim%2Fchat%001:generateContent', 'invalid_character', /control character U\+0000/],
    ['/v1/files/a%0Ab', 'invalid_character', /U\+000A/],
  ])('%s → %s', (path, code, message) => {
    const e = encodingProblem(path, 'path');
    expect(e).toMatchObject({ status: 400, code, param: 'path' });
    expect(e!.message).toMatch(message);
  });

  it('passes well-formed paths, UTF-8 included, whether percent-encoded or raw', () => {
    for (const path of [
      '/v1/files/file_abc',
      '/v1beta/models/sim%2Fchat-1:generateContent',
      '/x/%C3%A9t%C3%A9',
      '/x/\u00c3\u00a9',
      '/x/%F0%9F%98%80',
    ]) {
      expect(encodingProblem(path, 'path')).toBeNull();
    }
  });

  it('agrees with decodeURIComponent on every percent-encoded string: refused exactly where it throws', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.constantFrom('%', '%C0', '%AF', '%E0', '%A4', '%F0', '%9F', '%80', '%FF', '%zz', 'a', '/'),
            fc.string({ maxLength: 3 }),
          ),
          { maxLength: 8 },
        ),
        (parts) => {
          const raw = parts.join('').replace(/[\u0000-\u001f\u007f]/g, 'x');
          let throws = false;
          let decoded = '';
          try {
            decoded = decodeURIComponent(raw);
          } catch {
            throws = true;
          }
          const problem = encodingProblem(raw, 'path');
          if (throws) expect(problem?.code).toBe('invalid_encoding');
          else expect(problem === null).toBe(!/[\u0000-\u001f\u007f]/.test(decoded));
        },
      ),
      { seed: 14, numRuns: 300 },
    );
  });
});

describe('shown (what an error message echoes)', () => {
  it('escapes controls, bidi overrides and isolates, zero-width characters and lone surrogates', () => {
    expect(escapeUnsafe('a\u0000b\nc\u202ed\u2066e\u200bf\ud800g')).toBe(
      'a\\u{0000}b\\u{000A}c\\u{202E}d\\u{2066}e\\u{200B}f\\u{D800}g',
    );
    expect(escapeUnsafe('Grüße 日本 😀')).toBe('Grüße 日本 😀');
  });

  it('caps any text and never leaves an unsafe character or half an escape or pair', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 2000 }), (text) => {
        const out = shown(text, MAX_MESSAGE_CHARS);
        expect(out.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
        expect(out).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
        expect(out).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
        expect(out).not.toMatch(/\\u\{[0-9A-F]{0,3}…$/);
        if (out.endsWith('…')) expect(text.length).toBeGreaterThan(0);
        else expect(out).toBe(escapeUnsafe(text));
      }),
      { seed: 14, numRuns: 150 },
    );
  });
});
