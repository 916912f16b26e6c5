import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { ChatProxy } from '../../proxy/chat-proxy';
import { openAiProtocol } from '../../proxy/openai-protocol';
import { parseBody } from '../../http/parse-body';
import { chatCompletionBody, checkOutputCap } from './schema';

/** POST /api/v1/chat/completions and /v1/chat/completions — OpenAI-compatible, streamed when `stream` is true. */
export function createChatCompletion(proxy: ChatProxy) {
  return async (req: Request, res: Response) => {
    const body = parseBody(chatCompletionBody, req.body);
    const { model, routes } = await proxy.models.resolve(authOf(res).key, body.model, openAiProtocol);
    checkOutputCap(model, 'max_tokens', body.max_tokens);
    checkOutputCap(model, 'max_completion_tokens', body.max_completion_tokens);
    await proxy.handle(
      openAiProtocol,
      {
        model,
        routes,
        body: req.body as Record<string, unknown>,
        stream: body.stream === true,
        maxOutputTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
        choices: body.n ?? 1,
        includeUsage: body.stream_options?.include_usage === true,
      },
      res,
    );
  };
}
