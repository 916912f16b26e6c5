// The evaluate worker of one process: the evaluate.run handler on the `evaluate` queue, with the process's circuit
// breaker and keep-alive client. It answers; the edge that waits for the answer charges it (budget leases).
import type { Logger } from '@gensvc/observability';
import { closeWorkers, defineWorker } from '@gensvc/queue';
import { CircuitBreaker, UpstreamClient, type BreakerOptions, type Catalog } from '@gensvc/upstream';
import type { Worker } from 'bullmq';
import type { RedisConnection } from '@gensvc/queue';
import { evaluateRun } from './handlers/evaluate-run';

export interface EvaluateWorkerOptions {
  /** Shared by the worker's commands; its owner closes it after close(). */
  connection: RedisConnection;
  prefix: string;
  concurrency: number;
  logger: Logger;
  /** Models and channels, their credentials opened (the catalog's cache). */
  catalog: Catalog;
  breaker?: BreakerOptions;
}

export interface EvaluateWorker {
  worker: Worker;
  breaker: CircuitBreaker;
  /** Stops taking jobs, lets in-flight ones finish for up to timeoutMs, then stops the client. */
  close(timeoutMs?: number): Promise<void>;
}

export function startEvaluateWorker(opts: EvaluateWorkerOptions): EvaluateWorker {
  const breaker = new CircuitBreaker(opts.breaker);
  const client = new UpstreamClient();
  const worker = defineWorker({
    queue: 'evaluate',
    connection: opts.connection,
    prefix: opts.prefix,
    concurrency: opts.concurrency,
    logger: opts.logger,
    handlers: {
      'evaluate.run': evaluateRun({
        catalog: opts.catalog,
        breaker,
        client,
        logger: opts.logger,
        publish: (channel, message) => opts.connection.publish(channel, message),
      }),
    },
  });
  return {
    worker,
    breaker,
    async close(timeoutMs = 10_000) {
      await closeWorkers([worker], timeoutMs);
      await client.close();
    },
  };
}
