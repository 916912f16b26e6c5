// POST /v1/responses with the image_generation tool (spec §4.4): the provider's answer holds image_generation_call
// items whose `result` is a base64 image. Each generated image is archived as a workspace file and its item gets
// svc_file_id, svc_url and archive_status, exactly as images/edits results do (recordImageOutputs, one Task row
// `responses.image_generation` owning the outputs); the call is billed its tokens plus the model's unitPrice per
// image.
//
// Billing: the hold is the token bound (holdFor, as every Responses call) plus unitPrice × the image bound (the
// max_tool_calls sent upstream), taken before the call; the settlement charges the reported tokens plus unitPrice ×
// the images generated (never more than the bound), in the transaction that records the outputs. Any failure after
// the hold (every channel failing, an unreadable answer, storage down) releases it. The call goes through ChatProxy's
// failover and attempts (ChatProxy.answer), as every Responses call does; only the hold and its settlement are this
// route's, since they are written with the images. Not streamed: the archived ids must be in the answer, and a
// stream would pass the image on before it is stored.
import { newId } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { sniffMedia } from '@gensvc/media';
import { costOf, upstreamModelOf, type CatalogModel, type CatalogRoute } from '@gensvc/upstream';
import type { Response } from 'express';
import { authOf } from '../../auth/authenticate';
import { ownerOf } from '../../billing/paid-call';
import type { EdgeDeps } from '../../deps';
import { locals } from '../../http/request-context';
import { holdFor, UpstreamBodies, type ChatProxy } from '../../proxy/chat-proxy';
import { openAiResponsesProtocol } from '../../proxy/openai-responses-protocol';
import { invalidResponse, type ChatCall, type Usage } from '../../proxy/protocol';
import { recordImageOutputs } from '../images/record-edit';
import { IMAGE_TYPES } from '../images/schema';
import type { EditOutput } from '../images/upstream-edit';

const IMAGE_GENERATION_OPERATION = 'responses.image_generation';

/** Largest upstream answer read: up to MAX_GENERATED_IMAGES base64 images of a few MiB each. */
const MAX_ANSWER_BYTES = 128 * 1024 * 1024;

export interface ImageGenerationCall {
  model: CatalogModel;
  routes: CatalogRoute[];
  /** The upstream body: file ids inlined, max_tool_calls set to `maxImages`. */
  body: Record<string, unknown>;
  maxOutputTokens: number | undefined;
  maxImages: number;
  /** What the task remembers of the request (the tool and where its guide images came from). */
  taskInput: Record<string, unknown>;
}

interface Generated {
  route: CatalogRoute;
  json: Record<string, unknown>;
  usage: Usage;
  outputs: EditOutput[];
}

export async function generateImages(
  deps: EdgeDeps,
  proxy: ChatProxy,
  call: ImageGenerationCall,
  res: Response,
): Promise<void> {
  const { key, workspace } = authOf(res);
  const { log, requestId } = locals(res);
  const { model } = call;
  const chat: ChatCall = {
    model,
    routes: call.routes,
    body: call.body,
    stream: false,
    maxOutputTokens: call.maxOutputTokens,
    choices: 1,
  };
  const upstream = new UpstreamBodies(openAiResponsesProtocol, chat);
  const amount =
    holdFor(chat, upstream.body(upstreamModelOf(call.routes[0]!, model)).length) +
    model.unitPrice * BigInt(call.maxImages);

  const startedAt = new Date();
  // Kept as a row of its own: the charge is written in the transaction that records the images.
  const hold = await deps.holds.reserve(ownerOf(res), amount, { kept: true });
  let answer: Record<string, unknown>;
  try {
    const generated = await proxy.answer<Generated>(
      openAiResponsesProtocol,
      chat,
      upstream,
      log,
      (a) => ({ ...a, outputs: generatedImages(a.json) }),
      MAX_ANSWER_BYTES,
    );
    const taskId = newId('tsk');
    // A provider generating more images than were held for is charged no more than the hold covers.
    const images = Math.min(generated.outputs.length, call.maxImages);
    const archived = await recordImageOutputs(
      deps,
      {
        taskId,
        requestId,
        workspaceId: workspace.id,
        apiKeyId: key.id,
        modelId: model.id,
        operation: IMAGE_GENERATION_OPERATION,
        input: { ...call.taskInput, images_generated: generated.outputs.length },
        channelId: generated.route.channel.id,
        outputs: generated.outputs,
        usage: generated.usage,
        hold,
        cost: costOf(model, generated.usage) + model.unitPrice * BigInt(images),
        startedAt,
      },
      log,
    );
    // The items are the answer's own output items: each gets its archived file's fields beside OpenAI's.
    for (const [i, o] of generated.outputs.entries()) Object.assign(o.item, archived[i]);
    answer = { ...generated.json, svc_task_id: taskId };
  } catch (e) {
    await hold.release();
    throw e;
  }
  res.status(200).json(answer);
}

/**
 * The answer's generated images, in output order: image_generation_call items that completed with a `result`. One
 * whose result is not an image makes the answer unusable (failed over, never charged); items that failed or carry
 * no result generated nothing and are passed on as they are, uncharged.
 */
function generatedImages(json: Record<string, unknown>): EditOutput[] {
  const outputs: EditOutput[] = [];
  for (const item of json.output as unknown[]) {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) continue;
    const call = item as Record<string, unknown>;
    if (call.type !== 'image_generation_call' || typeof call.result !== 'string' || call.result.length === 0) continue;
    const index = outputs.length;
    const bytes = Buffer.from(call.result, 'base64');
    const media = sniffMedia(bytes, true);
    if (!media || !(IMAGE_TYPES as readonly string[]).includes(media.contentType))
      throw invalidResponse(`image_generation_call ${index}'s result is not an image`);
    outputs.push({ index, item: call, kind: 'b64', bytes, media });
  }
  return outputs;
}

/** The image_generation tool needs a per-image price on the model, or its images would be given away. */
export function checkImagePrice(model: CatalogModel): void {
  if (model.unitPrice <= 0n) {
    throw errors.modelNotSupported(
      `"${model.id}" has no per-image price, so it cannot be used with the image_generation tool.`,
    );
  }
}
