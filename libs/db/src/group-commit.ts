// Group commit for statements: the dispatcher's attempts running at once read their contexts in one
// statement and record their outcomes in one, and the edge's task creations of one key are written in one, as the
// edge's budget leases write their charges. Whatever is pending is sent as one group while the previous group of the
// same kind is in flight, so at low load an item goes at once (at the end of the event loop's turn, no timer) and at
// high load the statements per item fall with the load.

export interface GroupCommitOptions<I> {
  /** Items in one group at most. */
  max: number;
  /** Items of one key never share a group: a later one waits for the next (one statement, one decision per row). */
  keyOf?: (item: I) => string;
  /**
   * Under load, a group waits (at most `ms`) to hold `fill` items while items announced with `expect()` are still on
   * their way (the dispatcher's attempts taken and not yet recorded): a statement costs Postgres a fixed part (its
   * commit, its plan and its CTEs) besides each row's, so fewer, fuller groups cost less per item. An item that
   * arrives with nothing more on its way, or fills the group, sends it at once: at low load nothing waits.
   */
  hold?: { fill: number; ms: number };
}

/**
 * `run` answers a group of items, one answer per item in order; the function returned queues an item for the next
 * group and resolves with its answer. When a group fails, each of its items is run again alone, so only the items
 * that fail alone are rejected (each caller's own retry applies); the next group is still sent.
 */
export interface GroupCommit<I, O> {
  /** Queues `item` for the next group; resolves with its answer. */
  (item: I): Promise<O>;
  /**
   * An item on its way: a held group waits for it until it is sent, or cancelled (it will not come; a group held
   * for it alone goes at once). Each ends once: a cancel after the send does nothing.
   */
  expect(): { send(item: I): Promise<O>; cancel(): void };
}

export function groupCommit<I, O>(
  run: (items: I[]) => Promise<O[]>,
  options: GroupCommitOptions<I>,
): GroupCommit<I, O> {
  const { max, keyOf, hold } = options;
  let pending: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  let flushing: Promise<void> | null = null;
  /** Items announced (expect) and neither sent nor cancelled yet. */
  let expected = 0;
  /** Ends the current hold, when one waits. */
  let release: (() => void) | null = null;
  const full = () => !hold || pending.length >= hold.fill || expected === 0;

  /** Until the group is full, nothing more is on its way, or `hold.ms` passed. */
  const held = async () => {
    if (full()) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      release = resolve;
      timer = setTimeout(resolve, hold!.ms);
    });
    clearTimeout(timer);
    release = null;
  };

  /** The next group: up to `max` items, in arrival order, one per key; the rest stay pending. */
  const take = () => {
    if (!keyOf) return pending.splice(0, max);
    const keys = new Set<string>();
    const group: typeof pending = [];
    const rest: typeof pending = [];
    for (const p of pending) {
      const key = keyOf(p.item);
      if (group.length < max && !keys.has(key)) {
        keys.add(key);
        group.push(p);
      } else rest.push(p);
    }
    pending = rest;
    return group;
  };

  const flush = async () => {
    try {
      // Until the end of this turn of the event loop (setImmediate runs right after the poll phase, no timer): the
      // items of every job whose Redis or HTTP answer was read in this turn go together, not one socket read's only.
      await new Promise((resolve) => setImmediate(resolve));
      while (pending.length) {
        await held();
        const group = take();
        try {
          const answers = await run(group.map((p) => p.item));
          for (const [i, p] of group.entries()) p.resolve(answers[i]!);
        } catch (e) {
          if (group.length === 1) group[0]!.reject(e);
          // One item's failure (a bad row, a deadlock, a dropped connection) must not fail the rest of its group: their
          // callbacks were sent already, and a rejection would send them again. Each is tried alone, in order.
          else for (const p of group) await run([p.item]).then(([answer]) => p.resolve(answer!), p.reject);
        }
      }
    } finally {
      flushing = null;
    }
  };

  const send = (item: I) =>
    new Promise<O>((resolve, reject) => {
      pending.push({ item, resolve, reject });
      if (release && full()) release();
      if (!flushing) flushing = flush();
    });
  const expect = () => {
    expected++;
    let open = true;
    const end = () => {
      if (!open) return false;
      open = false;
      expected--;
      return true;
    };
    return {
      send: (item: I) => {
        end();
        return send(item);
      },
      cancel: () => void (end() && release && full() && release()),
    };
  };
  return Object.assign(send, { expect });
}

/**
 * A groupCommit per key: the items of one key share groups, one group of each key in flight at a time, and keys never
 * wait on each other's statements (the edge's task creations, grouped per API key by Holds: a group locks its key's
 * rows once). A key's groupCommit is dropped once none of its items is outstanding.
 */
export function groupCommitPerKey<I, O>(
  keyOf: (item: I) => string,
  run: (items: I[]) => Promise<O[]>,
  options: GroupCommitOptions<I>,
): (item: I) => Promise<O> {
  const byKey = new Map<string, { commit: GroupCommit<I, O>; outstanding: number }>();
  return (item) => {
    const key = keyOf(item);
    let entry = byKey.get(key);
    if (!entry) {
      entry = { commit: groupCommit(run, options), outstanding: 0 };
      byKey.set(key, entry);
    }
    const current = entry;
    current.outstanding++;
    return current.commit(item).finally(() => {
      if (--current.outstanding === 0 && byKey.get(key) === current) byKey.delete(key);
    });
  };
}
