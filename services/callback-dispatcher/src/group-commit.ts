// Group commit for the dispatcher's statements (issue 12): the attempts running at once read their contexts in one
// statement and record their outcomes in one, as the edge's budget leases write their charges. Up to `lanes` groups
// of one kind are in flight at once; what is pending while they all are is sent as the next group when one answers.
// So at low load an item goes at once (one microtask turn, no timer, not behind a group in flight) and at high load
// the statements per attempt fall with the load.

export interface GroupCommitOptions<I> {
  /** Items in one group at most. */
  max: number;
  /** Groups in flight at once (default 1): an item that finds fewer in flight goes at once in a group of its own tick. */
  lanes?: number;
  /** Items of one key never share a group, nor go while a group holding that key is in flight (one decision per row at a time). */
  keyOf?: (item: I) => string;
}

/**
 * `run` answers a group of items, one answer per item in order; the function returned queues an item for the next
 * group and resolves with its answer. When a group fails, each of its items is run again alone, so only the items
 * that fail alone are rejected (each caller's own retry applies); the next group is still sent.
 */
export function groupCommit<I, O>(run: (items: I[]) => Promise<O[]>, options: GroupCommitOptions<I>): (item: I) => Promise<O> {
  const { max, keyOf, lanes = 1 } = options;
  let pending: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  let flushing = 0;
  /** Keys of the items in the groups in flight. */
  const held = new Set<string>();

  /** The next group: up to `max` items, in arrival order, one per key and none of a key in flight; the rest stay pending. */
  const take = () => {
    if (!keyOf) return pending.splice(0, max);
    const group: typeof pending = [];
    const rest: typeof pending = [];
    for (const p of pending) {
      const key = keyOf(p.item);
      if (group.length < max && !held.has(key)) {
        held.add(key);
        group.push(p);
      } else rest.push(p);
    }
    pending = rest;
    return group;
  };

  const flush = async () => {
    try {
      // One turn of the microtask queue: the items of jobs that reached this point in the same tick go together.
      await Promise.resolve();
      // A lane stops when what is pending waits for a key another lane holds: that lane sends it next.
      for (let group = take(); group.length; group = take()) {
        try {
          const answers = await run(group.map((p) => p.item));
          group.forEach((p, i) => p.resolve(answers[i]!));
        } catch (e) {
          if (group.length === 1) group[0]!.reject(e);
          // One item's failure (a bad row, a deadlock, a dropped connection) must not fail the rest of its group: their
          // callbacks were sent already, and a rejection would send them again. Each is tried alone, in order.
          else for (const p of group) await run([p.item]).then(([answer]) => p.resolve(answer!), p.reject);
        } finally {
          if (keyOf) for (const p of group) held.delete(keyOf(p.item));
        }
      }
    } finally {
      flushing--;
    }
  };

  return (item) =>
    new Promise<O>((resolve, reject) => {
      pending.push({ item, resolve, reject });
      if (flushing < lanes) {
        flushing++;
        void flush();
      }
    });
}
