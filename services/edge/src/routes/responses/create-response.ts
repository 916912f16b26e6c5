import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { ChatProxy } from '../../proxy/chat-proxy';
import { openAiResponsesProtocol } from '../../proxy/openai-responses-protocol';
import { parseBody } from '../../http/parse-body';
import { inlineFileImages, type FileImageDeps } from './file-images';
import { checkOutputCap } from '../chat/schema';
import { fileImageRefs, responseBody } from './schema';

/**
 * POST /api/v1/responses and /v1/responses — OpenAI Responses, streamed when `stream` is true. Files named by
 * file_id are resolved and inlined before the hold, so the hold covers the body the provider really gets.
 */
export function createResponse(deps: FileImageDeps, proxy: ChatProxy) {
  return async (req: Request, res: Response) => {
    const body = parseBody(responseBody, req.body);
    // A background response is answered before it has any usage and is fetched later from the provider, a call
    // the gateway does not proxy: it could never be billed.
    if (body.background === true) {
      throw errors.invalidRequest('background: background responses are not supported by this gateway; send the request without it (stream: true gives output as it is produced).', 'background');
    }
    const raw = req.body as Record<string, unknown>;
    const refs = fileImageRefs(raw.input);
    const { model, routes } = await proxy.models.resolve(authOf(res).key, body.model, openAiResponsesProtocol);
    checkOutputCap(model, 'max_output_tokens', body.max_output_tokens);
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
