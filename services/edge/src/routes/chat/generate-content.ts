import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { ChatProxy } from '../../proxy/chat-proxy';
import { geminiProtocol } from '../../proxy/gemini-protocol';
import { parseBody } from '../../http/parse-body';
import { checkOutputCap, generateContentBody } from './schema';

/**
 * POST /v1beta/models/{model}:generateContent and :streamGenerateContent — Gemini-compatible. Model ids hold a
 * slash (`<provider>/<model>`), so the path is matched as a whole; the stream is SSE with `alt=sse`, else
 * Google's streamed JSON array.
 */
export const GENERATE_CONTENT_PATH = /^\/v1beta\/models\/(.+):(generateContent|streamGenerateContent)$/;

export function generateContent(proxy: ChatProxy) {
  return async (req: Request, res: Response) => {
    const params = req.params as unknown as Record<string, string>;
    const modelId = params[0]!.replace(/^models\//, '');
    const stream = params[1] === 'streamGenerateContent';
    const body = parseBody(generateContentBody, req.body);
    const { model, routes } = await proxy.models.resolve(authOf(res).key, modelId, geminiProtocol);
    checkOutputCap(model, 'generationConfig.maxOutputTokens', body.generationConfig?.maxOutputTokens);
    await proxy.handle(
      geminiProtocol,
      {
        model,
        routes,
        body: req.body as Record<string, unknown>,
        stream,
        maxOutputTokens: body.generationConfig?.maxOutputTokens ?? undefined,
        choices: body.generationConfig?.candidateCount ?? 1,
        sse: req.query.alt === 'sse',
      },
      res,
    );
  };
}
