// The one way a paid route holds money: `holds.reserve(owner, amount)` before the work, then exactly one of
// `hold.settle(charge)` (charges at most the hold, gives back the rest) or `hold.release()`. A refused hold is a 402.
//
// Where the money is held depends on who settles it, so that every settlement is exact and happens once:
//  - Settled by this process while the caller waits (evaluate, chat, the vendor routes, Responses): in memory,
//    against this replica's budget lease (budget-leases.ts), with no store round trip to reserve.
//  - Settled in a transaction with the rows it pays for (`{ kept: true }`: an image call's task and files), or by the
//    workers when a task ends (`{ task }`): a Reservation row of its own, which the settlement's transaction finds
//    still held or not at all. A task's hold is written with the task in one statement (both or neither) and the task
//    row names it; its completion settles it and its failure or cancel releases it, in their own transactions. A hold
//    whose owner died unsettled is given back at its expiry by billing.release-expired. Never part of a lease: a
//    lease dies with its replica (released 30 s later), and these holds must outlive the process that took them.
//
// Task creations of one key are written in groups: each holds its price on the key's row and the workspace's and keeps
// both locked until its commit, so one at a time they queue on those rows, a commit each. A group is one statement
// (taskRepository.createMany) that locks them once, its items held in arrival order as they would have been one by
// one; keys never wait on each other's groups, and a group that fails is retried item by item (groupCommitPerKey).
import {
  billingRepository,
  groupCommitPerKey,
  taskRepository,
  type CreateTaskInput,
  type Db,
  type SettleInput,
  type TaskRow,
  type Tx,
} from '@gensvc/db';
import { isAppError, type AppError } from '@gensvc/errors';
import type { Logger } from '@gensvc/observability';
import type { BudgetLeases, HoldOwner, LeaseHold } from './budget-leases';

/** A kept hold not settled within this long belongs to a process that died; billing.release-expired gives it back. */
const KEPT_TTL_MS = 15 * 60 * 1000;

export type { HoldOwner };

/** What a settlement charges: at most the hold; the request id is the hold's own. */
type Charge = Omit<SettleInput, 'taskId'>;

export interface Hold {
  readonly amount: bigint;
  /**
   * Charges min(cost, amount) with one ledger entry and frees the rest. Resolves with what was charged (0n for a
   * free call), or null when nothing could be charged (the hold was gone, or the store refused every retry).
   */
  settle(charge: Charge): Promise<bigint | null>;
  /** Frees the whole hold, uncharged. Never rejects: a hold that cannot be freed now is freed at its expiry. */
  release(): Promise<void>;
}

/** A hold kept as a Reservation row of its own. */
export interface KeptHold extends Hold {
  readonly id: string;
  /** As Hold.settle, inside `tx` when given: the charge commits with the rows written there, or not at all. */
  settle(charge: Charge & { taskId?: string }, tx?: Tx): Promise<bigint | null>;
}

/**
 * A task's hold: the task row names it (reservationId). No settle or release here: the task's completion settles it
 * and its failure or cancel releases it, each in the transaction of that transition (taskRepository).
 */
export interface TaskHold {
  readonly id: string;
  readonly amount: bigint;
  readonly task: TaskRow;
}

/** A task to write with its hold (the task's price is the hold's amount). */
export type NewTask = Omit<CreateTaskInput, 'workspaceId' | 'apiKeyId' | 'requestId' | 'amount'>;

export class Holds {
  private readonly createTask: (input: CreateTaskInput) => Promise<TaskRow | AppError>;

  constructor(
    private readonly db: Db,
    /** This replica's budget leases (its shutdown closes them; tests read them). */
    readonly leases: BudgetLeases,
    private readonly log: Logger,
  ) {
    const createMany = (inputs: CreateTaskInput[]) => taskRepository.createMany(db, inputs);
    this.createTask = groupCommitPerKey((input: CreateTaskInput) => input.apiKeyId, createMany, { max: 100 });
  }

  /** Held against this replica's budget lease, for a call this process settles while it answers. */
  reserve(owner: HoldOwner, amount: bigint): Promise<Hold>;
  /** Held as a row of its own, for a call settled in the transaction that records its rows. */
  reserve(owner: HoldOwner, amount: bigint, keep: { kept: true }): Promise<KeptHold>;
  /** Held as a row of its own and written with the queued task that names it, in its key's next group. */
  reserve(owner: HoldOwner, amount: bigint, keep: { task: NewTask }): Promise<TaskHold>;
  async reserve(owner: HoldOwner, amount: bigint, keep?: { kept: true } | { task: NewTask }): Promise<Hold | TaskHold> {
    if (!keep) return this.leased(owner, await this.leases.hold(owner, amount));
    if ('kept' in keep) {
      const row = await billingRepository.reserve(this.db, { ...owner, amount, ttlMs: KEPT_TTL_MS });
      return this.kept(row.id, amount);
    }
    const task = await this.createTask({ ...keep.task, ...owner, amount });
    if (isAppError(task)) throw task;
    return { id: task.reservationId!, amount, task };
  }

  /** Shutdown, once the routes have finished: every lease charge written, every lease given back. */
  close(): Promise<void> {
    return this.leases.close();
  }

  private leased(owner: HoldOwner, held: LeaseHold): Hold {
    return {
      amount: held.amount,
      settle: (charge) => this.leases.charge(held, { ...charge, requestId: owner.requestId }),
      release: async () => this.leases.release(held),
    };
  }

  private kept(id: string, amount: bigint): KeptHold {
    return {
      id,
      amount,
      settle: async (charge, tx) => (await billingRepository.settle(tx ?? this.db, id, charge))?.charged ?? null,
      release: async () => {
        const log = (err: unknown) =>
          this.log.error({ err, reservationId: id }, 'could not release a hold; it expires');
        await billingRepository.release(this.db, id).catch(log);
      },
    };
  }
}
