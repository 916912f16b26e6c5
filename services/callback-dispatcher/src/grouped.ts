// Group commit for the dispatcher's two statements per delivery: a call waits only while IN_FLIGHT statements are,
// and every call that arrived meanwhile goes in the next one. A lone call is sent at once; under load one round trip
// carries many deliveries' reads or records.

/** At most this many calls in one statement. */
const MAX_GROUP = 200;
/** Statements in flight at once: a second keeps a call from waiting a whole round trip behind a group. */
const IN_FLIGHT = 2;

export class Grouped<I, O> {
  private waiting: { item: I; resolve: (out: O) => void; reject: (err: unknown) => void }[] = [];
  private inFlight = 0;

  /** `run` answers for each item, in the order given. */
  constructor(private readonly run: (items: I[]) => Promise<O[]>) {}

  call(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.next();
    });
  }

  private next(): void {
    if (this.inFlight >= IN_FLIGHT || this.waiting.length === 0) return;
    const group = this.waiting.splice(0, MAX_GROUP);
    this.inFlight++;
    this.run(group.map((g) => g.item))
      .then(
        (outs) => {
          for (const [i, g] of group.entries()) g.resolve(outs[i]!);
        },
        // The statement failed for every call in it: each job is retried as a failed statement of its own would be.
        (err) => {
          for (const g of group) g.reject(err);
        },
      )
      .finally(() => {
        this.inFlight--;
        this.next();
      });
  }
}
