import { groupCommit, groupCommitPerKey } from './group-commit';

/** A `run` whose groups are recorded and which answers only when told to (one deferred answer per group). */
function gated() {
  const groups: string[][] = [];
  const gates: { release: () => void; fail: (e: Error) => void }[] = [];
  const run = (items: string[]) => {
    groups.push(items);
    return new Promise<string[]>((resolve, reject) => {
      gates.push({ release: () => resolve(items.map((i) => `${i}!`)), fail: reject });
    });
  };
  return { groups, gates, run };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('groupCommit', () => {
  it('sends an item at once when nothing is in flight, and what arrives meanwhile as the next group', async () => {
    const { groups, gates, run } = gated();
    const send = groupCommit(run, { max: 10 });
    const a = send('a');
    await tick();
    expect(groups).toEqual([['a']]);
    const rest = ['b', 'c', 'd'].map(send);
    await tick();
    expect(groups).toHaveLength(1); // b, c and d wait for a's group
    gates[0]!.release();
    expect(await a).toBe('a!');
    await tick();
    expect(groups).toEqual([['a'], ['b', 'c', 'd']]);
    gates[1]!.release();
    expect(await Promise.all(rest)).toEqual(['b!', 'c!', 'd!']);
  });

  it('puts the items of one tick in one group, at most `max`', async () => {
    const { groups, gates, run } = gated();
    const send = groupCommit(run, { max: 2 });
    const all = ['a', 'b', 'c'].map(send);
    await tick();
    expect(groups).toEqual([['a', 'b']]);
    gates[0]!.release();
    await tick();
    expect(groups).toEqual([['a', 'b'], ['c']]);
    gates[1]!.release();
    expect(await Promise.all(all)).toEqual(['a!', 'b!', 'c!']);
  });

  it('never puts two items of one key in a group: the later one waits for the next', async () => {
    const { groups, gates, run } = gated();
    const send = groupCommit(run, { max: 10, keyOf: (item) => item[0]! });
    const all = ['x1', 'y1', 'x2', 'z1', 'x3'].map(send);
    await tick();
    expect(groups).toEqual([['x1', 'y1', 'z1']]);
    gates[0]!.release();
    await tick();
    expect(groups[1]).toEqual(['x2']);
    gates[1]!.release();
    await tick();
    expect(groups[2]).toEqual(['x3']);
    gates[2]!.release();
    expect(await Promise.all(all)).toEqual(['x1!', 'y1!', 'x2!', 'z1!', 'x3!']);
  });

  it('rejects the items of a failed group only, and sends the next group', async () => {
    const { groups, gates, run } = gated();
    const send = groupCommit(run, { max: 10 });
    const a = send('a');
    await tick();
    const b = send('b');
    gates[0]!.fail(new Error('postgres went away'));
    await expect(a).rejects.toThrow('postgres went away');
    await tick();
    expect(groups).toEqual([['a'], ['b']]);
    gates[1]!.release();
    expect(await b).toBe('b!');
  });

  it('runs each item of a failed group alone, so only the item that fails alone is rejected', async () => {
    const groups: string[][] = [];
    const run = async (items: string[]) => {
      groups.push(items);
      if (items.includes('bad')) throw new Error('a bad row');
      return items.map((i) => `${i}!`);
    };
    const send = groupCommit(run, { max: 10 });
    const [a, bad, c] = [send('a'), send('bad'), send('c')];
    await expect(bad).rejects.toThrow('a bad row');
    expect(await a).toBe('a!');
    expect(await c).toBe('c!');
    expect(groups).toEqual([['a', 'bad', 'c'], ['a'], ['bad'], ['c']]);
  });

  describe('hold', () => {
    it('waits, while more items are on their way, until the group is full', async () => {
      const { groups, gates, run } = gated();
      const send = groupCommit(run, { max: 10, hold: { fill: 3, ms: 10_000 } });
      const [slotA, slotB, slotC, slotD] = [send.expect(), send.expect(), send.expect(), send.expect()];
      const first = [slotA.send('a'), slotB.send('b')];
      await tick();
      await tick();
      expect(groups).toEqual([]); // 2 of 3, and more on their way
      const c = slotC.send('c');
      await tick();
      expect(groups).toEqual([['a', 'b', 'c']]);
      gates[0]!.release();
      expect(await Promise.all([...first, c])).toEqual(['a!', 'b!', 'c!']);
      slotD.cancel();
    });

    it('sends what it holds when the last expected item arrives, and at once when nothing more is coming', async () => {
      const { groups, gates, run } = gated();
      const send = groupCommit(run, { max: 10, hold: { fill: 16, ms: 10_000 } });
      const [slotA, slotB] = [send.expect(), send.expect()];
      const a = slotA.send('a');
      await tick();
      await tick();
      expect(groups).toEqual([]);
      const b = slotB.send('b');
      await tick();
      expect(groups).toEqual([['a', 'b']]);
      gates[0]!.release();
      expect(await Promise.all([a, b])).toEqual(['a!', 'b!']);
      const c = send('c'); // low load: nothing on its way, no wait
      await tick();
      expect(groups).toEqual([['a', 'b'], ['c']]);
      gates[1]!.release();
      expect(await c).toBe('c!');
    });

    it('sends what it holds when the last expected item is cancelled; a cancel after its send is a no-op', async () => {
      const { groups, gates, run } = gated();
      const send = groupCommit(run, { max: 10, hold: { fill: 16, ms: 10_000 } });
      const [slotA, slotB, slotC] = [send.expect(), send.expect(), send.expect()];
      const a = slotA.send('a');
      slotA.cancel(); // after its send: still two on their way
      await tick();
      await tick();
      slotB.cancel(); // one more still on its way: it keeps holding
      await tick();
      expect(groups).toEqual([]);
      slotC.cancel();
      await tick();
      expect(groups).toEqual([['a']]);
      gates[0]!.release();
      expect(await a).toBe('a!');
    });

    it('waits no longer than `ms`', async () => {
      const { groups, gates, run } = gated();
      const send = groupCommit(run, { max: 10, hold: { fill: 16, ms: 30 } });
      const never = send.expect(); // on its way, and never comes
      const a = send('a');
      await tick();
      expect(groups).toEqual([]);
      await new Promise((r) => setTimeout(r, 60));
      expect(groups).toEqual([['a']]);
      gates[0]!.release();
      expect(await a).toBe('a!');
      never.cancel();
    });
  });
});

describe('groupCommitPerKey', () => {
  it('groups the items of one key, one group of each key in flight, and no key waits for another', async () => {
    const { groups, gates, run } = gated();
    const send = groupCommitPerKey((item: string) => item[0]!, run, { max: 10 });
    const x1 = send('x1');
    const y1 = send('y1');
    await tick();
    // Each key's first item goes at once, in a group of its own.
    expect(groups).toEqual([['x1'], ['y1']]);
    const xs = ['x2', 'x3'].map(send);
    const y2 = send('y2');
    await tick();
    expect(groups).toHaveLength(2); // x2, x3 wait for x1's group, y2 for y1's
    gates[1]!.release(); // y1's group answers first: y2 goes, x's group still waits for x1
    expect(await y1).toBe('y1!');
    await tick();
    expect(groups).toEqual([['x1'], ['y1'], ['y2']]);
    gates[0]!.release();
    expect(await x1).toBe('x1!');
    await tick();
    expect(groups[3]).toEqual(['x2', 'x3']);
    gates[2]!.release();
    gates[3]!.release();
    expect(await Promise.all([...xs, y2])).toEqual(['x2!', 'x3!', 'y2!']);
    // A key whose items all answered starts afresh: its next item goes at once.
    const x4 = send('x4');
    await tick();
    expect(groups[4]).toEqual(['x4']);
    gates[4]!.release();
    expect(await x4).toBe('x4!');
  });
});
