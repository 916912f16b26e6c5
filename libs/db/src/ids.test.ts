import { newId, newRequestId } from './ids';

describe('ids from the random pool', () => {
  it('are well formed and never repeat, across many refills of the pool', () => {
    // 20 000 ids take 20 000 × 22 bytes: the 4 KiB pool is refilled over a hundred times.
    const ids = Array.from({ length: 20_000 }, () => newId('led'));
    expect(ids.every((id) => /^led_[0-9A-Za-z]{22}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    const requests = Array.from({ length: 20_000 }, () => newRequestId());
    expect(requests.every((id) => /^req_[0-9a-f]{24}$/.test(id))).toBe(true);
    expect(new Set(requests).size).toBe(requests.length);
  });

  it('use every character of the alphabet (the bytes are random, not a counter)', () => {
    const seen = new Set(Array.from({ length: 2_000 }, () => newId('ws').slice(3)).join(''));
    expect(seen.size).toBe(62);
  });
});
