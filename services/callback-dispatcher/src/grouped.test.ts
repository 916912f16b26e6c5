import { Grouped } from './grouped';

/** A statement that answers when told to, recording the groups it was given. */
function statement() {
  const groups: number[][] = [];
  const pending: { done: () => void; fail: (e: Error) => void }[] = [];
  const run = (items: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      groups.push(items);
      pending.push({ done: () => resolve(items.map((i) => `r${i}`)), fail: reject });
    });
  return { groups, pending, run };
}

const settled = () => new Promise((r) => setImmediate(r));

it('sends calls at once while two statements are in flight, then groups those that arrive meanwhile', async () => {
  const s = statement();
  const grouped = new Grouped(s.run);
  const calls = [1, 2, 3, 4, 5].map((i) => grouped.call(i));
  expect(s.groups).toEqual([[1], [2]]);
  s.pending.shift()!.done();
  await settled();
  expect(s.groups).toEqual([[1], [2], [3, 4, 5]]);
  s.pending.shift()!.done();
  s.pending.shift()!.done();
  expect(await Promise.all(calls)).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
});

it('fails every call of a failed statement, and goes on with the next group', async () => {
  const s = statement();
  const grouped = new Grouped(s.run);
  const calls = [1, 2, 3, 4].map((i) => grouped.call(i));
  s.pending.shift()!.fail(new Error('connection lost'));
  await expect(calls[0]).rejects.toThrow('connection lost');
  await settled();
  expect(s.groups).toEqual([[1], [2], [3, 4]]);
  s.pending.shift()!.done();
  s.pending.shift()!.fail(new Error('deadlock'));
  expect(await calls[1]).toBe('r2');
  for (const call of calls.slice(2)) await expect(call).rejects.toThrow('deadlock');
  const next = grouped.call(5);
  await settled();
  s.pending.shift()!.done();
  expect(await next).toBe('r5');
});
