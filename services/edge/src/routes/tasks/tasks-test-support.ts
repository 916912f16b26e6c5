// Test support for the task routes: the models and channels they need, requests, and what a refused creation must
// leave as it was. The edge never calls a provider, so channels point at an address where nothing listens.
import { channelRepository, modelRepository } from '@gensvc/db';
import type { TestDb } from '@gensvc/db/testing';
import { jsonOf, testSecretBox } from '@gensvc/testing';
import { bearer } from '../files/files-test-support';

const IMAGE_MODEL = 'sim/image-1';
const VIDEO_MODEL = 'sim/video-1';
/** Per image. */
export const IMAGE_PRICE = 40_000n;
/** Per second of video. */
export const VIDEO_PRICE = 100_000n;

/** Models for every way a model can be wrong for a task, beside the two good ones. */
export const MODELS = {
  image: IMAGE_MODEL,
  video: VIDEO_MODEL,
  chat: 'sim/chat-1',
  /** An image model served by an OpenAI images channel only: no task protocol. */
  openaiOnly: 'sim/edit-1',
  /** An image model whose only task channel is disabled. */
  channelOff: 'sim/image-off-channel',
  disabled: 'sim/image-retired',
  /** A good image model of another provider. */
  otherProvider: 'acme/image-1',
} as const;

export async function seedTaskModels(db: TestDb) {
  const channel = (name: string, kind: 'replicate' | 'fal' | 'openai', enabled = true) =>
    channelRepository.create(db, testSecretBox(), {
      name,
      kind,
      baseUrl: 'http://127.0.0.1:9/none',
      secret: `sk-${name}`,
      enabled,
    });
  const [replicate, fal, openai, off] = await Promise.all([
    channel('rep', 'replicate'),
    channel('fal', 'fal'),
    channel('oai', 'openai'),
    channel('rep-off', 'replicate', false),
  ]);
  await modelRepository.create(db, {
    id: MODELS.image,
    kind: 'image',
    unitPrice: IMAGE_PRICE,
    routes: [{ channelId: replicate.id }, { channelId: openai.id }],
  });
  await modelRepository.create(db, {
    id: MODELS.video,
    kind: 'video',
    unitPrice: VIDEO_PRICE,
    routes: [{ channelId: fal.id }],
  });
  await modelRepository.create(db, { id: MODELS.chat, kind: 'chat', routes: [{ channelId: openai.id }] });
  await modelRepository.create(db, {
    id: MODELS.openaiOnly,
    kind: 'image',
    unitPrice: IMAGE_PRICE,
    routes: [{ channelId: openai.id }],
  });
  await modelRepository.create(db, {
    id: MODELS.channelOff,
    kind: 'image',
    unitPrice: IMAGE_PRICE,
    routes: [{ channelId: off.id }],
  });
  await modelRepository.create(db, {
    id: MODELS.disabled,
    kind: 'image',
    unitPrice: IMAGE_PRICE,
    routes: [{ channelId: replicate.id }],
  });
  await db.model.update({ where: { id: MODELS.disabled }, data: { enabled: false } });
  await modelRepository.create(db, {
    id: MODELS.otherProvider,
    kind: 'image',
    unitPrice: IMAGE_PRICE,
    routes: [{ channelId: replicate.id }],
  });
}

export function createTask(
  baseUrl: string,
  secret: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return fetch(`${baseUrl}/api/v1/${path}`, {
    method: 'POST',
    headers: { ...bearer(secret), 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** What a refused creation must leave as it was: the workspace's tasks, holds, balance and key. */
export async function workspaceState(db: TestDb, workspaceId: string) {
  const [tasks, reservations, workspace, keys] = await Promise.all([
    db.task.count({ where: { workspaceId } }),
    db.reservation.count({ where: { workspaceId } }),
    db.workspace.findUniqueOrThrow({ where: { id: workspaceId } }),
    db.apiKey.findMany({ where: { workspaceId }, select: { reserved: true, spent: true } }),
  ]);
  return { tasks, reservations, balance: workspace.balance, keys };
}

/** The answer's error, after checking its status and code. */
export async function errorOf(res: Response, status: number, code: string) {
  const body = await jsonOf(res);
  expect({ status: res.status, code: body.error?.code }).toEqual({ status, code });
  return body.error as { type: string; code: string; message: string; param: string | null; request_id: string };
}
