// The evaluate worker of one process: the evaluate.run handler on the `evaluate` queue, with the process's circuit
// breaker and keep-alive client, and the sweep that gives back reservations whose owner died.
import type { Db } from '@gensvc/db';
import { billingRepository } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import { closeWorkers, defineWorker } from '@gensvc/queue';
import { Catalog, CircuitBreaker, type BreakerOptions } from '@gensvc/upstream';
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { evaluateRun } from './handlers/evaluate-run';
import { createEvaluateClient } from './upstream/evaluate-client';

export interface EvaluateWorkerOptions {
  db: Db;
  /** Shared by the worker's commands; its owner closes it after close(). */
  connection: Redis;
  prefix: string;
  concurrency: number;
  logger: Logger;
  catalog?: Catalog;
  breaker?: BreakerOptions;
  /** How often expired reservations are released (billingRepository.releaseExpired); default one minute. */
  sweepEveryMs?: number;
}

export interface EvaluateWorker {
  worker: Worker;
  breaker: CircuitBreaker;
  /** Stops taking jobs, lets in-flight ones finish for up to timeoutMs, stops the sweep and the client. */
  close(timeoutMs?: number): Promise<void>;
}

export function startEvaluateWorker(opts: EvaluateWorkerOptions): EvaluateWorker {
  const breaker = new CircuitBreaker(opts.breaker);
  const client = createEvaluateClient();
  const worker = defineWorker({
    queue: 'evaluate',
    connection: opts.connection,
    prefix: opts.prefix,
    concurrency: opts.concurrency,
    logger: opts.logger,
    handlers: {
      'evaluate.run': evaluateRun({ db: opts.db, catalog: opts.catalog ?? new Catalog(opts.db), breaker, client, logger: opts.logger }),
    },
  });
  const sweep = startReservationSweep(opts.db, opts.logger, opts.sweepEveryMs ?? 60_000);
  return {
    worker,
    breaker,
    async close(timeoutMs = 10_000) {
      sweep.stop();
      await closeWorkers([worker], timeoutMs);
      client.close();
      await sweep.idle();
    },
  };
}

/**
 * Releases holds past their expiry (an edge or worker died between reserve and settle). Every worker replica runs
 * it: each release is one atomic conditional update, so replicas racing on a row release it once.
 */
export function startReservationSweep(db: Db, logger: Logger, everyMs: number) {
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    running ??= billingRepository
      .releaseExpired(db)
      .then((released) => {
        if (released > 0) logger.info({ released }, 'released expired reservations');
      })
      .catch((err) => logger.error({ err }, 'could not release expired reservations'))
      .finally(() => (running = null));
  }, everyMs);
  timer.unref();
  return {
    stop: () => clearInterval(timer),
    idle: () => running ?? Promise.resolve(),
  };
}
