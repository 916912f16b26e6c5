import { OutboundAgents } from '@gensvc/outbound';
import { coalesceWrites, defineWorker, type QueueLogger } from '@gensvc/queue';
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { DispatcherDeps } from './deps';
import { callbackDeliver } from './handlers/callback-deliver';

export interface WorkerConnection {
  connection: Redis;
  prefix: string;
  logger?: QueueLogger;
}

/** The `callbacks` queue's worker: one handler, `callback.deliver`, with the kept-alive connections it owns. */
export function startDispatcherWorker(
  deps: DispatcherDeps,
  conn: WorkerConnection,
  concurrency = deps.config.concurrency.callbackDispatcher,
): Worker {
  // Connections to receivers reused across attempts (issue 12), closed with the worker.
  const agents = new OutboundAgents();
  const deliver = callbackDeliver({ ...deps, outbound: { ...deps.outbound, agents } });
  const worker = defineWorker({
    queue: 'callbacks',
    connection: conn.connection,
    prefix: conn.prefix,
    concurrency,
    takeOnePerJob: true,
    logger: conn.logger ?? deps.logger,
    handlers: {
      // The attempts of one group-committed record (group-commit.ts) end in the same turn: their jobs' completions,
      // which BullMQ sends on this connection right after, leave in one socket write instead of one each.
      'callback.deliver': async (payload, ctx) => {
        const outcome = await deliver(payload, ctx);
        coalesceWrites(conn.connection);
        return outcome;
      },
    },
  });
  worker.once('closed', () => void agents.close());
  return worker;
}
