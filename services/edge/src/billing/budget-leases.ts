// Budget leases and group-commit charges: the one owner of a replica's leased money, behind Holds (holds.ts).
//
// A call settled while its caller waits does not go to Postgres to reserve its cost. This replica leases spend in
// blocks per (workspace, key) — one statement moves a block out of the balance and onto the key's reserved
// (gensvc_lease) — and holds each call against a lease in memory. Charges are written in batches: whatever is pending
// is sent in one statement (gensvc_lease_charge) while the previous one is in flight, so at low load a charge goes at
// once and at high load hundreds share a round trip. Exactness rests on Postgres: the sum of live leases never passes
// what the cap and the balance allow (gensvc_lease takes at most what both have left), and a call is held only
// against money a lease really holds.
//
// What a SIGKILL can and cannot lose: a charge is durable within one flush of the answer (the answer does not wait
// for it). Killed in between, the call is not charged — never charged twice, never charged without its ledger entry:
// the books (balance + held = Σ ledger, spent = Σ charges) hold at every instant. The dead replica's leases stay held
// until their expiry and are then given back by billing.release-expired. What keeps a live lease alive is the tick:
// every 5 s it pushes every live lease's expiry to LEASE_TTL_MS (30 s) ahead, so a lease outlives an event loop
// stalled for up to ~25 s and a call in flight however long (a stream) keeps it. A batch of charges pushes its leases'
// expiry too (the batch function's own UPDATE); a lone charge does not move it (its lease UPDATE stays HOT).
//
// Money left in a lease is given back when the lease has been idle for IDLE_MS, at shutdown (close()), and when
// another replica runs short for the same workspace: it publishes a return request on Redis and every replica gives
// back what its leases of that workspace hold unused, so no caller is refused while money remains in a lease.
import { billingRepository, newId, type Db, type LeaseCharge, type SettleInput } from '@gensvc/db';
import { isAppError } from '@gensvc/errors';
import type { Logger } from '@gensvc/observability';
import type { SharedSubscriber } from '@gensvc/queue';
import type { RedisConnection } from '@gensvc/queue';

export const LEASE_TTL_MS = 30_000;
/** A lease unused this long gives back what it holds. */
const IDLE_MS = 5_000;
/** Charges per statement at most. */
const MAX_BATCH = 500;
const RETRY_DELAYS_MS = [20, 100, 500, 2_000, 5_000, 10_000];

export interface LeaseOptions {
  /** The block a lease asks for, as a multiple of the call that needs it (at least BLOCK_MIN). */
  blockCalls?: number;
  /** The smallest block, in micro-units. */
  blockMin?: bigint;
  /** How long a replica short of money waits for others to give theirs back before refusing. */
  returnWaitMs?: number;
}

export interface HoldOwner {
  workspaceId: string;
  apiKeyId: string;
  requestId: string;
}

interface Lease {
  id: string;
  slot: string;
  workspaceId: string;
  /** What the lease row holds, as far as this replica has written (charges flushed and returns deducted). */
  amount: bigint;
  /** Held by calls in flight plus charges not yet flushed: never more than `amount`. */
  committed: bigint;
  /** Takes no new holds: its unused money is being (or has been) given back. */
  closing: boolean;
  usedAt: number;
}

/** A call's hold: `amount` of one lease, until it is charged or released. */
export interface LeaseHold {
  readonly lease: Lease;
  readonly amount: bigint;
  done: boolean;
}

interface PendingCharge extends LeaseCharge {
  leaseRef: Lease;
  /** Told once the batch is written: whether this charge is in the ledger. */
  written: (charged: boolean) => void;
}

const slotOf = (o: Pick<HoldOwner, 'workspaceId' | 'apiKeyId'>) => `${o.workspaceId}|${o.apiKeyId}`;
const leaseReturnChannel = (queuePrefix: string) => `${queuePrefix}:billing:lease-return`;

export class BudgetLeases {
  private readonly leases = new Map<string, Lease[]>();
  private readonly acquiring = new Map<string, Promise<unknown>>();
  private pending: PendingCharge[] = [];
  private flushing: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  /** Counts since start: leases opened, charge statements written, charges written (tests and metrics). */
  readonly stats = { leases: 0, flushes: 0, charges: 0 };
  private readonly blockCalls: number;
  private readonly blockMin: bigint;
  private readonly returnWaitMs: number;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    /** Asks the other replicas to give back what their leases of a workspace hold (null: one replica, in tests). */
    private readonly askReturn: ((workspaceId: string) => Promise<void>) | null,
    options: LeaseOptions = {},
  ) {
    this.blockCalls = options.blockCalls ?? 64;
    this.blockMin = options.blockMin ?? 100_000n;
    this.returnWaitMs = options.returnWaitMs ?? 40;
    this.timer = setInterval(() => void this.tick(), Math.min(IDLE_MS, LEASE_TTL_MS / 3));
    this.timer.unref();
  }

  /**
   * Holds `amount` for a call against a lease of the caller's key, leasing a block first when none has room. 402 when
   * the money is not there.
   */
  async hold(owner: HoldOwner, amount: bigint): Promise<LeaseHold> {
    if (this.closed) throw new Error('budget leases are closed');
    const slot = slotOf(owner);
    let askedOthers = false;
    for (;;) {
      const lease = this.withRoom(slot, amount);
      if (lease) {
        lease.committed += amount;
        lease.usedAt = Date.now();
        return { lease, amount, done: false };
      }
      const inFlight = this.acquiring.get(slot);
      if (inFlight) {
        await inFlight.catch(() => undefined);
        continue;
      }
      try {
        await this.track(slot, this.acquire(owner, amount));
      } catch (e) {
        // Short of money: what other replicas (and this one's other leases) hold unused may be enough.
        if (askedOthers || !isAppError(e) || e.status !== 402 || !this.askReturn) throw e;
        askedOthers = true;
        await this.askReturn(owner.workspaceId).catch((err) => this.log.warn({ err }, 'could not ask for leases back'));
        await new Promise((r) => setTimeout(r, this.returnWaitMs));
      }
    }
  }

  /**
   * The call is answered: `cost` (at most the hold) is charged in the next flush and the rest is free again at once.
   * Resolves once the charge is written: with what was charged (0n for a free call), or null when it could not be (its
   * lease was gone, or Postgres refused every retry). Never rejects.
   */
  charge(hold: LeaseHold, input: SettleInput & { requestId: string }): Promise<bigint | null> {
    if (hold.done) return Promise.resolve(null);
    hold.done = true;
    // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.min does not take
    const cost = input.cost < 0n ? 0n : input.cost > hold.amount ? hold.amount : input.cost;
    hold.lease.committed -= hold.amount - cost;
    if (cost === 0n) return Promise.resolve(0n);
    return new Promise((resolve) => {
      this.pending.push({
        id: newId('led'),
        lease: hold.lease.id,
        leaseRef: hold.lease,
        cost,
        requestId: input.requestId,
        model: input.model ?? null,
        inputTokens: input.inputTokens ?? null,
        outputTokens: input.outputTokens ?? null,
        written: (charged) => resolve(charged ? cost : null),
      });
      this.flushing ??= this.flush();
    });
  }

  /** The call is not charged: its hold is free again. */
  release(hold: LeaseHold): void {
    if (hold.done) return;
    hold.done = true;
    hold.lease.committed -= hold.amount;
  }

  /** Gives back what this replica's leases of `workspaceId` hold unused (another replica asked for it). */
  async giveBack(workspaceId: string): Promise<void> {
    const mine = [...this.leases.values()].flat().filter((l) => l.workspaceId === workspaceId);
    await Promise.all(mine.map((l) => this.closeLease(l)));
  }

  /** Shutdown: every pending charge written, every lease's unused money given back. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await Promise.allSettled([...this.acquiring.values()]);
    while (this.flushing) await this.flushing;
    await Promise.all([...this.leases.values()].flat().map((l) => this.closeLease(l)));
    while (this.flushing) await this.flushing;
  }

  /** Resolves once every charge made so far is written (tests; shutdown uses close()). */
  async flushed(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  /** Leases held by this replica (tests and metrics). */
  snapshot() {
    return [...this.leases.values()]
      .flat()
      .map((l) => ({ id: l.id, amount: l.amount, committed: l.committed, closing: l.closing }));
  }

  private withRoom(slot: string, amount: bigint): Lease | undefined {
    return this.leases.get(slot)?.find((l) => !l.closing && l.amount - l.committed >= amount);
  }

  private async track<T>(slot: string, p: Promise<T>): Promise<T> {
    this.acquiring.set(slot, p);
    try {
      return await p;
    } finally {
      this.acquiring.delete(slot);
    }
  }

  private async acquire(owner: HoldOwner, amount: bigint): Promise<void> {
    const slot = slotOf(owner);
    // The leases of this slot without room for the call give back what they have unused first: near a cap or a low
    // balance, that is the money the new lease needs.
    const old = this.leases.get(slot) ?? [];
    await Promise.all(old.map((l) => this.closeLease(l)));
    const blockWant = amount * BigInt(this.blockCalls);
    const want = blockWant > this.blockMin ? blockWant : this.blockMin > amount ? this.blockMin : amount;
    const made = await billingRepository.lease(this.db, {
      workspaceId: owner.workspaceId,
      apiKeyId: owner.apiKeyId,
      requestId: owner.requestId,
      min: amount,
      want,
      ttlMs: LEASE_TTL_MS,
    });
    this.stats.leases++;
    const lease: Lease = {
      id: made.id,
      slot,
      workspaceId: owner.workspaceId,
      amount: made.amount,
      committed: 0n,
      closing: false,
      usedAt: Date.now(),
    };
    this.leases.set(slot, [...(this.leases.get(slot) ?? []).filter((l) => !this.finished(l)), lease]);
  }

  /** A closing lease with nothing held or pending and nothing left: forgotten. */
  private finished(l: Lease): boolean {
    return l.closing && l.committed === 0n && l.amount === 0n;
  }

  /** Stops new holds on the lease and gives back what it holds beyond its calls in flight and pending charges. */
  private async closeLease(l: Lease): Promise<void> {
    l.closing = true;
    const unused = l.amount - l.committed;
    if (unused <= 0n) return this.forgetIfFinished(l);
    l.amount -= unused; // at once, so that no concurrent close gives it back twice
    try {
      const returned = await billingRepository.returnLease(this.db, l.id, unused);
      if (returned < unused)
        this.log.warn(
          { lease: l.id, unused: String(unused), returned: String(returned) },
          'lease held less than this replica counted',
        );
    } catch (err) {
      // Unknown outcome: the row keeps what it holds until its expiry, when billing.release-expired gives it back.
      this.log.warn({ err, lease: l.id }, 'could not give a lease back; it is released at its expiry');
    }
    this.forgetIfFinished(l);
  }

  private forgetIfFinished(l: Lease) {
    if (!this.finished(l)) return;
    const rest = (this.leases.get(l.slot) ?? []).filter((x) => x !== l);
    if (rest.length) this.leases.set(l.slot, rest);
    else this.leases.delete(l.slot);
  }

  /** Group commit: sends what is pending in one statement; what arrives meanwhile goes in the next. */
  private async flush(): Promise<void> {
    try {
      // One turn of the microtask queue: the charges of calls that ended in the same tick go together.
      await Promise.resolve();
      while (this.pending.length) {
        const batch = this.pending.splice(0, MAX_BATCH);
        const charged = await this.write(batch);
        this.stats.flushes++;
        this.stats.charges += charged.size;
        const drained = new Set<Lease>();
        for (const c of batch) {
          c.leaseRef.committed -= c.cost;
          if (charged.has(c.id)) {
            c.leaseRef.amount -= c.cost;
          } else {
            // The lease no longer held the money (released as a dead replica's): the call goes uncharged.
            this.log.error(
              { lease: c.lease, cost: String(c.cost), request_id: c.requestId },
              'a charge found its lease gone; the call is not charged',
            );
          }
          c.written(charged.has(c.id));
          if (c.leaseRef.closing && c.leaseRef.committed === 0n) drained.add(c.leaseRef);
        }
        // A closing lease whose last call is charged gives back what its calls left unspent: one statement per lease,
        // not one per charge.
        await Promise.all([...drained].map((l) => this.closeLease(l)));
      }
    } finally {
      this.flushing = null;
    }
  }

  /** One batch, retried while its outcome is unknown (each entry's ledger id makes a retry charge nothing twice). */
  private async write(batch: PendingCharge[]): Promise<Set<string>> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await billingRepository.chargeLeases(this.db, batch, LEASE_TTL_MS);
      } catch (err) {
        const delay = RETRY_DELAYS_MS[attempt];
        if (delay === undefined) {
          this.log.error({ err, charges: batch.length }, 'charges could not be written; those calls go uncharged');
          return new Set();
        }
        this.log.warn({ err, attempt: attempt + 1 }, 'writing charges failed; retrying');
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  /** Every few seconds: idle leases give their money back, live ones are renewed. */
  private async tick(): Promise<void> {
    const now = Date.now();
    const all = [...this.leases.values()].flat();
    // Idle leases, and closing ones whose calls have since freed money (a release, a charge below its hold).
    const due = (l: Lease) => (l.closing ? l.amount > l.committed : now - l.usedAt >= IDLE_MS && l.committed === 0n);
    await Promise.all(all.filter(due).map((l) => this.closeLease(l)));
    const live = [...this.leases.values()].flat().map((l) => l.id);
    await billingRepository
      .renewLeases(this.db, live, LEASE_TTL_MS)
      .catch((err) => this.log.warn({ err }, 'could not renew leases'));
  }
}

/**
 * The Redis side of "give it back when another replica needs it": every replica listens on one channel; a replica
 * short of money for a workspace publishes its id. Returns the ask function and an unsubscribe.
 */
export async function connectLeaseReturns(
  publisher: RedisConnection,
  subscriber: SharedSubscriber,
  queuePrefix: string,
  leases: () => BudgetLeases | undefined,
  log: Logger,
) {
  const channel = leaseReturnChannel(queuePrefix);
  const close = await subscriber.listen([channel], {
    onMessage: (_channel, workspaceId) =>
      void leases()
        ?.giveBack(workspaceId)
        .catch((err) => log.warn({ err }, 'could not give leases back')),
  });
  return { ask: async (workspaceId: string) => void (await publisher.publish(channel, workspaceId)), close };
}
