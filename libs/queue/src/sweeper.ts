// The one scheduler of each reconciler: every service that owns a step runs the sweep that recovers it
// (the task-runner submits and polls, the archiver archives and completes, the dispatcher delivers), each on its
// own timer and its own Redis lock, so one replica of that service sweeps per interval however many run. A sweep
// that overlaps another is harmless anyway: every job has a deterministic id and every handler re-checks its row.
//
// A timer and a lock rather than a BullMQ repeatable job: a recovery must survive the very thing it recovers from,
// Redis losing its keys (a job scheduler would vanish with them; the lock is simply taken again).
import type { RedisConnection } from './connection';
import type { QueueLogger } from './logger';

export interface Sweeper<R> {
  /** One sweep now (tests, and the timer). */
  runOnce(): Promise<R>;
  stop(): Promise<void>;
}

export interface SweeperOptions<R> {
  /** The kind of recovery: names its lock (`<prefix>:sweep:<name>`) and its log lines. */
  name: string;
  redis: RedisConnection;
  prefix: string;
  intervalMs: number;
  logger: QueueLogger;
  sweep: () => Promise<R>;
  /** false: no timer (tests call runOnce). */
  autorun?: boolean;
}

export function startSweeper<R>(opts: SweeperOptions<R>): Sweeper<R> {
  const { name, redis, intervalMs, logger } = opts;
  const lockKey = `${opts.prefix}:sweep:${name}`;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  const tick = async () => {
    // Held for most of an interval: the other replicas skip this round.
    const won = await redis.set(lockKey, String(process.pid), 'PX', Math.max(1, intervalMs - 100), 'NX');
    if (won === 'OK') await opts.sweep();
  };
  const next = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick()
        .catch((err: unknown) => logger.error({ err, sweep: name }, 'sweep failed; the next interval retries'))
        .finally(() => next(intervalMs));
    }, delayMs);
    timer.unref();
  };
  // The first sweep as the service starts, the next ones an interval apart: a service restarted after a crash recovers
  // what it owns at once, not an interval later, and what a sweep first loads (Prisma's query compiler, at a process's
  // first model query) is loaded at start-up, not in the middle of the traffic an interval later.
  if (opts.autorun !== false) next(0);
  return {
    runOnce: opts.sweep,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

/** What every reconciler reads of the config: its lock's prefix, its interval, and what makes a row stale. */
export interface ReconcileConfig {
  queuePrefix: string;
  tasks: { reconcileIntervalMs: number; pollScheduleMs: number[] };
}

/** What every reconciler is given beside its own stores: its config, the Redis its lock lives in, its logger. */
export interface ReconcilerBaseDeps {
  config: ReconcileConfig;
  redis: RedisConnection;
  logger: QueueLogger;
}

/** One sweep's view: rows unmoved since before `staleBefore` are looked at, at most `batch` of them. */
export interface ReconcileSweep {
  now: Date;
  staleBefore: Date;
  batch: number;
}

/** Rows a sweep looks at, at most: a backlog larger than this is worked through over the next intervals. */
const RECONCILE_BATCH = 500;

/**
 * A service's reconciler: `sweep` every TASK_RECONCILE_INTERVAL on one replica (startSweeper, locked as `name`),
 * given the cut-off before which an unmoved row is stale (staleAfterMs).
 */
export function startReconcileSweeper<R>(
  name: string,
  deps: ReconcilerBaseDeps,
  sweep: (s: ReconcileSweep) => Promise<R>,
  opts: { autorun?: boolean } = {},
): Sweeper<R> {
  const { config } = deps;
  return startSweeper({
    name,
    redis: deps.redis,
    prefix: config.queuePrefix,
    intervalMs: config.tasks.reconcileIntervalMs,
    logger: deps.logger,
    autorun: opts.autorun,
    sweep: () => {
      const now = new Date();
      return sweep({ now, staleBefore: new Date(now.getTime() - staleAfterMs(config.tasks)), batch: RECONCILE_BATCH });
    },
  });
}

/**
 * How long a row may sit unmoved before a reconciler looks at it: a live task moves at least every poll, so longer
 * than the slowest poll, and not less than an interval; healthy rows are then rarely looked at (looking at one is
 * harmless, only work).
 */
function staleAfterMs(tasks: { reconcileIntervalMs: number; pollScheduleMs: readonly number[] }): number {
  return Math.max(tasks.reconcileIntervalMs, 3 * Math.max(...tasks.pollScheduleMs));
}
