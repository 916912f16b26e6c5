// `Prefer: wait` on a task creation (RFC 7240; Replicate's sync mode): the caller is answered with the finished task
// when it ends within the wait, else with the queued task as without it. A waiter is an entry in this process's map
// and an open socket: no worker slot, no store connection. It learns of the end from the task-finished notice, which
// whoever ends a task publishes after the transition committed (publishTaskFinished), on one channel this process
// subscribes to once through its shared subscriber; then the route reads the task once.
//
// Pub/sub is at-most-once: a notice may be lost with a dropped connection. A wait during which the subscription was
// not live all along reads the task once at its end (mayHaveMissed), so its caller still gets the finished task.
import { taskFinishedChannel } from '@gensvc/contracts';
import type { SharedSubscriber } from '@gensvc/queue';

/** How a wait ended: the task's notice came, the wait ran out, the caller left, or the process is shutting down. */
export type WaitEnd = 'finished' | 'timeout' | 'gone' | 'closed';

export interface TaskWaiter {
  /** Resolves once the wait ends: at the task's notice, after `ms`, at cancel(), or at shutdown. */
  until(ms: number): Promise<WaitEnd>;
  /** Ends the wait ('gone'): the entry is removed at once. */
  cancel(): void;
  /** Whether the subscription was not live at some moment of the wait so far: a notice may have been lost. */
  mayHaveMissed(): boolean;
}

/** The longest wait a caller may ask for, in seconds; a bare `wait` asks for it. */
export const MAX_WAIT_SECONDS = 60;

/**
 * The wait a `Prefer` header asks for, in seconds, or undefined for none. Per RFC 7240 a preference that cannot be
 * read is ignored, never an error, and the first `wait` counts; a bare `wait` is the longest, and a number outside
 * 1..60 is clamped into it.
 */
export function preferredWait(prefer: string | undefined): number | undefined {
  if (prefer === undefined) return undefined;
  for (const preference of prefer.split(',')) {
    const [token = '', ...rest] = (preference.split(';')[0] ?? '').split('=');
    if (token.trim().toLowerCase() !== 'wait') continue;
    if (rest.length === 0) return MAX_WAIT_SECONDS;
    const value = rest
      .join('=')
      .trim()
      .replace(/^"(.*)"$/, '$1');
    if (!/^\d{1,9}$/.test(value)) return undefined;
    return Math.min(MAX_WAIT_SECONDS, Math.max(1, Number(value)));
  }
  return undefined;
}

export class TaskWaits {
  /** task id → how to end each of its waits. */
  private readonly waiting = new Map<string, Set<(end: WaitEnd) => void>>();
  private count = 0;
  private closed = false;
  /** Whether the subscription is confirmed now, and how often it has dropped. */
  private live = false;
  private drops = 0;
  private stop = async () => {};

  private constructor(private readonly max: number) {}

  /** Subscribes (once, through the process's shared subscriber) to the task-finished notices. */
  static async connect(
    subscriber: Pick<SharedSubscriber, 'listen'>,
    queuePrefix: string,
    maxWaiters: number,
  ): Promise<TaskWaits> {
    const waits = new TaskWaits(maxWaiters);
    waits.stop = await subscriber.listen([taskFinishedChannel(queuePrefix)], {
      onMessage: (_channel, taskId) => waits.end(taskId, 'finished'),
      setLive: (live) => {
        if (waits.live && !live) waits.drops++;
        waits.live = live;
      },
    });
    return waits;
  }

  /** The waits in progress. */
  get size(): number {
    return this.count;
  }

  /** The tasks waited for (each has at least one wait). */
  get tasks(): number {
    return this.waiting.size;
  }

  /**
   * Starts waiting for task `taskId`. Called before the task is written, so no notice of its end can come before the
   * wait (nothing ends a task that does not exist yet). Null when this process holds its most waits already, or is
   * shutting down: the caller is answered at once.
   */
  register(taskId: string): TaskWaiter | null {
    if (this.closed || this.count >= this.max) return null;
    let settle!: (end: WaitEnd) => void;
    const ended = new Promise<WaitEnd>((resolve) => {
      settle = resolve;
    });
    let done = false;
    const end = (how: WaitEnd) => {
      if (done) return;
      done = true;
      this.count--;
      const set = this.waiting.get(taskId);
      set?.delete(end);
      if (set?.size === 0) this.waiting.delete(taskId);
      settle(how);
    };
    const set = this.waiting.get(taskId) ?? new Set();
    set.add(end);
    this.waiting.set(taskId, set);
    this.count++;
    const drops = this.live ? this.drops : -1;
    return {
      mayHaveMissed: () => drops !== this.drops || !this.live,
      until: async (ms) => {
        const timer = setTimeout(() => end('timeout'), ms);
        try {
          return await ended;
        } finally {
          clearTimeout(timer);
        }
      },
      cancel: () => end('gone'),
    };
  }

  /** Every wait ends now ('closed': its caller is answered at once) and no new one starts; then unsubscribes. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const taskId of [...this.waiting.keys()]) this.end(taskId, 'closed');
    await this.stop();
  }

  private end(taskId: string, how: WaitEnd) {
    for (const end of [...(this.waiting.get(taskId) ?? [])]) end(how);
  }
}
