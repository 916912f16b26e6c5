// Test support: the real evaluate worker in the test process, on the test file's Postgres and Redis, and the
// channels and models that point evaluate at an upstream-sim.
import { channelRepository, modelRepository, type Db, type ModelKind } from '@gensvc/db';
import { createLogger } from '@gensvc/observability';
import { createRedisConnection } from '@gensvc/queue';
import type { TestContext } from '@gensvc/testing';
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

export interface SimChannel {
  /** Also the sim's channel prefix: requests to it are logged under this name. */
  name: string;
  priority?: number;
  weight?: number;
  timeoutMs?: number;
  evaluatePath?: string;
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
    const channel = await channelRepository.create(db, {
      name: c.name,
      kind: 'evaluate',
      baseUrl: `${simUrl}/ch/${c.name}`,
      secret: `sk-sim-${c.name}`,
      priority: c.priority ?? 0,
      weight: c.weight ?? 1,
      timeoutMs: c.timeoutMs ?? 10_000,
      ...(c.evaluatePath !== undefined && { evaluatePath: c.evaluatePath }),
    });
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
