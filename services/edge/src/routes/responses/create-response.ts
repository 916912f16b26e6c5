import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { ChatProxy } from '../../proxy/chat-proxy';
import { openAiResponsesProtocol } from '../../proxy/openai-responses-protocol';
import { parseBody } from '../../http/parse-body';
import type { EdgeDeps } from '../../deps';
import { probeImageUrl } from '../images/image-url-probe';
import { inlineFileImages } from './file-images';
import { checkImagePrice, generateImages } from './image-generation';
import { checkOutputCap } from '../chat/schema';
import { fileImageRefs, generatedImageBound, imageGenerationTool, responseBody, urlImageRefs } from './schema';

/**
 * POST /api/v1/responses and /v1/responses — OpenAI Responses, streamed when `stream` is true. Files named by
 * file_id are resolved and inlined before the hold, so the hold covers the body the provider really gets. With the
 * image_generation tool the call is not proxied but answered by generateImages (its images archived and billed);
 * its guide images given by URL are checked first (type, 30 MB, 8192 px), all before any money is held.
 */
export function createResponse(deps: EdgeDeps, proxy: ChatProxy) {
  return async (req: Request, res: Response) => {
    const body = parseBody(responseBody, req.body);
    // A background response is answered before it has any usage and is fetched later from the provider, a call
    // the gateway does not proxy: it could never be billed.
    if (body.background === true) {
      throw errors.invalidRequest(
        'background: background responses are not supported by this gateway; send ' +
          'the request without it (stream: true gives output as it is produced).',
        'background',
      );
    }
    const raw = req.body as Record<string, unknown>;
    const refs = fileImageRefs(raw.input);
    const { model, routes } = await proxy.models.resolve(authOf(res).key, body.model, openAiResponsesProtocol);
    checkOutputCap(model, 'max_output_tokens', body.max_output_tokens);
    const imageTool = imageGenerationTool(raw.tools);
    if (imageTool) {
      if (body.stream === true) {
        throw errors.invalidRequest(
          'stream: responses with the image_generation tool are not streamed by this gateway (each ' +
            'image is archived before the answer names its file); send the request without stream.',
          'stream',
        );
      }
      checkImagePrice(model);
      const maxImages = generatedImageBound(raw.max_tool_calls);
      // Probed at once: a request's guides wait for the slowest, not for the sum.
      const guides = await Promise.all(
        urlImageRefs(raw.input).map(async (ref) => ({ url: (await probeImageUrl(deps, ref.url, ref.param)).url })),
      );
      const upstream = await inlineFileImages(
        deps,
        authOf(res).workspace.id,
        { ...raw, max_tool_calls: maxImages },
        refs,
      );
      // The mask may be a data URL: the task keeps the tool's options, not image bytes.
      const { input_image_mask: _mask, ...tool } = imageTool;
      const taskInput = {
        tool,
        max_tool_calls: maxImages,
        guides: [...guides, ...refs.map((r) => ({ file_id: r.fileId }))],
      };
      await generateImages(
        deps,
        proxy,
        { model, routes, body: upstream, maxOutputTokens: body.max_output_tokens ?? undefined, maxImages, taskInput },
        res,
      );
      return;
    }
    const upstream = await inlineFileImages(deps, authOf(res).workspace.id, raw, refs);
    await proxy.handle(
      openAiResponsesProtocol,
      {
        model,
        routes,
        body: upstream,
        stream: body.stream === true,
        maxOutputTokens: body.max_output_tokens ?? undefined,
        choices: 1,
      },
      res,
    );
  };
}
