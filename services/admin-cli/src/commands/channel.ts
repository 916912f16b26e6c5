import {
  ChannelKind,
  type ChannelModel,
  channelRepository,
  openChannel,
  isUniqueViolation,
  type UpdateChannelInput,
} from '@gensvc/db';
import { readBreakerStates, upstreamModelOf, type SharedCircuit } from '@gensvc/upstream';
import { z } from 'zod';
import { flagValues, UsageError } from '../args';
import { announceCatalogChange } from '../catalog-changes';
import { probeFor, runProbe } from '../channel-probe';
import type { Command, Deps } from '../command';
import { AnsweredFailure, conflict, notFound } from '../failures';
import { choice, choices, httpUrl, integer, text } from '../flag-values';
import { fields, iso, table } from '../output';

const CHANNEL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** A channel as the CLI shows it: whether it has a provider credential, never the credential. */
function channelView(c: ChannelModel) {
  return {
    id: c.id,
    name: c.name,
    kind: c.kind,
    base_url: c.baseUrl,
    has_secret: c.secret !== '',
    evaluate_path: c.evaluatePath,
    priority: c.priority,
    weight: c.weight,
    timeout_ms: c.timeoutMs,
    enabled: c.enabled,
    created_at: iso(c.createdAt),
  };
}

/** A channel's settings as flags, for `add` (with its defaults) and `update`. */
const settingFlags = (defaults: boolean) => [
  { name: 'secret', value: 'SECRET', help: 'credential sent to the provider (never printed)' },
  { name: 'evaluate-path', value: 'PATH', help: `path of the evaluate call${defaults ? ' (default /evaluate)' : ''}` },
  { name: 'priority', value: 'N', help: `higher is tried first${defaults ? ' (default 0)' : ''}` },
  {
    name: 'weight',
    value: 'N',
    help: `share among channels of equal priority (0: never chosen${defaults ? '; default 1' : ''})`,
  },
  { name: 'timeout-ms', value: 'MS', help: `upstream call timeout${defaults ? ' (default 30000)' : ''}` },
];

const settings = {
  secret: z.string().min(1, 'must not be empty').optional(),
  'evaluate-path': z
    .string()
    .regex(/^\/[^\s?#]*$/, 'must be a path starting with "/"')
    .optional(),
  priority: integer(-1000, 1000).optional(),
  weight: integer(0, 1000).optional(),
  'timeout-ms': integer(1, 600_000).optional(),
};

/** The given settings flags as the repository's fields (absent flags leave the field out). */
function settingsOf(
  input: { 'base-url'?: string } & { [K in keyof typeof settings]?: z.output<(typeof settings)[K]> },
): UpdateChannelInput {
  return {
    ...(input['base-url'] !== undefined && { baseUrl: input['base-url'] }),
    ...(input.secret !== undefined && { secret: input.secret }),
    ...(input['evaluate-path'] !== undefined && { evaluatePath: input['evaluate-path'] }),
    ...(input.priority !== undefined && { priority: input.priority }),
    ...(input.weight !== undefined && { weight: input.weight }),
    ...(input['timeout-ms'] !== undefined && { timeoutMs: input['timeout-ms'] }),
  };
}

const add: Command = {
  words: ['channel', 'add'],
  summary: 'Add an upstream channel (a provider endpoint and its credential).',
  flags: [
    { name: 'name', value: 'NAME', required: true, help: 'unique name, letters, digits, "_", "." or "-"' },
    { name: 'kind', value: choices(ChannelKind), required: true, help: 'provider protocol' },
    { name: 'base-url', value: 'URL', required: true, help: 'http(s) base URL of the provider' },
    ...settingFlags(true),
  ],
  prepare(flags) {
    const input = flagValues(
      z.object({
        name: z
          .string()
          .regex(CHANNEL_NAME, 'must be 1-64 letters, digits, "_", "." or "-", starting with a letter or digit'),
        kind: choice(ChannelKind),
        'base-url': httpUrl,
        ...settings,
      }),
      flags,
      add,
    );
    return async ({ db, secrets, out }) => {
      const duplicate = conflict('duplicate_channel', `A channel named "${input.name}" already exists.`);
      if (await channelRepository.findByName(db, input.name)) throw duplicate;
      const channel = await channelRepository
        .create(db, secrets(), { name: input.name, kind: input.kind, baseUrl: input['base-url'], ...settingsOf(input) })
        .catch((e) => {
          throw isUniqueViolation(e) ? duplicate : e;
        });
      const view = channelView(channel);
      out.result(view, () => fields(view));
    };
  },
};

/** The circuit as the replicas share it in Redis; "unknown" without a Redis to ask (no REDIS_URL, no npm start). */
async function circuits({ redis, queuePrefix, out }: Deps, ids: string[]): Promise<Map<string, SharedCircuit> | null> {
  if (!redis) return null;
  try {
    return await readBreakerStates(redis, queuePrefix, ids);
  } catch (e) {
    out.note(`warning: could not read circuit states from Redis (${(e as Error).message}).`);
    return null;
  }
}

const list: Command = {
  words: ['channel', 'list'],
  summary: 'List channels, highest priority first, with their circuit-breaker state (credentials are never shown).',
  flags: [],
  prepare() {
    return async (deps) => {
      const channels = await channelRepository.list(deps.db);
      const states = await circuits(
        deps,
        channels.map((c) => c.id),
      );
      const data = channels.map((c) => {
        const circuit = states?.get(c.id);
        return {
          ...channelView(c),
          circuit: circuit?.state ?? 'unknown',
          circuit_failures: circuit?.failures ?? null,
          circuit_opened_at: circuit?.opened_at ?? null,
        };
      });
      deps.out.result({ object: 'list', data }, () =>
        table(data, [
          'id',
          'name',
          'kind',
          'base_url',
          'has_secret',
          'priority',
          'weight',
          'timeout_ms',
          'enabled',
          'circuit',
        ]),
      );
    };
  },
};

/** --id or --name, exactly one: the channel a command acts on. */
const whichFlags = [
  { name: 'id', value: 'CHANNEL_ID', help: 'channel id (ch_...); or --name' },
  { name: 'name', value: 'NAME', help: 'channel name; or --id' },
] as const;

function which(flags: Record<string, string | true>, command: Command): { id: string } | { name: string } {
  const input = flagValues(z.object({ id: text().optional(), name: text().optional() }), flags, command);
  if ((input.id === undefined) === (input.name === undefined))
    throw new UsageError('Give exactly one of --id and --name.', command);
  return input.id !== undefined ? { id: input.id } : { name: input.name! };
}

async function findChannel(deps: Deps, ref: { id: string } | { name: string }) {
  const channel =
    'id' in ref ? await channelRepository.get(deps.db, ref.id) : await channelRepository.findByName(deps.db, ref.name);
  if (!channel) throw notFound('channel', 'id' in ref ? ref.id : ref.name);
  return channel;
}

async function applyUpdate(deps: Deps, ref: { id: string } | { name: string }, patch: UpdateChannelInput) {
  const channel = await findChannel(deps, ref);
  const updated = await channelRepository.update(deps.db, deps.secrets(), channel.id, patch);
  if (!updated) throw notFound('channel', channel.id);
  await announceCatalogChange(deps, { channel: updated.id });
  const view = channelView(updated);
  deps.out.result(view, () => fields(view));
}

const update: Command = {
  words: ['channel', 'update'],
  summary: "Change a channel's address, credential, routing weights or timeout; every replica uses it at once.",
  flags: [
    ...whichFlags,
    { name: 'base-url', value: 'URL', help: 'http(s) base URL of the provider' },
    ...settingFlags(false),
  ],
  prepare(flags) {
    const ref = which(flags, update);
    const input = flagValues(
      z.object({ id: z.string().optional(), name: z.string().optional(), 'base-url': httpUrl.optional(), ...settings }),
      flags,
      update,
    );
    const patch = settingsOf(input);
    if (Object.keys(patch).length === 0)
      throw new UsageError(
        'Nothing to change: give at least one of --base-url, --secret, --evaluate-path, --priority, --weight, ' +
          '--timeout-ms.',
        update,
      );
    return (deps) => applyUpdate(deps, ref, patch);
  },
};

const switchCommand = (enabled: boolean): Command => {
  const command: Command = {
    words: ['channel', enabled ? 'enable' : 'disable'],
    summary: enabled
      ? 'Put a disabled channel back into rotation on every replica.'
      : 'Take a channel out of rotation: every replica stops sending it new calls within a second (tasks in flight ' +
        'on it still poll it).',
    flags: whichFlags,
    prepare(flags) {
      const ref = which(flags, command);
      return (deps) => applyUpdate(deps, ref, { enabled });
    },
  };
  return command;
};

const remove: Command = {
  words: ['channel', 'remove'],
  summary:
    'Remove a channel and its model routes (refused while generation tasks submitted to it are in flight: disable ' +
    'it first).',
  flags: whichFlags,
  prepare(flags) {
    const ref = which(flags, remove);
    return async (deps) => {
      const channel = await findChannel(deps, ref);
      const removed = await channelRepository.remove(deps.db, channel.id);
      if (!removed.ok && removed.reason === 'not_found') throw notFound('channel', channel.id);
      if (!removed.ok && removed.reason === 'in_use') {
        throw conflict(
          'channel_in_use',
          `${removed.tasks} generation task(s) submitted to channel "${channel.name}" are still queued or running; ` +
            `disable the channel and remove it once they finish.`,
        );
      }
      await announceCatalogChange(deps, { channel: channel.id });
      const view = { id: channel.id, name: channel.name, object: 'channel', deleted: true };
      deps.out.result(view, () => `removed channel ${channel.name} (${channel.id})`);
    };
  },
};

const test: Command = {
  words: ['channel', 'test'],
  summary:
    'Make one real call through a channel with its credential; print the status and latency (exit 1 unless 2xx).',
  flags: [
    { name: 'name', value: 'NAME', required: true, help: 'channel name' },
    {
      name: 'model',
      value: 'UPSTREAM_MODEL',
      help: "the provider's model name for an evaluate channel's test call (default: the first model routed to it)",
    },
  ],
  prepare(flags) {
    const input = flagValues(z.object({ name: text(), model: text().optional() }), flags, test);
    return async (deps) => {
      const channel = await findChannel(deps, { name: input.name });
      const route = await channelRepository.firstRoute(deps.db, channel.id);
      const upstreamModel = input.model ?? (route ? upstreamModelOf(route, { id: route.modelId }) : 'test');
      const result = await runProbe(probeFor(openChannel(deps.secrets(), channel), upstreamModel), channel.timeoutMs);
      const view = { channel: channel.name, kind: channel.kind, enabled: channel.enabled, ...result };
      if (!result.ok) {
        const why = result.status !== null ? `answered ${result.status}` : `failed: ${result.error}`;
        // The measurement is the answer either way; the exit code says whether the channel works.
        deps.out.result(view, () => fields(view));
        throw new AnsweredFailure(`channel ${channel.name} ${why} (${result.latency_ms} ms)`);
      }
      deps.out.result(view, () => fields(view));
    };
  },
};

export const channelCommands: Command[] = [add, list, update, switchCommand(false), switchCommand(true), remove, test];
