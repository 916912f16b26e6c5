// The call to the image model's channels in the OpenAI images protocol: multipart to {baseUrl}/v1/images/edits
// with the channel's own credential, failing over from channel to channel (withFailover). An answer counts only
// when every result is usable — b64_json that decodes to an image, or a url — so a channel answering garbage is
// failed over like one answering 5xx, and the caller is never charged for it.
import { errors } from '@gensvc/errors';
import type { Logger } from '@gensvc/observability';
import {
  readBody,
  upstreamModelOf,
  withFailover,
  type Catalog,
  type CatalogModel,
  type CatalogRoute,
  type CircuitBreaker,
  type UpstreamClient,
} from '@gensvc/upstream';
import { sniffMedia, type SniffedMedia } from '@gensvc/media';
import type { AuthKey } from '@gensvc/db';
import { modelForKey } from '../../models/key-models';
import { invalidResponse, parseObject } from '../../proxy/protocol';
import type { EditImage } from './image-inputs';
import { IMAGE_TYPES, PASS_THROUGH_FIELDS, type EditFields } from './schema';

/** Largest upstream answer read: n base64 images of a few MiB each. */
const MAX_ANSWER_BYTES = 128 * 1024 * 1024;

export interface EditCall {
  model: CatalogModel;
  routes: CatalogRoute[];
  fields: EditFields;
  images: EditImage[];
  mask: EditImage | null;
}

export type EditOutput =
  | { index: number; item: Record<string, unknown>; kind: 'b64'; bytes: Buffer; media: SniffedMedia }
  | { index: number; item: Record<string, unknown>; kind: 'url'; url: string };

export interface EditAnswer {
  route: CatalogRoute;
  /** The provider's answer as it came (its data[] items are the outputs' `item`s). */
  json: Record<string, unknown>;
  outputs: EditOutput[];
}

/** The image model a caller named and its channels that speak the OpenAI images protocol. */
export async function resolveImageModel(
  catalog: Catalog,
  key: Pick<AuthKey, 'allowedModels'>,
  id: string,
): Promise<{ model: CatalogModel; routes: CatalogRoute[] }> {
  const model = await modelForKey(catalog, key, id);
  if (!model?.enabled) throw errors.modelNotFound(id);
  if (model.kind !== 'image') {
    throw errors.modelNotSupported(
      `"${id}" is a${model.kind === 'evaluation' ? 'n evaluation' : ` ${model.kind}`} ` +
        `model; image edits need an image model.`,
    );
  }
  const routes = model.routes.filter((r) => r.channel.kind === 'openai');
  if (routes.length === 0)
    throw errors.modelNotSupported(`"${id}" has no channel that serves the OpenAI images protocol.`);
  return { model, routes };
}

/** The multipart body for one upstream model name, encoded once by the platform's own FormData encoder. */
async function encodeForm(call: EditCall, upstreamModel: string): Promise<{ body: Buffer; contentType: string }> {
  const form = new FormData();
  form.append('model', upstreamModel);
  form.append('prompt', call.fields.prompt);
  if (call.fields.n !== undefined) form.append('n', call.fields.n);
  for (const name of PASS_THROUGH_FIELDS) {
    const value = call.fields[name];
    if (value !== undefined) form.append(name, value);
  }
  // OpenAI reads one image from "image" and several from "image[]"; the type it checks is the part's own.
  const field = call.images.length > 1 ? 'image[]' : 'image';
  for (const [i, img] of call.images.entries()) {
    form.append(
      field,
      new Blob([img.bytes], { type: img.media.contentType }),
      `image-${i + 1}.${img.media.extensions[0]}`,
    );
  }
  if (call.mask)
    form.append(
      'mask',
      new Blob([call.mask.bytes], { type: call.mask.media.contentType }),
      `mask.${call.mask.media.extensions[0]}`,
    );
  const encoded = new Response(form);
  return { body: Buffer.from(await encoded.arrayBuffer()), contentType: encoded.headers.get('content-type')! };
}

export async function callEdit(
  client: UpstreamClient,
  breaker: CircuitBreaker,
  call: EditCall,
  log: Logger,
): Promise<EditAnswer> {
  const forms = new Map<string, Promise<{ body: Buffer; contentType: string }>>();
  const formFor = (upstreamModel: string) => {
    let form = forms.get(upstreamModel);
    if (!form) {
      form = encodeForm(call, upstreamModel);
      forms.set(upstreamModel, form);
    }
    return form;
  };
  return withFailover({
    routes: call.routes,
    breaker,
    onFailure: (route, err) =>
      log.warn({ channel: route.channel.name, err: (err as Error)?.message }, 'upstream image edit attempt failed'),
    call: async (route) => {
      const { channel } = route;
      const form = await formFor(upstreamModelOf(route, call.model));
      const answer = await client.send({
        baseUrl: channel.baseUrl,
        path: '/v1/images/edits',
        headers: {
          authorization: `Bearer ${channel.secret}`,
          'content-type': form.contentType,
          accept: 'application/json',
        },
        body: form.body,
        timeoutMs: channel.timeoutMs,
      });
      const json = parseObject((await readBody(answer.body, MAX_ANSWER_BYTES)).toString('utf8'), 'the answer');
      return { route, json, outputs: outputsOf(json) };
    },
  });
}

function outputsOf(json: Record<string, unknown>): EditOutput[] {
  const data = json.data;
  if (!Array.isArray(data) || data.length === 0) throw invalidResponse('the answer has no results in data');
  return data.map((item: unknown, index): EditOutput => {
    if (item === null || typeof item !== 'object' || Array.isArray(item))
      throw invalidResponse(`result ${index} is not an object`);
    const result = item as Record<string, unknown>;
    if (typeof result.b64_json === 'string') {
      const bytes = Buffer.from(result.b64_json, 'base64');
      const media = sniffMedia(bytes, true);
      if (!media || !(IMAGE_TYPES as readonly string[]).includes(media.contentType))
        throw invalidResponse(`result ${index}'s b64_json is not an image`);
      return { index, item: result, kind: 'b64', bytes, media };
    }
    if (typeof result.url === 'string' && result.url.length > 0)
      return { index, item: result, kind: 'url', url: result.url };
    throw invalidResponse(`result ${index} has neither b64_json nor url`);
  });
}
