import { PartBufferPool } from './part-buffers';

const tick = () => new Promise((r) => setImmediate(r));

describe('PartBufferPool', () => {
  it('lends at most its capacity, serves waiters first come first served, and reuses what comes back', async () => {
    const pool = new PartBufferPool(2, 16);
    const a = await pool.acquire();
    const b = await pool.acquire();
    expect(a).not.toBe(b);
    expect(a.length).toBe(16);
    const order: string[] = [];
    const c = pool.acquire().then((x) => (order.push('c'), x));
    const d = pool.acquire().then((x) => (order.push('d'), x));
    await tick();
    expect(order).toEqual([]);
    expect(pool.waiting).toBe(2);
    pool.release(b);
    expect(await c).toBe(b);
    pool.release(a);
    expect(await d).toBe(a);
    expect(order).toEqual(['c', 'd']);
    expect(pool.inUse).toBe(2);
  });

  it('never hands one buffer to two holders: a buffer given back twice, or never lent, is refused', async () => {
    const pool = new PartBufferPool(3, 16);
    const held = new Set<Buffer>();
    for (let round = 0; round < 50; round++) {
      const got = await Promise.all([pool.acquire(), pool.acquire(), pool.acquire()]);
      for (const x of got) {
        expect(held.has(x)).toBe(false);
        held.add(x);
      }
      for (const x of got) {
        held.delete(x);
        pool.release(x);
      }
    }
    const x = await pool.acquire();
    pool.release(x);
    expect(() => pool.release(x)).toThrow('not lent from this pool');
    expect(() => pool.discard(Buffer.alloc(16))).toThrow('not lent from this pool');
    expect(pool.inUse).toBe(0);
  });

  it('a discarded buffer frees its slot but is never lent again', async () => {
    const pool = new PartBufferPool(1, 16);
    const a = await pool.acquire();
    const next = pool.acquire();
    pool.discard(a);
    const b = await next;
    expect(b).not.toBe(a);
    expect(pool.inUse).toBe(1);
  });

  it('a wait given up by its signal leaves the queue and takes nothing', async () => {
    const pool = new PartBufferPool(1, 16);
    const a = await pool.acquire();
    const abort = new AbortController();
    const gaveUp = pool.acquire(abort.signal);
    const after = pool.acquire();
    await tick();
    abort.abort(new Error('client gone'));
    await expect(gaveUp).rejects.toThrow('client gone');
    expect(pool.waiting).toBe(1);
    pool.release(a);
    expect(await after).toBe(a);
    await expect(pool.acquire(abort.signal)).rejects.toThrow('client gone');
    expect(pool.inUse).toBe(1);
  });

  it('refuses a capacity below one', () => {
    expect(() => new PartBufferPool(0)).toThrow(RangeError);
  });
});
