import { ChannelKind, type ChannelModel, channelRepository, isUniqueViolation } from '@gensvc/db';
import { z } from 'zod';
import { flagValues } from '../args';
import type { Command } from '../command';
import { conflict } from '../failures';
import { choice, choices, httpUrl, integer } from '../flag-values';
import { fields, iso, table } from '../output';

export const CHANNEL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** A channel as the CLI shows it: whether it has a provider credential, never the credential. */
export function channelView(c: ChannelModel) {
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

const add: Command = {
  words: ['channel', 'add'],
  summary: 'Add an upstream channel (a provider endpoint and its credential).',
  flags: [
    { name: 'name', value: 'NAME', required: true, help: 'unique name, letters, digits, "_", "." or "-"' },
    { name: 'kind', value: choices(ChannelKind), required: true, help: 'provider protocol' },
    { name: 'base-url', value: 'URL', required: true, help: 'http(s) base URL of the provider' },
    { name: 'secret', value: 'SECRET', help: 'credential sent to the provider (never printed)' },
    { name: 'evaluate-path', value: 'PATH', help: 'path of the evaluate call (default /evaluate)' },
    { name: 'priority', value: 'N', help: 'higher is tried first (default 0)' },
    { name: 'weight', value: 'N', help: 'share among channels of equal priority (default 1)' },
    { name: 'timeout-ms', value: 'MS', help: 'upstream call timeout (default 30000)' },
  ],
  prepare(flags) {
    const input = flagValues(
      z.object({
        name: z.string().regex(CHANNEL_NAME, 'must be 1-64 letters, digits, "_", "." or "-", starting with a letter or digit'),
        kind: choice(ChannelKind),
        'base-url': httpUrl,
        secret: z.string().min(1, 'must not be empty').optional(),
        'evaluate-path': z.string().regex(/^\/[^\s?#]*$/, 'must be a path starting with "/"').optional(),
        priority: integer(-1000, 1000).optional(),
        weight: integer(0, 1000).optional(),
        'timeout-ms': integer(1, 600_000).optional(),
      }),
      flags,
      add,
    );
    return async ({ db, out }) => {
      const duplicate = conflict('duplicate_channel', `A channel named "${input.name}" already exists.`);
      if (await channelRepository.findByName(db, input.name)) throw duplicate;
      const channel = await channelRepository
        .create(db, {
          name: input.name,
          kind: input.kind,
          baseUrl: input['base-url'],
          ...(input.secret !== undefined && { secret: input.secret }),
          ...(input['evaluate-path'] !== undefined && { evaluatePath: input['evaluate-path'] }),
          ...(input.priority !== undefined && { priority: input.priority }),
          ...(input.weight !== undefined && { weight: input.weight }),
          ...(input['timeout-ms'] !== undefined && { timeoutMs: input['timeout-ms'] }),
        })
        .catch((e) => {
          throw isUniqueViolation(e) ? duplicate : e;
        });
      const view = channelView(channel);
      out.result(view, () => fields(view));
    };
  },
};

const list: Command = {
  words: ['channel', 'list'],
  summary: 'List channels, highest priority first (credentials are never shown).',
  flags: [],
  prepare() {
    return async ({ db, out }) => {
      const data = (await channelRepository.list(db)).map(channelView);
      out.result({ object: 'list', data }, () =>
        table(data, ['id', 'name', 'kind', 'base_url', 'has_secret', 'priority', 'weight', 'timeout_ms', 'enabled']),
      );
    };
  },
};

export const channelCommands: Command[] = [add, list];
