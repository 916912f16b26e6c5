import { errors } from '@gensvc/errors';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import { anthropicProtocol } from '../../proxy/anthropic-protocol';
import type { ChatProxy } from '../../proxy/chat-proxy';
import { parseBody } from '../../http/parse-body';
import { checkOutputCap, messageBody } from './schema';

/** POST /v1/messages — Anthropic-compatible (x-api-key, anthropic-version required as Anthropic requires it). */
export function createMessage(proxy: ChatProxy) {
  return async (req: Request, res: Response) => {
    const version = req.get('anthropic-version');
    if (!version) throw errors.invalidRequest('anthropic-version: header is required', 'anthropic-version');
    const body = parseBody(messageBody, req.body);
    const { model, routes } = await proxy.models.resolve(authOf(res).key, body.model, anthropicProtocol);
    checkOutputCap(model, 'max_tokens', body.max_tokens);
    await proxy.handle(
      anthropicProtocol,
      {
        model,
        routes,
        body: req.body as Record<string, unknown>,
        stream: body.stream === true,
        maxOutputTokens: body.max_tokens,
        choices: 1,
        anthropicVersion: version,
        anthropicBeta: req.get('anthropic-beta'),
      },
      res,
    );
  };
}
