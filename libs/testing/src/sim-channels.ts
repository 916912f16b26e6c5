import { channelRepository, modelRepository, type ChannelKind, type ModelKind } from '@gensvc/db';
import type { TestDb } from '@gensvc/db/testing';
import { testSecretBox } from './context';

export interface SimChannelSpec {
  /** Also the sim's channel prefix: the sim logs requests to `${simUrl}/ch/<name>` under this name. */
  name: string;
  kind: ChannelKind;
  priority?: number;
  weight?: number;
  timeoutMs?: number;
  evaluatePath?: string;
}

/** A channel pointing at an upstream-sim, with its own credential (never a caller's key). */
export function addSimChannel(db: TestDb, simUrl: string, spec: SimChannelSpec) {
  return channelRepository.create(db, testSecretBox(), {
    name: spec.name,
    kind: spec.kind,
    baseUrl: `${simUrl}/ch/${spec.name}`,
    secret: `sk-sim-${spec.name}`,
    priority: spec.priority ?? 0,
    weight: spec.weight ?? 1,
    timeoutMs: spec.timeoutMs ?? 10_000,
    ...(spec.evaluatePath !== undefined && { evaluatePath: spec.evaluatePath }),
  });
}

export interface SimModelChannel extends Omit<SimChannelSpec, 'kind'> {
  /** The channel's protocol; default evaluate. */
  kind?: ChannelKind;
  /** The model's name at the provider, when it is not the part of the model id after the slash. */
  upstreamModel?: string;
}

export interface SimModelSpec {
  id: string;
  /** Default evaluation. */
  kind?: ModelKind;
  channels: SimModelChannel[];
  /** Per image or second of video: a model priced per unit has no token prices. */
  unitPrice?: bigint;
  /** Token prices of a model without a unitPrice; default 3 and 15 USD per million. */
  inputPricePerMTok?: bigint;
  outputPricePerMTok?: bigint;
  inputOnly?: boolean;
  maxOutputTokens?: number;
  enabled?: boolean;
}

/**
 * A model served by upstream-sim channels (`${simUrl}/ch/<name>`), made with the channels. Returns the model row
 * with its prices, and the channels' ids in the order given.
 */
export async function addSimModel(db: TestDb, simUrl: string, spec: SimModelSpec) {
  const routes: { channelId: string; upstreamModel: string | null }[] = [];
  for (const { upstreamModel, ...c } of spec.channels) {
    const channel = await addSimChannel(db, simUrl, { ...c, kind: c.kind ?? 'evaluate' });
    routes.push({ channelId: channel.id, upstreamModel: upstreamModel ?? null });
  }
  const prices =
    spec.unitPrice !== undefined
      ? { unitPrice: spec.unitPrice }
      : {
          inputPricePerMTok: spec.inputPricePerMTok ?? 3_000_000n,
          outputPricePerMTok: spec.outputPricePerMTok ?? 15_000_000n,
        };
  const model = await modelRepository.create(db, {
    id: spec.id,
    kind: spec.kind ?? 'evaluation',
    ...prices,
    inputOnly: spec.inputOnly ?? false,
    ...(spec.maxOutputTokens !== undefined && { maxOutputTokens: spec.maxOutputTokens }),
    routes,
  });
  if (spec.enabled === false) await db.model.update({ where: { id: spec.id }, data: { enabled: false } });
  return { model, channelIds: routes.map((r) => r.channelId) };
}
