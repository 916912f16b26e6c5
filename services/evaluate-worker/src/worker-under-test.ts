// Test support: the real evaluate worker in the test process, on the test file's Postgres and Redis, and the
// channels and models that point evaluate at an upstream-sim.
import { modelRepository, type Db, type ModelKind } from '@gensvc/db';
import { createLogger } from '@gensvc/observability';
import { createRedisConnection } from '@gensvc/queue';
import { addSimChannel, type SimChannelSpec, type TestContext } from '@gensvc/testing';
import { Catalog, type BreakerOptions } from '@gensvc/upstream';
import { startEvaluateWorker, type EvaluateWorker } from './evaluate-worker';

export async function startWorker(ctx: TestContext, opts: { breaker?: BreakerOptions; concurrency?: number } = {}): Promise<EvaluateWorker> {
  const connection = createRedisConnection(ctx.config.redisUrl, { name: 'evaluate-worker-test' });
  const worker = startEvaluateWorker({
    db: ctx.db,
    connection,
    prefix: ctx.config.queuePrefix,
    concurrency: opts.concurrency ?? 20,
    logger: createLogger({ service: 'evaluate-worker-test', level: 'silent' }),
    // No caching: tests change models and channels between requests.
    catalog: new Catalog(ctx.db, { ttlMs: 0 }),
    ...(opts.breaker && { breaker: opts.breaker }),
  });
  await worker.worker.waitUntilReady();
  return {
    ...worker,
    async close(timeoutMs = 5_000) {
      await worker.close(timeoutMs);
      connection.disconnect();
    },
  };
}

export interface SimChannel extends Omit<SimChannelSpec, 'kind'> {
  upstreamModel?: string;
}

export interface EvaluateModelSpec {
  id: string;
  channels: SimChannel[];
  inputPricePerMTok?: bigint;
  outputPricePerMTok?: bigint;
  inputOnly?: boolean;
  maxOutputTokens?: number;
  kind?: ModelKind;
  enabled?: boolean;
}

/** A model served by channels `${simUrl}/ch/<name>`; returns the model row with its prices. */
export async function addSimModel(db: Db, simUrl: string, spec: EvaluateModelSpec) {
  const routes: { channelId: string; upstreamModel: string | null }[] = [];
  for (const c of spec.channels) {
    const channel = await addSimChannel(db, simUrl, { ...c, kind: 'evaluate' });
    routes.push({ channelId: channel.id, upstreamModel: c.upstreamModel ?? null });
  }
  const model = await modelRepository.create(db, {
    id: spec.id,
    kind: spec.kind ?? 'evaluation',
    inputPricePerMTok: spec.inputPricePerMTok ?? 3_000_000n,
    outputPricePerMTok: spec.outputPricePerMTok ?? 15_000_000n,
    inputOnly: spec.inputOnly ?? false,
    ...(spec.maxOutputTokens !== undefined && { maxOutputTokens: spec.maxOutputTokens }),
    routes,
  });
  if (spec.enabled === false) await db.model.update({ where: { id: spec.id }, data: { enabled: false } });
  return model;
}
