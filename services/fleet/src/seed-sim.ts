// The upstream-sim channels and models `npm start` serves, so that a fresh start can evaluate and chat at once.
// Channels are upserted by name: the sim may listen on another port at the next start.
import {
  channelRepository,
  modelRepository,
  withTx,
  type ChannelKind,
  type Db,
  type ModelKind,
  type SecretBox,
} from '@gensvc/db';

interface SimModel {
  id: string;
  kind: ModelKind;
  /** Micro-units per million tokens. */
  input: bigint;
  output: bigint;
  inputOnly?: boolean;
  unitPrice?: bigint;
  channels: string[];
  /** The model's name at the providers, when it differs from the part after the slash. */
  upstreamModel?: string;
}

/** One channel per protocol the sim speaks; all point at the same sim under their own /ch/<name> prefix. */
export const SIM_CHANNELS: { name: string; kind: ChannelKind }[] = [
  { name: 'sim-evaluate', kind: 'evaluate' },
  { name: 'sim-openai', kind: 'openai' },
  { name: 'sim-anthropic', kind: 'anthropic' },
  { name: 'sim-gemini', kind: 'gemini' },
  { name: 'sim-replicate', kind: 'replicate' },
  { name: 'sim-fal', kind: 'fal' },
];

export const SIM_MODELS: SimModel[] = [
  { id: 'sim/eval-1', kind: 'evaluation', input: 1_000_000n, output: 4_000_000n, channels: ['sim-evaluate'] },
  {
    id: 'sim/eval-input-only',
    kind: 'evaluation',
    input: 2_000_000n,
    output: 0n,
    inputOnly: true,
    channels: ['sim-evaluate'],
  },
  {
    id: 'sim/chat-1',
    kind: 'chat',
    input: 500_000n,
    output: 1_500_000n,
    channels: ['sim-openai', 'sim-anthropic', 'sim-gemini'],
  },
  // Generation tasks: $0.04 an image; $0.05 a second of video. Served by a Replicate-style and a fal-style channel,
  // each knowing the model by the same two-segment name (both protocols take `owner/name`).
  {
    id: 'sim/image-1',
    kind: 'image',
    input: 0n,
    output: 0n,
    unitPrice: 40_000n,
    channels: ['sim-replicate', 'sim-fal'],
    upstreamModel: 'sim/image-1',
  },
  {
    id: 'sim/video-1',
    kind: 'video',
    input: 0n,
    output: 0n,
    unitPrice: 50_000n,
    channels: ['sim-replicate', 'sim-fal'],
    upstreamModel: 'sim/video-1',
  },
];

export async function seedSim(db: Db, secrets: SecretBox, simUrl: string): Promise<void> {
  await withTx(db, async (tx) => {
    const ids = new Map<string, string>();
    for (const c of SIM_CHANNELS) {
      const baseUrl = `${simUrl}/ch/${c.name}`;
      const found = await channelRepository.findByName(tx, c.name);
      const row = found
        ? await channelRepository.update(tx, secrets, found.id, { baseUrl })
        : await channelRepository.create(tx, secrets, { name: c.name, kind: c.kind, baseUrl, secret: 'sim-secret' });
      ids.set(c.name, row!.id);
    }
    for (const m of SIM_MODELS) {
      const routes = m.channels.map((name) => ({ channelId: ids.get(name)!, upstreamModel: m.upstreamModel ?? null }));
      const found = await modelRepository.get(tx, m.id);
      if (!found) {
        await modelRepository.create(tx, {
          id: m.id,
          kind: m.kind,
          inputPricePerMTok: m.input,
          outputPricePerMTok: m.output,
          inputOnly: m.inputOnly ?? false,
          unitPrice: m.unitPrice ?? 0n,
          routes,
        });
        continue;
      }
      // A model seeded before keeps its prices and the routes an admin added; the sim's missing routes are added.
      const kept = found.routes.map((r) => ({ channelId: r.channelId, upstreamModel: r.upstreamModel }));
      const added = routes.filter((r) => !kept.some((k) => k.channelId === r.channelId));
      if (added.length) await modelRepository.update(tx, m.id, { routes: [...kept, ...added] });
    }
  });
}
