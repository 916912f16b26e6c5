// Bundles: several payloads of one contract in one BullMQ job (the contract's `bundle`, at most that many), so the
// queue's own cost per payload (the add, the take, the completion and their Redis scripts) is paid once for them.
// issue 12: a callback delivery's CPU, summed over every process it crosses, was ~1.0 ms, and BullMQ's share of it
// (the dispatcher's take and completion, Redis's scripts, the producer's add) ~0.3-0.5 ms.
//
// The producer's side (enqueueBundled) gathers the adds a process makes in one burst of continuations (until the
// microtasks run out: process.nextTick), as an archiver's record group completes its tasks together; the worker's side
// (defineWorker) runs each payload of a bundle as a job of its own: parsed, in its own `process` span under its own
// producer's trace, through the same handler. The bundle is one BullMQ job for everything else: one lock, one
// completion, and one retry of all its payloads when one of them throws (handlers are idempotent; each payload's
// handler finds what an earlier run did).
import { jobKeyOf, type JobContract, type JobInput, type KeyedJob } from '@gensvc/contracts';
import type { Job } from 'bullmq';
import { jobIdFor, jobIdOf, jobOptionsOf, publish, type EnqueueOptions, type Queues } from './queues';

/** The field of a bundle job's data that holds its payloads (each as enqueue would store it). */
const BUNDLE = 'bundle';

/** The payloads of a bundle job's data, or null when the data is one payload (a contract that bundles, added alone). */
export function bundledPayloads(data: unknown): unknown[] | null {
  const payloads = (data as Record<string, unknown> | null | undefined)?.[BUNDLE];
  return Array.isArray(payloads) ? payloads : null;
}

/** What each payload of a finished job returned (a worker's `completed` event): a bundle's results in order, else the job's one. */
export function payloadResults<T>(job: Pick<Job, 'data'>, result: unknown): T[] {
  return (bundledPayloads(job.data) ? result : [result]) as T[];
}

/** A burst's adds, by job id (its contract's key; a symbol each for a contract without one), in order of arrival. */
type Pending = Map<string | symbol, Add>;
interface Add {
  data: Record<string, unknown>;
  added: Promise<Job>;
  settle(job: Job | null, err?: unknown): void;
}

const pendingOf = new WeakMap<Queues, Map<string, Pending>>();

/**
 * Adds a job as enqueue does, gathered with the other adds of the same contract and options this process makes before
 * its microtasks run out: those leave as bundles of up to the contract's `bundle` payloads, each one BullMQ job (one
 * payload alone is added as enqueue adds it, under its own id). Answers the job its payload went into.
 *
 * Only for adds that no job of the same id precedes (a bundle's id is its first payload's with `bundle` appended, so
 * an add of the same payload's id elsewhere does not see it): a task's first callback attempt, which only the
 * transition that completed the task makes. Two adds of one id in one burst make one payload, as a second add of an
 * existing id adds nothing.
 */
export function enqueueBundled<J extends JobContract>(queues: Queues, contract: J, payload: JobInput<J>, opts: EnqueueOptions = {}): Promise<Job> {
  return publish(contract, payload, 'validate', (data) => gather(queues, contract, data, opts));
}

function gather(queues: Queues, contract: JobContract, data: Record<string, unknown>, opts: EnqueueOptions): Promise<Job> {
  let groups = pendingOf.get(queues);
  if (!groups) pendingOf.set(queues, (groups = new Map()));
  const group = `${contract.name}\u0000${JSON.stringify(opts)}`;
  let pending = groups.get(group);
  if (!pending) {
    const started: Pending = new Map();
    groups.set(group, (pending = started));
    process.nextTick(() => {
      groups.delete(group);
      flush(queues, contract, opts, [...started.values()]);
    });
  }
  const id = contract.key ? jobIdOf(contract as KeyedJob, data as never) : Symbol();
  const same = pending.get(id);
  if (same) return same.added;
  let settle!: (job: Job | null, err?: unknown) => void;
  const added = new Promise<Job>((resolve, reject) => (settle = (job, err) => (job ? resolve(job) : reject(err))));
  pending.set(id, { data, added, settle });
  return added;
}

function flush(queues: Queues, contract: JobContract, opts: EnqueueOptions, adds: Add[]): void {
  const size = contract.bundle ?? 1;
  for (let i = 0; i < adds.length; i += size) {
    const chunk = adds.slice(i, i + size);
    addChunk(queues, contract, opts, chunk).then(
      (job) => chunk.forEach((add) => add.settle(job)),
      (err: unknown) => chunk.forEach((add) => add.settle(null, err)),
    );
  }
}

/** One job for a chunk of a burst's adds: a lone payload as enqueue adds it, several as a bundle. Never throws: rejects. */
async function addChunk(queues: Queues, contract: JobContract, opts: EnqueueOptions, chunk: Add[]): Promise<Job> {
  // Closed since the adds were made (a shutdown): refused here, as an add to closed queues is.
  const queue = queues.get(contract.queue);
  const lead = chunk[0]!.data;
  const jobOpts = jobOptionsOf(contract, lead, opts);
  if (chunk.length === 1) return queue.add(contract.name, lead, jobOpts);
  if (contract.key) jobOpts.jobId = jobIdFor(contract, [...jobKeyOf(contract as KeyedJob, lead as never), BUNDLE]);
  // Stamped with the contract's version as each payload is: a worker that cannot run a bundle says which it was handed.
  return queue.add(contract.name, { [BUNDLE]: chunk.map((add) => add.data), v: contract.version }, jobOpts);
}
