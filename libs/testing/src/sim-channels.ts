import { channelRepository, type ChannelKind, type Db } from '@gensvc/db';

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
export function addSimChannel(db: Db, simUrl: string, spec: SimChannelSpec) {
  return channelRepository.create(db, {
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
